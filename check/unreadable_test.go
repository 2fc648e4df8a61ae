package check

import (
	"strings"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestDropsAdviceMatchesCause: the capture-drops line advises a larger
// buffer only for drops a full buffer made: frames the capture could not
// read (pcap.Stats.UnreadableDrops) get no buffer advice, a mix names
// both, and a homatest file that does not say which it holds says so.
func TestDropsAdviceMatchesCause(t *testing.T) {
	rep := &spec.Report{CaptureDrops: 49, CaptureDropExcused: 3}
	for _, tc := range []struct {
		name        string
		st          pcap.Stats
		want, never string
	}{
		{"buffer", pcap.Stats{CaptureDrops: 49}, "re-capture with a larger buffer (tcpdump -B KIB, dumpcap -B MIB) to judge them", "could not read"},
		{"unreadable", pcap.Stats{CaptureDrops: 49, UnreadableDrops: 49}, "they are frames the capture's socket queued but could not read (recvmsg failed", "tcpdump -B"},
		{"mixed", pcap.Stats{CaptureDrops: 49, UnreadableDrops: 40}, "tcpdump -B KIB, dumpcap -B MIB) to judge them (40 of them are frames the capture's socket queued but could not read", ""},
		{"unsaid", pcap.Stats{CaptureDrops: 49, DropsCauseUnsaid: true}, "without saying how many of each", "tcpdump -B"},
	} {
		from, hint := dropsHint(rep, tc.st, 0)
		if from != "interface statistics" || !strings.Contains(hint, tc.want) || tc.never != "" && strings.Contains(hint, tc.never) {
			t.Errorf("%s: %s: %q, want it to say %q and not %q", tc.name, from, hint, tc.want, tc.never)
		}
	}
}

// TestNoRPCHeard: the nothing-judged warning counts RPCs in words that
// fit 0 and 1 (a trial saw "no RPC of the capture's 0").
func TestNoRPCHeard(t *testing.T) {
	for n, want := range map[int]string{
		0: "no RPC (in 3 Homa packets) was",
		1: "the capture's one RPC (in 3 Homa packets) was not",
		4: "no RPC of the capture's 4 (in 3 Homa packets) was",
	} {
		if got := noRPCHeard(n, "3 Homa packets"); got != want {
			t.Errorf("%d RPCs: %q, want %q", n, got, want)
		}
	}
}
