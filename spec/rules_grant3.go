package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantRules3: a receiver keeps granting a message it grants (HomaModule
// homa_grant.c homa_grant_check_rpc, homa_grant_try_send).
func grantRules3() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-GRANT-019", Level: Must,
			Facts:     []string{"GRANT-02", "GRANT-03", "GRANT-06"},
			Statement: "A receiver keeps granting a message it has begun to grant: when every byte up to the message's grant horizon has arrived and the message is still incomplete, it sends the message another GRANT within timeout_ticks ticks (a stall is for good: no timer grants), unless it is granting max_overcommit other messages or has max_incoming granted and not received.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (homa_grant_check_rpc after each batch), homa_grant.c homa_grant_try_send (an active message with granted - received below its window gets a GRANT while total incoming is below max_incoming); linux_6.1.38 homa_grant.c homa_grant_recalc",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "judged at the packet that completes the granted bytes as the capture sees them (an skb that overshoots the horizon to the message's end needs no GRANT); inconclusive while the receiver grants max_overcommit other messages (or max_rpcs_per_peer other messages from the same sender, none of which it clearly outranks: 1 before HomaModule 3daedc3) or has max_incoming granted and not received, after RPC_UNKNOWN or a buffer-wakeup RESEND for the message, when the receiver sends nothing more for the RPC (a client whose application ended the RPC, a closed socket or a host gone look alike; a live server answers the client's RESENDs with BUSY), and where the capture shows loss toward the receiver after the capture point; a RESEND from the receiver beyond the horizon counts as a GRANT lost before the capture point (the sender takes it as one, homa_resend_pkt)",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeData},
				Usual:        Usual{When: FactNoGrantStall},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeData || e.Length == 0 {
						return Obligation{}, false
					}
					r := c.T.Lookup(e)
					if r == nil || r.Unknown {
						return Obligation{}, false
					}
					m := r.Msg(e.Packet.Role())
					if m.Grants == 0 || m.Complete || m.Length <= c.P.UnschedBytes || m.ResendAll {
						return Obligation{}, false
					}
					h := m.Horizon(c.P)
					if h >= m.Length || e.Offset >= h || m.Seen.Covers(0, h) || !m.Seen.CoversWith(0, h, e.Offset, min(e.End(), m.Length)) {
						return Obligation{}, false
					}
					if m.Seen.CoversWith(0, m.Length, e.Offset, min(e.End(), m.Length)) {
						// This packet (an skb that overshot the horizon to
						// the end) completes the message: nothing to grant.
						return Obligation{}, false
					}
					k, sender := KeyOf(e), e.Packet.Role()
					receiver := oppositeRole(sender)
					rHost, sHost := e.Dst, e.Src
					trigFrame, trigSeg := e.Frame, e.Segment
					self := func(c *Ctx) *Message {
						if r := c.T.rpcs[k]; r != nil {
							return r.Msg(sender)
						}
						return nil
					}
					// alive: the receiver sent a packet of the RPC after
					// the trigger (a BUSY answering the sender's RESEND,
					// a RESEND for a gap), so it still holds the RPC.
					alive := false
					return Obligation{Key: rpcMsgKey{k, sender}, Expect: fmt.Sprintf("GRANT beyond %d from the message's receiver", h),
						Match: func(c *Ctx, x *Event) bool {
							if x.Err != nil || KeyOf(x) != k {
								return false
							}
							switch {
							case x.Type() == wire.TypeGrant:
								return x.Packet.Role() == receiver
							case x.Type() == wire.TypeResend && x.Packet.Role() == receiver:
								// The receiver's timer asks for
								// [received, granted): an end beyond h
								// shows a GRANT lost before the capture
								// point, and the sender takes the
								// RESEND as that grant (homa_resend_pkt).
								rs := x.Packet.Resend()
								return !rs.IsResendAll() && uint64(rs.Offset())+uint64(rs.Length()) > uint64(h)
							case x.Type() == wire.TypeData && x.Packet.Role() == sender:
								// The sender's last skb overshot the horizon
								// and completed the message: nothing is
								// left to grant.
								m := self(c)
								return m != nil && m.Length > 0 && m.Seen.CoversWith(0, m.Length, x.Offset, min(x.End(), m.Length))
							}
							return false
						},
						Moot: func(*Ctx) (string, bool) {
							if alive {
								return "", false
							}
							return "the receiver sent nothing for the RPC after this packet: a client whose application ended the RPC, a closed socket or a host gone looks the same on the wire (a live receiver answers the client's RESENDs with BUSY)", true
						},
						Excuse: func(c *Ctx, x *Event) (string, bool) {
							if x.Err == nil && x.Src == rHost && KeyOf(x) == k {
								alive = true
							}
							return grantWaitExcuse(c, x, trigFrame, trigSeg, k, receiver, rHost, sHost, self)
						}}, true
				},
				// A stalled message stays stalled (nothing else makes the
				// receiver grant it), so the bound is generous: an
				// emulated or loaded receiver grants tens of milliseconds
				// after the data it answers (facts §4.0, GRANT-11).
				Bound: func(p *Params) time.Duration { return max(p.AnswerBound(), p.LateTicks(p.TimeoutTicks)) },
			},
		},
		{
			ID: "HOMA-GRANT-020", Level: Should,
			Facts:     []string{"GRANT-07", "GRANT-08"},
			Statement: "A receiver grants the messages with the fewest bytes left (SRPT): it sends no SRPT GRANT for a message while another message it has known for slack, from a host none of whose messages it grants, has clearly fewer bytes left (by rank_tolerance, both to receive and to grant: net-next and linux_6.13.9 rank by the latter) and has had no GRANT.",
			Source:    "HomaModule homa_grant.c homa_grant_manage_rpc and homa_grant_find_victim (a new message takes a free slot, or the slot of the lowest-ranked active message when it outranks it, victims coming first from hosts with several active messages), homa_grant_promote_queued; linux_6.1.38 homa_grant.c homa_grant_recalc (the max_overcommit best, one per sending host)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "judged at a message's first GRANT and every fourth after it, at receivers with at most 256 long messages under way (the scan costs O(messages at the receiver)); needs every packet the receiver gets; a message passed over may be waiting for receive buffers (GRANT-10), which the wire shows only later by the buffer-wakeup RESEND, so the finding waits for the passed-over message's next GRANT or wakeup RESEND from the receiver (none by the end of the capture: inconclusive); bytes remaining are compared with the passed-over message's as the receiver had them slack before the GRANT (main ranks with a stale copy, rank_tolerance)",
			// A witness rule: the passed-over message may have been
			// waiting for receive buffers (homa_grant_check_rpc manages
			// an RPC only once homa_pool gave it bpages), which the wire
			// shows only later, by the receiver's buffer-wakeup RESEND
			// for it. The finding waits for the message's next packet
			// from the receiver: a GRANT with no wakeup before it
			// confirms the violation, a wakeup RESEND excuses it.
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeGrant},
				Witness:      true,
				Bound:        func(p *Params) time.Duration { return p.Slack },
				Trigger:      srptPassedOver,
			},
		},
		{
			ID: "HOMA-GRANT-022", Level: Should,
			Facts:     []string{"FIFO-01"},
			Statement: "A FIFO GRANT (level num_priorities-2) goes to the oldest message its receiver may FIFO-grant: when the receiver chooses anew (its previous FIFO GRANT went to another message), no other message to it is clearly older (first DATA earlier by more than slack) and surely eligible: being granted, incomplete, not granted to its end, and with fewer granted bytes not received than window + 2·fifo_grant_increment. A receiver may keep granting the message its previous FIFO GRANT went to while that one stays eligible, though an older one has become eligible since; and it may pass over an older message that may be its first active message (fewest bytes to grant: linux_6.13.9 skips that one, which gets SRPT grants anyway).",
			Source:    "HomaModule homa_grant.c homa_grant_check_fifo (grant->oldest_rpc is kept while it is not fully granted and its rec_incoming stays below window + 2·fifo_grant_increment), homa_grant_find_oldest (the earliest msgin.birth among grantable and active RPCs, skipping those fully granted or with rec_incoming at or above that bound; linux_6.13.9 also skips active_rpcs[0], the RPC with the fewest bytes to grant after homa_grant_fix_order), homa_grant_unmanage_rpc (a message that completes or ends leaves the choice); homa_incoming.c homa_message_in_init (birth: the first DATA processed)",
			Profiles:  []string{"linux"},
			Capture:   "judged only where FIFO GRANTs have a level of their own (max_sched_prio below num_priorities-2), at a FIFO GRANT after which the receiver's cached choice cannot hold the message: its previous FIFO GRANT (and any other less than slack before that one: two cores may send them out of order) went to another message, or it sent none since the message's first DATA; needs every packet the receiver sends (a FIFO GRANT lost before the capture point may have set the choice: inconclusive where the capture shows such loss) and the message's first DATA (an RPC begun before the capture: inconclusive); the older message counts as eligible only where the capture makes it sure: it had a GRANT less than slack before, more than one window and one skb of it lie beyond what it was authorised (a GRANT still on its way cannot complete it), its granted bytes not seen slack before stay below window + 2·fifo_grant_increment at the smallest dynamic window (max_incoming/(max_overcommit+1)), no loss toward the receiver after the capture point, its sender not silent for timeout_ticks and its RPC neither ended (RPC_UNKNOWN, ack) nor re-created at the receiver, and surely not the receiver's first active message: another message it gave an SRPT GRANT less than slack before, not granted to its end, has fewer bytes to grant by more than rank_tolerance, counted without that message's GRANTs of the last slack (homa_grant_fix_order re-sorts every grant_recalc_usecs); an RPC its application aborted leaves no packet and is not seen",
			Property:  Each{Types: []wire.PacketType{wire.TypeGrant}, Check: fifoOldest},
		},
		{
			ID: "HOMA-GRANT-023", Level: Must,
			Facts:     []string{"FIFO-01"},
			Statement: "A receiver makes FIFO grants at the pace grant_fifo_fraction sets: its FIFO grant decisions come at least fifo_grant_interval apart (fifo_grant_increment·8 bits at grant_fifo_fraction/1000 of link_mbps: 320 µs at the defaults), each giving at most fifoRacers (4) FIFO GRANTs, so any n of its FIFO GRANTs that raise their messages' offsets span at least (ceil(n/4)-1) intervals, less slack and jitter.",
			Source:    "HomaModule homa_grant.c homa_grant_check_fifo (returns while now < fifo_grant_time, then sets fifo_grant_time = now + fifo_grant_interval; the test before the grant lock lets cores that make it at once each grant: \"an occasional extra FIFO grant\"), homa_grant_update_sysctl_deps (fifo_grant_interval from link_mbps, grant_fifo_fraction capped at 500, fifo_grant_increment)",
			Profiles:  []string{"linux"},
			Capture:   "judged only where FIFO GRANTs have a level of their own (max_sched_prio below num_priorities-2) and counted only where they raise what the capture shows their message granted (a duplicated GRANT does not); the interval is the parameters' (link_mbps and grant_fifo_fraction as the hosts are configured: a host given a faster link or a larger fraction than the parameters say makes FIFO grants faster, and --param link_mbps=... must say so); a GRANT may leave up to slack after its decision (the grant lock is released before homa_grant_send) and pass the capture point jitter early, so spans shrink by both; GRANTs the capture missed only lengthen the spans it sees",
			Property:  Each{Types: []wire.PacketType{wire.TypeGrant}, Check: fifoPaced},
		},
		{
			ID: "HOMA-GRANT-024", Level: Must,
			Facts:     []string{"GRANT-02", "GRANT-12"},
			Statement: "A receiver grants as a message's bytes arrive, not once every byte it authorised is in (stop-and-wait): while the message is the only one longer than unsched_bytes coming to it, an SRPT GRANT raises the message's horizon by no more than the bytes of two batches of DATA (2·max_gro_skbs of the message's largest skbs), since the receiver grants received + window after every batch it processes.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (homa_grant_check_rpc once per batch of an RPC's packets), homa_plumbing.c homa_softirq (a batch: the packets of one GRO-merged skb), homa_offload.c homa_gro_receive (at most max_gro_skbs, 20, packets merged), homa_grant.c homa_grant_try_send (granted = received + window whenever that exceeds granted and max_incoming has room); linux_6.1.38 homa_grant.c homa_grant_send (increment = grant_window - incoming)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "judged at an SRPT GRANT after an SRPT GRANT for the same message (the latest GRANT seen, and no RESEND from the receiver beyond it) that reached what the capture had seen received plus the window, less two batches (a GRANT cut shorter, by max_incoming shared with other messages' unscheduled bytes, lets the next one catch up), only where the receiver had no other message longer than unsched_bytes incoming from slack before that GRANT on (its window then stays that of one active message, and max_incoming cannot cut a grant short); a skb holds at most the message's largest DATA frame the capture saw (a GSO frame counts max_seg_data per segment), so a capture of GSO frames larger than the receiver's skbs only loosens the bound; GRANTs lost before the capture point (the capture shows loss between the hosts) make a raise look larger: inconclusive; where the receiver had another long message before, the finding is a timing one (a receiver that processed that message's last DATA only after the previous GRANT, stalled since, grew the window in between); max_gro_skbs is the parameter's (20, HomaModule's default): a receiver configured with more merges larger batches, and --param max_gro_skbs=N (or the capture's .params sidecar) must say so",
			Property:  Each{Types: []wire.PacketType{wire.TypeGrant}, Check: grantsPerBatch},
		},
		{
			ID: "HOMA-GRANT-021", Level: Must, AnyEnd: true,
			Facts:     []string{"GRANT-02", "RTX-11"},
			Statement: "A receiver grants only a message it has begun to receive: no GRANT for a message comes before the first transmission of the message's first byte (offset 0, retransmit=0), the first DATA its sender sends.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (only request DATA creates a server RPC; a GRANT for an unknown RPC is dropped), homa_data_pkt (a client's msgin starts at the first response DATA), homa_grant.c homa_grant_manage_rpc (only an RPC with msgin is granted); homa_outgoing.c homa_xmit_data (a message's bytes go out in offset order from 0)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "any single capture point on the path, less jitter (none on either end's own link, which stamps both with one clock in the order they passed): the first DATA of a message passes it before the receiver can have it, and a GRANT that leaves the receiver passes it before the sender can; judged only at a first transmission of offset 0 with no byte of the message seen before it, so a late capture start does not matter (the GRANT shows the capture ran before that DATA); a capture that dropped packets makes it inconclusive (a later offset that overtook offset 0 on the way, and that the receiver had when it granted, may be among them); one that is one end of every link does not (the order holds whichever end stamped each packet)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactNotFirstByte, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if e.Offset != 0 || e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Pass() // nothing of the RPC before: no GRANT either
				}
				m := r.Msg(e.Packet.Role())
				if len(m.Seen) > 0 || m.Earlier != nil {
					return Skip // not the message's first DATA in the capture (a repeat, or a reused id)
				}
				if m.Grants == 0 {
					return Pass()
				}
				g := m.RecentGrants[0]
				noise := c.P.Jitter // capture timestamp noise
				if c.Net.cp.Kind == CaptureHost {
					// A tap on one end's link stamps both packets with
					// one clock in the order they passed it: on the
					// receiver's the GRANT as it left and the DATA as it
					// arrived, on the sender's the GRANT as it arrived
					// and the DATA as it left.
					noise = 0
				}
				if e.Time.Sub(g.Time) <= noise {
					return Pass()
				}
				return Violation("GRANT offset %d (frame %d) came %v before the message's first DATA (offset 0, retransmit=0): its receiver had none of the message to grant",
					g.Offset, g.Frame, e.Time.Sub(g.Time).Round(time.Microsecond)).With(g.Frame).CaptureRanBefore()
			}},
		},
	}
}

