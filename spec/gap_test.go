package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestForwardJumpNamesCaptureGap: a silence of the whole capture longer
// than timeout_ticks allows, over which an RPC goes on as if no time had
// passed, is reported (Report.TimeGaps) with the frames around it and the
// timer packets the protocol would have sent and the ends that would
// have sent them (TimeGap.Waiting); one over which nothing was
// left to do (every RPC acknowledged), or one shorter than the timeout,
// is not.
func TestForwardJumpNamesCaptureGap(t *testing.T) {
	for _, tc := range []struct {
		name string
		gap  time.Duration
		// build makes the capture up to the silence, and next the first
		// packet after it (its frame).
		build, next func(b *traceBuilder) int
		want        string // "" for no TimeGap
		waiting     string // TimeGap.Waiting, space-separated
	}{
		{name: "request-goes-on", gap: 5 * time.Second,
			build:   func(b *traceBuilder) int { return b.data(true, 2, 3000, 0, 1424, 7, nil) },
			next:    func(b *traceBuilder) int { return b.data(true, 2, 3000, 1424, 1424, 7, nil) },
			want:    "capture time jumps forward 5s at frame 2 (no packet since frame 1), yet rpc 2 (client 198.18.0.1, server 198.18.0.2) went on after it at frame 2 as if no time had passed: a host whose timer ran would have sent RESEND within resend_ticks 5 (HOMA-RESEND-014)",
			waiting: "198.18.0.1 198.18.0.2"},
		{name: "response-goes-on", gap: 5 * time.Second,
			build: func(b *traceBuilder) int {
				b.data(true, 2, 100, 0, 100, 7, nil)
				return b.after(50*time.Microsecond).data(false, 2, 3000, 0, 1424, 7, nil)
			},
			next:    func(b *traceBuilder) int { return b.data(false, 2, 3000, 1424, 1424, 7, nil) },
			want:    "would have sent RESEND within resend_ticks 5",
			waiting: "198.18.0.1"},
		{name: "response-unacked", gap: time.Second,
			build: func(b *traceBuilder) int {
				b.data(true, 2, 100, 0, 100, 7, nil)
				return b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
			},
			next:    func(b *traceBuilder) int { return b.ack(2, 2) },
			want:    "would have sent NEED_ACK for it every tick until the client acknowledged it (HOMA-ACK-008)",
			waiting: "198.18.0.2"},
		{name: "idle", gap: 5 * time.Second,
			build: func(b *traceBuilder) int { return b.smallRPC(2, 100, 1) },
			next:  func(b *traceBuilder) int { return b.smallRPC(4, 100, 1) }},
		{name: "within-timeout", gap: 100 * time.Millisecond,
			build: func(b *traceBuilder) int { return b.data(true, 2, 3000, 0, 1424, 7, nil) },
			next:  func(b *traceBuilder) int { return b.data(true, 2, 3000, 1424, 1424, 7, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			tc.build(b)
			b.after(tc.gap)
			next := tc.next(b)
			rep := b.check("linux", "HOMA-RESEND-*")
			if tc.want == "" {
				if len(rep.TimeGaps) != 0 {
					t.Fatalf("time gaps %+v, want none", rep.TimeGaps)
				}
				return
			}
			if len(rep.TimeGaps) != 1 {
				t.Fatalf("time gaps %+v, want one at frame %d", rep.TimeGaps, next)
			}
			g := rep.TimeGaps[0]
			if g.Frame != next || g.Continued != next || g.After != next-1 || g.Gap != tc.gap || g.RPC.ClientID != 2 || !strings.Contains(g.Why, tc.want) {
				t.Fatalf("time gap %+v, want one at frame %d after %v naming rpc 2 and %q", g, next, tc.gap, tc.want)
			}
			var waiting []string
			for _, a := range g.Waiting() {
				waiting = append(waiting, a.String())
			}
			if w := strings.Join(waiting, " "); w != tc.waiting {
				t.Errorf("waiting %q, want %q", w, tc.waiting)
			}
		})
	}
}
