package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// sendRules2: when a server may begin its response (HomaModule homa_rpc.c
// RPC states, homa_incoming.c homa_data_pkt, homa_plumbing.c
// homa_sendmsg).
func sendRules2() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-SEND-004", Level: Must,
			Facts:     []string{"RTX-06", "AMO-01"},
			Statement: "A server begins an RPC's response only once it holds the whole request: no request byte is transmitted for the first time (retransmit=0) after response DATA of the RPC appeared.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (the request goes to the application only when its last byte arrives, homa_rpc_handoff), homa_plumbing.c homa_sendmsg (a response needs the RPC in service); homa_resend_pkt answers BUSY while the request is incomplete",
			Capture:   "any single capture point on the path: a request byte the server used passed it before the response did; judged only on first transmissions of bytes the capture had not seen, so loss and a late capture start do not matter; charged to the server, which answered early (the client's packet is the evidence)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFromClient | FactFresh | FactWellFormed | FactLive | FactNoResponseData, Passed}, ChargeReceiver: true, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() || e.Retransmit() || e.Length == 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || r.Unknown || r.Acked {
					return Skip // a later request under the same id is new state (HOMA-ID-004)
				}
				resp := &r.Response
				if resp.FirstData.IsZero() {
					return Pass()
				}
				end := e.End()
				if m := &r.Request; m.Length > 0 {
					end = min(end, m.Length)
				}
				if r.Request.captured(e.Offset, end) {
					return Pass() // a repeat (HOMA-RESEND-010)
				}
				// Alone: a first transmission goes once, so these bytes left
				// the client after the response began, whatever came
				// before the capture or fell out of it.
				return Violation("first transmission of request bytes [%d, %d), %v after the server began its response (response DATA at %v): the server cannot have had the whole request",
					e.Offset, end, e.Time.Sub(resp.FirstData).Round(time.Microsecond), resp.FirstData.Sub(r.First).Round(time.Microsecond)).Alone()
			}},
		},
		{
			ID: "HOMA-SEND-005", Level: Must,
			Facts:     []string{"RTX-06", "AMO-01"},
			Statement: "A server begins an RPC's response only once it holds the whole request: every request byte has passed the capture point, in DATA with either retransmit value, when the RPC's first response DATA does.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (the request goes to the application only when its last byte arrives, homa_rpc_handoff), homa_plumbing.c homa_sendmsg (a response needs the RPC in service), homa_dispatch_pkts (a server RPC is created, homa_rpc_alloc_server, only by request DATA)",
			Capture:   "any single capture point on the path: a request byte the server used passed it before the response did; a response for an RPC with no request DATA in the capture is judged only when its client id is above that of the newest RPC with a request of at most defer_min_bytes the capture saw the client begin, more than response_timeout plus slack after the capture's start (ids only grow, homa_rpc_alloc_client, so the RPC began later and its whole request would have passed the capture point), and is not judged otherwise; a request whose first bytes came before the capture began, or a capture that dropped packets (it says so, or shows it missed request bytes below bytes it saw: Trace.MissedData), leaves it inconclusive; after the server's own RPC_UNKNOWN (it had lost the RPC) only bytes seen since count, unless a request byte came less than jitter before it (less than slack where the capture is not on the server's side of the link); bytes of an earlier incarnation the trace infers otherwise (a server timeout, a late request packet after the ack) count too",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFromClient, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return noRequestSeen(c, e, "first response DATA") // the RPC's first packet
				}
				if r.Acked || !r.Response.FirstData.IsZero() {
					return Skip // later response DATA: the first one was judged
				}
				if r.Unknown && (r.UnknownFromClient || !r.ForgotTime.IsZero()) {
					return Skip // the client forgot the RPC: this response is for no one
				}
				m := &r.Request
				if m.Length == 0 {
					return noRequestSeen(c, e, "first response DATA")
				}
				held, fresh := heldRequest(c, r)
				gaps := held.Gaps(m.Length)
				if len(gaps) == 0 {
					return Pass()
				}
				more := ""
				if len(gaps) > 1 {
					more = fmt.Sprintf(" and %d more gaps", len(gaps)-1)
				}
				if fresh {
					return Violation("first response DATA while request bytes [%d, %d)%s of %d did not pass the capture point since the server's RPC_UNKNOWN %v earlier: it had lost the RPC, and only bytes after that make its new incarnation",
						gaps[0].Start, gaps[0].End, more, m.Length, e.Time.Sub(r.UnknownTime).Round(time.Microsecond))
				}
				return Violation("first response DATA while request bytes [%d, %d)%s of %d never passed the capture point: the server cannot have had the whole request",
					gaps[0].Start, gaps[0].End, more, m.Length)
			}},
		},
	}
}

// noRequestSeen judges what, a packet e of a server for an RPC of which
// the capture holds no request DATA (HOMA-SEND-005, HOMA-ACK-001): a
// server has an RPC only once request DATA reached it (homa_dispatch_pkts
// creates it, homa_rpc_alloc_server, from DATA alone), so if the RPC's
// client id began while the capture ran (Trace.beganAfterNewest) its
// request would have passed the capture point on its way to the server,
// and e is for an RPC the server cannot have: a violation, which the
// capture's start does not excuse (a capture drop still may). Otherwise
// the request may have come before the capture: Skip.
func noRequestSeen(c *Ctx, e *Event, what string) Result {
	k := KeyOf(e)
	nw, after := c.T.beganAfterNewest(k.Client, k.ClientID)
	if !after {
		return Skip
	}
	return Violation("%s for RPC %d, whose request never passed the capture point: the client's newest RPC, %d, began at frame %d, and a higher id began later, so its request would have passed the capture point on its way to the server, which creates an RPC only from request DATA",
		what, k.ClientID, nw.ID, nw.Frame).With(nw.Frame).CaptureRanBefore()
}

// heldRequest returns the request bytes the server of r may hold as far
// as the capture shows (HOMA-SEND-005): after its own RPC_UNKNOWN (it had
// lost the RPC, homa_resend_pkt) only those of its new incarnation, which
// the client's restart creates, unless a request byte seen before that
// RPC_UNKNOWN may have reached it after (seen less than jitter before it
// where arrivals at the server are stamped, less than slack elsewhere);
// otherwise the bytes of every incarnation (a server timeout the trace
// infers may be wrong, and a late request packet may have re-created the
// RPC with them). fresh reports the first case.
func heldRequest(c *Ctx, r *RPC) (held byteranges.Set, fresh bool) {
	m := &r.Request
	if !r.Unknown || r.UnknownFromClient || r.LostLastData.IsZero() {
		return m.everSeen(), false
	}
	in := c.P.Slack
	if c.Net.atReceiver(r.Key.Server) {
		in = c.P.Jitter
	}
	if r.UnknownTime.Sub(r.LostLastData) <= in {
		return m.everSeen(), false
	}
	return m.Seen, true
}
