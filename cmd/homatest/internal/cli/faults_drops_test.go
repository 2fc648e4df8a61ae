package cli

import (
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/spec"
)

// TestFaultsCaptureDrops: a capture that declares a dropped packet
// (--capture-drops 1) excuses only findings an unseen packet could
// explain. Every fault of the catalog flagged by a rule no missing packet
// can excuse (spec.Rule.Alone, the WIRE area) is still flagged at the same
// first frame, and the per-packet faults below still fail: a control
// packet below the top level, unscheduled DATA of a new peer at a level
// the default cutoffs cannot give, client id 0, a RESEND's priority
// field, an empty RESEND on main, bytes sent twice as first
// transmissions, an ack entry naming an odd (server) id.
func TestFaultsCaptureDrops(t *testing.T) {
	alone := map[string]bool{}
	for _, r := range spec.Rules() {
		alone[r.ID] = r.Alone || r.Area() == "wire"
	}
	mustFail := map[string]bool{
		"BR-01-ipv4-tos-shift3.pcapng":           true, // HOMA-PRIO-001, HOMA-PRIO-002 (cutoff_version 0)
		"BR-02-ipv6-tc-zero.pcapng":              true,
		"ID-003-client-id-zero.pcapng":           true,
		"RESEND-013-resend-priority-zero.pcapng": true,
		"BR-23-empty-resend-unanswered.pcapng":   true, // HOMA-RESEND-012: length 0 on main
		"BR-45-same-packet-repeated.pcapng":      true, // HOMA-RESEND-010
		"ACK-004-ack-names-server-id.pcapng":     true, // an ack entry with an odd id
	}
	failing := 0
	for _, fc := range faultCases() {
		if fc.missed != "" {
			continue
		}
		path := filepath.Join(faultsDir, fc.file())
		c := checkCapture(t, path, append(append([]string(nil), fc.args...), "--capture-drops", "1")...)
		if c.code == ExitViolations {
			failing++
		}
		if mustFail[fc.file()] && c.code != ExitViolations {
			t.Errorf("%s with --capture-drops 1: exit %d, want 1 (no missing packet explains the fault); inconclusive %v", fc.file(), c.code, c.incRules)
		}
		delete(mustFail, fc.file())
		for _, h := range fc.want {
			if !alone[h.rule] {
				continue
			}
			if f, ok := c.first[h.rule]; !ok || f != h.frame {
				t.Errorf("%s with --capture-drops 1: %s first violated at frame %d (%v), want %d as without drops", fc.file(), h.rule, f, ok, h.frame)
			}
		}
	}
	for f := range mustFail {
		t.Errorf("%s is not in the catalog", f)
	}
	t.Logf("%d fault captures fail with --capture-drops 1", failing)
}
