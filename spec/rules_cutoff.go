package spec

import (
	"fmt"
	"net/netip"
	"slices"
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
			Statement: "Once a sender has received CUTOFFS from a receiver, every DATA it sends there afterwards (retransmissions included) carries the cutoff_version of the last CUTOFFS that reached it, an older version arriving late included.",
			Source:    "HomaModule homa_incoming.c homa_cutoffs_pkt; homa_outgoing.c __homa_xmit_data",
			// The shared linux-6.1 e2 capture shows DATA of messages begun
			// before the CUTOFFS carrying the old version well after it,
			// though linux_6.1.38's __homa_xmit_data rewrites the version
			// at transmit as main does (helper-146; the cause, a queue
			// below Homa or another, is not known). Before main, only a
			// message begun after the CUTOFFS arrived is judged.
			Profiles: []string{"linux", "linux-2024", "linux-2025"},
			Capture:  "before main (linux-2024, linux-2025) only the first transmission of offset 0 of a message of at most defer_min_bytes is judged: the pacer never holds such a message, so it began as it left (a linux_6.1.38 capture shows DATA of messages begun before the CUTOFFS with the old version long after it); slack covers DATA already queued when the CUTOFFS arrived; on the receiver's side (delivered, the receiver's link) a stale DATA is inconclusive (queueing in the switch) until the sender's DATA at its level carry the new version, for up to response_timeout plus slack; a version no CUTOFFS in the capture announced is a violation even within slack, where the capture shows DATA of the sender before the CUTOFFS and none carried it (a restarted receiver counts from 1 again, so its earlier incarnation's higher version may still be held); where the capture does not show the order CUTOFFS reached the sender (not delivered, not its link), a DATA carrying the version of a CUTOFFS seen less than response_timeout plus slack before the latest one is inconclusive (the two may have arrived the other way round)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsCutoffsSeen, Check: func(c *Ctx, e *Event) Result {
				st := c.T.CutoffsKnown(e.Src, e.Dst)
				if st == nil {
					return Skip
				}
				if c.P.Wire != wire.VersionCurrent && (e.Offset != 0 || e.Retransmit() || e.Packet.Data().MessageLength() > uint32(max(c.P.DeferMinBytes, 0))) {
					return Skip // perhaps begun before the CUTOFFS arrived
				}
				v := e.Packet.Data().CutoffVersion()
				// Judge from the first of the latest CUTOFFS that carry the
				// current version: a receiver repeats CUTOFFS while stale
				// DATA keeps coming, which must not restart the allowance.
				// A CUTOFFS of another version between them (one the
				// network delayed past a newer one) does: the sender takes
				// whatever CUTOFFS arrives last, older version or not
				// (homa_cutoffs_pkt overwrites peer->cutoff_version), so
				// it rightly went back to that version meanwhile.
				vs := c.T.CutoffVersions(e.Src, e.Dst)
				ordered := c.Net.atReceiver(e.Src) // the capture shows the order they reached the sender
				first := cutoffsAllowanceStart(vs, ordered, c.P.AnswerBound())
				st = &first
				// A DATA built before the CUTOFFS arrived carries the
				// version the sender held then: 0 or one the receiver
				// announced earlier, never one it has not announced yet
				// (versions only grow, +1 per sysctl write: homa_utils.c
				// homa_prios_changed). Slack does not excuse that. But a
				// receiver that restarted counts from 1 again (and a
				// version wraps at 2^16), so a higher one its earlier
				// incarnation announced before the capture may still be
				// held: judged only where the capture shows what the
				// sender carried before these CUTOFFS.
				if v != 0 && v != st.Version && v > maxVersion(c.T.CutoffVersions(e.Src, e.Dst)) && c.T.carriedOnlyOthers(e.Src, e.Dst, v, st.Time) {
					return Violation("DATA carries cutoff_version %d, which %v never announced (its latest CUTOFFS, frame %d, carries %d)",
						v, e.Dst, st.Frame, st.Version).With(st.Frame)
				}
				if v == st.Version || e.Time.Sub(st.Time) <= c.P.Slack {
					return Pass().WithSlack(c.P.Slack)
				}
				if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
					return Downgrade(CauseLossAfter, ev, "DATA carries cutoff_version %d after CUTOFFS version %d from %v (frame %d), which may not have reached %v",
						v, st.Version, e.Dst, st.Frame, e.Src)
				}
				if !ordered {
					// An earlier CUTOFFS carrying v, seen less than the
					// bound before the latest one, may have reached the
					// sender after it (delayed or reordered) and be the
					// one the sender holds.
					last := vs[len(vs)-1]
					for i := len(vs) - 2; i >= 0 && last.Time.Sub(vs[i].Time) <= c.P.AnswerBound(); i-- {
						if x := vs[i]; x.Version == v {
							return Downgrade(CauseQueueing, Evidence{x.Frame, fmt.Sprintf("CUTOFFS version %d, seen %v before version %d, may have reached %v after it", v, last.Time.Sub(x.Time).Round(time.Microsecond), last.Version, e.Src)},
								"DATA carries cutoff_version %d after CUTOFFS version %d from %v (frame %d), seen away from the sender, which may have got them in another order", v, st.Version, e.Dst, st.Frame)
						}
					}
				}
				if c.Net.atReceiver(e.Dst) && !c.Net.atSender(e.Src) && e.Time.Sub(st.Time) <= c.P.AnswerBound() {
					// On the receiver's side, a DATA seen after the CUTOFFS
					// may have left before it arrived, queued in the
					// switch, until the sender's DATA at the same level
					// (FIFO) show the new version.
					if _, ok := c.T.firstDataWith(e.Src, e.Dst, st.Version, e.Priority); !ok {
						return Downgrade(CauseQueueing, Evidence{st.Frame, fmt.Sprintf("no DATA from %v at level %d carried cutoff_version %d yet: this one may have been sent before the CUTOFFS arrived", e.Src, e.Priority, st.Version)},
							"DATA carries cutoff_version %d, %v after CUTOFFS version %d from %v (frame %d), seen away from its sender", v, e.Time.Sub(st.Time).Round(time.Microsecond), st.Version, e.Dst, st.Frame)
					}
				}
				return Violation("DATA carries cutoff_version %d, %v after CUTOFFS version %d from %v (frame %d)",
					v, e.Time.Sub(st.Time).Round(time.Microsecond), st.Version, e.Dst, st.Frame).With(st.Frame).WithSlack(c.P.Slack).WithLate(e.Time.Sub(st.Time) - c.P.Slack)
			}},
		},
		{
			ID: "HOMA-CUTOFF-002", Level: Should,
			Facts:     []string{"CUT-01"},
			Statement: "A receiver that gets DATA with a stale cutoff_version sends CUTOFFS to the sender.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (rate-limited to once per jiffy per peer)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "DATA discarded before the version check triggers nothing: malformed DATA (HOMA-WIRE-002) owe no answer, nor does DATA of a message its receiver already holds whole or of an RPC it no longer has (acknowledged, or ended by RPC_UNKNOWN: a late or duplicated packet); nor does stale DATA within a tick (HomaModule's jiffy) or slack of the receiver's last CUTOFFS to that peer; loss after the capture point hides the DATA from the receiver",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeData},
				Usual:        Usual{When: FactCutoffCurrent},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeData || malformedData(c.P, e) {
						return Obligation{}, false
					}
					if r := c.T.Lookup(e); r != nil && (r.Acked || r.Unknown || r.Msg(e.Packet.Role()).Complete) {
						// The receiver drops it in homa_dispatch_pkts (no
						// RPC) or before homa_data_pkt's version check (a
						// message already complete): facts CUT-01.
						return Obligation{}, false
					}
					v := e.Packet.Data().CutoffVersion()
					want := c.P.CutoffVersion
					if st := c.T.CutoffsKnown(e.Src, e.Dst); st != nil {
						if e.Time.Sub(st.Time) <= max(c.P.Slack, c.P.Tick) {
							// Stale DATA still in flight, or within the jiffy
							// of the last CUTOFFS (one per jiffy per peer).
							return Obligation{}, false
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
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
	}
}

// minJiffy is the shortest jiffy Linux has (HZ at most 1000): HomaModule
// sends a peer at most one CUTOFFS per jiffy (HOMA-CUTOFF-005).
const minJiffy = time.Millisecond

// cutoffRules2: when CUTOFFS may be sent and what it holds (HomaModule
// homa_incoming.c homa_data_pkt; homa_utils.c, util/homa_prio.cc).
func cutoffRules2() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-CUTOFF-003", Level: Must,
			Facts:     []string{"CUT-01"},
			Statement: "A host sends CUTOFFS to a peer only in answer to DATA from that peer whose cutoff_version differs from the version the CUTOFFS carries: each CUTOFFS is paid for by its own earlier such DATA packet.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (the only sender of CUTOFFS: on a cutoff_version mismatch, at most once per jiffy per peer)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "counted, not timed: a loaded host processes packets tens of milliseconds after a tap saw them, so any earlier stale DATA not yet paid for a CUTOFFS explains one (they come from the CUTOFFS' receiver, so a tap on either host's link sees them all); a CUTOFFS within response_timeout of the capture's start, before any DATA from its receiver in the capture, may answer DATA before it: inconclusive",
			Property: Each{Types: []wire.PacketType{wire.TypeCutoffs}, Check: func(c *Ctx, e *Event) Result {
				v := e.Packet.Cutoffs().CutoffVersion()
				if c.T.unpaidStale(e.Src, e.Dst, v) > 0 {
					return Pass()
				}
				if d := e.Time.Sub(c.T.Start); d < c.P.AnswerBound() && c.T.pairs[hostPair{e.Dst, e.Src}] == nil {
					return Unsure("CUTOFFS %v after the capture began, before any DATA from %v in it: the DATA it answers may precede the capture", d.Round(time.Microsecond), e.Dst)
				}
				return Violation("CUTOFFS version %d to %v, one more than the DATA from %v carrying another cutoff_version (each earlier one paid for an earlier CUTOFFS)", v, e.Dst, e.Dst)
			}},
		},
		{
			ID: "HOMA-CUTOFF-005", Level: Must,
			Facts:     []string{"CUT-01"},
			Statement: "A host sends a peer at most one CUTOFFS per jiffy for each RPC whose stale DATA it is handling at once, however many stale DATA arrive: of the CUTOFFS to one peer, the one k later than another comes more than k-1 jiffies (1 ms at HZ 1000, the shortest) after it, or, while stale DATA of n RPCs from the peer arrive, at least ceil((k+1)/n)-2 jiffies after it.",
			Source:    "HomaModule homa_incoming.c homa_data_pkt (a CUTOFFS only when jiffies differs from peer->last_update_jiffies, which it sets after sending, under the lock of the RPC whose DATA it handles, not the peer's); linux_6.1.38 homa_data_pkt the same",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "jitter is allowed on the sender's own link and slack elsewhere (queueing between the sender and a tap can bunch packets); each CUTOFFS is compared with the 16 before it to the same peer; n counts the RPCs (at most 4, the latest) whose latest DATA from the peer, seen from response_timeout plus slack before the earlier CUTOFFS on, carried a cutoff_version other than the CUTOFFS' (a loaded host handles DATA late), and no more than the distinct RPCs the CUTOFFS from the earlier one on name (sender_id: each answers one RPC's DATA); a burst that n of them explain is inconclusive",
			Property: Each{Types: []wire.PacketType{wire.TypeCutoffs}, Check: func(c *Ctx, e *Event) Result {
				prior := c.T.CutoffVersions(e.Dst, e.Src)
				tol := bunchTol(c, e.Src)
				v := e.Packet.Cutoffs().CutoffVersion()
				res := Pass().WithSlack(tol)
				for j := len(prior) - 1; j >= max(0, len(prior)-16); j-- {
					k := len(prior) - j // e is the k-th CUTOFFS after prior[j]
					gap := e.Time.Sub(prior[j].Time)
					if need := time.Duration(k-1)*minJiffy - tol; gap < need {
						// Each core checks and sets the peer's jiffy under
						// the lock of the RPC whose stale DATA it handles,
						// and sets it only after sending: with stale DATA of
						// n RPCs, each of the jiffies the k+1 CUTOFFS span
						// may hold n of them.
						n, frames := c.T.staleRPCs(e.Src, e.Dst, v, prior[j].Time.Add(-c.P.AnswerBound()))
						// Each CUTOFFS names the RPC whose DATA it answers,
						// and one RPC's DATA are handled under its lock,
						// which also records the jiffy: CUTOFFS naming one
						// RPC come one per jiffy, whatever other RPCs sent.
						ids := cutoffsRPCs(prior[j:], e)
						if ids == 1 && n > 1 {
							return Violation("CUTOFFS to %v %v after the one in frame %d, with %d more between, all for RPC %d: its DATA are handled under one lock, which records the jiffy, so one per jiffy needs > %v less %v",
								e.Dst, gap.Round(time.Microsecond), prior[j].Frame, k-1, e.Packet.Common().SenderID(), time.Duration(k-1)*minJiffy, tol).With(prior[j].Frame).WithSlack(tol).WithEarly(need-gap, prior[j].Time, EarlyFromOwn)
						}
						n = min(n, ids)
						if n <= 1 {
							return Violation("CUTOFFS to %v %v after the one in frame %d, with %d more between: one per jiffy per peer needs > %v less %v",
								e.Dst, gap.Round(time.Microsecond), prior[j].Frame, k-1, time.Duration(k-1)*minJiffy, tol).With(prior[j].Frame).WithSlack(tol).WithEarly(need-gap, prior[j].Time, EarlyFromOwn)
						}
						if need := time.Duration((k+n)/n-2)*minJiffy - tol; gap < need {
							return Violation("CUTOFFS to %v %v after the one in frame %d, with %d more between: even one per jiffy for each of the %d RPCs whose stale DATA came (frames %d and %d) needs ≥ %v less %v",
								e.Dst, gap.Round(time.Microsecond), prior[j].Frame, k-1, n, frames[1], frames[0], need+tol, tol).With(prior[j].Frame).WithSlack(tol).WithEarly(need-gap, prior[j].Time, EarlyFromOwn)
						}
						res = Unsure("CUTOFFS to %v %v after the one in frame %d, with %d more between, while stale DATA of %d RPCs from %v came (frames %d and %d): cores handling them may each pass the per-peer jiffy check (homa_data_pkt, under each RPC's own lock) before any records the jiffy",
							e.Dst, gap.Round(time.Microsecond), prior[j].Frame, k-1, n, e.Dst, frames[1], frames[0])
					}
				}
				return res
			}},
		},
		{
			ID: "HOMA-CUTOFF-006", Level: Must,
			Facts:     []string{"CUT-01", "CUT-02"},
			Statement: "A cutoff_version names one table: every CUTOFFS a host sends carrying a version holds the cutoffs its first CUTOFFS with that version held, to whichever peer (a change of the cutoffs or of num_priorities raises the version, which nothing else writes).",
			Source:    "HomaModule homa_utils.c homa_prios_changed (cutoff_version++ on every write of unsched_cutoffs or num_priorities, homa_plumbing.c homa_dointvec; the cutoff_version sysctl is read-only), homa_incoming.c homa_data_pkt (the table and version of one struct homa, whatever the peer); linux_6.1.38 the same",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "a CUTOFFS built while a sysctl write changes the table may carry the new (or a half-written) table under the old version, so the first CUTOFFS with another table is inconclusive and only a CUTOFFS with that version more than slack after it is a violation, on any link (the writer raises the version in process context after writing the table, and a CUTOFFS built before that leaves through its core's NIC queue: either may stall); a module reloaded in between counts from 1 again: CUTOFFS more than max(response_timeout plus slack, timeout_ticks) apart are not compared",
			Property: Each{Types: []wire.PacketType{wire.TypeCutoffs}, Check: func(c *Ctx, e *Event) Result {
				cs := e.Packet.Cutoffs()
				tol := bunchTol(c, e.Src)
				first, off, hasOff, ok := c.T.versionTables(e.Src, cs.CutoffVersion(), e.Time.Add(-max(c.P.AnswerBound(), c.P.Ticks(c.P.TimeoutTicks))))
				switch {
				case !ok:
					return Pass()
				case hasOff && e.Time.Sub(off.Time) > max(tol, c.P.Slack):
					// The writer raises the version in process context
					// after the table (homa_dointvec), and a CUTOFFS built
					// before that leaves through its core's NIC queue:
					// either may stall for up to slack, on any link.
					return Violation("CUTOFFS version %d holds %v, but %v sent version %d with %v (frame %d) and then with %v (frame %d, %v earlier): the version names one table",
						cs.CutoffVersion(), cs.UnschedCutoffs(), e.Src, first.Version, first.Cutoffs, first.Frame, off.Cutoffs, off.Frame, e.Time.Sub(off.Time).Round(time.Microsecond)).With(first.Frame, off.Frame).WithSlack(max(tol, c.P.Slack)).WithLate(e.Time.Sub(off.Time) - max(tol, c.P.Slack))
				case cs.UnschedCutoffs() != first.Cutoffs:
					return Unsure("CUTOFFS version %d holds %v, but %v sent version %d with %v (frame %d): a CUTOFFS built while a sysctl write changed the table may carry the new table under the old version",
						cs.CutoffVersion(), cs.UnschedCutoffs(), e.Src, first.Version, first.Cutoffs, first.Frame).With(first.Frame)
				}
				return Pass().WithSlack(tol)
			}},
		},
		{
			ID: "HOMA-CUTOFF-004", Level: Should, Alone: true,
			Facts:     []string{"CUT-04"},
			Statement: "A CUTOFFS packet holds a consistent table: entry 0 is 0 or 0x7FFFFFFF, the entries from the lowest unscheduled level L (the highest below num_priorities holding 1,000,000 or more) up to num_priorities-1 do not increase, max(0, L-1) is max_sched_prio (L is 0 when only entry 0, 0x7FFFFFFF, holds them), and the version is not 0.",
			Source:    "HomaModule homa_utils.c (default unsched_cutoffs, cutoff_version 1), homa_utils.c homa_prios_changed (entry 0 = INT_MAX, entries at or above num_priorities 0, max_sched_prio = L-1, or 0 when no level above 0 holds HOMA_MAX_MESSAGE_LENGTH); util/homa_prio.cc",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "pass max_sched_prio, num_priorities and unsched_cutoffs when the hosts' sysctls differ from the defaults",
			Property: Each{Types: []wire.PacketType{wire.TypeCutoffs}, Check: func(c *Ctx, e *Event) Result {
				cs := e.Packet.Cutoffs()
				cut := cs.UnschedCutoffs()
				np := c.P.NumPriorities
				if cs.CutoffVersion() == 0 {
					return Violation("CUTOFFS with cutoff_version 0, the value DATA carry before any CUTOFFS arrived")
				}
				if cut[0] != 0 && cut[0] != 0x7fffffff {
					return Violation("CUTOFFS entry 0 is %d, want 0 or 0x7fffffff", cut[0])
				}
				low := -1
				for i := np - 1; i >= 0; i-- {
					if cut[i] >= c.P.MaxMessageLength {
						low = i
						break
					}
				}
				// Only entry 0 (INT_MAX) holding them is homa_prios_changed's
				// table when no level above 0 does (num_priorities lowered
				// below the default cutoffs' lowest unscheduled level):
				// max_sched_prio is then 0 and level 0 takes every long
				// message, scheduled or not.
				if low < 0 {
					return Violation("CUTOFFS %v: no unscheduled level holds messages of max_message_length %d", cut, c.P.MaxMessageLength)
				}
				want := max(0, low-1)
				for i := low + 1; i < np; i++ {
					if cut[i] > cut[i-1] {
						return Violation("CUTOFFS %v: entry %d (%d) above entry %d (%d): higher levels must take shorter messages", cut, i, cut[i], i-1, cut[i-1])
					}
				}
				if want != c.P.MaxSchedPrio {
					return Violation("CUTOFFS %v make level %d the lowest unscheduled one, so max_sched_prio would be %d, not %d", cut, low, want, c.P.MaxSchedPrio)
				}
				return Pass()
			}},
		},
	}
}

