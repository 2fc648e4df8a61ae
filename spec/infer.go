package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Inferred is one parameter value a capture implies, with the evidence.
type Inferred struct {
	// Name is the parameter (a --param name).
	Name string `json:"name"`
	// Value is the inferred value as --param takes it.
	Value string `json:"value"`
	// Evidence says what in the capture implies it (frames, counts).
	Evidence string `json:"evidence"`
	// AtLeast is set when the capture only shows a lower bound (Value is
	// the smallest value consistent with it).
	AtLeast bool `json:"at_least,omitempty"`
}

// Inferrer reads a capture's events and infers the parameters the hosts
// ran with (homatest check --infer-params): unsched_bytes from the
// incoming field of first transmissions, max_gso_size from GSO batches and
// overshoot past grants, mtu (when above the profile's) from the longest
// DATA segment, unsched_cutoffs and cutoff_version from CUTOFFS,
// window and max_overcommit from grants, tick from NEED_ACK repeats, and
// resend_ticks, resend_interval and request_ack_ticks from RESEND and
// NEED_ACK spacing in ticks, and a lower bound on timeout_ticks from the
// longest silence after which an RPC still sent a RESEND. Feed every event in capture order, then call
// Result. It keeps its own Trace, or shares a Checker's
// (Checker.SetInferrer).
type Inferrer struct {
	p     Params
	t     *Trace
	unsch map[uint32]int // incoming < length → count
	// unschHot is the incoming of the latest such packet, counted in
	// unschHotN instead of unsch (0: none) until another value comes:
	// most packets then cost no map access.
	unschHot  uint32
	unschHotN int
	maxLen    uint32 // longest message whose incoming was its length
	// batches: (sender, receiver, sender_id, batch's first offset) →
	// segments of one GSO batch, within the current section (NewSection).
	// The receiver names the RPC: a server answers clients that chose the
	// same id.
	batches   map[batchKey]int
	batchMax  int
	batchAt   int
	overshoot uint32
	overAt    int
	cutoffs   map[[8]uint32]int
	cutAt     map[[8]uint32]int
	versions  map[uint16]int
	windowMax uint32
	windowAt  int
	overMax   int
	overAtF   int
	needAcks  []time.Duration // gaps between consecutive NEED_ACKs of one RPC
	firstNA   []time.Duration // response fully sent → first NEED_ACK
	rounds    []time.Duration // gaps between RESEND rounds
	firstRS   []time.Duration // silence start → first RESEND round
	// quietMax is the longest silence an RPC outlived (still sending
	// RESENDs, at frame quietAt): timeout_ticks is longer.
	quietMax time.Duration
	quietAt  int
	// mtu is the smallest MTU the longest DATA segment (not a hijacked
	// TSO batch) fits, at frame mtuAt.
	mtu   uint32
	mtuAt int
	// shared is set when t is a Checker's (SetInferrer), which replaces
	// it at each section.
	shared bool
}

type batchKey struct {
	src, dst netip.Addr
	id       uint64
	seq      uint32
}

// NewInferrer returns an Inferrer that reads a capture against profile
// parameters p (for U, to tell rounds apart, and the like).
func NewInferrer(p Params) *Inferrer {
	in := &Inferrer{p: p, unsch: map[uint32]int{}, batches: map[batchKey]int{}, cutoffs: map[[8]uint32]int{},
		cutAt: map[[8]uint32]int{}, versions: map[uint16]int{}}
	in.t = NewTrace(&in.p)
	return in
}

// NewSection starts a section of the capture (Report.Sections: a
// timestamp jump back, a host's restart): GSO batches are counted afresh,
// since a restarted host, or a copy of the capture joined to it, sends
// the same RPC ids and offsets again, whose segments would otherwise add
// to the earlier batch's count; an Inferrer with its own trace starts a
// new one, as a Checker does. What was inferred before stays.
func (in *Inferrer) NewSection() {
	clear(in.batches)
	if !in.shared {
		in.t = NewTrace(&in.p)
	}
}

// Observe reads an event for its context only (the GRANTs and RESENDs
// a tester sent): it infers nothing from it. With a Checker's trace
// (SetInferrer) use Checker.FeedObserved instead: the checker applies
// every event once.
func (in *Inferrer) Observe(e *Event) { in.t.Apply(e) }

// Feed reads one event (not for an Inferrer sharing a Checker's trace:
// the Checker feeds it).
func (in *Inferrer) Feed(e *Event) {
	in.feed(e)
	in.t.Apply(e)
}

