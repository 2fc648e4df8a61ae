package check

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/homatest/homatest/internal/stall"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// realDir holds real HomaModule captures (pcap/testdata/real/README.md).
const realDir = "../pcap/testdata/real"

// scaledTimers are the timer sysctls the real captures ran with (x10).
var scaledTimers = []string{"resend_ticks=50", "resend_interval=50", "timeout_ticks=1000", "request_ack_ticks=20"}

func opts() Options {
	return Options{Profile: "auto", Level: spec.Should, CapturePoint: "auto", Params: scaledTimers}
}

// TestFileRealCaptures: the real captures, judged with the timer sysctls
// they ran with, pass; the profile follows the wire format and the
// capture point is a tap between two hosts.
func TestFileRealCaptures(t *testing.T) {
	for _, c := range []struct{ file, profile string }{
		{"linux-6.13-proto146/a-small-rpcs.pcap", "linux"},
		{"linux-6.13-proto146/b-500k-grants.pcap", "linux"},
		{"linux-6.1-proto253/a-small-rpcs.pcap", "linux-2024"},
		{"linux-6.1-proto253/e2-server-forgets-request.pcap", "linux-2024"},
	} {
		fr := File(opts(), filepath.Join(realDir, c.file))
		if fr.Error != "" {
			t.Fatalf("%s: %s", c.file, fr.Error)
		}
		if fr.Profile != c.profile || fr.Verdict != "pass" || fr.Must+fr.Should != 0 {
			t.Errorf("%s: profile %s verdict %s (%d MUST, %d SHOULD), want %s, pass", c.file, fr.Profile, fr.Verdict, fr.Must, fr.Should, c.profile)
		}
		if fr.CapturePoint != "switch" || !strings.HasPrefix(fr.CapturePointWhy, "two hosts and no direction marks") {
			t.Errorf("%s: capture point %s (%s), want switch", c.file, fr.CapturePoint, fr.CapturePointWhy)
		}
		if fr.Stats == nil || fr.Stats.Homa == 0 || fr.Report == nil || fr.Report.RPCs == 0 {
			t.Errorf("%s: stats %+v, report %v: want packets and RPCs", c.file, fr.Stats, fr.Report)
		}
		if fr.Params["resend_ticks"] != "50" {
			t.Errorf("%s: params %v, want resend_ticks 50 from Options.Params", c.file, fr.Params)
		}
	}
}

