//go:build linux

package conformance

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startDying starts c so that it gets SIGTERM when the supervisor dies
// (Pdeathsig): a SIGKILLed "homatest run" must not leave its pass running
// on a run folder the next run takes over. SIGTERM, not SIGKILL, so the
// pass's interrupt handling (Ginkgo's) removes its namespaces. Pdeathsig
// fires when the forking thread exits, so the fork and the wait happen on
// one goroutine locked to its thread until the child has ended. The
// channel gets c.Wait's error.
func startDying(c *exec.Cmd) (<-chan error, error) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGTERM
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