// carriedOnlyOthers reports whether the capture shows DATA from s to r
// before time at and none of them carried cutoff_version v: what the
// sender held then is known, and v was not it.
func (t *Trace) carriedOnlyOthers(s, r netip.Addr, v uint16, at time.Time) bool {
	pd := t.pairs[hostPair{s, r}]
	if pd == nil {
		return false
	}
	known := false
	for k, x := range pd.verPrio {
		if x.Time.Before(at) {
			if k[0] == v {
				return false
			}
			known = true
		}
	}
	return known
}

// cutoffsAllowanceStart returns the CUTOFFS from which a sender must
// carry the latest version of vs (every CUTOFFS its receiver sent it,
// oldest first; not empty): the first of the trailing run carrying that
// version. When the capture does not show the order they reached the
// sender (ordered false), a run's CUTOFFS seen within bound after one of
// another version may have arrived before that one: the allowance then
// starts at the first of the run seen more than bound after it (or the
// run's last).
func cutoffsAllowanceStart(vs []CutoffsState, ordered bool, bound time.Duration) CutoffsState {
	n := len(vs) - 1
	i := n
	for i > 0 && vs[i-1].Version == vs[n].Version {
		i--
	}
	if !ordered && i > 0 {
		prev := vs[i-1].Time
		for i < n && vs[i].Time.Sub(prev) <= bound {
			i++
		}
	}
	return vs[i]
}

