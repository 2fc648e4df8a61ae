package lab

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// console gathers the guest's two serial streams, the kernel's console
// (ttyS0: its log, and the init's own error output) and the init's
// control port (ttyS1: the markers of the command's start and exit, and
// the init's notes), as each one's lines arrive: it forwards every line
// to w, keeps the last ones for error messages, and reads the markers.
// The markers have a port of their own so that no kernel message printed
// in the middle of one can break it; they are read on either stream (a
// kernel without ttyS1 gets them on the console: see initScript).
type console struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	lines []string // the last consoleKeep lines
	boot  time.Duration
	exit  int
	seen  bool     // set once the exit marker was parsed
	notes []string // the init script's own messages ("homatest-lab: insmod x")
	// sums are the guest's sums of the command's output files, by name
	// (markOutput).
	sums map[string]outputSum
}

const consoleKeep = 30

// stream returns a writer for one of the guest's streams: it hands c
// each line whole (without its "\r\n") as it completes.
func (c *console) stream() *consoleStream { return &consoleStream{c: c} }

// consoleStream splits one stream of the guest into lines for its console.
type consoleStream struct {
	c    *console
	part []byte
}

func (s *consoleStream) Write(p []byte) (int, error) {
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		s.c.line(string(bytes.TrimRight(s.part[:i], "\r")))
		s.part = s.part[i+1:]
	}
	return len(p), nil
}

// flush hands on the stream's last, unfinished line.
func (s *consoleStream) flush() {
	if len(s.part) > 0 {
		s.c.line(string(bytes.TrimRight(s.part, "\r")))
		s.part = nil
	}
}

// finish ends the run's reading: exit is -1 when no exit marker came.
func (c *console) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen {
		c.exit = -1
	}
}

func (c *console) line(l string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case l == markStart:
		c.boot = time.Since(c.start)
	case strings.HasPrefix(l, markExit):
		if n, err := strconv.Atoi(strings.TrimPrefix(l, markExit)); err == nil {
			c.exit, c.seen = n, true
		}
	case strings.HasPrefix(l, markOutput):
		if name, sum, ok := parseOutputSum(strings.TrimPrefix(l, markOutput)); ok {
			if c.sums == nil {
				c.sums = map[string]outputSum{}
			}
			c.sums[name] = sum
		}
	case strings.HasPrefix(l, markNote):
		c.notes = append(c.notes, strings.TrimPrefix(l, markNote))
	}
	c.lines = append(c.lines, l)
	if len(c.lines) > consoleKeep {
		c.lines = c.lines[len(c.lines)-consoleKeep:]
	}
	if c.w != nil {
		io.WriteString(c.w, l+"\n")
	}
}

// started reports whether the command's start marker came.
func (c *console) started() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boot > 0
}

// last returns the last console lines, indented.
func (c *console) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lines) == 0 {
		return "  (nothing)"
	}
	return "  " + strings.Join(c.lines, "\n  ")
}

// tail keeps the last 4 KiB written to it (QEMU's own messages) and calls
// hit once (then sets it nil) when watch appears.
type tail struct {
	mu    sync.Mutex
	b     []byte
	watch string
	hit   func()
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if t.hit != nil && t.watch != "" && bytes.Contains(t.b, []byte(t.watch)) {
		t.hit()
		t.hit = nil
	}
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// fired reports whether watch appeared.
func (t *tail) fired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hit == nil && t.watch != ""
}