// srptPassedOver is HOMA-GRANT-020's trigger: at an SRPT GRANT from a
// receiver, a message it has known for slack, from a host it grants
// nothing to, with clearly fewer bytes left and no GRANT yet. The
// obligation waits for that message's next GRANT or buffer-wakeup RESEND
// from the receiver (see the rule).
func srptPassedOver(c *Ctx, e *Event) (Obligation, bool) {
	if e.Type() != wire.TypeGrant {
		return Obligation{}, false
	}
	if maybeFIFO(c, e) || !c.Net.cp.TimesArrivalsAt(e.Src) {
		return Obligation{}, false
	}
	mr, m := grantMsg(c, e)
	if m == nil || m.Length == 0 {
		return Obligation{}, false
	}
	// Every long message the receiver has is granted or complete: nothing
	// waits (the common case, O(1)).
	n := c.T.Grantable(e.Src, e.Time)
	if n <= len(c.T.granting[e.Src]) || n > maxSRPTScan {
		return Obligation{}, false // nothing waits, or too many messages at the receiver to scan per GRANT
	}
	// The scan costs O(messages at the receiver): judge a message's first
	// GRANT and every fourth after it. A receiver that misranks keeps
	// granting the wrong message, so a persistent inversion is still seen.
	if m.Grants%4 != 0 {
		return Obligation{}, false
	}
	mLeft := int64(m.Length) - int64(m.Received())
	since := e.Time.Add(-c.P.Slack)
	// The set is a map: of the messages passed over, judge the one with
	// the fewest bytes left (then the earliest, then the lowest id), so
	// that the finding does not depend on map order.
	var best *Message
	var bestR *RPC
	var bestLeft int64
	for o, r := range c.T.longIn[e.Src] {
		if o.Grants > 0 || o == m || r == mr || !o.FirstData.Before(since) || !mayWait(c, r, o) || o.MaxIncoming >= o.Length {
			continue
		}
		if int64(o.Length)-int64(o.Received())+int64(c.P.RankTolerance) >= mLeft {
			continue // not ahead even with every byte seen (cheap bound)
		}
		left := int64(o.Length) - int64(o.ReceivedBy(since))
		if left+int64(c.P.RankTolerance) >= mLeft {
			continue
		}
		if int64(ungrantedBytes(o))+int64(c.P.RankTolerance) >= int64(ungrantedBytes(m)) {
			continue // not ahead by bytes to grant: net-next and linux_6.13.9 rank by those (homa_grant_outranks)
		}
		if e.Time.Sub(maxTime(o.LastData, r.Last)) >= c.P.Ticks(c.P.TimeoutTicks)-c.P.Slack {
			continue // its RPC may have timed out at the receiver
		}
		// A message from a host the receiver grants another message of
		// may rightly wait (per-host balancing).
		from := msgSender(r, o)
		if from == e.Dst || grantsFrom(c, e.Src, from, m) {
			continue
		}
		if best == nil || passedOverBefore(left, o, r, bestLeft, best, bestR) {
			best, bestR, bestLeft = o, r, left
		}
	}
	if best == nil {
		return Obligation{}, false
	}
	o, r, oLeft := best, bestR, bestLeft
	from := msgSender(r, o)
	recv, at, slack := e.Src, e.Time, c.P.Slack
	// A receiver that lagged behind o's DATA saw it ranked ahead of m
	// only from the arrival that put it clearly ahead (its first DATA,
	// when its whole length is ahead): the GRANT for o was due from
	// slack after that, and a stall must have lost as long.
	dueFrom := o.FirstData
	if thr := int64(o.Length) + int64(c.P.RankTolerance) - mLeft; thr >= 0 {
		for _, s := range o.recvLog {
			if s.t.After(since) {
				break
			}
			if int64(s.n) > thr {
				dueFrom = maxTime(s.t, o.FirstData)
				break
			}
		}
	}
	late := since.Sub(dueFrom)
	key := rpcMsgKey{r.Key, wire.RoleServer}
	if o == &r.Request {
		key.Sender = wire.RoleClient
	}
	what := fmt.Sprintf("SRPT GRANT for a message with %d bytes left while RPC %d from %v, %d bytes left and known for %v, has had no GRANT and %v grants nothing else from that host",
		mLeft, r.Key.ClientID, from, oLeft, e.Time.Sub(o.FirstData).Round(time.Microsecond), e.Src)
	return Obligation{
		Key:    key,
		Expect: fmt.Sprintf("GRANT or buffer-wakeup RESEND from %v for RPC %d", recv, r.Key.ClientID),
		Match: func(c *Ctx, x *Event) bool {
			if x.Err != nil || x.Src != recv || KeyOf(x) != key.RPC || x.Packet.Role() == key.Sender {
				return false
			}
			return x.Type() == wire.TypeGrant || x.Type() == wire.TypeResend && isBufferWakeup(c.P, x.Packet.Resend())
		},
		Confirm: func(c *Ctx, x *Event) Result {
			if x.Type() == wire.TypeResend || o.WakeupTime.After(at) {
				return Unsure("%s; its buffer-wakeup RESEND (frame %d) shows it waited for receive buffers (GRANT-10)", what, x.Frame).With(x.Frame)
			}
			v := Violation("%s (its first GRANT came %v later, frame %d, with no buffer-wakeup RESEND before it)",
				what, x.Time.Sub(at).Round(time.Microsecond), x.Frame).With(x.Frame).WithSlack(slack)
			if late > 0 {
				v = v.WithLate(late).WithSince(dueFrom)
			}
			return v
		},
		Unseen: func() Result {
			return Unsure("%s; it had no GRANT by the end of the capture, so it may have been waiting for receive buffers (GRANT-10)", what)
		},
	}, true
}

