//go:build linux

package childproc

import (
	"os/exec"
	"runtime"
	"syscall"
)

// StartDying starts c so that it gets sig when this process dies
// (Pdeathsig), keeping c's other SysProcAttr settings. Pdeathsig fires
// when the forking thread exits, so the fork and the wait happen on one
// goroutine locked to its thread until the child has ended. The channel
// gets c.Wait's error; the error is c.Start's.
func StartDying(c *exec.Cmd, sig syscall.Signal) (<-chan error, error) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = sig
	started, done := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // the child has ended by then
		if err := c.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- c.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
