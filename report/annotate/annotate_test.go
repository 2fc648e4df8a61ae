package annotate

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

func TestComment(t *testing.T) {
	k := &spec.RPCKey{Client: netip.MustParseAddr("10.0.0.11"), Server: netip.MustParseAddr("10.0.0.1"), ClientID: 6}
	f := spec.Finding{Rule: "HOMA-RESEND-002", Level: spec.Should, Frame: 1249, Frames: []int{1200, 1210}, RPC: k,
		Why: "no answer\nwithin 20ms", Slack: 20 * time.Millisecond}
	want := "HOMA-RESEND-002 SHOULD: no answer within 20ms; rpc 6 (client 10.0.0.11, server 10.0.0.1); see frames 1200,1210; tolerance 20ms"
	if got := Comment(f); got != want {
		t.Errorf("Comment:\n got %q\nwant %q", got, want)
	}
	if got := Comment(spec.Finding{Rule: "HOMA-WIRE-001", Level: spec.Must, Why: "bad"}); got != "HOMA-WIRE-001 MUST: bad" {
		t.Errorf("Comment without RPC, frames, tolerance: %q", got)
	}
	notes, unplaced := Notes([]spec.Finding{f, {Rule: "HOMA-A-001", Level: spec.Must, Frame: 1249, Why: "x"}, {Rule: "HOMA-B-002", Level: spec.Must, Why: "end"}})
	if len(notes) != 1 || len(notes[1249]) != 2 || !strings.HasPrefix(notes[1249][1], "HOMA-A-001 MUST: x") || len(unplaced) != 1 {
		t.Errorf("Notes: %v, unplaced %v", notes, unplaced)
	}
}

// TestHostView maps view frames to the frames of the capture each packet
// came from, in the reason too (each number naming its capture), and says
// whose view it was.
func TestHostView(t *testing.T) {
	h := netip.MustParseAddr("198.18.0.2")
	hr := spec.HostReport{Host: h,
		Sources: []spec.ViewSource{{Delivered: false, Frame: 10}, {Delivered: true, Frame: 7}, {Delivered: false, Frame: 12}},
		Violations: []spec.Finding{
			{Rule: "HOMA-X-001", Frame: 3, Frames: []int{1, 2}, Why: "a (next packet 2ms later, frame 2; first frame 1)"},
			{Rule: "HOMA-X-002", Frame: 2, Why: "b"},
			{Rule: "HOMA-X-003", Frame: 9, Why: "outside the view"},
		}}
	sent, delivered := HostView(hr, "sent.pcapng", "delivered.pcapng")
	if len(sent) != 1 || sent[0].Frame != 12 || len(sent[0].Frames) != 1 || sent[0].Frames[0] != 10 ||
		sent[0].Why != "a (next packet 2ms later, delivered.pcapng frame 7; first sent.pcapng frame 10) (host 198.18.0.2's view)" {
		t.Errorf("sent: %+v", sent)
	}
	if len(delivered) != 1 || delivered[0].Frame != 7 || delivered[0].Rule != "HOMA-X-002" {
		t.Errorf("delivered: %+v", delivered)
	}
	if hr.Violations[0].Frame != 3 {
		t.Error("HostView changed its input")
	}
}
