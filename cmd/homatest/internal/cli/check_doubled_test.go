package cli

import (
	"encoding/json"
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
	Capture struct {
		SameInstant int `json:"same_instant_copies"`
	} `json:"capture"`
	Report struct {
		Violations []struct {
			Rule  string `json:"rule"`
			Frame int    `json:"frame"`
			Hint  string `json:"hint"`
		} `json:"violations"`
	} `json:"report"`
}

// TestCheckDoubledFrames: a classic pcap whose every frame appears twice
// at the same instant (mergecap of a capture with itself; tcpdump twice
// on one interface, merged) cannot say where each frame was taken, so
// its copies are not skipped (pcap/copies.go). Checked on the server's
// link (--capture-point host:10.0.0.1), it charged the server 21 MUST
// violations (HOMA-RESEND-010 for each DATA "sent twice", HOMA-ACK-006
// for a NEED_ACK "repeated" 0 s later) and said nothing of the cause.
// Now a WARNING line says that 44 of 88 Homa frames repeat an earlier
// one at the same instant and how to remove them (editcap -d), and each
// violation they explain (gone when the check runs without them) says
// so in its hint; the violations stand (exit 1), since a host that
// sends its packets twice at once breaks the rules all the same. A host
// that sends one DATA twice at once in an otherwise single capture is
// judged as before: a HOMA-RESEND-010 violation with no such hint, and
// no WARNING. decode --summary-only counts the repeated frames (text
// and JSON), 0 in the original.
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
		args := append(append([]string{"check", "-o", "json"}, scaledTimers...), extra...)
		out, _, code := run(t, append(args, path)...)
		var js struct {
			Files []doubledCheck `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%s: %v:\n%s", path, err, out)
		}
		return js.Files[0], code, out
	}
	host := "--capture-point=host:10.0.0.1"

	v, code, out := check(dbl, host)
	if code != ExitViolations || v.Verdict != "fail" || v.Must < 20 || v.Capture.SameInstant != 44 {
		t.Errorf("doubled on the server's link: exit %d verdict %q must %d same-instant %d, want 1 fail ≥ 20 44:\n%s", code, v.Verdict, v.Must, v.Capture.SameInstant, out)
	}
	if !strings.HasPrefix(v.Hint, "44 of 88 Homa frames repeat an earlier frame byte for byte at the same instant") ||
		!strings.Contains(v.Hint, "editcap -d") || !strings.Contains(v.Hint, "21 violations disappear without them") {
		t.Errorf("doubled: same_instant_hint %q, want the share, editcap -d and the 21 violations it explains", v.Hint)
	}
	rules := map[string]int{}
	for _, x := range v.Report.Violations {
		rules[x.Rule]++
		if !strings.Contains(x.Hint, "not a violation without the frames that repeat an earlier one at the same instant (44 of 88") {
			t.Errorf("doubled: %s at frame %d without the same-instant hint: %q", x.Rule, x.Frame, x.Hint)
		}
	}
	if rules["HOMA-RESEND-010"] != 20 || rules["HOMA-ACK-006"] == 0 {
		t.Errorf("doubled: violations by rule %v, want 20 HOMA-RESEND-010 and HOMA-ACK-006", rules)
	}
	text, _, _ := run(t, append(append([]string{"check", host}, scaledTimers...), dbl)...)
	if n := strings.Count(text, "WARNING: 44 of 88 Homa frames repeat an earlier frame"); n != 1 {
		t.Errorf("doubled: text says it %d times, want once:\n%s", n, text)
	}

	// At the default capture point (a tap that may see the network
	// duplicate packets) the copies were already excused; the line says
	// what they are all the same.
	if v, code, _ := check(dbl); code != ExitOK || v.Must != 0 || !strings.HasPrefix(v.Hint, "44 of 88") {
		t.Errorf("doubled at the default capture point: exit %d must %d hint %q, want 0 0 and the line", code, v.Must, v.Hint)
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
