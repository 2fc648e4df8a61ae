package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoubledPcapngSections: a pcapng joined with itself (cat a.pcapng
// a.pcapng: two sections, the second the first again) gives homatest
// rpcs the same lines as the capture alone and check the same packet
// count, each saying the file holds two sections and that the repeated
// one was read once. Before, rpcs counted every RPC's packets twice
// (DATA=146 for 73) and check judged the copy as a section of its own
// after a jump back in time, with a host "reloaded" at its first frame.
func TestDoubledPcapngSections(t *testing.T) {
	src := filepath.Join("testdata", "faults", "BR-24-resend-storm.pcapng")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one.pcapng"), filepath.Join(dir, "two.pcapng")
	if err := os.WriteFile(one, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, append(append([]byte(nil), b...), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = "pcapng sections: the capture holds 2 pcapng sections"
	alone, _, code := run(t, "rpcs", one)
	if code != ExitOK || strings.Contains(alone, note) {
		t.Fatalf("rpcs of the capture alone: exit %d\n%s", code, alone)
	}
	doubled, _, code := run(t, "rpcs", two)
	table, said, _ := strings.Cut(doubled, note)
	if code != ExitOK || table != alone || !strings.Contains(said, "section 2 (from frame 92) repeats section 1 frame for frame (91 frames") {
		t.Errorf("rpcs of the doubled capture: exit %d\n%s\nwant the lines of the capture alone:\n%s\nthen the note", code, doubled, alone)
	}
	head := func(out string) string {
		l, _, _ := strings.Cut(out, "\n")
		_, counts, _ := strings.Cut(l, ": ")
		return counts
	}
	checkOne, _, _ := run(t, "check", one)
	checkTwo, _, _ := run(t, "check", two)
	if head(checkOne) == "" || head(checkTwo) != head(checkOne) || !strings.Contains(checkTwo, note) || strings.Contains(checkTwo, "\nsections: ") || strings.Contains(checkTwo, "reloaded") {
		t.Errorf("check of the doubled capture:\n%.3000s\nwant %q, the note and no sections of its own", checkTwo, head(checkOne))
	}
}