// passedOverBefore orders HOMA-GRANT-020's candidates, message o of RPC
// r with left bytes left against the best so far: fewer bytes left,
// then known earlier, then the lower client id and the request first.
func passedOverBefore(left int64, o *Message, r *RPC, bestLeft int64, best *Message, bestR *RPC) bool {
	switch {
	case left != bestLeft:
		return left < bestLeft
	case !o.FirstData.Equal(best.FirstData):
		return o.FirstData.Before(best.FirstData)
	case r.Key.ClientID != bestR.Key.ClientID:
		return r.Key.ClientID < bestR.Key.ClientID
	case r.Key.Client != bestR.Key.Client:
		return r.Key.Client.Less(bestR.Key.Client)
	}
	return o == &r.Request && best != &bestR.Request
}

// maxSRPTScan bounds the messages a receiver may have for HOMA-GRANT-020
// to scan them at its GRANTs (32 times HomaModule's max_overcommit of 8).
const maxSRPTScan = 256

// grantsFrom reports whether host recv grants a message other than skip
// that host from sends.
func grantsFrom(c *Ctx, recv, from netip.Addr, skip *Message) bool {
	for o, r := range c.T.granting[recv] {
		if o != skip && msgSender(r, o) == from {
			return true
		}
	}
	return false
}

