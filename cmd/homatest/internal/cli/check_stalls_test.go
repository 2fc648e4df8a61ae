package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestCheckStallsHint: a run's capture judged without the stalls its run
// measured says so. The lab capture copied with its .params but not its
// .stalls.json keeps timing violations the stalls excuse (a new user saw
// a FAIL naming nothing); with its stalls but its frames retimed 20 s
// later (editcap -t 20), the violations lie outside the stalls' span.
// The original with both sidecars has no such line.
func TestCheckStallsHint(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	dir := t.TempDir()
	hint := func(path string) (string, int) {
		t.Helper()
		out, _, code := run(t, append(append([]string{"check", "-o", "json"}, scaledTimers...), path)...)
		var js struct {
			Files []struct {
				StallsHint string `json:"stalls_hint"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%s: %v:\n%s", path, err, out)
		}
		return js.Files[0].StallsHint, code
	}

	orig := writeNgBlocks(t, dir, "orig.pcapng", append(append(append([]ngBlock(nil), head...), epbs...), tail...))
	copySidecars(t, orig, 0)
	if h, code := hint(orig); h != "" || code != ExitOK {
		t.Errorf("with both sidecars: exit %d, hint %q; want 0 and none", code, h)
	}

	noStalls := writeNgBlocks(t, dir, "nostalls.pcapng", append(append(append([]ngBlock(nil), head...), epbs...), tail...))
	copySidecars(t, noStalls, 0)
	if err := os.Remove(noStalls + ".stalls.json"); err != nil {
		t.Fatal(err)
	}
	if h, code := hint(noStalls); code != ExitViolations || !strings.HasPrefix(h, "no "+noStalls+".stalls.json beside the capture") {
		t.Errorf("params without stalls: exit %d, hint %q; want 1 and the missing stalls file named", code, h)
	}

	var late []ngBlock
	for _, b := range epbs {
		late = append(late, b.withTS(b.ts()+20e9))
	}
	retimed := writeNgBlocks(t, dir, "retimed.pcapng", append(append(append([]ngBlock(nil), head...), late...), tail...))
	copySidecars(t, retimed, 0)
	if h, _ := hint(retimed); !strings.Contains(h, "outside the span the stalls file covers") {
		t.Errorf("frames retimed 20 s: hint %q; want the stalls' span named", h)
	}
}
