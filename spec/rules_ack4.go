package spec

import (
	"fmt"
	"time"
	"weak"

	"github.com/homatest/homatest/spec/wire"
)

// ackRules4: which side sends NEED_ACK (HomaModule homa_timer.c), and what
// a client's ack says of the RPC (homa_need_ack_pkt).
func ackRules4() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ACK-010", Level: Must, Alone: true,
			Facts:     []string{"ACK-01", "ID-01"},
			Statement: "Only servers send NEED_ACK: every NEED_ACK carries a server's sender_id (bit 0 set).",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (NEED_ACK only for a server RPC whose response is transmitted); homa_incoming.c homa_need_ack_pkt runs at the client",
			Property: Each{Types: []wire.PacketType{wire.TypeNeedAck}, Partial: true, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() {
					return Violation("NEED_ACK with sender_id %d (even: sent by the client of the RPC)", e.Packet.Common().SenderID())
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ACK-012", Level: Must, Alone: true,
			Facts:     []string{"ACK-02"},
			Statement: "A client acknowledges only an RPC whose response it holds whole or that it no longer has, so after its ack of an RPC (the ACK answering NEED_ACK, an ACK entry or a piggy-backed ack) it sends no RESEND for that RPC.",
			Source:    "HomaModule homa_incoming.c homa_need_ack_pkt (an RPC still receiving its response gets homa_request_retrans, not an ACK), homa_rpc.c homa_rpc_end and homa_peer.c homa_peer_add_ack (a client's pending acks name RPCs it ended with their responses whole); client ids are never reused (homa_rpc_alloc_client)",
			Capture:   "a RESEND seen no more than slack after the ack (jitter plus slack where the capture is not on the client's link) may have left first: the timer and the NEED_ACK handler run on different cores and NIC queues; no packet the capture lacks excuses it (both packets are in it, and the ack's claim that the client held the response is what the RESEND contradicts)",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				if !r.Acked {
					return Pass() // no ack of the RPC before it
				}
				tol := c.P.Slack
				if !c.Net.atSender(e.Src) {
					tol += c.P.Jitter
				}
				if d := e.Time.Sub(r.AckTime); d > tol {
					return Violation("RESEND for the RPC %v after the client acknowledged it (frame %d): it acks only an RPC whose response it holds whole or no longer has",
						d.Round(time.Microsecond), r.AckFrame).With(r.AckFrame).WithSlack(tol).WithLate(d - tol)
				}
				return Pass().WithSlack(tol)
			}},
		},
		{
			ID: "HOMA-ACK-013", Level: Must,
			Facts:     []string{"ACK-01"},
			Statement: "A server asks for the ack of every RPC whose response it has transmitted and that it still holds: unless the client acknowledges it, says RPC_UNKNOWN for it or the client is reported unreachable, a NEED_ACK for it comes within max(max(request_ack_ticks, 1)+1 timer ticks stretched by timer_drift, response_timeout) plus slack of the first transmission of the response's last bytes.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (NEED_ACK on every pass once request_ack_ticks passed since the response was transmitted; server RPCs in that state never time out), homa_rpc.c homa_rpc_end (the RPC ends only by the client's ack or RPC_UNKNOWN, an ICMP abort or the socket's shutdown)",
			Capture:   "a close of the socket or a restart of the host ends the RPC without a packet, so a missing NEED_ACK is judged only when the same server socket shows, more than slack after the deadline, that it still holds another RPC (BUSY, GRANT, RESEND, response DATA or NEED_ACK) whose request DATA all came more than 2·slack before the response's last bytes (none could have re-created it after a close), or response DATA or a NEED_ACK for an RPC whose first request DATA came more than 2·slack plus jitter before them and none of whose request bytes came again (a close would have lost those bytes; a capture that sees all of that RPC's request DATA); without such a witness it is inconclusive (cause: socket closed or host restarted); inconclusive where the capture shows packets from the server to the client lost before the capture point (the NEED_ACKs may be the lost ones) or an ICMP unreachable about the client; how late a NEED_ACK that does come may be is HOMA-ACK-011",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeData},
				Witness:      true,
				Bound:        func(p *Params) time.Duration { return needAckDeadline(p) },
				Trigger:      needAckOwed,
			},
		},
	}
}

// needAckDeadline is how long after the first transmission of its
// response's last bytes a server that still holds the RPC has sent its
// first NEED_ACK (HOMA-ACK-013): HOMA-ACK-011's bound, and at least the
// time any answer may take.
func needAckDeadline(p *Params) time.Duration {
	return max(p.LateTicks(max(p.RequestAckTicks, 1)+1), p.AnswerBound())
}