// fifoOldest judges FIFO GRANT e (HOMA-GRANT-022): where the receiver
// chose its message anew (homa_grant_find_oldest: its cached
// grant->oldest_rpc cannot be that message), no other message to it may
// be clearly older and surely eligible (fifoEligible).
func fifoOldest(c *Ctx, e *Event) Result {
	g := e.Packet.Grant()
	if !isFIFOGrant(c.P, g.Priority()) {
		return Skip
	}
	if fifoLevelShared(c.P) {
		return Skip // SRPT GRANTs share the level (HOMA-GRANT-018 says so)
	}
	rg, m := grantMsg(c, e)
	if m == nil || m.Length == 0 || m.FirstData.IsZero() {
		return Unsure("FIFO GRANT for a message with no DATA in the capture")
	}
	if c.startedBefore(rg) {
		return Unsure("FIFO GRANT for a message whose RPC may have begun before the capture: an earlier FIFO GRANT may have made it the receiver's choice")
	}
	// The receiver keeps its choice (grant->oldest_rpc) from one FIFO
	// grant to the next while it stays eligible: a FIFO GRANT to the
	// message its previous one went to may be that choice. Two cores may
	// make FIFO grants at once (the time check is racy) and send them in
	// either order: so may one to the message of the FIFO GRANT before,
	// sent less than slack earlier.
	role := e.Packet.Role()
	lf := c.T.lastFIFO[e.Src]
	for i, f := range lf {
		if f.key == rg.Key && f.role == role && f.at.After(m.FirstData.Add(-c.P.Slack)) &&
			(i == 0 || lf[0].at.Sub(f.at) < c.P.Slack) {
			return Pass()
		}
	}
	if !c.Net.cp.SeesAllOf(e.Src) {
		return Unsure("the capture does not hold every GRANT %v sent: an earlier FIFO GRANT may have made this message its choice", e.Src)
	}
	var older *Message
	var olderRPC *RPC
	var why string
	for o, ro := range c.T.longIn[e.Src] {
		if o == m || o.FirstData.IsZero() || m.FirstData.Sub(o.FirstData) <= c.P.Slack {
			continue
		}
		// The oldest of them is named; among equals the lowest id, so
		// that the text does not depend on map order.
		if older != nil && !o.FirstData.Before(older.FirstData) &&
			(!o.FirstData.Equal(older.FirstData) || ro.Key.ClientID > olderRPC.Key.ClientID ||
				ro.Key.ClientID == olderRPC.Key.ClientID && !ro.Key.Client.Less(olderRPC.Key.Client)) {
			continue
		}
		if w, ok := fifoEligible(c, e, o, ro); ok && !mayRankFirst(c, e, o) {
			older, olderRPC, why = o, ro, w
		}
	}
	if older == nil {
		return Pass().WithSlack(c.P.Slack)
	}
	// A receiver that lagged behind its packets may not have seen every
	// older eligible message so: the least lag that hides them all.
	var late time.Duration
	for o, ro := range c.T.longIn[e.Src] {
		if o == m || o.FirstData.IsZero() || m.FirstData.Sub(o.FirstData) <= c.P.Slack {
			continue
		}
		if _, ok := fifoEligible(c, e, o, ro); ok && !mayRankFirst(c, e, o) {
			late = max(late, fifoLag(c, e, m, o))
		}
	}
	if ev, ok := c.Net.LostFromAny(e.Src); ok {
		// A FIFO GRANT to this message lost before the capture point
		// may have set the receiver's choice.
		return Downgrade(CauseLossBefore, ev, "FIFO GRANT offset %d for a message whose first DATA came %v after that of RPC %d's %d-byte message, which %s",
			g.Offset(), m.FirstData.Sub(older.FirstData).Round(time.Microsecond), olderRPC.Key.ClientID, older.Length, why)
	}
	v := Violation("FIFO GRANT offset %d for a message whose first DATA came %v after that of RPC %d's %d-byte message from %v, which %s: the receiver chose anew (its previous FIFO GRANT went to another message) and passed over an older eligible one",
		g.Offset(), m.FirstData.Sub(older.FirstData).Round(time.Microsecond), olderRPC.Key.ClientID, older.Length, msgSender(olderRPC, older), why).WithSlack(c.P.Slack)
	if late > 0 {
		v = v.WithLate(late).WithSince(e.Time.Add(-c.P.Slack - late))
	}
	return v
}

