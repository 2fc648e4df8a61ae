//go:build linux

package homa

import (
	"runtime"
	"syscall"
)

// yield lets the other goroutines, then the other threads of the machine,
// run between two polls: runtime.Gosched and sched_yield, as HomaModule's
// polling loop calls schedule(). With Gosched alone, two goroutines
// polling on a 2-core machine (both ends of an RPC in one process) held
// both threads where Go's network poller, ksoftirqd and other processes
// needed them: BenchmarkEcho100B's median homa latency at one caller went
// from 11 to 88 µs.
func yield() {
	runtime.Gosched()
	syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
