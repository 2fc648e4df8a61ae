package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCutThenWhole: the lab's incast capture cut short in mid-block
// (its first 800000 bytes) with the whole capture joined after it (cat)
// is read on past the cut, the cut copy's frames skipped as the whole
// one's first: check judges the capture once, as the capture alone
// (PASS, 1639 Homa frames), and says what is true; --annotate, which
// cannot copy a cut block, says so. Before, it stopped at the cut:
// "DAMAGED ... capture damaged or cut short", exit 2, 734 frames.
func TestCheckCutThenWhole(t *testing.T) {
	src := filepath.Join(realDir, "lab-scenarios", "linux-6.13-netem-incast.pcapng")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cut-then-whole.pcapng")
	if err := os.WriteFile(path, append(b[:800000:800000], b...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".params", ".stalls.json"} {
		copyFile(t, src+ext, path+ext)
	}
	out, err, code := run(t, "check", path)
	if code != ExitOK || !strings.Contains(out, "): 1639 Homa frames ") || strings.Contains(out, "DAMAGED") ||
		!strings.Contains(out, "section 1 is cut short after frame 734 (a block cut in mid-write at byte 799920, and 80 bytes on, another section header") ||
		!strings.Contains(out, "so its first 734 frames were skipped") {
		t.Errorf("exit %d (%v), want 0, the capture judged once and the cut said:\n%s", code, err, out)
	}
	// Its annotated copy cannot keep the cut section: refused in one line.
	ann := filepath.Join(dir, "out.pcapng")
	_, err, code = run(t, "check", "--annotate", ann, path)
	if _, serr := os.Stat(ann); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "not written: section 1 of the capture is cut short in mid-block after frame 734") || serr == nil {
		t.Errorf("--annotate: exit %d, %v (file: %v); want 2, not written, saying why", code, err, serr)
	}
}