// TestFileHints: without its timer sysctls a real capture fails, and each
// violation that the inferred resend_ticks removes says so.
func TestFileHints(t *testing.T) {
	o := opts()
	o.Params = nil
	fr := File(o, filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap"))
	if fr.Error != "" || fr.Verdict != "fail" || fr.Must == 0 {
		t.Fatalf("verdict %s, %d MUST (%s), want fail", fr.Verdict, fr.Must, fr.Error)
	}
	hinted := 0
	for _, v := range fr.Report.Violations {
		if strings.HasPrefix(v.Hint, "not a violation if the hosts ran with --param resend_ticks=") {
			hinted++
		}
	}
	if hinted == 0 {
		t.Errorf("no violation hints at resend_ticks")
	}
	i := slices.IndexFunc(fr.Inferred, func(x InferredParam) bool { return x.Name == "resend_ticks" })
	if i < 0 || !fr.Inferred[i].Differs || fr.Inferred[i].Profile != "5" {
		t.Errorf("inferred %+v, want resend_ticks differing from the profile's 5", fr.Inferred)
	}
}

// TestFileWithInferred: the real captures taken with the timer sysctls
// scaled, checked without them, fail; every violation names the --param
// (or set of them) that removes it, and checking again with all the
// inferred values at once, as the report offers, passes.
func TestFileWithInferred(t *testing.T) {
	for _, name := range []string{"linux-6.1-proto253/c-500k-loss3pct-server-side.pcap", "linux-6.1-proto253/e2-server-forgets-request.pcap",
		"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap"} {
		o := opts()
		o.Params = nil
		fr := File(o, filepath.Join(realDir, name))
		if fr.Verdict != "fail" || fr.WithInferred == nil {
			t.Errorf("%s: verdict %s (%s), rerun with inferred values %+v; want fail and a rerun", name, fr.Verdict, fr.Error, fr.WithInferred)
			continue
		}
		for _, v := range fr.Report.Violations {
			if !strings.HasPrefix(v.Hint, "not a violation if the hosts ran with --param ") {
				t.Errorf("%s: %s at frame %d has no hint", name, v.Rule, v.Frame)
			}
		}
		if w := fr.WithInferred; w.Must != 0 || w.Should != 0 || len(w.Params) < 2 {
			t.Errorf("%s: with %v: %d MUST, %d SHOULD, want 0", name, w.Params, w.Must, w.Should)
		}
		o.Params = fr.WithInferred.Params
		if again := File(o, filepath.Join(realDir, name)); again.Verdict != "pass" {
			t.Errorf("%s: with --param %v: verdict %s, %d MUST", name, o.Params, again.Verdict, again.Must)
		}
	}
}

// TestFileProgressCountsOnce: Options.Progress counts a file's frames
// once, though a check that finds violations reads it again (with the
// inferred parameters); a trial saw the progress line count every pass.
func TestFileProgressCountsOnce(t *testing.T) {
	o := opts()
	o.Params = nil
	var n atomic.Int64
	o.Progress = &n
	fr := File(o, filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap"))
	if fr.WithInferred == nil || fr.Stats == nil {
		t.Fatalf("want a second pass with inferred parameters: %+v (%s)", fr.WithInferred, fr.Error)
	}
	if got, want := n.Load(), int64(fr.Stats.Frames); got != want {
		t.Errorf("progress counted %d frames, want the file's %d", got, want)
	}
}

// TestFilesInOrder: reports come back in the order of the files, bad ones
// with their error.
func TestFilesInOrder(t *testing.T) {
	files := []string{
		filepath.Join(realDir, "linux-6.1-proto253/a-small-rpcs.pcap"),
		filepath.Join(t.TempDir(), "missing.pcap"),
		filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"),
	}
	reps := Files(opts(), files)
	if len(reps) != 3 {
		t.Fatalf("%d reports", len(reps))
	}
	for i, fr := range reps {
		if fr.File != files[i] {
			t.Errorf("report %d is of %s, want %s", i, fr.File, files[i])
		}
	}
	if reps[0].Profile != "linux-2024" || reps[2].Profile != "linux" {
		t.Errorf("profiles %s, %s", reps[0].Profile, reps[2].Profile)
	}
	if !strings.Contains(reps[1].Error, "cannot open capture") || reps[1].Verdict != "error" {
		t.Errorf("missing file: error %q verdict %q", reps[1].Error, reps[1].Verdict)
	}
}

// TestFileNoHoma: a readable capture without Homa packets is an error.
func TestFileNoHoma(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.pcapng")
	w, err := pcap.Create(p, pcap.Interface{Name: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fr := File(opts(), p); !strings.Contains(fr.Error, "no Homa packets") {
		t.Errorf("error %q, want no Homa packets", fr.Error)
	}
}

// TestOptionsValidate: each bad option names its flag and what it wants.
func TestOptionsValidate(t *testing.T) {
	if err := opts().Validate(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for _, c := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Profile = "bsd" }, "--profile: "},
		{func(o *Options) { o.Params = []string{"unsched_bytes"} }, `--param "unsched_bytes": want NAME=VALUE`},
		{func(o *Options) { o.Params = []string{"nope=1"} }, `--param: unknown parameter "nope"`},
		{func(o *Options) { o.Params = []string{"unsched_bytes=x"} }, "--param: "},
		{func(o *Options) { o.Rules = "HOMA-NOPE-*" }, "--rules: "},
	} {
		o := opts()
		c.mod(&o)
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
}

// copyReal copies the real capture name (under realDir) to a new
// temporary folder as base, with nothing beside it, and returns its path.
func copyReal(t *testing.T, name, base string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir, name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), base)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParamsHint: a capture whose parameters the check inferred, with no
// .params file beside it (a run's capture cut with editcap loses it), says
// so and what it was judged with; with the file beside it, nothing (and
// no file is made).
func TestParamsHint(t *testing.T) {
	p := copyReal(t, "linux-6.1-proto253/e2-server-forgets-request.pcap", "cut.pcap")
	o := opts()
	o.Params = nil
	fr := File(o, p)
	if len(fr.Inferred) == 0 || !strings.HasPrefix(fr.ParamsHint, "no "+p+".params beside the capture, so it was judged with profile linux-2024's values;") ||
		!strings.Contains(fr.ParamsHint, "editcap") {
		t.Errorf("inferred %d, params hint %q", len(fr.Inferred), fr.ParamsHint)
	}
	if _, err := os.Stat(p + ".params"); !os.IsNotExist(err) {
		t.Errorf("the check made %s.params: %v", p, err)
	}
	o = opts() // the real timers by --param: said
	o.InferParams = true
	if fr := File(o, p); !strings.Contains(fr.ParamsHint, "values and the --param given;") {
		t.Errorf("with --param: params hint %q", fr.ParamsHint)
	}
	if err := os.WriteFile(p+".params", []byte(strings.Join(scaledTimers, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Params = nil
	if fr := File(o, p); fr.ParamsHint != "" || fr.ParamsFile != p+".params" || len(fr.Inferred) == 0 {
		t.Errorf("with the file: params hint %q, file %q, inferred %d", fr.ParamsHint, fr.ParamsFile, len(fr.Inferred))
	}
}

// TestParamsFile: the run's capture.pcapng.params sets parameters before
// Options.Params, which override it; a bad line is the file's error.
func TestParamsFile(t *testing.T) {
	p := copyReal(t, "linux-6.13-proto146/a-small-rpcs.pcap", "c.pcap")
	side := "# the run's parameters\n\nunsched_bytes=30000\nresend_ticks=7\n"
	if err := os.WriteFile(p+".params", []byte(side), 0o644); err != nil {
		t.Fatal(err)
	}
	fr := File(opts(), p)
	if fr.Error != "" || fr.ParamsFile != p+".params" {
		t.Fatalf("error %q, params file %q", fr.Error, fr.ParamsFile)
	}
	if fr.Params["unsched_bytes"] != "30000" || fr.Params["resend_ticks"] != "50" {
		t.Errorf("params %v: want unsched_bytes 30000 (file), resend_ticks 50 (Options)", fr.Params)
	}
	if err := os.WriteFile(p+".params", []byte("unsched_bytes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fr := File(opts(), p); !strings.Contains(fr.Error, "line 1: \"unsched_bytes\" is not NAME=VALUE") {
		t.Errorf("error %q, want the bad line", fr.Error)
	}
	// A directory of that name is an error too (it used to be ignored,
	// and the capture judged with the profile's parameters).
	os.Remove(p + ".params")
	if err := os.Mkdir(p+".params", 0o755); err != nil {
		t.Fatal(err)
	}
	if fr := File(opts(), p); !strings.Contains(fr.Error, p+".params: cannot read it") || strings.Contains(fr.Error, "\n") {
		t.Errorf("a directory %s.params: error %q, want one naming it", p, fr.Error)
	}
	os.Remove(p + ".params")
	if err := os.Mkdir(p+".stalls.json", 0o755); err != nil {
		t.Fatal(err)
	}
	if fr := File(opts(), p); !strings.Contains(fr.Error, p+".stalls.json: cannot read it") {
		t.Errorf("a directory %s.stalls.json: error %q, want one naming it", p, fr.Error)
	}
}

// TestParamsAgreeAsAWhole: a .params file and --param flags are applied
// whole before the set is checked, so values that must agree
// (max_sched_prio below num_priorities) may come in any order, against
// a profile whose own values they both replace (upstream's
// num_priorities 1). Before, the file's lines were checked one at a
// time in name order: max_sched_prio=3 against num_priorities 1, exit 2
// for every run capture checked with --profile upstream; so was
// --param max_sched_prio=3 --param num_priorities=8.
func TestParamsAgreeAsAWhole(t *testing.T) {
	p := copyReal(t, "linux-6.13-proto146/a-small-rpcs.pcap", "c.pcap")
	if err := os.WriteFile(p+".params", []byte("max_sched_prio=3\nnum_priorities=8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.Profile = "upstream"
	fr := File(o, p)
	if fr.Error != "" || fr.Params["num_priorities"] != "8" || fr.Params["max_sched_prio"] != "3" {
		t.Fatalf(".params: error %q, params num_priorities %s max_sched_prio %s; want none, 8, 3", fr.Error, fr.Params["num_priorities"], fr.Params["max_sched_prio"])
	}
	os.Remove(p + ".params")
	o.Params = append(slices.Clone(o.Params), "max_sched_prio=3", "num_priorities=8")
	if fr := File(o, p); fr.Error != "" {
		t.Fatalf("--param max_sched_prio=3 --param num_priorities=8: error %q", fr.Error)
	}
	o.Params = append(o.Params, "num_priorities=2")
	fr = File(o, p)
	if want := "--param: parameter max_sched_prio: 3 must be below num_priorities 2: set max_sched_prio to 1 or less, or num_priorities to 4 or more"; fr.Error != want {
		t.Errorf("disagreeing --param: error %q, want %q", fr.Error, want)
	}
}

var (
	h1 = netip.MustParseAddr("10.0.0.1")
	h2 = netip.MustParseAddr("10.0.0.2")
	h3 = netip.MustParseAddr("10.0.0.3")
)

// TestAddrTally: addresses past the inline slice spill into the map, and
// counts gives every address's count, folding what is added after it too.
func TestAddrTally(t *testing.T) {
	var tl addrTally
	want := map[netip.Addr]int{}
	for i := range 3 * addrTallyInline {
		a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i % (addrTallyInline + 4))})
		tl.add(a)
		want[a]++
	}
	if len(tl.as) != addrTallyInline || len(tl.more) != 4 {
		t.Fatalf("%d inline, %d in the map; want %d and 4", len(tl.as), len(tl.more), addrTallyInline)
	}
	if got := tl.counts(); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	tl.add(h1)
	tl.add(netip.AddrFrom4([4]byte{10, 0, 1, 0}))
	want[h1]++
	want[netip.AddrFrom4([4]byte{10, 0, 1, 0})]++
	if got := tl.counts(); !maps.Equal(got, want) {
		t.Fatalf("after two more adds: counts %v, want %v", got, want)
	}
}

// TestPlanCapture: the capture point follows the capture's layout, and a
// flag that the capture cannot support is an error.
func TestPlanCapture(t *testing.T) {
	two := &layout{homa: 10, hosts: addrTally{more: map[netip.Addr]int{h1: 10, h2: 10}}}
	star := &layout{homa: 10, hosts: addrTally{more: map[netip.Addr]int{h1: 10, h2: 5, h3: 5}}}
	ports := &layout{homa: 4, dirIn: 2, dirOut: 2, hosts: addrTally{more: map[netip.Addr]int{h1: 4, h2: 4}}, ifaces: map[int]*ifaceLayout{
		0: {name: "p1", in: 1, out: 1, from: addrTally{more: map[netip.Addr]int{h1: 1}}, to: addrTally{more: map[netip.Addr]int{h1: 1}}},
		1: {name: "p2", in: 1, out: 1, from: addrTally{more: map[netip.Addr]int{h2: 1}}, to: addrTally{more: map[netip.Addr]int{h2: 1}}},
	}}
	sent := &layout{homa: 4, dirIn: 4, hosts: two.hosts}
	delivered := &layout{homa: 4, dirOut: 4, hosts: two.hosts}
	notes := &layout{homa: 2, commented: 2, dropped: 1, hosts: two.hosts}
	for _, c := range []struct {
		name, flag string
		l          *layout
		want       string
	}{
		{"two hosts", "auto", two, "switch"},
		{"one host talks with all", "auto", star, "host:10.0.0.1"},
		{"both directions", "auto", ports, "ports"},
		{"inbound only", "auto", sent, "sent"},
		{"outbound only", "auto", delivered, "delivered"},
		{"switch notes", "auto", notes, "none"},
		{"notes judged anyway", "switch", notes, "switch"},
		{"host flag", "host:10.0.0.2", two, "host:10.0.0.2"},
		{"ports flag", "ports", ports, "ports"},
	} {
		p, err := planCapture(c.flag, c.l)
		if err != nil || p.String() != c.want {
			t.Errorf("%s: %v (%v), want %s", c.name, p, err, c.want)
		}
	}
	if p, _ := planCapture("auto", ports); p.ports[0] != h1 || p.ports[1] != h2 {
		t.Errorf("ports %v, want p1 %v and p2 %v", p.ports, h1, h2)
	}
	// One view forced on every switch port's capture warns; on a tap's
	// capture it does not.
	if p, _ := planCapture("switch", ports); !strings.Contains(p.why, "WARNING: the frames carry both directions per interface") {
		t.Errorf("--capture-point switch on a ports capture: %q, want a warning", p.why)
	}
	if p, _ := planCapture("switch", two); strings.Contains(p.why, "WARNING") {
		t.Errorf("--capture-point switch on a tap's capture: %q", p.why)
	}
	// One port's frames (one interface extracted from a ports capture)
	// at its host's point hold each packet once: no warning. At another
	// host's point, or with a second port's frames, each may count twice.
	onePort := &layout{homa: 2, dirIn: 1, dirOut: 1, hosts: two.hosts, ifaces: map[int]*ifaceLayout{
		0: ports.ifaces[0], 1: {name: "p2"},
	}}
	if p, _ := planCapture("host:"+h1.String(), onePort); p.bothDirs || strings.Contains(p.why, "WARNING") {
		t.Errorf("--capture-point host:%v on %v's port alone: %q, want no warning", h1, h1, p.why)
	}
	for _, c := range []struct {
		h netip.Addr
		l *layout
	}{{h2, onePort}, {h1, ports}} {
		if p, _ := planCapture("host:"+c.h.String(), c.l); !p.bothDirs || !strings.Contains(p.why, "WARNING: the frames carry both directions per interface") {
			t.Errorf("--capture-point host:%v on %d ports: %q, want a warning", c.h, len(c.l.ifaces), p.why)
		}
	}
	for _, c := range []struct {
		flag string
		l    *layout
		want string
	}{
		{"ports", two, "needs a pcapng whose frames carry both directions"},
		{"host:10.0.0.3", two, "no Homa packet of the capture is to or from 10.0.0.3"},
		{"middle", two, "want auto, switch, host:ADDR, sent, delivered or ports"},
	} {
		if _, err := planCapture(c.flag, c.l); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--capture-point %s: %v, want %q", c.flag, err, c.want)
		}
	}
}

// TestMergeHostReports: a packet is in two host views; the merged report
// counts and lists each view's passes and inconclusive findings (whichever
// host they are charged to), the violations each view charges to its own
// host, and sums the downgrades.
func TestMergeHostReports(t *testing.T) {
	rr := func(passed, inc, violated int) []spec.RuleResult {
		return []spec.RuleResult{{ID: "HOMA-X-001", Level: spec.Must, Checked: passed + inc + violated, Passed: passed, Inconclusive: inc, Violated: violated}}
	}
	v1 := spec.Finding{Rule: "HOMA-X-001", Frame: 7, ChargedTo: h1}
	v2 := spec.Finding{Rule: "HOMA-X-001", Frame: 3, ChargedTo: h2}
	inc := spec.Finding{Rule: "HOMA-X-001", Frame: 5, ChargedTo: h2}
	inc1 := spec.Finding{Rule: "HOMA-X-001", Frame: 6, ChargedTo: h2}
	hrs := []spec.HostReport{
		{Host: h1, Violations: []spec.Finding{v1}, Report: &spec.Report{Profile: "linux", RPCs: 2, Events: 10, Rules: rr(4, 1, 2),
			Inconclusive: []spec.Finding{inc1},
			Downgrades:   []spec.DowngradeCount{{Rule: "HOMA-X-001", Cause: "c", Count: 2, Frame: 9}}}},
		{Host: h2, Violations: []spec.Finding{v2}, Report: &spec.Report{Profile: "linux", RPCs: 3, Events: 10, Rules: rr(5, 1, 1),
			Inconclusive: []spec.Finding{inc},
			Downgrades:   []spec.DowngradeCount{{Rule: "HOMA-X-001", Cause: "c", Count: 1, Frame: 4}}}},
	}
	m := mergeHostReports(hrs)
	if m.CapturePoint != "ports" || m.Events != 20 || m.RPCs != 3 {
		t.Errorf("capture point %s, %d events, %d RPCs: want ports, 20, 3", m.CapturePoint, m.Events, m.RPCs)
	}
	r := m.Rules[0]
	if r.Passed != 9 || r.Inconclusive != 2 || r.Violated != 2 || r.Checked != 13 {
		t.Errorf("rule %+v: want 9 passed, 2 inconclusive, 2 violated, 13 checked", r)
	}
	if len(m.Violations) != 2 || m.Violations[0].Frame != 3 || m.Violations[1].Frame != 7 {
		t.Errorf("violations %+v: want frames 3, 7", m.Violations)
	}
	if len(m.Inconclusive) != 2 || m.Inconclusive[0].Frame != 5 || len(m.Downgrades) != 1 || m.Downgrades[0].Count != 3 || m.Downgrades[0].Frame != 4 {
		t.Errorf("inconclusive %+v, downgrades %+v: want frames 5, 6 (as counted), one of 3 first at frame 4", m.Inconclusive, m.Downgrades)
	}
}

// TestExcuseStalls: a timing violation a measured stall overlaps (within
// its tolerance) and could account for becomes inconclusive; one
// elsewhere, without a tolerance, or later than the stall lost, stays.
func TestExcuseStalls(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	rep := func() *spec.Report {
		return &spec.Report{
			Rules: []spec.RuleResult{{ID: "HOMA-X-001", Violated: 2}, {ID: "HOMA-X-002", Violated: 1}},
			Violations: []spec.Finding{
				{Rule: "HOMA-X-001", Frame: 1, Time: t0, Slack: time.Millisecond},
				{Rule: "HOMA-X-001", Frame: 2, Time: t0.Add(time.Second), Slack: time.Millisecond},
				{Rule: "HOMA-X-002", Frame: 3, Time: t0},
			}}
	}
	r := rep()
	span := []stall.Span{{From: t0.Add(500 * time.Microsecond), To: t0.Add(2 * time.Millisecond), Who: "agent h1", Lost: time.Millisecond}}
	if n := len(excuseStalls(r, span)); n != 1 {
		t.Fatalf("%d excused, want 1", n)
	}
	if len(r.Violations) != 2 || r.Violations[0].Frame != 2 || r.Violations[1].Frame != 3 {
		t.Errorf("violations %+v: want frames 2 and 3 left", r.Violations)
	}
	if len(r.Inconclusive) != 1 || !strings.Contains(r.Inconclusive[0].Why, "timing-inconclusive: agent h1") {
		t.Errorf("inconclusive %+v", r.Inconclusive)
	}
	if r.Rules[0].Violated != 1 || r.Rules[0].Inconclusive != 1 || r.Rules[1].Violated != 1 {
		t.Errorf("rules %+v", r.Rules)
	}
	// A violation far later than the stall lost (a GRANT a second late,
	// a 1 ms stall in its window) stands; one the stall could account
	// for is excused.
	r = rep()
	r.Violations[0].Late = time.Second
	if n := len(excuseStalls(r, span)); n != 0 || len(r.Violations) != 3 {
		t.Errorf("a violation 1s late, a 1ms stall: %d excused, %d violations left; want 0 and 3", n, len(r.Violations))
	}
	r = rep()
	r.Violations[0].Late = time.Millisecond
	if n := len(excuseStalls(r, span)); n != 1 {
		t.Errorf("a violation 1ms late, a 1ms stall: %d excused, want 1", n)
	}
	r = rep()
	if n := len(excuseStalls(r, nil)); n != 0 || len(r.Violations) != 3 {
		t.Errorf("no stalls: %d excused, %d violations left", n, len(r.Violations))
	}
}

// TestStallsFile: the stalls next to a capture (FILE.stalls.json, else the
// folder's stalls.json) are found and read; a damaged one is an error.
func TestStallsFile(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "capture.pcapng")
	if spans, name, err := readStallsFile(c); spans != nil || name != "" || err != nil {
		t.Errorf("none: %v %q %v", spans, name, err)
	}
	b, _ := json.Marshal([]stall.Span{{Who: "switch"}})
	if err := os.WriteFile(filepath.Join(dir, "stalls.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if spans, name, err := readStallsFile(c); len(spans) != 1 || name != filepath.Join(dir, "stalls.json") || err != nil {
		t.Errorf("folder's: %v %q %v", spans, name, err)
	}
	if err := os.WriteFile(c+".stalls.json", []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, name, err := readStallsFile(c); name != c+".stalls.json" || err == nil {
		t.Errorf("damaged: %q %v, want its error", name, err)
	}
}

// TestFileWireForcesProfile: Options.Wire picks the profile with "auto".
func TestFileWireForcesProfile(t *testing.T) {
	o := opts()
	o.Wire = wire.Version2024
	fr := File(o, filepath.Join(realDir, "linux-6.1-proto253/a-small-rpcs.pcap"))
	if fr.Error != "" || fr.Profile != spec.ProfileForWire(wire.Version2024) {
		t.Errorf("profile %s (%s), want %s", fr.Profile, fr.Error, spec.ProfileForWire(wire.Version2024))
	}
}

// TestTickNotInferredBelowConfigured: a host that repeats NEED_ACK twice a
// tick (fault ACK-006) implies no shorter tick: the hosts' timer is their
// configuration, so no hint may explain the fault away with one.
func TestTickNotInferredBelowConfigured(t *testing.T) {
	o := opts()
	o.Params = nil
	fr := File(o, filepath.Join("..", "cmd", "homatest", "internal", "cli", "testdata", "faults", "ACK-006-need-ack-twice-per-tick.pcapng"))
	if fr.Verdict != "fail" || fr.Must == 0 {
		t.Fatalf("verdict %s, %d MUST (%s): want the fault flagged", fr.Verdict, fr.Must, fr.Error)
	}
	for _, x := range fr.Inferred {
		if x.Name == "tick" {
			t.Errorf("inferred tick %s (%s): below the configured 1ms", x.Value, x.Evidence)
		}
	}
	for _, v := range fr.Report.Violations {
		if strings.Contains(v.Hint, "tick=") {
			t.Errorf("%s frame %d hinted away with a tick: %s", v.Rule, v.Frame, v.Hint)
		}
	}
}

// TestDropsHint: the line about a capture's drops says where the count
// comes from and what it did: findings excused, too few drops for where
// the findings are (all stay violations, or at some ports of a capture of
// switch ports), or nothing to excuse; nothing without drops.
func TestDropsHint(t *testing.T) {
	for _, tc := range []struct {
		rep      spec.Report
		declared uint64
		flag     uint64
		from     string
		want     string
		other    map[string]int
	}{
		{spec.Report{CaptureDrops: 5, CaptureDropLimit: 30, CaptureDropExcused: 2}, 0, 0, "unreadable link types",
			"5 frames on a link type homatest cannot read are unseen packets: 2 findings", map[string]int{"unsupported-link-UnknownLinkType": 5, "arp": 3}},
		{spec.Report{}, 0, 0, "", "", nil},
		{spec.Report{CaptureDrops: 3, CaptureDropLimit: 18, CaptureDropExcused: 7}, 3, 0, "interface statistics",
			"the capture dropped 3 packets: 7 findings that rest on a packet not seen may be its doing and are inconclusive; re-capture", nil},
		{spec.Report{CaptureDrops: 1, CaptureDropLimit: 6, CaptureDropExcused: 1}, 0, 1, "--capture-drops",
			"the capture dropped 1 packet: 1 finding that rests on a packet not seen may be its doing and is inconclusive; re-capture", nil},
		{spec.Report{CaptureDrops: 1, CaptureDropLimit: 6, CaptureDropTooMany: true}, 1, 0, "interface statistics",
			"the capture dropped 1 packet, which can touch at most 6 RPCs, but the findings that rest on a packet not seen are at more: they cannot all be the capture's doing and stay violations; re-capture", nil},
		// Merged: every violation is inconclusive, so none "stays" one.
		{spec.Report{CaptureDrops: 1, CaptureDropLimit: 6, CaptureDropTooMany: true, Merged: &spec.Merged{}}, 1, 0, "interface statistics",
			"the capture dropped 1 packet, which can touch at most 6 RPCs, but the findings that rest on a packet not seen are at more, so they cannot all be the capture's doing; this capture looks merged (WARNING above), which leaves every violation inconclusive: judge the captures apart, then re-capture", nil},
		{spec.Report{CaptureDrops: 4, CaptureDropLimit: 12, CaptureDropExcused: 2, CaptureDropTooMany: true}, 2, 4, "--capture-drops",
			"the capture dropped 4 packets: 2 findings that rest on a packet not seen may be its doing and are inconclusive, but at some ports", nil},
		{spec.Report{CaptureDrops: 2, CaptureDropLimit: 12}, 2, 0, "interface statistics",
			"the capture dropped 2 packets; no violation rests on a packet it may have missed", nil},
	} {
		from, hint := dropsHint(&tc.rep, pcap.Stats{CaptureDrops: tc.declared, Other: tc.other}, tc.flag)
		if from != tc.from || !strings.HasPrefix(hint, tc.want) || (tc.want == "") != (hint == "") {
			t.Errorf("%+v: from %q hint %q; want %q and a hint starting %q", tc.rep, from, hint, tc.from, tc.want)
		}
	}
}

// TestFileUnreadLink: a capture whose every other frame is on an
// interface of a link type homatest cannot read (147, user-defined) is
// not judged as if those frames did not exist: they count as unseen
// packets, the findings resting on them are inconclusive, and the verdict
// is incomplete, not fail.
func TestFileUnreadLink(t *testing.T) {
	// Every other frame on the second interface.
	path := rewriteReal(t, "mixed.pcapng", []pcap.Interface{{Name: "eth"}, {Name: "usr", LinkType: 147}}, func(i int, _ []byte) int { return i % 2 })
	fr := File(opts(), path)
	if fr.Error != "" || fr.Verdict != "incomplete" || fr.Must != 0 || fr.CaptureDropsFrom != "unreadable link types" ||
		!strings.HasPrefix(fr.CaptureDropsHint, "23 frames on a link type homatest cannot read are unseen packets") {
		t.Errorf("verdict %s (%d MUST, error %q), drops from %q: %s; want incomplete, 0 MUST, 23 unread frames",
			fr.Verdict, fr.Must, fr.Error, fr.CaptureDropsFrom, fr.CaptureDropsHint)
	}
}

// rewriteReal copies the real capture linux-6.13 a-small-rpcs.pcap into
// a pcapng file name in a test folder with interfaces ifs, each frame
// (counted from 0) on the interface each returns after it may change the
// frame's bytes in place; it returns the new file's path.
func rewriteReal(t *testing.T, name string, ifs []pcap.Interface, each func(i int, data []byte) int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	w, err := pcap.Create(path, ifs...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		data, ci, err := in.ReadPacketData()
		if err != nil {
			break
		}
		if err := w.WritePacket(each(i, data), ci.Timestamp, data, ci.Length, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFileFrameHint: a Homa frame whose IPv4 total length exceeds the
// uncut frame (a damaged IP header or frame), which decode's summary
// notes, is reported by check too (FrameHint, in decode's words), judged
// as the frame holds it, and fails HOMA-WIRE-015 (a receiver's IP layer
// drops it) and nothing else; a capture without one has no hint.
func TestFileFrameHint(t *testing.T) {
	path := rewriteReal(t, "iplen.pcapng", []pcap.Interface{{Name: "eth"}}, func(i int, data []byte) int {
		if i == 2 { // the third frame, a DATA: IPv4 total length 100 bytes more than sent, checksum fixed
			ip := data[14:34]
			binary.BigEndian.PutUint16(ip[2:], binary.BigEndian.Uint16(ip[2:])+100)
			ip[10], ip[11] = 0, 0
			binary.BigEndian.PutUint16(ip[10:], wire.IPv4HeaderChecksum(ip))
		}
		return 0
	})
	fr := File(opts(), path)
	want := "damaged frames, judged as they hold their packets: 1 Homa frame with an IP length longer than the frame"
	if fr.Error != "" || fr.Verdict != "fail" || fr.Stats.IPLengthMismatch != 1 || fr.FrameHint != want {
		t.Errorf("verdict %s (error %q), ip length mismatch %d, frame hint %q; want fail, 1, %q", fr.Verdict, fr.Error, fr.Stats.IPLengthMismatch, fr.FrameHint, want)
	}
	if v := fr.Report.Violations; len(v) != 1 || v[0].Rule != "HOMA-WIRE-015" || v[0].Frame != 3 {
		t.Errorf("violations %+v, want one of HOMA-WIRE-015 at frame 3", v)
	}
	if fr := File(opts(), filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")); fr.FrameHint != "" {
		t.Errorf("whole capture: frame hint %q", fr.FrameHint)
	}
}