// feed infers from e against the trace state before e, leaving the trace
// to the caller (Feed, or a Checker sharing its trace: SetInferrer).
func (in *Inferrer) feed(e *Event) {
	if e.Err != nil || e.ICMP != nil {
		return
	}
	r := in.t.Lookup(e)
	switch e.Type() {
	case wire.TypeData:
		d := e.Packet.Data()
		if !e.Hijacked {
			v6 := e.IPv6()
			if m := uint32(e.Length) + ipHeaderLen(v6) + wire.DataHeaderLen; m > in.mtu {
				in.mtu, in.mtuAt = m, e.Frame
			}
		}
		if d.Retransmit() != 0 {
			return
		}
		if inc, l := d.Incoming(), d.MessageLength(); inc > 0 && inc < l {
			if in.unschHotN > 0 && in.unschHot == inc {
				in.unschHotN++
			} else {
				in.flushUnsch()
				in.unschHot, in.unschHotN = inc, in.unsch[inc]+1
				delete(in.unsch, inc)
			}
		} else if inc == l && l > in.maxLen {
			in.maxLen = l
		}
		if d.Common().Doff() == wire.DoffGSO && e.Segment == 0 || e.Segment > 0 {
			k := batchKey{e.Src, e.Dst, e.Packet.SenderID(), d.Common().Sequence()}
			if start, ok := gsoBatchStart(d.SegOffset(), k.seq, maxSegData(in.p.MTU, e.IPv6())); ok && e.Segment == 0 {
				k.seq = start // a TSO NIC advanced the sequence per segment
			}
			if e.Segment > 0 {
				k.seq = uint32(e.Frame) // a GSO frame captured on the sender: one frame, one batch
			}
			in.batches[k]++
			if n := in.batches[k]; n > in.batchMax {
				in.batchMax, in.batchAt = n, e.Frame
			}
		}
		if r != nil {
			m := r.Msg(e.Packet.Role())
			if h := m.Horizon(&in.p); h > 0 && !m.ResendAll && e.End() > h && e.End()-h > in.overshoot {
				in.overshoot, in.overAt = e.End()-h, e.Frame
			}
		}
	case wire.TypeCutoffs:
		c := e.Packet.Cutoffs()
		cut := c.UnschedCutoffs()
		in.cutoffs[cut]++
		if _, ok := in.cutAt[cut]; !ok {
			in.cutAt[cut] = e.Frame
		}
		in.versions[c.CutoffVersion()]++
	case wire.TypeGrant:
		g := e.Packet.Grant()
		if r == nil {
			return
		}
		m := r.Msg(oppositeRole(e.Packet.Role()))
		if mayBeFIFOGrant(&in.p, g, m) {
			return
		}
		if len(m.Seen) > 0 && m.Seen[0].Start == 0 && g.Offset() > m.Received() && g.Offset()-m.Received() > in.windowMax {
			in.windowMax, in.windowAt = g.Offset()-m.Received(), e.Frame
		}
		n := 0
		for o := range in.t.granting[e.Src] {
			if o != m && o.Granted > o.Received() {
				n++
			}
		}
		if max(m.Granted, g.Offset()) > m.Received() {
			n++
		}
		if n > in.overMax {
			in.overMax, in.overAtF = n, e.Frame
		}
	case wire.TypeNeedAck:
		if r == nil || e.FromClient() {
			return
		}
		if r.NeedAcks > 0 && !r.Acked {
			in.needAcks = append(in.needAcks, e.Time.Sub(r.NeedAckTime))
		} else if r.NeedAcks == 0 && !r.Response.AllSentTime.IsZero() {
			in.firstNA = append(in.firstNA, e.Time.Sub(r.Response.AllSentTime))
		}
	case wire.TypeResend:
		rs := e.Packet.Resend()
		if r == nil || isBufferWakeup(&in.p, rs) {
			return
		}
		// Silence as HOMA-RESEND-009 measures it: the RPC was not aborted.
		start, _ := silenceStart(r, e)
		if q := e.Time.Sub(start); q > in.quietMax {
			in.quietMax, in.quietAt = q, e.Frame
		}
		if answersNeedAck(&in.p, r, e) {
			return
		}
		m := r.Msg(oppositeRole(e.Packet.Role()))
		if m.inRound(&in.p, e, rs) {
			return
		}
		if !m.res().RoundStart.IsZero() && m.res().RoundStart.After(start) {
			in.rounds = append(in.rounds, e.Time.Sub(m.res().RoundStart))
		} else {
			in.firstRS = append(in.firstRS, e.Time.Sub(start))
		}
	}
}

