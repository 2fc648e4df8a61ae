package cli

import (
	"encoding/json"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/report/html/htmltest"
	"github.com/homatest/homatest/report/seqplot"
	"github.com/homatest/homatest/spec"
)

// TestRunReportPage: a run that fails (the no-grants fault) writes
// report.html into its run folder; in headless Chromium the page shows
// the verdict, the failed spec with its rules, its sequence graph (drawn:
// the browser decoded it, and its DATA strokes are on screen) and the
// rerun command, and links to the spec's annotated capture. go test
// -update also writes the screenshot the README shows.
func TestRunReportPage(t *testing.T) {
	htmltest.Chromium(t)
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err, code := run(t, "run", "--env", "sim", "--focus", "GRANT-long-request", "--fault", "no-grants", "--artifacts", dir, "-o", "html")
	if code != ExitViolations {
		t.Fatalf("run --fault no-grants: exit %d, %v\n%s", code, err, out)
	}
	page := filepath.Join(dir, reportFile)
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `class="fail">FAIL: 1 of `) {
		t.Errorf("-o html printed no report page:\n%.300s", out)
	}
	dom := htmltest.DOM(t, page)
	for _, want := range []string{`class="fail">FAIL: 1 of `, "GRANT-long-request: the unscheduled DATA of a request longer than U, by 160 KB or by only a few bytes, draws GRANTs",
		"HOMA-GRANT-002 (MUST): ", "no GRANT from 198.18.0.1", `homatest run --focus "GRANT-long-request" --env sim --fault no-grants`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	pics := regexp.MustCompile(`data-rendered="(\d+)x(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(pics) != 1 || pics[0][1] == "0" || pics[0][2] == "0" {
		t.Errorf("pictures the browser decoded: %v, want the failure's sequence graph", pics)
	}
	link := regexp.MustCompile(`href="(pass-1/[^"]+\.pcapng)"`).FindStringSubmatch(dom)
	if link == nil {
		t.Fatalf("no link to the spec's capture in the page")
	}
	if _, err := os.Stat(filepath.Join(dir, link[1])); err != nil {
		t.Errorf("the linked capture: %v", err)
	}
	shot := ""
	if *update {
		shot = "../../../../docs/img/report-run-fail.png"
	}
	img := htmltest.Screenshot(t, page, 1200, 1500, shot)
	red := color.RGBA{0xc6, 0x28, 0x28, 0xff}
	if n := htmltest.Count(img, image.Rect(0, 0, 1200, 160), red, 6); n < 3000 {
		t.Errorf("the FAIL banner: %d red pixels in the header", n)
	}
	// The spec's DATA (the tester's unscheduled request bytes: no GRANT
	// came) went out at the level the IUT's cutoffs give 200 KB: their
	// strokes are on screen in that colour.
	prof, err := spec.LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	lvl := spec.UnschedPriority(prof.Params.UnschedCutoffs, prof.Params.NumPriorities, 200000)
	if n := htmltest.Count(img, image.Rectangle{}, seqplot.PriorityColor(lvl), 40); n < 100 {
		t.Errorf("the sequence graph: %d pixels of the p%d DATA colour on screen", n, lvl)
	}
}

