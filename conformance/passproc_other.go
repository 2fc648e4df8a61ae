//go:build !linux

package conformance

import "os/exec"

// startDying starts c; outside Linux there is no Pdeathsig, so a killed
// supervisor's pass runs to its end. The channel gets c.Wait's error.
func startDying(c *exec.Cmd) (<-chan error, error) {
	if err := c.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	return done, nil
}
