package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSimBenchCapturesTemporaryUntilKept: a simulated bench's captures
// are hidden temporaries (".NAME.tmp", the names a later run removes from
// a killed run's folder) until a failed spec keeps them; Close removes
// unkept ones. They used to be named sent-N.pcapng from the start: a pass
// killed by SIGKILL left them looking like a failed spec's captures, and
// nothing proved them stale.
func TestSimBenchCapturesTemporaryUntilKept(t *testing.T) {
	names := func(dir string) []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	dir := t.TempDir()
	b, err := simBench(2, LinkImpairment{}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := names(dir)
	for _, n := range got {
		if tmp, _ := filepath.Match(".*.tmp*", n); !tmp {
			t.Errorf("%s while the bench runs: want a hidden temporary (.NAME.tmp)", n)
		}
	}
	if len(got) != 2 {
		t.Errorf("files %v, want the two captures", got)
	}
	sent, delivered, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sent+".params", []byte("# a sidecar\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ks, kd, err := b.Keep()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(ks), "sent-") || !strings.HasPrefix(filepath.Base(kd), "delivered-") ||
		ks != keptName(sent) || kd != keptName(delivered) {
		t.Errorf("kept as %s and %s, want sent-N.pcapng and delivered-N.pcapng beside %s", ks, kd, sent)
	}
	b.Close()
	want := []string{filepath.Base(kd), filepath.Base(ks), filepath.Base(ks) + ".params"}
	slices.Sort(want)
	if got := names(dir); !slices.Equal(got, want) {
		t.Errorf("after Keep and Close: %v, want %v", got, want)
	}
	if again, _, err := b.Keep(); err != nil || again != ks {
		t.Errorf("Keep again: %s %v, want %s", again, err, ks)
	}

	// Not kept: Close leaves nothing.
	dir = t.TempDir()
	if b, err = simBench(2, LinkImpairment{}, nil, dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := names(dir); len(got) > 0 {
		t.Errorf("a bench closed unkept left %v", got)
	}
}