// bunchTol is how much the gap between two packets of host src may change
// between leaving src and passing the capture point: jitter on src's own
// link, slack elsewhere (queueing between src and a tap bunches them or
// parts them).
func bunchTol(c *Ctx, src netip.Addr) time.Duration {
	if c.Net.atSender(src) {
		return c.P.Jitter
	}
	return c.P.Slack
}

// versionTables returns, of the CUTOFFS host h sent any peer after since
// carrying version v, the first (ok: there was one) and the first whose
// table differs from that one's (hasOff: there was one).
func (t *Trace) versionTables(h netip.Addr, v uint16, since time.Time) (first, off CutoffsState, hasOff, ok bool) {
	earlier := func(a, b CutoffsState) bool {
		return a.Time.Before(b.Time) || a.Time.Equal(b.Time) && a.Frame < b.Frame
	}
	for k, vs := range t.versions {
		for _, x := range vs {
			if k.to == h && x.Version == v && x.Time.After(since) && (!ok || earlier(x, first)) {
				first, ok = x, true
			}
		}
	}
	for k, vs := range t.versions {
		for _, x := range vs {
			if ok && k.to == h && x.Version == v && x.Time.After(since) && x.Cutoffs != first.Cutoffs && (!hasOff || earlier(x, off)) {
				off, hasOff = x, true
			}
		}
	}
	return first, off, hasOff, ok
}

// maxVersion returns the highest cutoff_version among vs (0: none).
func maxVersion(vs []CutoffsState) uint16 {
	var m uint16
	for _, x := range vs {
		m = max(m, x.Version)
	}
	return m
}

// cutoffsRPCs counts the distinct RPCs (sender_id) that the CUTOFFS in
// prior and e name, up to 5 (HOMA-CUTOFF-005 needs at most 4).
func cutoffsRPCs(prior []CutoffsState, e *Event) int {
	ids := [5]uint64{e.Packet.Common().SenderID()}
	n := 1
	for _, p := range prior {
		if n == len(ids) {
			break
		}
		if !slices.Contains(ids[:n], p.SenderID) {
			ids[n] = p.SenderID
			n++
		}
	}
	return n
}
