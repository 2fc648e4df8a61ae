package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// traceBuilder builds hand-made traces for rule tests: every packet is
// encoded with spec/wire in the profile's wire version and decoded back,
// so rules see real packet views. Time starts at t0 and moves with at/after.
type traceBuilder struct {
	t              *testing.T
	v              wire.Version
	now            time.Time
	frame          int
	events         []Event
	client, server netip.Addr
	cport, sport   uint16
}

var t0 = time.Unix(1700000000, 0)

func newTrace(t *testing.T, v wire.Version) *traceBuilder {
	return &traceBuilder{t: t, v: v, now: t0, client: netip.MustParseAddr("198.18.0.1"),
		server: netip.MustParseAddr("198.18.0.2"), cport: 32768, sport: 4000}
}

// after advances the clock by d.
func (b *traceBuilder) after(d time.Duration) *traceBuilder { b.now = b.now.Add(d); return b }

// emit encodes f, decodes it and appends an Event sent by the client
// (fromClient) or the server, at priority prio. It returns the frame number.
func (b *traceBuilder) emit(fromClient bool, prio uint8, f wire.Fields, mod func(*Event)) int {
	b.t.Helper()
	c := f.CommonFields()
	src, dst := b.server, b.client
	c.Sport, c.Dport = b.sport, b.cport
	if fromClient {
		src, dst = b.client, b.server
		c.Sport, c.Dport = b.cport, b.sport
	}
	raw, err := wire.Encode(f, wire.EncodeOptions{Version: b.v, FixLengths: true, SetMarks: true})
	if err != nil {
		b.t.Fatal(err)
	}
	e := DecodeEvent(b.now, src, dst, prio, raw, b.v)
	if e.Err != nil {
		b.t.Fatal(e.Err)
	}
	b.frame++
	e.Frame = b.frame
	if mod != nil {
		mod(&e)
	}
	b.events = append(b.events, e)
	return b.frame
}

// id returns the sender_id for the RPC with client id cid sent by the
// client (fromClient) or the server.
func sid(cid uint64, fromClient bool) uint64 {
	if fromClient {
		return cid
	}
	return cid | 1
}

// data sends DATA [off, off+n) of a msgLen-byte message of RPC cid. mod,
// if not nil, can change the fields before encoding.
func (b *traceBuilder) data(fromClient bool, cid uint64, msgLen, off uint32, n int, prio uint8, mod func(*wire.DataFields)) int {
	f := &wire.DataFields{Common: wire.CommonFields{SenderID: sid(cid, fromClient), Sequence: off},
		MessageLength: msgLen, Incoming: min(msgLen, 40000), CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence,
		Payload: make([]byte, n)}
	if mod != nil {
		mod(f)
	}
	return b.emit(fromClient, prio, f, nil)
}

func (b *traceBuilder) grant(fromClient bool, cid uint64, offset uint32, prio uint8) int {
	return b.emit(fromClient, 7, &wire.GrantFields{Common: wire.CommonFields{SenderID: sid(cid, fromClient)}, Offset: offset, Priority: prio}, nil)
}

func (b *traceBuilder) resend(fromClient bool, cid uint64, offset, length uint32, prio uint8) int {
	return b.emit(fromClient, 7, &wire.ResendFields{Common: wire.CommonFields{SenderID: sid(cid, fromClient)}, Offset: offset, Length: length, Priority: prio}, nil)
}

// ctl sends a header-only packet (BUSY, RPC_UNKNOWN, NEED_ACK, FREEZE).
func (b *traceBuilder) ctl(fromClient bool, cid uint64, t wire.PacketType) int {
	c := wire.CommonFields{SenderID: sid(cid, fromClient)}
	var f wire.Fields
	switch t {
	case wire.TypeBusy:
		f = &wire.BusyFields{Common: c}
	case wire.TypeRPCUnknown:
		f = &wire.RPCUnknownFields{Common: c}
	case wire.TypeNeedAck:
		f = &wire.NeedAckFields{Common: c}
	case wire.TypeFreeze:
		f = &wire.FreezeFields{Common: c}
	default:
		b.t.Fatalf("ctl: %v is not header-only", t)
	}
	return b.emit(fromClient, 7, f, nil)
}

// cutoffs sends CUTOFFS (HomaModule defaults) with version v.
func (b *traceBuilder) cutoffs(fromClient bool, cid uint64, v uint16) int {
	return b.cutoffsTable(fromClient, cid, v, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200})
}

// cutoffsTable sends CUTOFFS with version v and the given table for RPC
// cid (cutoffs sends the usual table).
func (b *traceBuilder) cutoffsTable(fromClient bool, cid uint64, v uint16, table [8]uint32) int {
	return b.emit(fromClient, 7, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: sid(cid, fromClient)},
		UnschedCutoffs: table, CutoffVersion: v}, nil)
}

