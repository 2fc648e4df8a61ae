package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGapsOneWarning: a capture away from its .params (the lab's incast
// capture, judged with the profile's timeout_ticks) has ten silences RPCs
// went on across: check says so in one WARNING paragraph with their count
// and frames, the first in full. Before, it printed ten near-identical
// paragraphs.
func TestGapsOneWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "away.pcapng")
	copyFile(t, filepath.Join(realDir, "lab-scenarios", "linux-6.13-netem-incast.pcapng"), path)
	out, _, _ := run(t, "check", path)
	n := strings.Count(out, "capture time jumps forward")
	if n != 2 || strings.Count(out, "WARNING: ") != 1 ||
		!strings.Contains(out, "WARNING: 10 silences that RPCs went on across as if no time had passed (capture time jumps forward at frames 12 (153ms), 38 (287ms), ") ||
		!strings.Contains(out, ", 2 more); the first: capture time jumps forward 153ms at frame 12 ") || !strings.Contains(out, "or copy its .params file beside the capture") {
		t.Errorf("want one WARNING paragraph for the 10 silences (said %d times):\n%s", n, out)
	}
}
