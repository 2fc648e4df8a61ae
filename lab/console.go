package lab

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// console reads the guest's serial console: it forwards each line to w,
// keeps the last lines for error messages, and finds the start and exit
// markers of the command.
type console struct {
	w     io.Writer
	start time.Time
	part  []byte
	lines []string // the last consoleKeep lines
	boot  time.Duration
	exit  int
	seen  bool     // set once the exit marker was parsed
	notes []string // the init script's own messages ("homatest-lab: insmod x")
}

const consoleKeep = 30

func (c *console) Write(p []byte) (int, error) {
	c.part = append(c.part, p...)
	for {
		i := bytes.IndexByte(c.part, '\n')
		if i < 0 {
			break
		}
		c.line(string(bytes.TrimRight(c.part[:i], "\r")))
		c.part = c.part[i+1:]
	}
	return len(p), nil
}

func (c *console) flush() {
	if len(c.part) > 0 {
		c.line(string(c.part))
		c.part = nil
	}
	if !c.seen {
		c.exit = -1
	}
}

func (c *console) line(l string) {
	switch {
	case l == markStart:
		c.boot = time.Since(c.start)
	case strings.HasPrefix(l, markExit):
		if n, err := strconv.Atoi(strings.TrimPrefix(l, markExit)); err == nil {
			c.exit, c.seen = n, true
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

// last returns the last console lines, indented.
func (c *console) last() string {
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
