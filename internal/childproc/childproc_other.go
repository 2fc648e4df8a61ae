//go:build !linux

package childproc

import (
	"os/exec"
	"syscall"
)

// StartDying starts c; outside Linux there is no Pdeathsig, so the child
// outlives a killed parent (sig is unused). The channel gets c.Wait's
// error; the error is c.Start's.
func StartDying(c *exec.Cmd, sig syscall.Signal) (<-chan error, error) {
	if err := c.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	return done, nil
}