// TestCheckReportPage: check -o html prints a page that, in Chromium,
// shows every violation with its rule's statement, the finding, the
// sequence graph of its RPC, the command that checks for that rule alone
// and a link to the annotated capture.
func TestCheckReportPage(t *testing.T) {
	htmltest.Chromium(t)
	dir := t.TempDir()
	capture := filepath.Join(faultsDir, "BR-09-no-grants.pcapng")
	ann := filepath.Join(dir, "ann.pcapng")
	out, err, code := run(t, "check", "-o", "html", "--annotate", ann, capture)
	if code != ExitViolations {
		t.Fatalf("check -o html: exit %d, %v", code, err)
	}
	page := filepath.Join(dir, "check.html")
	if err := os.WriteFile(page, []byte(out[:strings.Index(out, "</html>")+len("</html>")]), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DOM(t, page)
	for _, want := range []string{`class="fail">FAIL: 1 MUST violation<`, "HOMA-GRANT-010 at frame 33 of " + capture,
		"HOMA-GRANT-010 (MUST): A receiver that has all unscheduled bytes", "HOMA-GRANT-010 MUST: no first GRANT",
		"homatest check --rules HOMA-GRANT-010 " + capture, `href="` + ann + `"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if pics := regexp.MustCompile(`data-rendered="[1-9]\d*x[1-9]\d*"`).FindAllString(dom, -1); len(pics) != 1 {
		t.Errorf("pictures decoded: %v, want the RPC's sequence graph", pics)
	}
}

// TestRunAnnotatedCapture: a spec that fails on its own expectation (the
// first GRANT past the message under grant-past-end) keeps a capture whose
// frames carry the spec checker's findings and whose file comment is the
// failure.
func TestRunAnnotatedCapture(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err, code := run(t, "run", "--env", "sim", "--focus", "GRANT-long-request", "--fault", "grant-past-end", "-o", "json", "--artifacts", dir)
	if code != ExitViolations {
		t.Fatalf("run --fault grant-past-end: exit %d, %v\n%s", code, err, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var capture string
	for _, s := range rep.Passes[0].Specs {
		if s.State == "failed" {
			capture = s.Capture
		}
	}
	if capture == "" {
		t.Fatalf("no failed spec with a capture: %+v", rep.Passes[0].Specs)
	}
	found := false
	for _, c := range homaComments(t, capture) {
		if strings.Contains(c, " HOMA-GRANT-002 MUST: GRANT offset ") && strings.Contains(c, "beyond message_length 200000") {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: no HOMA-GRANT-002 finding among its comments %q", capture, homaComments(t, capture))
	}
}

// TestSimRunCaptureChecksClean: a passing run in the simulator leaves its
// capture with the run's parameters and the tester's frames marked, so
// homatest check on it exits 0 and charges nothing to the IUT (h1), while
// the testers' deliberate faults are charged to them.
func TestSimRunCaptureChecksClean(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := filepath.Join(t.TempDir(), "run")
	if out, err, code := run(t, "run", "--env", "sim", "--artifacts", dir); code != ExitOK {
		t.Fatalf("run --env sim: exit %d, %v\n%s", code, err, out)
	}
	capture := filepath.Join(dir, "pass-1", "capture.pcapng")
	out, err, code := run(t, "check", capture)
	if code != ExitOK {
		t.Fatalf("check %s: exit %d, %v\n%s", capture, code, err, out)
	}
	if !strings.Contains(out, "host 198.18.0.1 (interface 0): 0 violations charged") {
		t.Errorf("the IUT (198.18.0.1) is charged, or the report changed:\n%s", out)
	}
	if !strings.Contains(out, "(expected: the tester broke it on purpose: ") || !strings.Contains(out, "charged to the tester (at packets it sent)") {
		t.Errorf("no finding charged to the tester (its frames are not marked?):\n%s", out)
	}
	if strings.Contains(out, "HOMA-CUTOFF-002 SHOULD (warning) (charged to the tester)") {
		t.Errorf("the tester left the IUT's stale DATA without CUTOFFS:\n%s", out)
	}
	if !strings.Contains(out, "parameters: the run's, from ") {
		t.Errorf("the run's parameters file was not read:\n%s", out)
	}
	// At unsched_bytes 1 every message past a byte is scheduled, and
	// MALFORMED-ignored's packets must leave no message waiting for a
	// grant (HOMA-GRANT-010 charged the IUT for one).
	dir = filepath.Join(t.TempDir(), "run1")
	if out, err, code := run(t, "run", "--env", "sim", "--param", "unsched_bytes=1", "--artifacts", dir); code != ExitOK {
		t.Fatalf("run --env sim --param unsched_bytes=1: exit %d, %v\n%s", code, err, out)
	}
	capture = filepath.Join(dir, "pass-1", "capture.pcapng")
	if out, err, code := run(t, "check", capture); code != ExitOK || !strings.Contains(out, "host 198.18.0.1 (interface 0): 0 violations charged") {
		t.Errorf("check %s (unsched_bytes 1): exit %d, %v; want 0 and nothing charged to the IUT\n%s", capture, code, err, out)
	}
}
