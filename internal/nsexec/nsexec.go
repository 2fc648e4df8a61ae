// Package nsexec runs code inside a network namespace: on a fresh
// goroutine whose OS thread is locked and switched into the namespace, so
// sockets and netlink requests made there belong to it. It is the one copy
// of that thread dance for the harness (host namespaces) and netem (the
// switch's port sockets).
package nsexec

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs f on a fresh goroutine whose OS thread is locked and switched
// into ns, and returns f's error. Sockets f creates stay in ns. The thread
// is switched back to its original namespace afterwards; if that fails the
// goroutine exits still locked, so the Go runtime discards the thread
// instead of reusing it in the wrong namespace (the error then joins f's
// error and the restore error).
func Do(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("get current namespace: %w", err)
			return // thread stays locked and is discarded
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter namespace: %w", err)
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			}
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("restore namespace: %w", err))
			return // thread stays locked and is discarded
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
