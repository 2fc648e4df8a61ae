package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// logEvery is how often a progress line is printed when stderr is not a
// terminal (a CI log): often enough to show a command is alive, seldom
// enough to keep the log short.
const logEvery = 10 * time.Second

// progressLine is a command's progress line on standard error (explore's
// session state, check's frames read): on a terminal rewritten in place
// at each update; otherwise (a CI log) a line of its own once quiet has
// passed since the start (0: at the first update), then one every
// logEvery, and the last state at the end when a line was printed. Not
// safe for concurrent use: one goroutine updates it.
type progressLine struct {
	w    io.Writer
	name string // each line's prefix ("explore")
	tty  bool
	// transient: on a terminal end erases the line (the command's report
	// follows); otherwise it is kept.
	transient bool
	quiet     time.Duration
	now       func() time.Time
	start     time.Time
	printed   time.Time // when a line was last printed (non-terminal)
	pending   string    // the last state not printed (non-terminal)
}

// newProgressLine returns the progress line on w, its lines prefixed
// name; a terminal when w is one.
func newProgressLine(w io.Writer, name string, quiet time.Duration, transient bool) *progressLine {
	p := &progressLine{w: w, name: name, quiet: quiet, transient: transient, now: time.Now}
	p.tty = isTerminal(w)
	p.start = p.now()
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// update shows state, the line's text after its prefix.
func (p *progressLine) update(state string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s: %s", p.name, state)
		p.printed = p.now()
		return
	}
	now := p.now()
	if now.Sub(p.start) >= p.quiet && (p.printed.IsZero() || now.Sub(p.printed) >= logEvery) {
		p.printed = now
		p.pending = ""
		fmt.Fprintf(p.w, "%s: %s\n", p.name, state)
		return
	}
	p.pending = state
}

// end finishes the line: on a terminal a newline, or its erasure when
// transient; otherwise the final state if a line was printed and this
// state was not.
func (p *progressLine) end() {
	switch {
	case p.tty && p.printed.IsZero():
	case p.tty && p.transient:
		fmt.Fprint(p.w, "\r\033[K")
	case p.tty:
		fmt.Fprintln(p.w)
	case p.pending != "" && !p.printed.IsZero():
		fmt.Fprintf(p.w, "%s: %s\n", p.name, p.pending)
		p.pending = ""
	}
}
