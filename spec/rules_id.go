package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// idRules: RPC identifiers and ports (HomaModule homa_wire.h homa_local_id,
// homa_rpc.c, homa_sock.c).
func idRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ID-001", Level: Must, Alone: true,
			Facts:     []string{"ID-01"},
			Statement: "The two directions of an RPC carry ids that differ only in bit 0: the client sends its even id, the server that id plus one.",
			Source:    "HomaModule homa_wire.h homa_local_id; homa_rpc.c homa_rpc_alloc_client",
			Property: Each{Usual: Usual{FactKnown, Passed}, Check: func(c *Ctx, e *Event) Result {
				id := e.Packet.SenderID()
				if e.Type() == wire.TypeFreeze && id == 0 {
					return Skip
				}
				// A packet whose role bit puts it on the wrong side of a known
				// RPC: e.g. the server echoing the client's even id back.
				mirror := RPCKey{Client: e.Dst, Server: e.Src, ClientID: wire.ClientID(id)}
				if !e.FromClient() {
					mirror = RPCKey{Client: e.Src, Server: e.Dst, ClientID: wire.ClientID(id)}
				}
				// Client ids come from one counter per host, starting at 2
				// (facts §2), so two hosts that are each other's client
				// and server use the same ids in both directions: that
				// is legal and shows on the wire as a different pair of
				// ports. Only a packet between the known RPC's own two
				// sockets with the role bit flipped is a violation. The
				// RPC is known from its DATA, GRANTs or RESENDs: a
				// capture that lost the request may show only the
				// client's RESEND {0, -1}, and the answer to it is what
				// a server gets wrong by echoing the id.
				if c.T.Lookup(e) == nil {
					if r := c.T.rpcs[mirror]; r != nil && r.Packets[0]+r.Packets[1]+r.Packets[2] > 0 && sameSockets(r, e) {
						return Violation("sender_id %d has the role bit of the %s, but RPC %d between these ports (client %v:%d, server %v:%d) is known with the other roles",
							id, e.Packet.Role(), mirror.ClientID, mirror.Client, r.ClientPort, mirror.Server, r.ServerPort).With(r.FirstFrame)
					}
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ID-002", Level: Must, Alone: true,
			Facts:     []string{"ID-03", "ID-04"},
			Statement: "Requests go to a nonzero port; on main a destination port of 32768 or more (the automatically assigned range) is a server only if its socket set SO_HOMA_SERVER, which the wire does not show (inconclusive); linux_6.1.38 sockets all accept requests. No Homa packet has port 0 as its source, and only FREEZE as its destination.",
			Source:    "HomaModule homa_sock.c homa_sock_bind (bind to ports ≥ 32768 fails), homa_plumbing.c SO_HOMA_SERVER; homa.h HOMA_MIN_DEFAULT_PORT",
			Property: Each{Types: []wire.PacketType{wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeRPCUnknown, wire.TypeBusy, wire.TypeCutoffs, wire.TypeNeedAck, wire.TypeAck}, Partial: true, Usual: Usual{FactPortsUsual, Passed}, Check: func(c *Ctx, e *Event) Result {
				if sp, dp := e.Packet.Common().Sport(), e.Packet.Common().Dport(); sp == 0 || dp == 0 && (e.Type() != wire.TypeData || !e.FromClient()) {
					return Violation("%s from port %d to port %d: port 0 is reserved (no socket has it)", e.Type(), sp, dp)
				}
				if !e.FromClient() {
					return Pass()
				}
				p := e.Packet.Common().Dport()
				switch {
				case p == 0:
					return Violation("request DATA to port 0, which no Homa socket can have")
				case p < 32768:
					return Pass()
				case c.P.Wire == wire.Version2024:
					// linux_6.1.38: every socket accepts requests.
					return Pass()
				case e.Type() != wire.TypeData:
					return Pass()
				}
				if r := c.T.Lookup(e); r != nil && r.Request.Length != 0 {
					return Skip // judged at the request's first DATA
				}
				return Unsure("request DATA to port %d (≥ 32768, not bound): legal only if that socket enabled SO_HOMA_SERVER", p)
			}},
		},
	}
}