// fifoLag returns the least lag behind its packets (past slack) at which
// the receiver of FIFO GRANT e for message m did not see older message o
// as an older eligible one (fifoEligible): it processed o's first DATA
// after m's (o's birth later), it had not processed enough of o's bytes
// for its granted bytes not received to stay below window +
// 2·fifo_grant_increment, or it had processed nothing from o's sender for
// timeout_ticks (less two and slack) and timed it out.
func fifoLag(c *Ctx, e *Event, m, o *Message) time.Duration {
	lag := m.FirstData.Sub(o.FirstData) - c.P.Slack
	lag = min(lag, c.P.Ticks(c.P.TimeoutTicks-2)-2*c.P.Slack)
	auth := int64(max(o.Horizon(c.P), o.MaxIncoming))
	limit := int64(c.P.WindowFor(c.P.MaxOvercommit)) + 2*int64(c.P.FIFOGrantIncrement)
	view := e.Time.Add(-c.P.Slack)
	if thr := auth - limit; thr >= 0 {
		for _, s := range o.recvLog {
			if s.t.After(view) {
				break
			}
			if int64(s.n) > thr {
				lag = min(lag, view.Sub(s.t))
				break
			}
		}
	}
	return max(lag, 0)
}

// fifoEligible reports whether message o (of RPC ro), sent to the
// receiver of FIFO GRANT e, was surely one homa_grant_find_oldest could
// choose when the receiver decided e, and if so says why: managed and not
// ended (a GRANT from the receiver less than slack before e; no
// RPC_UNKNOWN, ack, re-creation or timeout_ticks of silence from its
// sender), not fully granted and incomplete even if a GRANT still on its
// way raised its offset by a window (max(window, max_incoming/2) past the
// bytes it could have sent), and rec_incoming below window +
// 2·fifo_grant_increment at the smallest window, counting as received
// only the bytes seen slack before e and with no loss toward the receiver
// after the capture point.
func fifoEligible(c *Ctx, e *Event, o *Message, ro *RPC) (string, bool) {
	last, ok := o.LastGrant()
	if !ok || e.Time.Sub(last.Time) >= c.P.Slack || o.Complete || o.whole || o.Earlier != nil ||
		ro.Unknown || ro.Acked || !ro.RecreatedTime.IsZero() || ro.ServerTimeout != nil {
		return "", false
	}
	if e.Time.Sub(maxTime(ro.First, ro.heardFrom(o))) >= c.P.Ticks(c.P.TimeoutTicks-2)-c.P.Slack {
		return "", false
	}
	from := msgSender(ro, o)
	if _, lost := c.Net.LostAfter(from, e.Src); lost {
		return "", false
	}
	// The most the receiver may have granted: its GRANTs, RESENDs and the
	// incoming its RPC started from.
	auth := uint64(max(o.Horizon(c.P), o.MaxIncoming))
	skb := uint64(max(skbData(c.P.MaxGSOSize, c.P.MTU, false), skbData(c.P.MaxGSOSize, c.P.MTU, true)))
	if auth+skb+uint64(c.P.GrantWindow()) >= uint64(o.Length) {
		return "", false
	}
	limit := uint64(c.P.WindowFor(c.P.MaxOvercommit)) + 2*uint64(c.P.FIFOGrantIncrement)
	recv := uint64(o.ReceivedBy(e.Time.Add(-c.P.Slack)))
	out := uint64(0)
	if auth > recv {
		out = auth - recv
	}
	if out >= limit {
		return "", false
	}
	return fmt.Sprintf("%v was granting (GRANT offset %d %v before) with at most %d of %d bytes granted and at most %d of them not received, below window + 2·fifo_grant_increment = %d",
		e.Src, last.Offset, e.Time.Sub(last.Time).Round(time.Microsecond), auth, o.Length, out, limit), true
}

