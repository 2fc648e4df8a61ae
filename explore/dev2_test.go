package explore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
)

func TestDevKnobs(t *testing.T) {
	for _, f := range homa.FaultNames() {
		if k := os.Getenv("KNOB"); k != "" && k != f.Name {
			continue
		}
		start := time.Now()
		res, err := Explore(context.Background(), Config{Env: SimEnv([]string{f.Name}, params()), Budget: 20 * time.Second, Seed: 1, KeepGoing: true, StopAt: knobRules[f.Name], ShrinkRuns: 300})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range res.Failures {
			t.Logf("%-22s found %-16s after %6.2fs case %4d packets %4d -> %3d (%d runs, total %.1fs)", f.Name, x.Rule, x.After.Seconds(), x.Case, x.OriginalPackets, x.Packets, x.ShrinkRuns, time.Since(start).Seconds())
			os.WriteFile("/tmp/knob-"+f.Name+".homa", []byte(x.Script), 0o644)
		}
		if len(res.Failures) == 0 {
			t.Logf("%-22s NOT FOUND in %d cases", f.Name, res.Cases)
		}
	}
}

var knobRules = map[string][]string{
	"no-acks": {"HOMA-ACK-002", "HOMA-ACK-009"}, "ignore-rpc-unknown": {"HOMA-RESEND-007"}, "wrong-priority-bits": {"HOMA-PRIO-001"},
	"grant-past-end": {"HOMA-GRANT-002"}, "repeat-grants": {"HOMA-GRANT-004"}, "no-grants": {"HOMA-GRANT-010"}, "resend-priority-zero": {"HOMA-RESEND-013"}, "resend-past-grant": {"HOMA-RESEND-012"}, "late-resend": {"HOMA-RESEND-014"}, "partial-retransmit": {"HOMA-RESEND-016"}, "unprompted-ack": {"HOMA-ACK-007"}, "cutoffs-unprompted": {"HOMA-CUTOFF-003"}, "control-sequence": {"HOMA-WIRE-009"}, "restart-priority": {"HOMA-PRIO-003"}, "id-zero": {"HOMA-ID-003"}, "rpc-unknown-any": {"HOMA-RESEND-018"},
	"overcommit": {"HOMA-GRANT-006"}, "grant-top-priority": {"HOMA-GRANT-007"}, "unsched-overflow": {"HOMA-UNSCHED-002"},
	"early-resend": {"HOMA-RESEND-001"}, "no-retransmit-flag": {"HOMA-RESEND-010"}, "no-busy": {"HOMA-RESEND-002"},
	"control-low-priority": {"HOMA-PRIO-001"}, "stale-cutoff-version": {"HOMA-CUTOFF-001"}, "duplicate-data": {"HOMA-RESEND-010"},
}
