package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckHeardByResend: an RPC whose request DATA came from the client
// and whose server answered only with a RESEND (a server still waiting
// for the rest of its request: the trial's GRANT-long-request under
// --fault no-grants, 28 DATA and 19 RESENDs) was heard from both sides.
// Before, only DATA, GRANT and BUSY counted, so check said "the
// capture's one RPC ... was not heard from both sides ... capture both
// directions" (INCOMPLETE, exit 2) for a capture of both directions.
func TestCheckHeardByResend(t *testing.T) {
	frames := readCapFrames(t, "testdata/faults/RESEND-022-resend-after-own-unknown.pcapng")
	// Frames 5 and 6: the client's request DATA (id 4, 1424 of 3000
	// bytes) and the server's RESEND for the rest (id 5).
	kept := frames[4:6]
	path := writeCapFrames(t, t.TempDir(), "resend.pcapng", kept, nil)
	out, _, code := run(t, "check", "-o", "json", path)
	var js struct {
		Files []checkFileVerdict `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%v:\n%s", err, out)
	}
	v := js.Files[0]
	if v.Report.Answered != 1 || v.NothingJudged != "" || strings.Contains(out, "both directions") {
		t.Errorf("exit %d verdict %q rpcs_answered %d nothing_judged %q, want 1 answered and no warning", code, v.Verdict, v.Report.Answered, v.NothingJudged)
	}
}