// needAckOwed is HOMA-ACK-013's trigger: the first transmission of the
// last bytes of a server's response e, of an RPC not acknowledged. The
// obligation it opens waits for what ends the server's duty (its NEED_ACK,
// the client's ack or RPC_UNKNOWN) or, past the deadline, for a witness
// that the server socket was not closed (witnessHeld): the RPC was still
// held, and a NEED_ACK was owed.
func needAckOwed(c *Ctx, e *Event) (Obligation, bool) {
	if e.Type() != wire.TypeData || e.FromClient() || e.Retransmit() {
		return Obligation{}, false
	}
	d := e.Packet.Data()
	if e.Offset+uint32(d.DataLen()) != d.MessageLength() {
		return Obligation{}, false
	}
	r := c.T.Lookup(e)
	if r == nil || r.Acked || r.Unknown || r.NeedAcks > 0 {
		return Obligation{}, false
	}
	k, sock, held, clientPort := r.Key, HostPort{Addr: e.Src, Port: e.Packet.Common().Sport()}, e.Time, r.ClientPort
	deadline := held.Add(needAckDeadline(c.P))
	// The obligation may stay open to the end of the capture (a server
	// that sends no NEED_ACK): a weak pointer lets the trace's eviction
	// free the RPC meanwhile. Its flags change only when the trace applies
	// a packet of the RPC or an ack naming it, which judgeHeld asks this
	// obligation about, and the next packet too (the trace applies a
	// packet after the rules judged it; that Apply re-files the RPC, so no
	// eviction comes between), so an RPC gone from the trace has none set
	// that an earlier visit did not see.
	return Obligation{
		Key:  k,
		RPC:  k,
		held: heldWitness{sock: sock, at: held, deadline: deadline},
		Await: &needAckAwait{wr: weak.Make(r), k: k, sock: sock, held: held, deadline: deadline,
			clientPort: clientPort, frame: e.Frame, wait: needAckDeadline(c.P)},
	}, true
}

// needAckAwait is the obligation needAckOwed opens, as one value (one
// opens at every response): RPC k's server socket sock held it at held,
// the first transmission of the response's last bytes (frame), and owes
// a NEED_ACK by deadline, wait later.
type needAckAwait struct {
	wr             weak.Pointer[RPC]
	k              RPCKey
	sock           HostPort
	held, deadline time.Time
	clientPort     uint16
	frame          int
	wait           time.Duration
}

// ended reports whether x, or a packet the trace applied before it, ends
// the server's duty: its NEED_ACK, the client's ack or RPC_UNKNOWN.
func (a *needAckAwait) ended(x *Event) bool {
	k := a.k
	switch r := a.wr.Value(); {
	case r != nil && (r.Acked || r.Unknown || r.NeedAcks > 0):
		return true // the trace applied it at this or an earlier event
	case x.Src == k.Client:
		return acksRPC(x, k) || x.Err == nil && x.Type() == wire.TypeRPCUnknown && x.FromClient() && KeyOf(x) == k
	case x.Src == k.Server:
		return x.Err == nil && x.Type() == wire.TypeNeedAck && !x.FromClient() && KeyOf(x) == k
	}
	return false
}

// what is the finding's text, formatted only for a finding: nearly every
// response's obligation ends met.
func (a *needAckAwait) what() string {
	return fmt.Sprintf("no NEED_ACK for RPC %d within %v of its response's last bytes (frame %d), and no ack or RPC_UNKNOWN from the client", a.k.ClientID, a.wait, a.frame)
}

// Expect describes what ends the obligation.
func (a *needAckAwait) Expect() string {
	return "NEED_ACK from the server for the RPC, or packet showing that its socket still holds an RPC it held before"
}

// Match reports whether x ends the duty or witnesses that the socket
// still held the RPC past the deadline (witnessHeld).
func (a *needAckAwait) Match(c *Ctx, x *Event) bool {
	return a.ended(x) || witnessHeld(c, x, a.sock, a.k, a.held, a.deadline)
}

// Excuse gives none: a Witness rule's obligation is not excused.
func (a *needAckAwait) Excuse(*Ctx, *Event) (string, bool) { return "", false }

// Confirm gives the result at a matching x: a pass when the duty ended,
// else a violation, or inconclusive when the capture shows the client
// unreachable or packets toward it lost before the capture point.
func (a *needAckAwait) Confirm(c *Ctx, x *Event) Result {
	if a.ended(x) {
		return Pass()
	}
	k, held := a.k, a.held
	if u, ok := c.T.unreachable[HostPort{k.Client, a.clientPort}]; ok && u.Time.After(held.Add(-c.P.Slack)) {
		return Unsure("%s; the client's port was reported unreachable (frame %d), which aborts the RPC", a.what(), u.Frame).With(u.Frame)
	}
	if at, ok := c.T.hostUnreachable[hostPair{k.Server, k.Client}]; ok && at.After(held.Add(-c.P.Slack)) {
		return Unsure("%s; the client was reported unreachable, which aborts the RPC", a.what())
	}
	if ev, ok := c.Net.LostBetween(k.Server, k.Client); ok {
		return Downgrade(CauseLossBefore, ev, "%s; the NEED_ACKs may be packets lost before the capture point", a.what()).With(x.Frame)
	}
	w := c.T.Lookup(x)
	return Violation("%s; the socket was not closed: it still holds RPC %d of %v (%s %v after the deadline, frame %d), %s",
		a.what(), w.Key.ClientID, w.Key.Client, x.Type(), x.Time.Sub(a.deadline).Round(time.Microsecond), x.Frame, w.reqLastBefore(held, c.P.Slack)).With(x.Frame).WithSlack(c.P.Slack).WithLate(x.Time.Sub(a.deadline))
}

// Unseen gives the result when nothing matched by the end of the
// capture: inconclusive, as a close of the socket may explain it.
func (a *needAckAwait) Unseen() Result {
	return Downgrade(CauseClose, Evidence{Frame: a.frame, Why: fmt.Sprintf("no later packet of %v shows it still holds an RPC it held before, so a close of the socket or a restart of the host, which end every RPC it holds, may explain it", a.sock)}, "%s", a.what())
}
