package cli

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/conformance"
)

// TestCheckErrorVerdict: check -o json has a top-level verdict and every
// file's entry one, an unreadable file's "error" (it had no verdict key
// and there was no top-level one); -o junit reports the unreadable file
// as an <error> (it was a <failure type="error"> with status "" and
// errors="0").
func TestCheckErrorVerdict(t *testing.T) {
	bad := writeFile(t, t.TempDir(), "notpcap.pcap", "hello, not a capture\n")
	good := filepath.Join("testdata", "faults", "BR-09-no-grants.pcapng")
	out, _, code := run(t, "check", "-o", "json", bad, good)
	var rep struct {
		Verdict string `json:"verdict"`
		Files   []struct {
			Verdict *string `json:"verdict"`
			Error   string  `json:"error"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if code != ExitUsage || rep.Verdict != "error" || len(rep.Files) != 2 || rep.Files[0].Verdict == nil || *rep.Files[0].Verdict != "error" ||
		rep.Files[1].Verdict == nil || *rep.Files[1].Verdict != "fail" {
		t.Errorf("exit %d, JSON %s; want 2, verdict error, files error and fail", code, out)
	}
	out, _, _ = run(t, "check", "-o", "junit", bad)
	var js conformance.JUnitSuites
	if err := xml.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("bad JUnit: %v\n%s", err, out)
	}
	if js.Errors != 1 || js.Failures != 0 || len(js.TestSuites) != 1 || js.TestSuites[0].TestCases[0].Error == nil || js.TestSuites[0].TestCases[0].Status == "" {
		t.Errorf("JUnit %s; want one <error> testcase with a status, errors=1 failures=0", out)
	}
}
