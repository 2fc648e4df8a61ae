package harness

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The process-wide registry of live topologies, so a signal or a fatal
// error path can still tear everything down.
var registry struct {
	sync.Mutex
	live map[*Topology]struct{}
}

func register(t *Topology) {
	registry.Lock()
	defer registry.Unlock()
	if registry.live == nil {
		registry.live = map[*Topology]struct{}{}
	}
	registry.live[t] = struct{}{}
}

func unregister(t *Topology) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.live, t)
}

// CloseAll closes every live topology of this process (in parallel) and
// returns their joined errors.
func CloseAll() error {
	registry.Lock()
	var ts []*Topology
	for t := range registry.live {
		ts = append(ts, t)
	}
	registry.Unlock()
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = t.Close() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// HandleSignals installs a handler for SIGINT and SIGTERM that closes every
// live topology (CloseAll), writes any teardown error to stderr, then
// restores the default action and re-raises the signal, so the process
// ends with the usual status (130 for SIGINT, 143 for SIGTERM). Call it
// once from main or a command's RunE; the returned stop function removes
// the handler. It is not installed by package initialisation.
func HandleSignals() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-c:
			if err := CloseAll(); err != nil {
				os.Stderr.WriteString("homatest: teardown after " + sig.String() + ": " + err.Error() + "\n")
			}
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), s)
			}
		case <-quit:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(c)
			close(quit)
		})
	}
}