// Result returns the parameters the capture implies, by name. Timer
// values come out in ticks of the inferred tick (from NEED_ACK repeats),
// or of the profile's tick when the capture has no repeats.
func (in *Inferrer) Result() []Inferred {
	var out []Inferred
	in.flushUnsch()
	if u, n := mode(in.unsch); n > 0 {
		out = append(out, Inferred{Name: "unsched_bytes", Value: fmt.Sprint(u), Evidence: fmt.Sprintf("incoming %d in %d first transmissions of messages longer than it", u, n)})
	} else if in.maxLen > 0 {
		out = append(out, Inferred{Name: "unsched_bytes", Value: fmt.Sprint(in.maxLen), AtLeast: true, Evidence: fmt.Sprintf("every message fits: the longest (%d bytes) has incoming = its length", in.maxLen)})
	}
	segs := in.batchMax
	why := ""
	if segs > 0 {
		why = fmt.Sprintf("GSO batches of %d segments (frame %d)", segs, in.batchAt)
	}
	seg := maxSegData(max(in.p.MTU, in.mtu), false)
	if in.overshoot > 0 {
		if n := int((in.overshoot + seg - 1) / seg); n > segs {
			segs = n
			why = fmt.Sprintf("a first transmission ending %d bytes past its grant horizon as the capture shows it (frame %d; a GRANT the capture missed would explain it too)", in.overshoot, in.overAt)
		}
	}
	if segs > 1 {
		// Smallest max_gso_size that gives segs segments of max_seg_data
		// bytes over IPv4 (homa_message_out_fill).
		v := segs*(int(seg)+wire.SegHeaderLen) + 20 + wire.DataHeaderLen - wire.SegHeaderLen
		out = append(out, Inferred{Name: "max_gso_size", Value: fmt.Sprint(v), AtLeast: true, Evidence: why})
	}
	if in.mtu > in.p.MTU {
		out = append(out, Inferred{Name: "mtu", Value: fmt.Sprint(in.mtu), AtLeast: true,
			Evidence: fmt.Sprintf("a DATA segment of %d bytes with its IP and DATA headers (frame %d)", in.mtu, in.mtuAt)})
	}
	if len(in.cutoffs) > 0 {
		best, n := [8]uint32{}, 0
		for c, k := range in.cutoffs {
			if k > n || k == n && fmt.Sprint(c) < fmt.Sprint(best) {
				best, n = c, k
			}
		}
		s := make([]string, 8)
		for i, c := range best {
			s[i] = strconv.FormatUint(uint64(c), 10)
		}
		out = append(out, Inferred{Name: "unsched_cutoffs", Value: strings.Join(s, ","), Evidence: fmt.Sprintf("%d CUTOFFS carry it (first frame %d)", n, in.cutAt[best])})
		// max_sched_prio is read-only in HomaModule: homa_prios_changed
		// sets it one below the lowest unscheduled level, the highest
		// level below num_priorities whose cutoff holds the longest
		// message (facts CUT-04).
		for i := min(in.p.NumPriorities, len(best)) - 1; i >= 1; i-- {
			if best[i] >= in.p.MaxMessageLength {
				out = append(out, Inferred{Name: "max_sched_prio", Value: fmt.Sprint(i - 1),
					Evidence: fmt.Sprintf("one below level %d, the lowest unscheduled level of those cutoffs", i)})
				break
			}
		}
		v, vn := mode(map[uint32]int(toU32(in.versions)))
		out = append(out, Inferred{Name: "cutoff_version", Value: fmt.Sprint(v), Evidence: fmt.Sprintf("%d CUTOFFS carry it", vn)})
	}
	if in.windowMax > 0 {
		out = append(out, Inferred{Name: "window", Value: fmt.Sprint(in.windowMax), AtLeast: true, Evidence: fmt.Sprintf("a GRANT %d bytes beyond the bytes seen (frame %d)", in.windowMax, in.windowAt)})
	}
	if in.overMax > 0 {
		out = append(out, Inferred{Name: "max_overcommit", Value: fmt.Sprint(in.overMax), AtLeast: true, Evidence: fmt.Sprintf("%s granted at once (frame %d)", plural.Of(in.overMax, "message", "messages"), in.overAtF)})
	}
	tick := in.p.Tick
	// A tick is the hosts' configuration (HomaModule's timer fires every
	// 1 ms): NEED_ACKs repeated faster than the configured tick are a
	// pacing fault (HOMA-ACK-006), never a reason to offer a shorter tick.
	if len(in.needAcks) >= 3 && median(in.needAcks) >= in.p.Tick*9/10 {
		tick = median(in.needAcks)
		out = append(out, Inferred{Name: "tick", Value: tick.Round(time.Microsecond).String(), Evidence: fmt.Sprintf("median of %d gaps between repeated NEED_ACKs", len(in.needAcks))})
	}
	ticks := func(d time.Duration) int { return int((d + tick/2) / tick) }
	if len(in.firstRS) > 0 {
		out = append(out, Inferred{Name: "resend_ticks", Value: fmt.Sprint(ticks(minDur(in.firstRS))), AtLeast: true,
			Evidence: fmt.Sprintf("shortest of %d silences before a first RESEND round: %v", len(in.firstRS), minDur(in.firstRS).Round(time.Microsecond))})
	}
	// resend_interval and request_ack_ticks are lower bounds of the rules
	// (HOMA-RESEND-008: a round no sooner than resend_interval-1 ticks
	// after the last; HOMA-ACK-005: the first NEED_ACK no sooner than
	// request_ack_ticks-1 ticks after the response), as resend_ticks is:
	// the shortest gap seen, rounded to whole ticks, is the value every
	// gap of the capture meets (a median suggested 19 ticks from 17.6 ms
	// and 19.4 ms, which made the 17.6 ms one a HOMA-ACK-005 violation).
	if len(in.rounds) > 0 {
		out = append(out, Inferred{Name: "resend_interval", Value: fmt.Sprint(max(1, ticks(minDur(in.rounds)))),
			Evidence: fmt.Sprintf("shortest of %d gaps between RESEND rounds: %v", len(in.rounds), minDur(in.rounds).Round(time.Microsecond))})
	}
	if in.quietMax > 0 {
		// homa_timer_check_rpc aborts at silent_ticks ≥ timeout_ticks, so
		// an RPC still sending RESENDs after q of silence had a longer
		// timeout: at least q in whole ticks, rounded up.
		out = append(out, Inferred{Name: "timeout_ticks", Value: fmt.Sprint(int((in.quietMax + tick - 1) / tick)), AtLeast: true,
			Evidence: fmt.Sprintf("an RPC still sent a RESEND after %v of silence (frame %d)", in.quietMax.Round(time.Microsecond), in.quietAt)})
	}
	if len(in.firstNA) > 0 {
		out = append(out, Inferred{Name: "request_ack_ticks", Value: fmt.Sprint(max(1, ticks(minDur(in.firstNA)))),
			Evidence: fmt.Sprintf("shortest of %d delays from a response's last byte to the first NEED_ACK: %v", len(in.firstNA), minDur(in.firstNA).Round(time.Microsecond))})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Apply sets the inferred value in p and reports whether p changed: a lower
// bound replaces p's value only where p's is below it (for max_gso_size:
// gives fewer segments per skb; for window: a smaller largest window), and
// a value Set rejects leaves p alone, and so does a measured tick within
// p's Jitter of p's own: the capture's timestamp noise, not another
// setting (4.995ms measured of a 5ms tick).
func (inf Inferred) Apply(p *Params) bool {
	cur, err := p.Get(inf.Name)
	if err != nil || cur == inf.Value {
		return false
	}
	if inf.Name == "tick" {
		if d, err := time.ParseDuration(inf.Value); err == nil && (d-p.Tick).Abs() <= p.Jitter {
			return false
		}
	}
	if inf.AtLeast {
		switch inf.Name {
		case "max_gso_size":
			n, _ := strconv.ParseUint(inf.Value, 10, 32)
			if skbData(uint32(n), p.MTU, false) <= skbData(p.MaxGSOSize, p.MTU, false) {
				return false
			}
		case "window":
			n, _ := strconv.ParseUint(inf.Value, 10, 32)
			if uint32(n) <= p.GrantWindow() {
				return false
			}
		default:
			a, err1 := strconv.ParseFloat(cur, 64)
			b, err2 := strconv.ParseFloat(inf.Value, 64)
			if err1 != nil || err2 != nil || b <= a {
				return false
			}
		}
	}
	q := *p
	if q.Set(inf.Name, inf.Value) != nil {
		return false
	}
	*p = q
	return true
}

// flushUnsch moves the count of unschHot into unsch.
func (in *Inferrer) flushUnsch() {
	if in.unschHotN > 0 {
		in.unsch[in.unschHot] = in.unschHotN
		in.unschHotN = 0
	}
}

func mode(m map[uint32]int) (uint32, int) {
	var best uint32
	n := 0
	for v, k := range m {
		if k > n || k == n && v < best {
			best, n = v, k
		}
	}
	return best, n
}

func toU32(m map[uint16]int) map[uint32]int {
	out := make(map[uint32]int, len(m))
	for k, v := range m {
		out[uint32(k)] += v
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func minDur(d []time.Duration) time.Duration { return slices.Min(d) }
