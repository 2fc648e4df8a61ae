package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/spec"
)

// TestProgressLineQuiet: in a log (not a terminal), a progress line with
// a quiet period (check's) prints nothing for a command shorter than it,
// not even at the end; a longer one gets a line once the period has
// passed, one every logEvery, and the final state.
func TestProgressLineQuiet(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lines := func(seconds int) []string {
		var b strings.Builder
		now := t0
		p := &progressLine{w: &b, name: "check", quiet: checkQuiet, transient: true, now: func() time.Time { return now }, start: t0}
		for s := 1; s <= seconds; s++ { // an update a second
			now = t0.Add(time.Duration(s) * time.Second)
			p.update(framesRead(int64(1000*s), now.Sub(t0), now.Sub(t0)))
		}
		p.end()
		if b.Len() == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	}
	if got := lines(4); got != nil {
		t.Errorf("a 4 s check printed progress: %q", got)
	}
	got := lines(26)
	var at []string
	for _, l := range got {
		f := strings.Fields(l)
		if len(f) != 7 || f[0] != "check:" || f[4] != "read" || f[6] != "frames/s" {
			t.Fatalf("progress line %q, want 'check: ELAPSED N frames read RATE frames/s'", l)
		}
		at = append(at, f[2])
	}
	if s, want := strings.Join(at, " "), "5000 15000 25000 26000"; s != want {
		t.Errorf("lines at frames %s, want %s (after 5 s, every 10 s, the end):\n%s", s, want, strings.Join(got, "\n"))
	}
	if !strings.Contains(got[0], " 5000 frames read  1000 frames/s") {
		t.Errorf("first line %q: want 5000 frames at 1000 frames/s", got[0])
	}
}

// TestFramesReadJudging: once the count stands still (every frame read,
// the check judging), the rate stays the reading's and the line says how
// long it has judged, instead of a rate falling toward 0.
func TestFramesReadJudging(t *testing.T) {
	got := framesRead(236066, 12*time.Second, 5*time.Second)
	if want := "  12.0s  236066 frames read  47213 frames/s; judging for 7s"; got != want {
		t.Errorf("framesRead: %q, want %q", got, want)
	}
	if got := framesRead(5000, 5*time.Second+500*time.Millisecond, 5*time.Second); strings.Contains(got, "judging") {
		t.Errorf("framesRead half a second after the last frame: %q, want no judging yet", got)
	}
}

// TestCheckProgressOnlyOnAFile: check's progress goes to standard error
// only when it is a file (a terminal or a log), never into an in-process
// caller's buffer (the tests hold stdout and stderr in one), and not
// with --quiet; started, it counts the frames the check reads and prints
// the final count when stopped.
func TestCheckProgressOnlyOnAFile(t *testing.T) {
	var b strings.Builder
	co := check.Options{Profile: "auto", Level: spec.Should, CapturePoint: "auto"}
	(&checkOpts{}).progress(&b, &co)()
	if co.Progress != nil || b.Len() > 0 {
		t.Errorf("progress into a buffer: counter %v, output %q", co.Progress, b.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	(&checkOpts{quiet: true}).progress(f, &co)()
	if co.Progress != nil {
		t.Error("--quiet: the frames are counted for a progress line")
	}
	(&checkOpts{}).progress(f, &co)()
	if co.Progress == nil {
		t.Fatal("stderr a file: no progress counter")
	}
	// The counter is the one the check reads into.
	rep := check.File(co, lossy613)
	if rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if n := co.Progress.Load(); n < int64(rep.Stats.Frames) {
		t.Errorf("progress counted %d frames, the check read %d", n, rep.Stats.Frames)
	}
	// Stopped, it ends with the final count (no quiet period here).
	var frames atomic.Int64
	frames.Store(42)
	p := newProgressLine(&b, "check", 0, true)
	startProgress(p, &frames, time.Hour)()
	if !strings.HasPrefix(b.String(), "check: ") || !strings.Contains(b.String(), " 42 frames read ") {
		t.Errorf("stopped progress printed %q, want the final count", b.String())
	}
}
