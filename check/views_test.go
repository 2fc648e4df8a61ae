package check

import (
	"net/netip"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestMergeHostReportsKeepsViewDrops: a port's view that shows its own
// loss (spec.Report.CaptureDropsShown) excuses findings as the capture's
// drops; the merged report keeps that count and evidence, so check says
// where the drops come from (a run's per-port capture was INCOMPLETE with
// no word on drops, and check exited 0).
func TestMergeHostReportsKeepsViewDrops(t *testing.T) {
	a := &spec.Report{CaptureDrops: 3, CaptureDropsShown: "frame 609: a response held whole with bytes never seen", CaptureDropExcused: 16, CaptureDropLimit: 18}
	b := &spec.Report{CaptureDropExcused: 0}
	out := mergeHostReports([]spec.HostReport{
		{Host: netip.MustParseAddr("198.18.0.1"), Report: b},
		{Host: netip.MustParseAddr("198.18.0.2"), Report: a},
	})
	if out.CaptureDrops != 3 || out.CaptureDropsShown != a.CaptureDropsShown || out.CaptureDropExcused != 16 {
		t.Fatalf("merged drops %d shown %q excused %d, want 3, the view's evidence, 16", out.CaptureDrops, out.CaptureDropsShown, out.CaptureDropExcused)
	}
	if from, hint := dropsHint(out, pcap.Stats{}, 0); from == "" || hint == "" {
		t.Errorf("dropsHint of the merged report: %q %q, want where the drops come from and what they did", from, hint)
	}
}
