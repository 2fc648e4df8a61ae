//go:build !linux

package homa

import "runtime"

// yield lets other goroutines run between two polls.
func yield() { runtime.Gosched() }
