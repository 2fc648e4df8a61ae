package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// benchProgress shows homatest bench's phases on standard error: a
// progress bar per phase when it is a terminal, one line per phase when it
// is not, nothing in JSON mode. Its methods are safe for concurrent use.
type benchProgress struct {
	w     io.Writer
	quiet bool
	tty   bool
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	max   int
}

// newBenchProgress returns the progress display on w (quiet: nothing).
func newBenchProgress(w io.Writer, quiet bool) *benchProgress {
	f, ok := w.(*os.File)
	return &benchProgress{w: w, quiet: quiet, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// Phase starts a phase of total RPCs (0: not known yet).
func (p *benchProgress) Phase(desc string, total int) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	if !p.tty {
		fmt.Fprintln(p.w, desc)
		return
	}
	p.max = total
	if total <= 0 {
		total = -1 // a spinner until Progress tells the total
	}
	p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish())
}

// Set shows done RPCs of the phase.
func (p *benchProgress) Set(done int) { p.SetMax(done, 0) }

// SetMax shows done RPCs of total (0: unchanged).
func (p *benchProgress) SetMax(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		return
	}
	if total > 0 && total != p.max {
		p.max = total
		p.bar.ChangeMax(total)
	}
	p.bar.Set(done)
}

// done ends the last phase.
func (p *benchProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
}

func (p *benchProgress) finishLocked() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// Note prints one line between phases (nothing in JSON mode).
func (p *benchProgress) Note(line string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	fmt.Fprintln(p.w, line)
}
