package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckOneEndView: a scenario run's sent.pcapng and delivered.pcapng
// (every frame one direction in epb_flags: one end of every host's link)
// copied away from the .params files the run wrote beside them are
// judged with the profile's timers, each packet stamped at one end of its
// path only. The run judges them as a pair, each host on its own link; a
// check of one alone cannot tell what a host had received when it sent,
// so every violation of a rule that relates packets is inconclusive and
// the verdict INCOMPLETE (exit 2), with a warning saying what to check
// instead. Before, check failed them (exit 1; 5 and 4 HOMA-RESEND-014
// MUST violations on the simulated two-hosts-drops run, whose hosts tick
// every 10 ms). With the run's .params beside them they pass, as before.
func TestCheckOneEndView(t *testing.T) {
	a := filepath.Join(t.TempDir(), "run")
	if _, err, code := run(t, "scenario", "run", "--env", "sim", filepath.Join(exampleDir, "two-hosts-drops.yaml"), "--artifacts", a, "-q"); code != ExitOK {
		t.Fatalf("scenario run: exit %d: %s", code, err)
	}
	bare := t.TempDir()
	for _, f := range []string{"sent.pcapng", "delivered.pcapng"} {
		if _, _, code := run(t, "check", filepath.Join(a, f)); code != ExitOK {
			t.Errorf("%s beside its .params: exit %d, want 0", f, code)
		}
		b, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(bare, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, code := run(t, "check", "-o", "json", p)
		var js struct {
			Files []struct {
				Verdict    string `json:"verdict"`
				Must       int    `json:"must_violations"`
				OneEndHint string `json:"one_end_hint"`
				Report     struct {
					OneEndExcused int `json:"one_end_excused"`
				} `json:"report"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%s: %v:\n%s", f, err, out)
		}
		v := js.Files[0]
		if code != 2 || v.Verdict != "incomplete" || v.Must != 0 || v.Report.OneEndExcused == 0 || !strings.Contains(v.OneEndHint, "capture.pcapng") {
			t.Errorf("%s alone: exit %d verdict %q must %d excused %d hint %q, want 2 incomplete 0, some excused and a hint naming capture.pcapng", f, code, v.Verdict, v.Must, v.Report.OneEndExcused, v.OneEndHint)
		}
		// Given as the view it is, it is judged as it is.
		point := strings.TrimSuffix(f, ".pcapng")
		if _, _, code := run(t, "check", "--capture-point", point, p); code != ExitViolations {
			t.Errorf("%s alone with --capture-point %s: exit %d, want 1 (judged as given)", f, point, code)
		}
	}
}