// ack sends an ACK from the client naming cid in its header and acks in
// its entries.
func (b *traceBuilder) ack(cid uint64, acks ...uint64) int {
	f := &wire.AckFields{Common: wire.CommonFields{SenderID: cid}}
	for _, a := range acks {
		f.Acks = append(f.Acks, wire.AckEntry{ClientID: a, ServerPort: b.sport})
	}
	return b.emit(true, 7, f, nil)
}

// message sends bytes [off, end) of a msgLen-byte message in 1424-byte
// packets at priority prio (first transmissions), with a packet boundary at
// u as HomaModule forces at the unscheduled limit. It returns the frames.
func (b *traceBuilder) message(fromClient bool, cid uint64, msgLen, off, end, u uint32, prio uint8) []int {
	var frames []int
	for o := off; o < end; {
		n := min(1424, end-o)
		if o < u && o+n > u {
			n = u - o
		}
		frames = append(frames, b.data(fromClient, cid, msgLen, o, int(n), prio, func(f *wire.DataFields) { f.Incoming = min(msgLen, u) }))
		o += n
	}
	return frames
}

// check runs the rules matching glob over the trace with profile and param
// overrides ("name=value").
func (b *traceBuilder) check(profile, glob string, params ...string) *Report {
	b.t.Helper()
	return b.checkAt(Switch, profile, glob, params...)
}

// checkAt is check with the capture taken at cp.
func (b *traceBuilder) checkAt(cp CapturePoint, profile, glob string, params ...string) *Report {
	b.t.Helper()
	rep, _ := b.checkVerify(cp, profile, glob, verifyPrefilters, params...)
	return rep
}

// checkVerify is checkAt with the Checker's verification (the shortcuts'
// general path run beside them, verifyPrefilters) on or off as verify
// says; it also returns the Checker, for its counters.
func (b *traceBuilder) checkVerify(cp CapturePoint, profile, glob string, verify bool, params ...string) (*Report, *Checker) {
	b.t.Helper()
	prof, err := LookupProfile(profile)
	if err != nil {
		b.t.Fatal(err)
	}
	p := prof.Params
	for _, kv := range params {
		for i := range kv {
			if kv[i] == '=' {
				if err := p.Set(kv[:i], kv[i+1:]); err != nil {
					b.t.Fatal(err)
				}
				break
			}
		}
	}
	rules, err := Select(Rules(), glob, 0, profile)
	if err != nil {
		b.t.Fatal(err)
	}
	c := newChecker(profile, p, rules, verify)
	c.SetCapturePoint(cp)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	return c.Finish(), c
}

// wantViolations asserts that rule id was violated exactly at frames.
func wantViolations(t *testing.T, rep *Report, id string, frames ...int) {
	t.Helper()
	var got []int
	for _, v := range rep.Violations {
		if v.Rule == id {
			got = append(got, v.Frame)
		}
	}
	if len(got) != len(frames) {
		t.Fatalf("%s violations at frames %v, want %v; all: %v", id, got, frames, rep.Violations)
	}
	for i := range got {
		if got[i] != frames[i] {
			t.Fatalf("%s violations at frames %v, want %v; all: %v", id, got, frames, rep.Violations)
		}
	}
}

// wantClean asserts that rule id was checked at least once and never violated.
func wantClean(t *testing.T, rep *Report, id string) {
	t.Helper()
	for _, rr := range rep.Rules {
		if rr.ID == id {
			if rr.Violated != 0 || rr.Checked == 0 || rr.Passed == 0 {
				t.Fatalf("%s: checked %d passed %d violated %d, want a clean pass; violations %v", id, rr.Checked, rr.Passed, rr.Violated, rep.Violations)
			}
			return
		}
	}
	t.Fatalf("%s not in report", id)
}

// wantDowngraded asserts that rule id was downgraded at frame for cause.
func wantDowngraded(t *testing.T, rep *Report, id string, frame int, cause Cause) {
	t.Helper()
	for _, f := range rep.Inconclusive {
		if f.Rule == id && f.Frame == frame {
			if f.Cause != cause {
				t.Fatalf("%s at frame %d: cause %q, want %q (%s)", id, frame, f.Cause, cause, f.Why)
			}
			return
		}
	}
	t.Fatalf("%s not downgraded at frame %d; inconclusive: %v", id, frame, rep.Inconclusive)
}

// wantInconclusive asserts that rule id was inconclusive at frame.
func wantInconclusive(t *testing.T, rep *Report, id string, frame int) {
	t.Helper()
	for _, f := range rep.Inconclusive {
		if f.Rule == id && f.Frame == frame {
			return
		}
	}
	t.Fatalf("%s not inconclusive at frame %d; inconclusive: %v", id, frame, rep.Inconclusive)
}