// mayRankFirst reports whether message o may be the first of the active
// messages of the receiver of FIFO GRANT e, which linux_6.13.9's
// homa_grant_find_oldest skips (it gets SRPT grants anyway; main 9edb958
// scans every active message). o is surely not first only where another
// message the receiver gave an SRPT GRANT less than slack before e, and
// has not granted to its end (linux_6.13.9 unmanages a message once it is
// fully granted), has fewer bytes to grant than o by more than
// rank_tolerance, its bytes to grant counted without its GRANTs of the
// last slack (homa_grant_fix_order re-sorts the active messages only every
// grant_recalc_usecs). A message that displaces it from the active set
// outranks it, so ranks ahead of o too.
func mayRankFirst(c *Ctx, e *Event, o *Message) bool {
	oLeft := int64(ungrantedBytes(o))
	for p := range c.T.granting[e.Src] {
		if p == o || p.Complete || p.Length == 0 || max(p.Granted, p.MaxIncoming) >= p.Length {
			continue
		}
		last, ok := p.LastGrant()
		if !ok || last.FIFO || e.Time.Sub(last.Time) >= c.P.Slack {
			continue
		}
		pLeft := int64(p.Length) - int64(p.grantedBefore(c.P, e.Time, c.P.Slack))
		if pLeft+int64(c.P.RankTolerance) < oLeft {
			return false
		}
	}
	return true
}

