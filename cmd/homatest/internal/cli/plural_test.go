package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
)

// TestPluralCounts: a count of one reads in the singular in the CLI's
// output (a trial saw "1 specs" and "1 findings"): the check header of a
// one-packet capture, and the stall lines of a run.
func TestPluralCounts(t *testing.T) {
	frames := readCapFrames(t, realDir+"/linux-6.13-proto146/a-small-rpcs.pcap")
	var one []capFrame
	for _, f := range frames {
		// The first IPv4 frame of IP protocol 146 (Homa): the first DATA.
		if len(f.data) > 23 && f.data[12] == 0x08 && f.data[13] == 0x00 && f.data[23] == 146 {
			one = append(one, f)
			break
		}
	}
	p := writeCapFrames(t, t.TempDir(), "one.pcapng", one, nil)
	out, _, _ := run(t, "check", p)
	if !strings.Contains(out, "1 Homa packet, 1 RPC\n") {
		t.Errorf("check header of a one-packet capture:\n%s", out)
	}
	var b bytes.Buffer
	writeInconclusive(&b, []conformance.SpecResult{{Name: "s", TimingInconclusive: []string{"f"}, Reruns: 1, Rerun: "quiet"}})
	if got := b.String(); !strings.HasPrefix(got, "1 timing finding in 1 spec was inconclusive:") || !strings.Contains(got, "passed on rerun 1; before it, 1 finding inconclusive") {
		t.Errorf("stall lines:\n%s", got)
	}
	for _, bad := range []string{"1 specs", "1 findings", "1 times", "1 packets", "1 RPCs"} {
		if strings.Contains(out+b.String(), bad) {
			t.Errorf("output says %q:\n%s%s", bad, out, b.String())
		}
	}
}

// onePlural matches a count of one with a plural noun.
var onePlural = regexp.MustCompile(`\b1 (messages|RPCs|packets|frames|RESENDs|NEED_ACKs|GRANTs|acks|findings|violations)\b`)

// TestPluralCountsInFindings: findings count in the singular too (a trial
// saw "GRANT priority 1 with at most 1 messages being granted" in the
// linux-6.1 lab capture, judged with its run's timers).
func TestPluralCountsInFindings(t *testing.T) {
	args := append([]string{"check", "-o", "json", realDir + "/lab-scenarios/linux-6.1-netem-incast.pcapng"}, scaledTimers...)
	out, _, _ := run(t, args...)
	if !strings.Contains(out, `"HOMA-GRANT-015"`) {
		t.Fatalf("no HOMA-GRANT-015 finding to look at:\n%.2000s", out)
	}
	if m := onePlural.FindAllString(out, -1); len(m) > 0 {
		t.Errorf("findings say %q", m)
	}
}
