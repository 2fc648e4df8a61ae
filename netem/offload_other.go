//go:build !linux

package netem

import "github.com/vishvananda/netns"

// SetTxChecksumOffload returns ErrNotSupported (Linux only).
func SetTxChecksumOffload(ns netns.NsHandle, dev string, on bool) error { return ErrNotSupported }

// TxChecksumOffload returns ErrNotSupported (Linux only).
func TxChecksumOffload(ns netns.NsHandle, dev string) (bool, error) { return false, ErrNotSupported }