// fifoRacers is how many FIFO GRANTs one FIFO grant decision of a
// receiver may give: homa_grant_check_fifo tests fifo_grant_time before it
// takes the grant lock, so cores that test it at once each make a grant
// (its comment says two, "relatively harmless"); twice that is allowed.
const fifoRacers = 4

// fifoPaced judges FIFO GRANT e (HOMA-GRANT-023): with the receiver's
// earlier FIFO GRANTs (Trace.fifoPace), each 2·fifoRacers, 4·fifoRacers,
// ... latest of them must span the intervals that many decisions take.
func fifoPaced(c *Ctx, e *Event) Result {
	g := e.Packet.Grant()
	if !isFIFOGrant(c.P, g.Priority()) || fifoLevelShared(c.P) {
		return Skip
	}
	iv := c.P.FIFOGrantInterval()
	_, m := grantMsg(c, e)
	if iv == 0 || m == nil || g.Offset() <= max(c.P.Unsched(m.Length), m.Granted) {
		return Skip // no pace to judge, or no new FIFO grant (a copy)
	}
	ft := c.T.fifoPace[e.Src]
	if ft == nil {
		return Pass()
	}
	tol := c.P.Slack + c.P.Jitter
	for n := 2 * fifoRacers; n <= ft.n+1; n *= 2 {
		first, frame := ft.back(n - 1)
		decisions := (n + fifoRacers - 1) / fifoRacers
		if need := time.Duration(decisions-1) * iv; e.Time.Sub(first) < need-tol {
			return Violation("%d FIFO GRANTs from %v in %v, the first at frame %d: FIFO grant decisions come at least fifo_grant_interval %v apart (fifo_grant_increment %d bytes at %d/1000 of link_mbps %d), at most %d GRANTs each, so %d take at least %v; slack %v and jitter %v allow %v",
				n, e.Src, e.Time.Sub(first).Round(time.Microsecond), frame, iv, c.P.FIFOGrantIncrement, min(c.P.GrantFIFOFraction, 500), c.P.LinkMbps, fifoRacers, n, need, c.P.Slack, c.P.Jitter, need-tol).With(frame).WithSlack(tol).WithEarly(need-tol-e.Time.Sub(first), first, EarlyFromOwn)
		}
	}
	return Pass().WithSlack(tol)
}

