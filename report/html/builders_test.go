package html

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/report/html/htmltest"
	"github.com/homatest/homatest/spec"
)

// benchReport is a two-transport report with one failed tcp RPC.
func benchReport(t *testing.T) *bench.Report {
	bs := []bench.Bucket{{Lo: 1, Hi: 100, CDF: 0.5, Share: 0.5}, {Lo: 101, Hi: 10000, CDF: 1, Share: 0.5}}
	base := bench.Baseline{Points: []bench.BaselinePoint{{Size: 100, Latency: 10100}, {Size: 10000, Latency: 20000}}}
	r := &bench.Report{Workload: "w4", Load: 0.5, RateBps: 1e8, Hosts: 3, Seed: 7, Buckets: bs, Impl: "ref",
		Params: map[string]any{"tick_ns": 50000000}, Warnings: []string{"bucket 1-100: homa p50 slowdown 0.9 is below 1"}}
	for _, tr := range []struct {
		name string
		k    float64
	}{{"homa", 1}, {"tcp", 10}} {
		var recs []bench.Record
		for i := 1; i <= 100; i++ {
			recs = append(recs, bench.Record{Request: 100, Latency: time.Duration(float64(i) * tr.k * 10100)},
				bench.Record{Request: 5050, Latency: time.Duration(2 * tr.k * 15050)})
		}
		if tr.name == "tcp" {
			recs = append(recs, bench.Record{Request: 7, Err: "timeout: no response"})
		}
		s, err := bench.Analyze(bench.Run{Transport: tr.name, Records: recs, Baseline: base, Elapsed: time.Second, OfferedBps: 5e7}, bs)
		if err != nil {
			t.Fatal(err)
		}
		r.Transports = append(r.Transports, s)
	}
	return r
}

