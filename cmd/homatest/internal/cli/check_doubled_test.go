package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// writeClassicPcap writes frames as a classic Ethernet pcap (what
// tcpdump -w and mergecap of two such files write), which says nothing
// of where a frame was taken.
func writeClassicPcap(t *testing.T, dir, name string, frames []capFrame) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		if err := w.WritePacket(fr.ci, fr.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// doubledCheck is what check -o json says of one file, for
// TestCheckDoubledFrames.
type doubledCheck struct {
	Verdict string `json:"verdict"`
	Must    int    `json:"must_violations"`
	Hint    string `json:"same_instant_hint"`
	Excused int    `json:"doubled_excused"`
	Merged  string `json:"merged_hint"`
	Capture struct {
		SameInstant int `json:"same_instant_copies"`
	} `json:"capture"`
	Report struct {
		Violations   []doubledFinding `json:"violations"`
		Inconclusive []doubledFinding `json:"inconclusive"`
	} `json:"report"`
}

// doubledFinding is a finding as check -o json lists it.
type doubledFinding struct {
	Rule  string `json:"rule"`
	Frame int    `json:"frame"`
	Hint  string `json:"hint"`
	Cause string `json:"cause"`
}

// TestCheckDoubledFrames: a classic pcap whose every frame appears twice
// at the same instant (mergecap of a capture with itself; tcpdump twice
// on one interface, merged) cannot say where each frame was taken, so
// its copies are not skipped as another point's (pcap/copies.go).
// Checked on the server's link (--capture-point host:10.0.0.1), it
// charged the server 21 MUST violations (HOMA-RESEND-010 for each DATA
// "sent twice", HOMA-ACK-006 for a NEED_ACK "repeated" 0 s later) and
// said nothing of the cause; then a WARNING said so but the violations
// stood (FAIL, exit 1) where an overlapping merge is INCOMPLETE. Now the
// capture is judged without the copies at every capture point: the
// WARNING says that 44 of 88 Homa frames repeat an earlier one at the
// same instant, and the 21 violations only the copies made are
// inconclusive (capture doubles its frames), each with a hint, so the
// verdict is INCOMPLETE (exit 2). At the default capture point, where
// the copies were already excused, the line says no finding rests on
// them (it said "0 violations disappear without them"). A host that
// sends one DATA twice at once in an otherwise single capture is judged
// as before: a HOMA-RESEND-010 violation with no such hint, and no
// WARNING. decode --summary-only counts the repeated frames (text and
// JSON), 0 in the original.
func TestCheckDoubledFrames(t *testing.T) {
	orig := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	frames := readCapFrames(t, orig)
	tmp := t.TempDir()
	var doubled, once []capFrame
	for i, f := range frames {
		doubled = append(doubled, f, f)
		once = append(once, f)
		if i == 4 { // frame 5: the server's response DATA of RPC 2, sent twice at once
			once = append(once, f)
		}
	}
	dbl := writeClassicPcap(t, tmp, "doubled.pcap", doubled)
	twice := writeClassicPcap(t, tmp, "twice.pcap", once)
	check := func(path string, extra ...string) (doubledCheck, int, string) {
		t.Helper()
		return checkDoubled(t, path, append(append([]string(nil), scaledTimers...), extra...)...)
	}
	host := "--capture-point=host:10.0.0.1"

	v, code, out := check(dbl, host)
	if code != ExitUsage || v.Verdict != "incomplete" || v.Must != 0 || v.Excused != 21 || v.Capture.SameInstant != 44 || len(v.Report.Violations) != 0 {
		t.Errorf("doubled on the server's link: exit %d verdict %q must %d excused %d same-instant %d, violations %d, want 2 incomplete 0 21 44 0:\n%s", code, v.Verdict, v.Must, v.Excused, v.Capture.SameInstant, len(v.Report.Violations), out)
	}
	if !strings.HasPrefix(v.Hint, "44 of 88 Homa frames repeat an earlier frame byte for byte at the same instant") ||
		!strings.Contains(v.Hint, "editcap -d") || !strings.Contains(v.Hint, "21 violations are found only with them, inconclusive") {
		t.Errorf("doubled: same_instant_hint %q, want the share, editcap -d and the 21 violations it explains", v.Hint)
	}
	rules := map[string]int{}
	for _, x := range v.Report.Inconclusive {
		if x.Cause != "capture doubles its frames" {
			continue
		}
		rules[x.Rule]++
		if !strings.Contains(x.Hint, "not a violation without the frames that repeat an earlier one at the same instant") {
			t.Errorf("doubled: %s at frame %d without the same-instant hint: %q", x.Rule, x.Frame, x.Hint)
		}
	}
	if rules["HOMA-RESEND-010"] != 20 || rules["HOMA-ACK-006"] == 0 {
		t.Errorf("doubled: inconclusive by rule %v, want 20 HOMA-RESEND-010 and HOMA-ACK-006", rules)
	}
	text, err, _ := run(t, append(append([]string{"check", host}, scaledTimers...), dbl)...)
	if n := strings.Count(text, "WARNING: 44 of 88 Homa frames repeat an earlier frame"); n != 1 || err == nil || !strings.Contains(err.Error(), "incomplete: looks doubled") {
		t.Errorf("doubled: text says it %d times, want once, and the exit line why (%v):\n%s", n, err, text)
	}

	// At the default capture point (a tap that may see the network
	// duplicate packets) the copies were already excused; the line says
	// what they are all the same.
	if v, code, _ := check(dbl); code != ExitOK || v.Must != 0 || !strings.HasPrefix(v.Hint, "44 of 88") || !strings.Contains(v.Hint, "no finding rests on the copies") || strings.Contains(v.Hint, "0 violations") {
		t.Errorf("doubled at the default capture point: exit %d must %d hint %q, want 0 0 and the line saying nothing rests on them", code, v.Must, v.Hint)
	}

	v, code, out = check(twice, host)
	var at6 bool
	for _, x := range v.Report.Violations {
		if x.Rule == "HOMA-RESEND-010" && x.Frame == 6 {
			at6 = true
			if strings.Contains(x.Hint, "same instant") {
				t.Errorf("one DATA sent twice: its violation carries the doubled-capture hint %q", x.Hint)
			}
		}
	}
	if code != ExitViolations || !at6 || v.Hint != "" || v.Capture.SameInstant != 1 {
		t.Errorf("one DATA sent twice at once: exit %d, RESEND-010 at frame 6 %v, hint %q, same-instant %d; want 1, true, none, 1:\n%s", code, at6, v.Hint, v.Capture.SameInstant, out)
	}

	if v, code, _ := check(orig, host); code != ExitOK || v.Hint != "" || v.Capture.SameInstant != 0 {
		t.Errorf("original: exit %d hint %q same-instant %d, want 0, none, 0", code, v.Hint, v.Capture.SameInstant)
	}

	for _, c := range []struct {
		path string
		n    int
	}{{dbl, 44}, {orig, 0}} {
		text, _, _ := run(t, "decode", "--summary-only", c.path)
		if got := strings.Contains(text, "; 44 Homa frames repeat an earlier frame byte for byte at the same instant"); got != (c.n > 0) {
			t.Errorf("decode --summary-only %s: says the 44 repeats %v, want %v:\n%s", c.path, got, c.n > 0, text)
		}
		out, _, _ := run(t, "decode", "--summary-only", "-o", "json", c.path)
		var js struct {
			Summary struct {
				SameInstant *int `json:"same_instant_copies"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &js); err != nil || js.Summary.SameInstant == nil || *js.Summary.SameInstant != c.n {
			t.Errorf("decode --summary-only -o json %s: %v, same_instant_copies %v, want %d:\n%s", c.path, err, js.Summary.SameInstant, c.n, out)
		}
	}
}

// checkDoubled runs check -o json with args on path and returns what it
// says of the file, its exit code and its output.
func checkDoubled(t *testing.T, path string, args ...string) (doubledCheck, int, string) {
	t.Helper()
	out, _, code := run(t, append(append([]string{"check", "-o", "json"}, args...), path)...)
	var js struct {
		Files []doubledCheck `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%s: %v:\n%s", path, err, out)
	}
	return js.Files[0], code, out
}

// TestCheckPortsDoubled: a ports capture (scenario run's capture.pcapng:
// every switch port both ways, pcapng direction flags) merged with
// itself (mergecap -w self.pcapng L L: every frame twice at its own port,
// direction and instant). Its copies were not counted at all (the reader
// left marked frames alone), so check gave no doubled WARNING: 266 MUST
// violations (HOMA-RESEND-010, ACK-004, CUTOFF-003, with the lab's
// timers), and a merged-capture WARNING from one host's view saying
// "every violation is inconclusive" while the other views' stood. Now
// the copies are counted, the capture is judged without them, and it
// is judged exactly as the capture alone: PASS with its run's sidecars
// beside it (the capture read every frame), and with mergecap's loss of those
// statistics exactly as the original without them; no merged WARNING;
// the hint points to the original capture, not editcap -d (which would
// drop each packet's second port).
func TestCheckPortsDoubled(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	tmp := t.TempDir()
	var dbl []ngBlock
	for _, b := range epbs {
		dbl = append(dbl, b, b)
	}
	withStats := writeNgBlocks(t, tmp, "self-stats.pcapng", append(append(append([]ngBlock(nil), head...), dbl...), tail...))
	merged := writeNgBlocks(t, tmp, "self.pcapng", append(append([]ngBlock(nil), head...), dbl...))
	alone := writeNgBlocks(t, tmp, "nostats.pcapng", append(append([]ngBlock(nil), head...), epbs...))

	copySidecars(t, withStats, 0)
	v, code, out := checkDoubled(t, withStats, scaledTimers...)
	if code != ExitOK || v.Must != 0 || v.Merged != "" || v.Capture.SameInstant != len(epbs) ||
		!strings.HasPrefix(v.Hint, fmt.Sprintf("%d of %d Homa frames repeat", len(epbs), 2*len(epbs))) || !strings.Contains(v.Hint, "check the original capture instead") {
		t.Errorf("ports capture doubled, statistics kept: exit %d must %d merged %q same-instant %d hint %q; want 0 (the original's PASS, its sidecars beside it), 0, none, %d, the doubled line:\n%s",
			code, v.Must, v.Merged, v.Capture.SameInstant, v.Hint, len(epbs), out)
	}
	d, code1, _ := checkDoubled(t, merged, scaledTimers...)
	a, code2, _ := checkDoubled(t, alone, scaledTimers...)
	if d.Must != a.Must || code1 != code2 || d.Merged != "" || d.Hint == "" || len(d.Report.Violations) != len(a.Report.Violations) {
		t.Errorf("ports capture doubled as mergecap writes it (no statistics): exit %d, %d MUST, %d violations, merged %q; the original without statistics: exit %d, %d MUST, %d violations; want the same and no merged line",
			code1, d.Must, len(d.Report.Violations), d.Merged, code2, a.Must, len(a.Report.Violations))
	}
	text, _, _ := run(t, append(append([]string{"check"}, scaledTimers...), merged)...)
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "HOMA-") && strings.Contains(l, " frame ") {
			if seen[l] {
				t.Errorf("violation listed twice: %s", l)
			}
			seen[l] = true
		}
	}
}
