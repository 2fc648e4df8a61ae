package agent

import (
	"bytes"
	"sync"
)

// TailWriter is an io.Writer that keeps the last bytes written to it: give
// it an agent's standard error and its String method as
// ClientOptions.StderrTail. It is safe for concurrent use.
type TailWriter struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	lines int
}

// NewTailWriter returns a TailWriter whose String returns at most lines
// lines from the last maxBytes bytes written (defaults 5 and 4096 when
// not positive).
func NewTailWriter(lines, maxBytes int) *TailWriter {
	if lines <= 0 {
		lines = 5
	}
	if maxBytes <= 0 {
		maxBytes = 4096
	}
	return &TailWriter{max: maxBytes, lines: lines}
}

// Write keeps p's bytes; it never fails.
func (t *TailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the last lines kept, joined by newlines, without the
// trailing newline.
func (t *TailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(t.buf, "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-t.lines):], []byte("\n")))
}
