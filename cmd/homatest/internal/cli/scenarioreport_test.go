package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/report/html/htmltest"
)

// TestScenarioReportPage: a scenario whose IUT grants past the message's
// end (fault grant-past-end) fails; its run folder's report.html shows the
// verdict, the violation with the rule's statement and the RPC's sequence
// graph and the replay command, and sent.pcapng / delivered.pcapng carry
// the violations as packet comments.
func TestScenarioReportPage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	b, err := os.ReadFile(filepath.Join(exampleDir, "two-hosts-drops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := strings.Replace(string(b), "  params: {tick_ns: 10000000}", "  params: {tick_ns: 10000000}\n  faults: [grant-past-end]", 1)
	file := writeFile(t, dir, "fault.yaml", yaml)
	run1 := filepath.Join(dir, "run")
	out, err, code := run(t, "scenario", "run", file, "--artifacts", run1, "-q")
	if code != ExitViolations {
		t.Fatalf("scenario with grant-past-end: exit %d, %v\n%s", code, err, out)
	}
	comments := 0
	for _, c := range []string{"sent.pcapng", "delivered.pcapng"} {
		comments += len(homaComments(t, filepath.Join(run1, c)))
	}
	if comments == 0 {
		t.Errorf("no violation as a packet comment in sent.pcapng or delivered.pcapng")
	}
	page := filepath.Join(run1, reportFile)
	if !htmltest.Available() {
		if _, err := os.Stat(page); err != nil {
			t.Fatal(err)
		}
		return
	}
	dom := htmltest.DOM(t, page)
	for _, want := range []string{`class="fail">FAIL: `, "HOMA-GRANT-002", "HOMA-GRANT-002 (MUST): A GRANT offset never exceeds the message length",
		"homatest replay " + run1, `href="delivered.pcapng"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if pics := regexp.MustCompile(`data-rendered="[1-9]\d*x[1-9]\d*"`).FindAllString(dom, -1); len(pics) == 0 {
		t.Errorf("no sequence graph decoded in the page")
	}
}
