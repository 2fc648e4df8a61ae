package spec

import (
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantRankRules: SRPT ranking of scheduled priorities (HomaModule
// homa_grant.c homa_grant_priority, homa_grant_outranks).
func grantRankRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-GRANT-011", Level: Should,
			Facts:     []string{"GRANT-08", "GRANT-09"},
			Statement: "A receiver never gives a GRANT a higher scheduled priority than the latest GRANT of another message it is granting that has clearly fewer bytes left to receive (SRPT ranking, within rank_tolerance bytes).",
			Source:    "HomaModule homa_grant.c homa_grant_priority, homa_grant_outranks; SIGCOMM 2018 §3.4",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "main ranks with a cached copy of bytes remaining, so near-ties can invert (rank_tolerance); only GRANTs less than slack apart are compared; a message granted to its end has left the active set and is not compared",
			Property: Each{Types: []wire.PacketType{wire.TypeGrant}, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				p := g.Priority()
				if isFIFOGrant(c.P, p) || p == 0 {
					return Skip // FIFO grants are outside SRPT; level 0 outranks nothing
				}
				_, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Skip
				}
				left := int64(m.Length) - int64(m.Received())
				for _, o := range c.T.Granting(e.Src) {
					if o == m || o.Length == 0 || len(o.RecentGrants) == 0 || o.Granted >= o.Length {
						// A fully granted message has left the active set
						// (homa_grant_check_rpc): its last priority no
						// longer constrains the others.
						continue
					}
					last := o.RecentGrants[len(o.RecentGrants)-1]
					if isFIFOGrant(c.P, last.Priority) || e.Time.Sub(last.Time) > c.P.Slack || last.Priority >= p {
						continue
					}
					oLeft := int64(o.Length) - int64(o.Received())
					if oLeft+int64(c.P.RankTolerance) < left {
						return Violation("GRANT priority %d for a message with %d bytes left, while a message with %d bytes left got priority %d %v earlier",
							p, left, oLeft, last.Priority, e.Time.Sub(last.Time).Round(time.Microsecond)).WithSlack(c.P.Slack)
					}
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
	}
}
