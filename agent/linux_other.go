//go:build !linux

package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

func inNetns(_ string, f func() error) error { return f() }

func defaultSocket(int, int, int) (int, error) { return -1, errors.New("not Linux") }

// otherBackend is the linux agent off Linux: hello says unsupported.
type otherBackend struct{}

func newLinuxBackend(LinuxOptions, *counters, *slog.Logger) backend { return otherBackend{} }

const otherReason = "the linux agent needs a Linux kernel with Homa"

func (otherBackend) hello(HelloRequest) (Hello, error) {
	return Hello{Impl: "linux", Unsupported: otherReason}, nil
}
func (otherBackend) listen(uint16, ListenOptions) error { return errUnsupported(otherReason) }
func (otherBackend) call(context.Context, Call) (func() Completion, error) {
	return nil, errUnsupported(otherReason)
}
func (otherBackend) stats(*Stats) {}
func (otherBackend) close() error { return nil }