// sameSockets reports whether e travels between the two sockets of RPC r
// (in either direction).
func sameSockets(r *RPC, e *Event) bool {
	sp, dp := e.Packet.Common().Sport(), e.Packet.Common().Dport()
	if e.Src == r.Key.Client {
		return sp == r.ClientPort && dp == r.ServerPort
	}
	return sp == r.ServerPort && dp == r.ClientPort
}

// idRules2: id allocation and ICMP (HomaModule homa_rpc.c
// homa_rpc_alloc_client, homa_plumbing.c homa_err_handler_v4/v6).
func idRules2() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ID-003", Level: Must, Alone: true,
			Facts:     []string{"ID-01", "ID-02"},
			Statement: "No RPC has id 0: client ids start at 2 (sender_id 0 or 1 appears only in FREEZE).",
			Source:    "HomaModule homa_utils.c homa_init (next_outgoing_id = 2), homa_rpc.c homa_rpc_alloc_client",
			Property: Each{Partial: true, Usual: Usual{FactIDNonzero, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.Type() == wire.TypeFreeze {
					return Skip
				}
				if wire.ClientID(e.Packet.SenderID()) == 0 {
					return Violation("%s with sender_id %d: no RPC has client id 0", e.Type(), e.Packet.SenderID())
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ID-004", Level: Must,
			Facts:     []string{"ID-02"},
			Statement: "A client host never reuses an id: no RPC begins again more than response_timeout after it was acknowledged, nor with an id at or below one of that host's earlier RPCs that the capture shows acknowledged, nor with the id of its RPC with another server however that RPC ended (acknowledged, timed out, aborted by the application, ended by RPC_UNKNOWN: HOMA-WIRE-011 judges one still live), and no RPC's first request bytes come after an ack of it.",
			Source:    "HomaModule homa_rpc.c homa_rpc_alloc_client (ids from one per-host counter, +2 each); homa_peer.c homa_peer_add_ack (an RPC is acked after its response arrived); homa_timer.c homa_timer_check_rpc (a client RESENDs for its response only once it has transmitted every granted byte of its request, so an RPC first seen by that RESEND sent its request before), homa_incoming.c homa_rpc_unknown_pkt (the server's RPC_UNKNOWN makes the client retransmit it)",
			Capture:   "judged against the host's largest acked id once that ack is response_timeout old and its last 256 acked ids; a new RPC with a smaller id than an acked one, not one of those acked, is inconclusive: a request may wait between taking its id and its first packet, in a stalled sendmsg (a page fault or a preempted thread copying from user space) or, longer than defer_min_bytes (1000 B on main; linux_6.1.38 paces from throttle_min_bytes, 200 B: 199 in the linux-2024 profile), behind shorter messages in the sender's SRPT (SND-04); so is one first seen by another packet than request DATA (its client's RESEND) where the capture may lack packets the client sent (it shows loss between the two hosts before the capture point, or holds the client's packets as delivered, at the delivered point or on the server's own link, with the whole network before them): its request may have left in time and been lost; a host whose Homa module was reloaded during the capture starts again at 2: a new request's first DATA with an id no larger than the host's earlier ones, after the host sent nothing for timeout_ticks (its peers' own timeout; at least response_timeout plus slack), and id 2 or cutoff_version 0 to a peer whose version it carried before (a fresh module's state), starts a new section of the capture, judged afresh (the report lists the sections); ids back while the host is active, or without those signs, are judged",
			Property: Each{Usual: Usual{FactLive, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() || e.Type() == wire.TypeFreeze || e.Type() == wire.TypeAck {
					return Skip
				}
				r := c.T.Lookup(e)
				if r != nil && !r.reusedBy(e, c.P) {
					return Skip
				}
				if r == nil && e.Type() == wire.TypeData && !e.Retransmit() && e.Offset == 0 {
					// A new request under an id the client used with another
					// server, whose RPC has ended (HOMA-WIRE-011 judges
					// one still live): whatever ended it (an ack, a
					// timeout, an abort by the application, RPC_UNKNOWN),
					// the id is not taken again.
					if o := c.T.SameIDElsewhere(e); o != nil && o.Key.Server != e.Dst && (o.Acked || o.Unknown || e.Time.Sub(o.Last) > c.P.Ticks(c.P.TimeoutTicks)) {
						return Violation("new RPC %d from %v to %v, but %v used id %d for its RPC with %v (first packet frame %d, last %v earlier): ids are never reused, whatever ended that RPC",
							o.Key.ClientID, e.Src, e.Dst, e.Src, o.Key.ClientID, o.Key.Server, o.FirstFrame, e.Time.Sub(o.Last).Round(time.Microsecond)).With(o.FirstFrame).About(o.Key)
					}
				}
				h := c.T.acked[e.Src]
				if h == nil {
					return Pass()
				}
				id := wire.ClientID(e.Packet.SenderID())
				old, ok := h.ackOf(id)
				if r != nil {
					old, ok = ackedID{id, r.AckTime, r.AckFrame}, true // reuse, above
				}
				if ok && e.Type() == wire.TypeData && !e.Retransmit() && e.Offset == 0 {
					switch gap := e.Time.Sub(old.time); {
					case gap > c.P.ResponseTimeout:
						// The acked RPC itself (perhaps let go by the
						// trace) begins again: pacing cannot explain that.
						return Violation("new RPC %d from %v, but %v's RPC %d was acknowledged %v earlier (frame %d): ids are never reused",
							id, e.Src, e.Src, id, gap.Round(time.Millisecond), old.frame).With(old.frame)
					case r == nil && gap > c.P.Jitter:
						// Acked before any packet of it: its first request
						// bytes passed here before its server could have
						// answered, so before any ack of it (ACK-03).
						return Violation("first request bytes of RPC %d from %v, but an ack of RPC %d came %v earlier (frame %d): a client acks an RPC only after its whole response, which follows its request",
							id, e.Src, id, gap.Round(time.Microsecond), old.frame).With(old.frame)
					}
				}
				// The largest id acked, judged once its ack is
				// response_timeout old: a busy client may take an id and
				// send its first packet late (the copy from user space,
				// preemption), while other RPCs come and go.
				a := h.max
				if a.id == 0 || e.Time.Sub(a.time) <= c.P.ResponseTimeout {
					return Pass()
				}
				if id < a.id && r == nil && e.Type() == wire.TypeData {
					// Below the acked id (the acked id itself, new again,
					// is a reuse or a bogus ack either way; one of the
					// host's recent acks too, above): an id never seen
					// may be one a client took before the acked RPC and
					// sent late. A request the sender paces may wait for
					// its SRPT to pass shorter messages (SND-04); any may
					// wait in a sendmsg stalled between taking its id and
					// sending (homa_rpc_alloc_client, then the copy from
					// user space: a page fault, a preempted thread), with
					// nothing on the wire meanwhile.
					why := "its sendmsg may have stalled between taking the id and sending (a page fault or a preempted thread while copying from user space)"
					if n := e.Packet.Data().MessageLength(); n > c.P.DeferMinBytes {
						why = fmt.Sprintf("its %d-byte request is paced, and the sender's SRPT may have held its first packet behind shorter messages", n)
					}
					return Unsure("new RPC %d from %v after %v's RPC %d was acknowledged %v earlier (frame %d): %s",
						id, e.Src, e.Src, a.id, e.Time.Sub(a.time).Round(time.Millisecond), a.frame, why)
				}
				if id < a.id && r == nil {
					// First seen by another packet than its request's
					// DATA (a RESEND asking for the response): where the
					// capture may lack packets the client sent, the
					// request went before the acked RPC's and was lost on
					// its way (a netem link lost a one-packet request).
					if ev, ok := c.Net.MayLoseBefore(e.Src, e.Dst, e.Frame); ok {
						return Downgrade(CauseLossBefore, ev, "new RPC %d from %v, first seen by its %v, after %v's RPC %d was acknowledged %v earlier (frame %d): its request may have left before that RPC's",
							id, e.Src, e.Type(), e.Src, a.id, e.Time.Sub(a.time).Round(time.Millisecond), a.frame)
					}
				}
				if id <= a.id {
					return Violation("new RPC %d from %v, but %v's RPC %d was acknowledged %v earlier (frame %d): ids only grow",
						id, e.Src, e.Src, a.id, e.Time.Sub(a.time).Round(time.Millisecond), a.frame).With(a.frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ID-005", Level: Must,
			Facts:     []string{"ID-04", "ICMP-01"},
			Statement: "A host that answered a packet with ICMP port unreachable sends no Homa reply for that RPC from that port.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (no socket, or a request to a non-server socket: icmp_send and the packets are freed)",
			Property: Each{Needs: NeedsICMPSeen, Check: func(c *Ctx, e *Event) Result {
				u, ok := c.T.PortUnreachable(e.Src, e.Packet.Common().Sport())
				if !ok || u.To != e.Dst || u.SenderID == 0 || wire.ClientID(u.SenderID) != wire.ClientID(e.Packet.SenderID()) {
					return Skip
				}
				return Violation("%s for RPC %d from port %d, which %v declared unreachable (ICMP frame %d)",
					e.Type(), wire.ClientID(e.Packet.SenderID()), e.Packet.Common().Sport(), e.Src, u.Frame).With(u.Frame)
			}},
		},
		{
			ID: "HOMA-ID-006", Level: Must,
			Facts:     []string{"ICMP-01"},
			Statement: "After ICMP port unreachable from a host for a port, the other side aborts its RPCs with that port (a server's end, a client's fail with ENOTCONN): no packet of a server RPC begun before goes there more than slack later.",
			Capture:   "a server is judged wherever the ICMP is seen; a client's packets after it are inconclusive: its aborted RPC stays active (timer RESENDs, paced DATA) until the application reads the error, which the wire does not show (elsewhere than on the client's link the ICMP may also have been lost after the capture point); a client's ACK or RPC_UNKNOWN answering a socket that came back is not judged",
			Source:    "HomaModule homa_plumbing.c homa_err_handler_v4/v6 (port unreachable: homa_abort_rpcs for the address and port, client and server RPCs alike), homa_rpc.c homa_rpc_abort (a server RPC ends; a client RPC gets ENOTCONN and is handed to the application, homa_rpc_handoff, and ends only when recvmsg collects it); homa_incoming.c homa_need_ack_pkt and homa_resend_pkt answer for RPCs the client no longer has",
			Property: Each{Needs: NeedsICMPSeen, Check: func(c *Ctx, e *Event) Result {
				if e.Type() == wire.TypeFreeze || e.Type() == wire.TypeCutoffs {
					return Skip
				}
				if e.FromClient() && (e.Type() == wire.TypeAck || e.Type() == wire.TypeRPCUnknown) {
					return Skip // answers for an RPC the client no longer has
				}
				u, ok := c.T.PortUnreachable(e.Dst, e.Packet.Common().Dport())
				if !ok || u.To != e.Src {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || !r.First.Before(u.Time) {
					return Skip
				}
				if late := e.Time.Sub(u.Time); late > c.P.Slack {
					if e.FromClient() && c.Net.atReceiver(e.Src) {
						// homa_rpc_abort only marks a client RPC failed
						// and hands it to the application: it stays
						// active, its timer (RESEND) and pacer (granted
						// DATA) running, until the application reads the
						// error and recvmsg ends it, which the wire does
						// not show.
						return Unsure("%s of RPC %d to %v port %d %v after that port was reported unreachable (ICMP frame %d): the client's aborted RPC lives on until its application collects the error",
							e.Type(), r.Key.ClientID, e.Dst, e.Packet.Common().Dport(), late.Round(time.Microsecond), u.Frame)
					}
					if e.FromClient() {
						// Away from the client's link the ICMP may have
						// been lost on its way (the catalogue's ID-005
						// twin: a client RESENDing after it).
						return Downgrade(CauseLossAfter, Evidence{u.Frame, fmt.Sprintf("the ICMP port unreachable (frame %d) may not have reached %v", u.Frame, e.Src)},
							"%s of RPC %d to %v port %d %v after that port was reported unreachable (ICMP frame %d)",
							e.Type(), r.Key.ClientID, e.Dst, e.Packet.Common().Dport(), late.Round(time.Microsecond), u.Frame)
					}
					return Violation("%s of RPC %d to %v port %d %v after that port was reported unreachable (ICMP frame %d)",
						e.Type(), r.Key.ClientID, e.Dst, e.Packet.Common().Dport(), late.Round(time.Microsecond), u.Frame).With(u.Frame).WithSlack(c.P.Slack).WithLate(late - c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
	}
}
