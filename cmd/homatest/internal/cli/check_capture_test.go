package cli

import (
	"encoding/json"
	"encoding/xml"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"

	"github.com/homatest/homatest/conformance"
)

// writeCase writes scenario id-slug of the fault catalogue (faulty or
// clean) to dir and returns its path.
func writeCase(t *testing.T, dir, file string, fault bool) string {
	t.Helper()
	for _, fc := range faultCases() {
		if fc.file() == file {
			p := filepath.Join(dir, map[bool]string{true: "", false: "clean-"}[fault]+file)
			if _, err := fc.build(fault).write(p, fc.what); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no scenario %s", file)
	return ""
}

// writePorts writes the frames of scenario b as homatest run writes
// capture.pcapng: one interface per host (its switch port), every packet
// twice, inbound at its sender's port and outbound at its receiver's,
// 3 µs later. drops, if given, are the packets each port declares it
// dropped (an interface statistics block per port, at the end).
func writePorts(t *testing.T, b *capb, path string, hosts []netip.Addr, drops ...uint64) {
	t.Helper()
	var ifs []pcap.Interface
	port := map[netip.Addr]int{}
	for i, h := range hosts {
		port[h] = i
		ifs = append(ifs, pcap.Interface{Name: "p" + string(rune('1'+i)), Description: "switch port to " + h.String()})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pcap.NewWriter(f, ifs...)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		at   time.Duration
		ifc  int
		dir  pcap.Direction
		data []byte
	}
	var recs []rec
	o := wire.EncodeOptions{Version: b.wire, SetMarks: true}
	for _, p := range b.pkts {
		o.FixLengths = !p.raw
		fr, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: p.src, Dst: p.dst, Priority: p.prio}, p.f, o)
		if err != nil {
			t.Fatal(err)
		}
		d := append([]byte(nil), fr...)
		recs = append(recs, rec{p.t, port[p.src], pcap.DirInbound, d}, rec{p.t + us(3), port[p.dst], pcap.DirOutbound, d})
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].at < recs[j].at })
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	for _, r := range recs {
		if err := w.WritePacketDir(r.ifc, t0.Add(r.at), r.data, len(r.data), r.dir, ""); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range drops {
		if err := w.WriteInterfaceStats(i, t0.Add(recs[len(recs)-1].at), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckLevels: a SHOULD violation alone is a warning (exit 0, "PASS
// with warnings", no JUnit failure); --strict makes it fail.
func TestCheckLevels(t *testing.T) {
	f := writeCase(t, t.TempDir(), "BR-01-ipv4-tos-shift3.pcapng", true)
	out, err, code := run(t, "check", "--rules", "HOMA-WIRE-012", f)
	if code != 0 || err != nil {
		t.Fatalf("exit %d (%v), want 0:\n%s", code, err, out)
	}
	for _, want := range []string{"HOMA-WIRE-012 SHOULD (warning) frame 1", "PASS with warnings: 0 MUST and "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := run(t, "check", "--strict", "--rules", "HOMA-WIRE-012", f); code != ExitViolations {
		t.Errorf("--strict: exit %d, want 1", code)
	}
	out, _, _ = run(t, "check", "-o", "junit", "--rules", "HOMA-WIRE-012", f)
	var ju conformance.JUnitSuites
	if err := xml.Unmarshal([]byte(out), &ju); err != nil {
		t.Fatal(err)
	}
	if ju.TestSuites[0].Failures != 0 || !strings.Contains(out, "WARNING: ") {
		t.Errorf("junit: %d failures, want 0 and a WARNING:\n%s", ju.TestSuites[0].Failures, out)
	}
	out, _, _ = run(t, "check", "--strict", "-o", "junit", "--rules", "HOMA-WIRE-012", f)
	var jus conformance.JUnitSuites
	if err := xml.Unmarshal([]byte(out), &jus); err != nil || jus.TestSuites[0].Failures != 1 {
		t.Errorf("--strict junit: %+v (%v), want 1 failure", jus.TestSuites, err)
	}
	// The whole rule set: the MUST violations fail it.
	if _, _, code := run(t, "check", f); code != ExitViolations {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestCheckCapturePoint: auto says what it inferred and why; a bad value
// or a host not in the capture is a usage error.
func TestCheckCapturePoint(t *testing.T) {
	dir := t.TempDir()
	two := writeCase(t, dir, "BR-06-grant-after-complete.pcapng", false)
	three := writeCase(t, dir, "BR-10-grant-outside-active-set.pcapng", false)
	out, _, _ := run(t, "check", two)
	if !strings.Contains(out, "capture point: switch (two hosts and no direction marks") {
		t.Errorf("two hosts:\n%s", out)
	}
	out, _, _ = run(t, "check", "--param", "max_overcommit=2", three)
	if !strings.Contains(out, "capture point: host:10.0.0.1 (every Homa packet is to or from 10.0.0.1") {
		t.Errorf("three clients:\n%s", out)
	}
	out, _, _ = run(t, "check", "--capture-point", "host:10.0.0.11", two)
	if !strings.Contains(out, "capture point: host:10.0.0.11 (as --capture-point says)") {
		t.Errorf("host flag:\n%s", out)
	}
	for _, c := range []struct{ flag, want string }{
		{"middle", "want auto, switch, host:ADDR, sent, delivered or ports"},
		{"host:10.0.0", "is not an IP address"},
		{"host:10.9.9.9", "no Homa packet of the capture is to or from 10.9.9.9"},
		{"ports", "needs a pcapng whose frames carry both directions"},
	} {
		_, err, code := run(t, "check", "--capture-point", c.flag, two)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--capture-point %s: exit %d err %v, want 2 and %q", c.flag, code, err, c.want)
		}
	}
}

// TestCheckSwitchNotes: a file of frames a switch dropped (each with its
// "dropped: " note, as scenario run's switch-notes.pcapng) is not the
// traffic: nothing is judged unless --capture-point says where it was
// taken.
func TestCheckSwitchNotes(t *testing.T) {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	// DATA past U with no GRANT in the file: a violation out of context
	// (the RPC's first bytes are in the capture, so its start is).
	i := b.data(0, r, true, 4, 100000, 0, 1424, 40000, 1, false)
	b.pkts[i].note = "dropped: plan (plan rule 0 (request DATA))"
	i = b.data(ms(1), r, true, 4, 100000, 51392, 1424, 40000, 1, false)
	b.pkts[i].note = "dropped: plan (plan rule 0 (request DATA))"
	i = b.grant(ms(90), r, true, 100000, 0)
	b.pkts[i].note = "dropped: plan (plan rule 1 (1st GRANT))"
	f := filepath.Join(t.TempDir(), "switch-notes.pcapng")
	if _, err := b.write(f, "notes"); err != nil {
		t.Fatal(err)
	}
	out, err, code := run(t, "check", f)
	// Nothing judged is not a pass: INCOMPLETE, exit 2.
	if code != ExitUsage || !strings.Contains(out, "capture point: none (every frame carries a switch's note and 3 say the switch dropped them") ||
		!strings.Contains(out, "0 exercised by this capture") || !strings.Contains(out, "INCOMPLETE") {
		t.Errorf("exit %d (%v), want 2, INCOMPLETE and nothing judged:\n%s", code, err, out)
	}
	if _, _, code := run(t, "check", "--capture-point", "switch", f); code != ExitViolations {
		t.Errorf("--capture-point switch: exit %d, want 1 (the DATA past U)", code)
	}
}

// TestCheckPorts: a capture of both directions of every switch port (each
// packet twice) is judged host by host: the clean exchange passes, the
// faulty one is charged to its sender once; rpcs and decode --summary-only
// read it as the single capture.
func TestCheckPorts(t *testing.T) {
	dir := t.TempDir()
	hosts := []netip.Addr{hostC, hostS}
	fc := faultCaseByID(t, "BR-45")
	clean, faulty := fc.build(false), fc.build(true)
	single := filepath.Join(dir, "single.pcapng")
	if _, err := clean.write(single, "clean"); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "capture.pcapng")
	writePorts(t, clean, cp, hosts)
	out, err, code := run(t, "check", cp)
	if code != 0 {
		t.Fatalf("clean ports capture: exit %d (%v):\n%s", code, err, out)
	}
	// The header counts frames: each packet is in the file twice.
	for _, want := range []string{" Homa frames (a packet sent and delivered is two), ", "capture point: ports (2 interfaces each hold both directions", "host 10.0.0.11 (interface 0): 0 violations charged", "PASS: 0 MUST"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The report page's file facts count them as the text does.
	count := regexp.MustCompile(`: (\d+ Homa frames \(a packet sent and delivered is two\)), `).FindStringSubmatch(out)
	page, _, code := run(t, "check", "-o", "html", cp)
	if count == nil || code != 0 || !strings.Contains(page, "profile linux, "+count[1]+", 2 RPCs, ") {
		t.Errorf("clean ports capture, -o html: exit %d, facts without the text's frame count %q:\n%s", code, count, page)
	}
	fp := filepath.Join(dir, "faulty.pcapng")
	writePorts(t, faulty, fp, hosts)
	out, _, code = run(t, "check", "--rules", "HOMA-RESEND-010", fp)
	if code != ExitViolations || !strings.Contains(out, ", charged to 10.0.0.11: first-transmission DATA [40000, 41424) repeats") {
		t.Errorf("faulty ports capture: exit %d:\n%s", code, out)
	}
	// On the sender's own link every repeat (7 of them) is a violation,
	// each once.
	if n := strings.Count(out, "HOMA-RESEND-010 MUST frame"); n != 7 {
		t.Errorf("%d RESEND-010 violations, want 7:\n%s", n, out)
	}
	strip := func(s string) string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				delete(m, "first_frame")
				b, _ := json.Marshal(m)
				lines = append(lines, string(b))
			}
		}
		return strings.Join(lines, "\n")
	}
	a, _, _ := run(t, "rpcs", "-o", "json", cp)
	b, _, _ := run(t, "rpcs", "-o", "json", single)
	if strip(a) != strip(b) || a == "" {
		t.Errorf("rpcs on the ports capture:\n%s\nwant as on the single capture:\n%s", a, b)
	}
	a, _, _ = run(t, "decode", "--summary-only", "-o", "json", cp)
	b, _, _ = run(t, "decode", "--summary-only", "-o", "json", single)
	var sa, sb struct {
		Summary struct {
			Types map[string]int `json:"types"`
		} `json:"summary"`
	}
	json.Unmarshal([]byte(a), &sa)
	json.Unmarshal([]byte(b), &sb)
	if len(sa.Summary.Types) == 0 || !equalCounts(sa.Summary.Types, sb.Summary.Types) {
		t.Errorf("decode --summary-only counts %v, want %v", sa.Summary.Types, sb.Summary.Types)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCheckInferParams: --infer-params prints what the capture implies
// next to the profile; without the timer sysctls, the real capture's
// violations name the --param that removes them.
func TestCheckInferParams(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap")
	out, _, code := run(t, append([]string{"check", "--infer-params", f}, scaledTimers...)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"parameters the capture implies", "unsched_bytes      40000", "max_gso_size       ≥ 8640", "GSO batches of 6 segments"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	e2 := filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap")
	out, _, code = run(t, "check", e2)
	if code != ExitViolations || !strings.Contains(out, "hint: not a violation if the hosts ran with --param resend_ticks=") {
		t.Errorf("e2 without its timer sysctls: exit %d, want 1 and a hint naming resend_ticks:\n%s", code, out)
	}
	// A DATA segment longer than max_seg_data at MTU 1500: the MTU it
	// needs is inferred and named (the hosts may run a larger MTU).
	out, _, code = run(t, "check", filepath.Join(faultsDir, "BR-34-frame-above-mtu.pcapng"))
	if code != ExitViolations || !strings.Contains(out, "mtu                ≥ 2924") || !strings.Contains(out, "hint: not a violation if the hosts ran with --param mtu=2924") {
		t.Errorf("BR-34: exit %d, want 1, mtu ≥ 2924 inferred and named in a hint:\n%s", code, out)
	}
}

// TestCheckTesterMarks: a finding at a packet a tester marked as broken on
// purpose, or charged to a host whose packets a tester marked, is charged
// to the tester and does not fail the check.
func TestCheckTesterMarks(t *testing.T) {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC2, hostS, 10)
	i := b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].f.(*wire.DataFields).MessageLength = 0
	b.pkts[i].note = "homatest tester: deliberate DATA with message_length 0 (spec ROBUST-malformed)"
	// A second of the same kind shares its line (the noise measurement's
	// twenty ACKs were twenty lines).
	i = b.data(ms(0.5), rpcOf(hostC2, hostS, 14), true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].f.(*wire.DataFields).MessageLength = 0
	b.pkts[i].note = "homatest tester: deliberate DATA with message_length 0 (spec ROBUST-malformed)"
	b.smallRPC(rpcOf(hostC, hostS, 10), ms(1), wire.AckEntry{})
	// A tester client (its packets marked as sent by a tester) never
	// answers the server's stale cutoff_version with CUTOFFS: the
	// warning is charged to the tester, even with --strict.
	r3 := rpcOf(hostC3, hostS, 10)
	i = b.data(ms(2), r3, true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].note = "homatest tester: sent"
	b.data(ms(2.05), r3, false, 6, 100, 0, 100, 100, 0, false)
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(40), wire.AckEntry{})
	f := filepath.Join(t.TempDir(), "tester.pcapng")
	if _, err := b.write(f, "tester"); err != nil {
		t.Fatal(err)
	}
	out, err, code := run(t, "check", "--strict", f)
	if code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	for _, want := range []string{"HOMA-WIRE-002 MUST (expected: the tester broke it on purpose: DATA with message_length 0 (spec ROBUST-malformed)), 2 such packets, the first at frame 1 ", "HOMA-CUTOFF-002 SHOULD (warning) (charged to the tester) frame 6", "charged to the tester (at packets it sent)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "HOMA-WIRE-002 MUST"); n != 1 {
		t.Errorf("%d lines of HOMA-WIRE-002, want one for both deliberate packets:\n%s", n, out)
	}
}

// TestSpecCoverage: spec coverage -o json has the shape, and every
// fact has rules or a reason.
func TestSpecCoverage(t *testing.T) {
	out, err, code := run(t, "spec", "coverage", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	var js struct {
		Facts []struct {
			Fact   string   `json:"fact"`
			Rules  []string `json:"rules"`
			Reason string   `json:"reason"`
		} `json:"facts"`
		Summary struct {
			Checkable, Implemented int
		} `json:"summary"`
		Fields []struct {
			Type, Field string
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Facts) < 57 || len(js.Fields) < 30 {
		t.Fatalf("%d facts, %d fields", len(js.Facts), len(js.Fields))
	}
	for _, f := range js.Facts {
		if len(f.Rules) == 0 && f.Reason == "" {
			t.Errorf("%s: no rules, no reason", f.Fact)
		}
	}
	if js.Summary.Implemented*100 < js.Summary.Checkable*95 {
		t.Errorf("summary %+v: below 95 %%", js.Summary)
	}
	out, _, _ = run(t, "spec", "coverage")
	if !strings.Contains(out, "RTX-06    HOMA-RESEND-002") || !strings.Contains(out, "INC-01    not checkable:") {
		t.Errorf("text coverage:\n%s", out)
	}
}

// timedReport is the part of check's JSON report the stall tests read:
// each violation's time and tolerance.
type timedReport struct {
	Violations []struct {
		Time  time.Time `json:"time"`
		Slack int64     `json:"tolerance_ns"`
	} `json:"violations"`
}

// TestCheckStalls: a timing violation that a stall measured by the run
// (FILE.stalls.json) overlaps is inconclusive, as the run judged it; a
// stall elsewhere changes nothing, and a violation without a tolerance
// never falls to a stall.
func TestCheckStalls(t *testing.T) {
	dir := t.TempDir()
	f := writeCase(t, dir, "BR-18-resend-right-after-grant.pcapng", true)
	out, _, code := run(t, "check", "-o", "json", f)
	if code != ExitViolations {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	var js struct {
		Files []struct {
			Report timedReport `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Files) != 1 || len(js.Files[0].Report.Violations) == 0 || js.Files[0].Report.Violations[0].Slack <= 0 {
		t.Fatalf("want a first violation with a tolerance:\n%s", out)
	}
	v := js.Files[0].Report.Violations[0]
	write := func(from, to time.Time) {
		b, _ := json.Marshal([]stall.Span{{From: from, To: to, Who: "agent h1", Lost: to.Sub(from)}})
		if err := os.WriteFile(f+".stalls.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(v.Time.Add(time.Hour), v.Time.Add(time.Hour+time.Second))
	if _, _, code := run(t, "check", f); code != ExitViolations {
		t.Errorf("stall an hour later: exit %d, want 1", code)
	}
	write(v.Time.Add(-time.Second), v.Time.Add(time.Second))
	out, _, code = run(t, "check", f)
	if code != 0 || !strings.Contains(out, "stalls: 1 timing finding falls in a stall the run measured") {
		t.Errorf("stall over the finding: exit %d, want 0 and the stall named:\n%s", code, out)
	}
}

// TestCheckPortsStalls: on a run's capture of every switch port with a
// stalls sidecar, the per-host lines count what the summary counts: the
// findings a measured stall excused leave the host's violations and are
// named on its line, so the hosts' violations add up to the summary's
// MUST, SHOULD and tester-charged counts.
func TestCheckPortsStalls(t *testing.T) {
	dir := t.TempDir()
	b := faultCaseByID(t, "BR-18").build(true)
	if b == nil {
		t.Fatal("no BR-18")
	}
	cp := filepath.Join(dir, "capture.pcapng")
	writePorts(t, b, cp, []netip.Addr{hostC, hostS})
	type hostJS struct {
		Host         string `json:"host"`
		Violations   int    `json:"violations"`
		StallExcused int    `json:"stall_excused"`
	}
	var js struct {
		Files []struct {
			Must, Should int
			Expected     int `json:"expected_findings"`
			StallExcused int `json:"stall_excused"`
			Hosts        []hostJS
			Report       timedReport `json:"report"`
		} `json:"files"`
	}
	check := func() {
		t.Helper()
		out, _, _ := run(t, "check", "-o", "json", cp)
		js.Files = nil
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%v:\n%s", err, out)
		}
	}
	check()
	f := js.Files[0]
	first := -1
	for i, v := range f.Report.Violations {
		if v.Slack > 0 {
			first = i
			break
		}
	}
	if len(f.Hosts) != 2 || first < 0 {
		t.Fatalf("want 2 hosts and a timing violation: %+v", f)
	}
	v := f.Report.Violations[first]
	sp, _ := json.Marshal([]stall.Span{{From: v.Time.Add(-time.Second), To: v.Time.Add(time.Second), Who: "agent h1", Lost: 2 * time.Second}})
	if err := os.WriteFile(cp+".stalls.json", sp, 0o644); err != nil {
		t.Fatal(err)
	}
	check()
	f = js.Files[0]
	if f.StallExcused == 0 {
		t.Fatalf("the stall over a timing violation excused nothing: %+v", f)
	}
	hv, hs := 0, 0
	for _, h := range f.Hosts {
		hv += h.Violations
		hs += h.StallExcused
	}
	if hv != f.Must+f.Should+f.Expected || hs != f.StallExcused {
		t.Errorf("hosts: %d violations and %d stall-excused; summary: %d MUST + %d SHOULD + %d tester, %d stall-excused", hv, hs, f.Must, f.Should, f.Expected, f.StallExcused)
	}
	out, _, _ := run(t, "check", cp)
	if !strings.Contains(out, "excused by measured stalls") {
		t.Errorf("no host line names the stall-excused findings:\n%s", out)
	}
}
