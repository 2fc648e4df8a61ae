package spec

import (
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// cutoffRules: the CUTOFFS / cutoff_version exchange (HomaModule
// homa_incoming.c homa_data_pkt, homa_cutoffs_pkt).
func cutoffRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-CUTOFF-001", Level: Must,
			Facts:     []string{"CUT-02", "CUT-05"},
			Statement: "Once a sender has received CUTOFFS from a receiver, every DATA it sends there afterwards (retransmissions included) carries that cutoff_version.",
			Source:    "HomaModule homa_incoming.c homa_cutoffs_pkt; homa_outgoing.c __homa_xmit_data",
			// linux_6.1.38 writes cutoff_version when it builds a packet, so
			// packets built before the CUTOFFS arrived keep the old version
			// (seen in the e2 capture); main rewrites it at transmit time.
			Profiles: []string{"linux"},
			Capture:  "slack covers DATA already queued when the CUTOFFS arrived",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				st := c.T.CutoffsKnown(e.Src, e.Dst)
				if st == nil {
					return Skip
				}
				v := e.Packet.Data().CutoffVersion()
				// Judge from the first CUTOFFS with the current version: a
				// receiver repeats CUTOFFS while stale DATA keeps coming,
				// which must not restart the allowance.
				first := *st
				for _, x := range c.T.CutoffVersions(e.Src, e.Dst) {
					if x.Version == st.Version {
						first = x
						break
					}
				}
				st = &first
				if v == st.Version || e.Time.Sub(st.Time) <= c.P.Slack {
					return Pass().WithSlack(c.P.Slack)
				}
				if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
					return Downgrade(CauseLossAfter, ev, "DATA carries cutoff_version %d after CUTOFFS version %d from %v (frame %d), which may not have reached %v",
						v, st.Version, e.Dst, st.Frame, e.Src)
				}
				return Violation("DATA carries cutoff_version %d, %v after CUTOFFS version %d from %v (frame %d)",
					v, e.Time.Sub(st.Time).Round(time.Microsecond), st.Version, e.Dst, st.Frame).With(st.Frame).WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-CUTOFF-002", Level: Should,
			Facts:     []string{"CUT-01"},
			Statement: "A receiver that gets DATA with a stale cutoff_version sends CUTOFFS to the sender.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (rate-limited to once per jiffy per peer)",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "DATA discarded before the version check triggers nothing; loss after the capture point hides the DATA from the receiver",
			Property: Within{
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeData {
						return Obligation{}, false
					}
					v := e.Packet.Data().CutoffVersion()
					want := c.P.CutoffVersion
					if st := c.T.CutoffsKnown(e.Src, e.Dst); st != nil {
						if e.Time.Sub(st.Time) <= c.P.Slack {
							return Obligation{}, false // stale DATA still in flight; CUTOFFS just sent
						}
						want = st.Version
					}
					if v == want {
						return Obligation{}, false
					}
					src, dst := e.Src, e.Dst
					return Obligation{Key: [2]any{src, dst}, Expect: "CUTOFFS from " + dst.String() + " to " + src.String(),
						Match: func(c *Ctx, x *Event) bool { return x.Type() == wire.TypeCutoffs && x.Src == dst && x.Dst == src }}, true
				},
				Bound: func(p *Params) time.Duration { return p.ResponseTimeout },
			},
		},
	}
}