// TestBenchPage: the bench page embeds the slowdown plot (decoded by the
// browser), shows both tables as bench's text report has them, the
// warnings, and fails on a failed RPC.
func TestBenchPage(t *testing.T) {
	r := benchReport(t)
	dir := t.TempDir()
	p, err := BenchPage(r, dir, "homatest bench", []string{filepath.Join(dir, "report.json")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pass || p.Verdict != "FAIL: 1 RPC failed" || len(p.Pictures) != 1 || len(p.Tables) != 2 || p.Links[0].Href != "report.json" {
		t.Fatalf("page: pass %v verdict %q, %d pictures, %d tables, links %v", p.Pass, p.Verdict, len(p.Pictures), len(p.Tables), p.Links)
	}
	_, rows := r.BucketTable()
	if got := p.Tables[1].Rows[1].Cells; strings.Join(got, " ") != strings.Join(rows[1], " ") {
		t.Errorf("bucket row: %v, want %v", got, rows[1])
	}
	if strings.Contains(p.Subtitle, "simulated") || slices.ContainsFunc(p.Facts, func(f Fact) bool { return f.Name == "hosts" }) {
		t.Errorf("namespace bench: subtitle %q, facts %v: says simulated", p.Subtitle, p.Facts)
	}
	// A --env sim bench says so, as its text header does (it did not).
	simr := *r
	simr.Env = "sim"
	if sp, err := BenchPage(&simr, dir, "homatest bench --env sim", nil); err != nil || !strings.Contains(sp.Subtitle, ", simulated, seed") ||
		!slices.ContainsFunc(sp.Facts, func(f Fact) bool { return f.Name == "hosts" && strings.HasPrefix(f.Value, "simulated") }) {
		t.Errorf("sim bench: subtitle %q, facts %v (%v); want simulated in both", sp.Subtitle, sp.Facts, err)
	}
	// No failed RPC, but a transport that did not keep up: not a
	// comparison.
	sat := *r
	sat.Transports = append([]bench.Summary(nil), r.Transports...)
	sat.Transports[1].Errors, sat.Transports[1].FirstError = 0, ""
	sat.Transports[1].DeliveredBps = sat.Transports[1].OfferedBps / 2
	sat.Warn()
	if sp, err := BenchPage(&sat, dir, "homatest bench", nil); err != nil || sp.Pass || sp.Verdict != "NOT COMPARABLE: tcp did not keep up with the offered load" {
		t.Errorf("saturated tcp: pass %v verdict %q (%v)", sp.Pass, sp.Verdict, err)
	}
	if !htmltest.Available() {
		return
	}
	path := filepath.Join(dir, "report.html")
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DOM(t, path)
	for _, want := range []string{"FAIL: 1 RPC failed", "p99 tcp/homa", "101-10000", "is below 1", "first error: timeout: no response"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the bench page lacks %q", want)
		}
	}
	if pics := regexp.MustCompile(`data-rendered="768x480"`).FindAllString(dom, -1); len(pics) != 1 {
		t.Errorf("the slowdown plot decoded at 768x480: %v", pics)
	}
}

// TestCheckPageGraphs: the check page draws one graph per violated RPC,
// shares it between the RPC's violations (embedded once), and states each
// rule; the verdict counts what fails the check.
func TestCheckPageGraphs(t *testing.T) {
	capture := "../../cmd/homatest/internal/cli/testdata/faults/BR-21-client-ignores-resend.pcapng"
	c, err := ReadCapture(capture, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := c.RPCs()[0]
	rep := &spec.Report{Profile: "linux", RPCs: len(c.RPCs()), Violations: []spec.Finding{
		{Rule: "HOMA-RESEND-002", Level: spec.Should, Frame: 3, RPC: &r.Key, Why: "first"},
		{Rule: "HOMA-RESEND-003", Level: spec.Must, Frame: 5, RPC: &r.Key, Why: "second"},
		{Rule: "HOMA-WIRE-001", Level: spec.Must, Frame: 6, Why: "no rpc"},
	}, Rules: []spec.RuleResult{{ID: "HOMA-RESEND-002", Level: spec.Should, Checked: 2, Violated: 1}}}
	p := CheckPage([]CheckFile{{File: capture, Report: rep, Homa: "10 Homa packets", Rerun: func(rule string) string { return "rerun " + rule }, Strict: true},
		{File: "nope.pcap", Error: "cannot open"}}, "", "homatest check")
	if p.Pass || p.Verdict != "FAIL: 2 MUST and 1 SHOULD violations (--strict); 1 file not checked" || len(p.Failures) != 4 {
		t.Fatalf("verdict %q, %d failures", p.Verdict, len(p.Failures))
	}
	if !strings.HasPrefix(p.Facts[0].Value, "profile linux, 10 Homa packets, ") {
		t.Errorf("file facts: %v", p.Facts)
	}
	f := p.Failures
	if f[0].Picture == nil || f[1].Picture != f[0].Picture || f[2].Picture != nil || f[0].Rerun != "rerun HOMA-RESEND-002" ||
		!strings.HasPrefix(f[1].Expected, "HOMA-RESEND-003 (MUST): ") || f[3].Observed != "cannot open" {
		t.Errorf("failures: %+v", f)
	}
	// The page embeds the shared graph once; the second failure links to it.
	var b strings.Builder
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "data:image/png"); n != 1 || !strings.Contains(b.String(), `<a href="#failure-1">the same RPC's graph, at failure 1</a>`) {
		t.Errorf("%d embedded images, want 1 and a link from failure 2 to failure 1's", n)
	}
	if p.Failures[1].Picture == nil {
		t.Errorf("Write changed the page it was given")
	}

	if p.Tables[0].Title != "Areas: "+capture || p.Tables[0].Rows[0].Cells[0] != "resend" || !p.Tables[0].Rows[0].Bad {
		t.Errorf("area table: %+v", p.Tables[0])
	}
}

// TestCheckPageVerdict: the headline counts only what fails the check
// (MUST, and SHOULD with Strict), as check's text and JSON do; SHOULD
// warnings and findings charged to a tester are listed as warnings, not
// failures.
func TestCheckPageVerdict(t *testing.T) {
	rep := &spec.Report{Profile: "linux", Violations: []spec.Finding{
		{Rule: "HOMA-RESEND-002", Level: spec.Should, Frame: 3, Why: "late"},
		{Rule: "HOMA-WIRE-001", Level: spec.Must, Frame: 6, Why: "by the tester"},
	}}
	tester := func(f *spec.Finding) bool { return f.Frame == 6 }
	p := CheckPage([]CheckFile{{File: "x.pcap", Report: rep, Tester: tester}}, "", "homatest check")
	if !p.Pass || p.Verdict != "PASS with warnings: 1 SHOULD violation" || len(p.Failures) != 0 || len(p.Notes) != 2 ||
		!strings.HasPrefix(p.Notes[0], "warning: HOMA-RESEND-002 (SHOULD) at frame 3 of x.pcap") ||
		!strings.HasPrefix(p.Notes[1], "charged to the tester") || p.Facts[0].Value != "profile linux, 0 RPCs, 0 MUST and 1 SHOULD violations, 1 charged to the tester" {
		t.Errorf("warnings only: pass %v, %q, failures %d, notes %q, facts %v", p.Pass, p.Verdict, len(p.Failures), p.Notes, p.Facts)
	}
	p = CheckPage([]CheckFile{{File: "x.pcap", Report: rep}}, "", "homatest check")
	if p.Pass || p.Verdict != "FAIL: 1 MUST violation; 1 SHOULD warning" || len(p.Failures) != 1 || len(p.Notes) != 1 {
		t.Errorf("a MUST violation: pass %v, %q, failures %d, notes %q", p.Pass, p.Verdict, len(p.Failures), p.Notes)
	}
	if p := CheckPage([]CheckFile{{File: "x.pcap", Report: &spec.Report{Profile: "linux"}}}, "", ""); !p.Pass || p.Verdict != "PASS" {
		t.Errorf("clean: %v %q", p.Pass, p.Verdict)
	}
	// Not judged whole (check's INCOMPLETE, exit 2): neither PASS nor a
	// FAIL with nothing failed; a violation still makes it FAIL.
	clean := &spec.Report{Profile: "linux"}
	p = CheckPage([]CheckFile{{File: "x.pcap", Report: clean, Incomplete: "the snap length cut every Homa header"}}, "", "")
	if p.Pass || p.Verdict != "INCOMPLETE: the snap length cut every Homa header" || len(p.Failures) != 1 {
		t.Errorf("incomplete: pass %v, %q, failures %d", p.Pass, p.Verdict, len(p.Failures))
	}
	wantVerdictClass(t, p, "incomplete")
	p = CheckPage([]CheckFile{{File: "x.pcap", Report: clean, Damaged: "cut at frame 9"}, {File: "y.pcap", Report: clean, Incomplete: "one direction"}}, "", "")
	if p.Pass || p.Verdict != "INCOMPLETE: 2 files not judged whole" {
		t.Errorf("damaged and incomplete: pass %v, %q", p.Pass, p.Verdict)
	}
	p = CheckPage([]CheckFile{{File: "x.pcap", Report: rep, Incomplete: "one direction"}}, "", "")
	if p.Pass || p.Verdict != "FAIL: 1 MUST violation; 1 SHOULD warning" {
		t.Errorf("incomplete with a MUST violation: pass %v, %q", p.Pass, p.Verdict)
	}
	wantVerdictClass(t, p, "fail")
}

// wantVerdictClass checks that p's rendered verdict box has class want
// (pass green, fail red, incomplete amber).
func wantVerdictClass(t *testing.T, p *Page, want string) {
	t.Helper()
	var b strings.Builder
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	if tag := `<div id="verdict" class="` + want + `">`; !strings.Contains(b.String(), tag) {
		t.Errorf("verdict %q: page lacks %s", p.Verdict, tag)
	}
}

// TestRunPageUnsupported: the run page lists unsupported specs one line
// per reason (conformance.Unsupported), as run's text does, not one note
// per spec.
func TestRunPageUnsupported(t *testing.T) {
	lacks := `unsupported: the IUT does not declare capability "grants"`
	ps := &conformance.Result{Env: "x", Specs: []conformance.SpecResult{
		{Name: "grants GRANT-long-request: a long request", Area: "grant", Level: "MUST", State: "unsupported", Failure: lacks},
		{Name: "grants GRANT-srpt: SRPT order", Area: "grant", Level: "MUST", State: "unsupported", Failure: lacks},
		{Name: "resend RESEND-gap: a gap", Area: "resend", Level: "MUST", State: "passed"},
	}}
	p := RunPage([]*conformance.Result{ps}, RunInput{Impl: "m.yaml", Env: "sim"})
	want := `2 specs unsupported by this IUT's manifest, for the capabilities it does not declare, "grants" (2): GRANT-long-request, GRANT-srpt`
	if len(p.Notes) != 1 || p.Notes[0] != want {
		t.Errorf("notes %q, want [%q]", p.Notes, want)
	}
}

// TestRunPageNotJudged: a spec timing-inconclusive in every rerun makes
// the page INCOMPLETE, not PASS, and is named in a note with its reason.
func TestRunPageNotJudged(t *testing.T) {
	ps := &conformance.Result{Env: "x", Specs: []conformance.SpecResult{
		{Name: "grants GRANT-srpt: SRPT order", Area: "grant", Level: "MUST", State: "inconclusive", Failure: "timing-inconclusive: not judged", TimingInconclusive: []string{"HOMA-ACK-008: late (stall)"}},
		{Name: "resend RESEND-gap: a gap", Area: "resend", Level: "MUST", State: "passed"},
	}}
	p := RunPage([]*conformance.Result{ps}, RunInput{Impl: "ref", Env: "ns"})
	if p.Pass || !strings.HasPrefix(p.Verdict, "INCOMPLETE") || !strings.Contains(p.Verdict, "1 not judged") {
		t.Errorf("pass %v, verdict %q; want INCOMPLETE naming 1 spec not judged", p.Pass, p.Verdict)
	}
	wantVerdictClass(t, p, "incomplete")
	if len(p.Notes) != 1 || p.Notes[0] != "NOT JUDGED grants GRANT-srpt: SRPT order: timing-inconclusive: not judged" {
		t.Errorf("notes %q", p.Notes)
	}
}

// TestReadCaptureRPCs: reading a capture for some RPCs only keeps their
// packets alone, and groups and draws each as reading it whole does.
func TestReadCaptureRPCs(t *testing.T) {
	capture := "../../pcap/testdata/real/linux-6.13-proto146/b-500k-grants.pcap"
	whole, err := ReadCapture(capture, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.RPCs()) < 2 {
		t.Fatalf("%d RPCs in %s, want several", len(whole.RPCs()), capture)
	}
	for _, r := range []*spec.RPC{whole.RPCs()[0], whole.RPCs()[len(whole.RPCs())-1]} {
		c, err := ReadCaptureRPCs(capture, 0, map[spec.RPCKey]bool{r.Key: true})
		if err != nil {
			t.Fatal(err)
		}
		got := c.Find(r.Key)
		if got == nil || len(c.events) >= len(whole.events) || len(c.RPCs()) != 1 {
			t.Fatalf("RPC %v: %d events of %d, %d RPCs; want only its own", r.Key, len(c.events), len(whole.events), len(c.RPCs()))
		}
		if got.FirstFrame != r.FirstFrame || !got.First.Equal(r.First) || !got.Last.Equal(r.Last) || got.Request.Length != r.Request.Length || got.Response.Length != r.Response.Length {
			t.Errorf("RPC %v grouped as %+v, want %+v", r.Key, got, r)
		}
		a, errA := c.Graph(got)
		b, errB := whole.Graph(r)
		if errA != nil || errB != nil || a.Caption != b.Caption || !bytes.Equal(a.PNG, b.PNG) {
			t.Errorf("RPC %v: graph %q (%v), want %q (%v)", r.Key, a.Caption, errA, b.Caption, errB)
		}
	}
}