// defaultGROSkbs is HomaModule's max_gro_skbs default (homa_utils.c), which
// a max_gro_skbs parameter of 0 stands for (HOMA-GRANT-024).
const defaultGROSkbs = 20

// grantsPerBatch judges SRPT GRANT e (HOMA-GRANT-024): where its message
// is the only long one its receiver has incoming, the raise over the
// previous SRPT GRANT is the bytes the receiver processed in between
// (homa_grant_try_send grants received + window, the window fixed with
// one active message), which a receiver that grants after every batch
// keeps within one batch: more than two batches of the message's largest
// skbs shows batches processed with no GRANT.
func grantsPerBatch(c *Ctx, e *Event) Result {
	if maybeFIFO(c, e) {
		return Skip
	}
	_, m := grantMsg(c, e)
	if m == nil || m.Length == 0 || m.Grants == 0 || len(m.RecentGrants) == 0 || m.ResendAll || m.Earlier != nil {
		return Skip
	}
	prev := m.RecentGrants[len(m.RecentGrants)-1]
	off := e.Packet.Grant().Offset()
	if prev.FIFO || prev.Offset != m.Granted || off <= m.Granted || m.ResendEnd > m.Granted {
		return Skip
	}
	recv := e.Src
	if t := c.T.crowded[recv]; t != nil && !t.Before(prev.Time.Add(-c.P.Slack)) {
		return Skip // another long message: the window or max_incoming may have changed
	}
	if len(c.T.longIn[recv]) > 1 || len(c.T.granting[recv]) > 1 {
		return Skip
	}
	skb := m.frameMax
	if skb == 0 {
		skb = eventSkb(c.P, e)
	}
	gro := uint32(c.P.MaxGROSkbs)
	if gro == 0 {
		gro = defaultGROSkbs
	}
	raise, limit := off-m.Granted, 2*gro*skb
	if raise <= limit {
		return Pass()
	}
	if full := min(m.Length, prev.Received+c.P.GrantWindow()); uint64(prev.Offset)+uint64(limit) < uint64(full) {
		// The previous GRANT stopped short of received + window by more
		// than the DATA the capture may have seen before the receiver
		// processed it: something else held it back (max_incoming
		// shared with other messages' unscheduled bytes), so this raise
		// may catch up whole batches at once.
		return Skip
	}
	what := fmt.Sprintf("SRPT GRANT offset %d raises the message's horizon %d (GRANT in frame %d, %v earlier) by %d bytes, more than two batches of DATA allow (2 × max_gro_skbs %d skbs, each at most %d bytes: %d) while it is the only message longer than unsched_bytes coming to %v",
		off, m.Granted, prev.Frame, e.Time.Sub(prev.Time).Round(time.Microsecond), raise, gro, skb, limit, recv)
	if ev, ok := c.Net.LostBetween(recv, e.Dst); ok {
		return Downgrade(CauseLossBefore, ev, "%s: GRANTs between the two may have been lost before the capture point", what)
	}
	v := Violation("%s: the receiver processed batches of the message's DATA with no GRANT, as one that grants only once every byte it authorised has arrived (stop-and-wait); HomaModule grants received + window after every batch", what).With(prev.Frame)
	if t := c.T.crowded[recv]; t != nil {
		// The receiver had another long message before: had it
		// processed that one's last DATA only after the previous GRANT
		// (stalled that long), the window grew in between (fewer
		// active messages): a timing finding, which a measured stall
		// from then on explains.
		v = v.WithSlack(c.P.Slack).WithSince(*t).WithLate(prev.Time.Sub(*t))
	}
	return v
}
