package harness

import (
	"errors"
	"fmt"
	"sync"
)

// teardown is a stack of undo steps. A step is pushed before the thing it
// undoes is created, so a failure half-way through creating it still
// leaves a step that removes whatever exists; every step therefore
// tolerates the thing being absent. run pops and runs every step once, in
// reverse order, and joins their errors.
type teardown struct {
	mu    sync.Mutex
	steps []step
	done  bool
}

type step struct {
	what string
	f    func() error
}

// push registers f (described by what, e.g. "delete namespace ht3f9a1c-h1").
func (t *teardown) push(what string, f func() error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, step{what, f})
}

// run runs the steps in reverse order; later calls return nil.
func (t *teardown) run() error {
	t.mu.Lock()
	steps := t.steps
	t.steps, t.done = nil, true
	t.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].f(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", steps[i].what, err))
		}
	}
	return errors.Join(errs...)
}
