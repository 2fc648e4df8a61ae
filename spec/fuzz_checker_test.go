package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// fuzzHosts are the addresses FuzzChecker's packets go between: two
// clients and a server, so that RPCs of different hosts and ids meet.
var fuzzHosts = [...]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")}

// fuzzEvents turns b into a capture's events for FuzzChecker: records of a
// flags byte (bits 0-1 the source host, 2-3 the destination, 4-6 the
// priority, 7 a time step back), a time step in units of 37 µs (prime, so
// steps fall on and off ticks), a length and that many Homa transport bytes,
// each decoded as wire format v (an error makes a malformed event, as
// the capture reader does).
func fuzzEvents(b []byte, v wire.Version) []Event {
	var evs []Event
	now := time.Unix(1700000000, 0)
	for len(b) >= 3 && len(evs) < 512 {
		flags, step, n := b[0], b[1], int(b[2])
		b = b[3:]
		n = min(n, len(b))
		raw := b[:n]
		b = b[n:]
		d := time.Duration(step) * 37 * time.Microsecond
		if flags&0x80 != 0 {
			d = -d / 8
		}
		now = now.Add(d)
		src, dst := fuzzHosts[int(flags&3)%3], fuzzHosts[int(flags>>2&3)%3]
		if src == dst {
			dst = fuzzHosts[(int(flags&3)+1)%3]
		}
		e := DecodeEvent(now, src, dst, flags>>4&7, raw, v)
		e.Frame = len(evs) + 1
		evs = append(evs, e)
	}
	return evs
}

// fuzzRecord encodes f as one fuzzEvents record.
func fuzzRecord(tb testing.TB, flags, step uint8, f wire.Fields, v wire.Version) []byte {
	raw, err := wire.Encode(f, wire.EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
	if err != nil {
		tb.Fatal(err)
	}
	raw = raw[:min(len(raw), 255)]
	return append([]byte{flags, step, byte(len(raw))}, raw...)
}

// FuzzChecker feeds arbitrary sequences of Homa packets, well-formed or
// not, between three hosts to a Checker with every rule of each profile,
// parameter inference and each capture point: the checker judges hostile
// captures, so no sequence may panic it (rules, trace, network model,
// detector, the dispatch pre-filters' verification included), and Finish
// must return a report. The seeds are an RPC's usual exchange.
func FuzzChecker(f *testing.F) {
	v := wire.VersionCurrent
	cid := uint64(2)
	c := func(s uint64) wire.CommonFields { return wire.CommonFields{SenderID: s, Sport: 32768, Dport: 4000} }
	s := func(s uint64) wire.CommonFields { return wire.CommonFields{SenderID: s, Sport: 4000, Dport: 32768} }
	data := func(cf wire.CommonFields, msgLen, off uint32, n int) wire.Fields {
		cf.Sequence = off
		return &wire.DataFields{Common: cf, MessageLength: msgLen, Incoming: min(msgLen, 10000), CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, n)}
	}
	// flags: client 0 -> server 2 is 0b1000; server 2 -> client 0 is 0b0010.
	var seed []byte
	seed = append(seed, fuzzRecord(f, 0x08|0x70, 1, data(c(cid), 20000, 0, 200), v)...)
	seed = append(seed, fuzzRecord(f, 0x02|0x70, 3, &wire.GrantFields{Common: s(cid | 1), Offset: 20000, Priority: 2}, v)...)
	seed = append(seed, fuzzRecord(f, 0x08, 2, data(c(cid), 20000, 10000, 200), v)...)
	seed = append(seed, fuzzRecord(f, 0x02|0x70, 200, &wire.ResendFields{Common: s(cid | 1), Offset: 200, Length: 9800, Priority: 3}, v)...)
	seed = append(seed, fuzzRecord(f, 0x08, 1, &wire.BusyFields{Common: c(cid)}, v)...)
	seed = append(seed, fuzzRecord(f, 0x02, 5, data(s(cid|1), 100, 0, 100), v)...)
	seed = append(seed, fuzzRecord(f, 0x02, 250, &wire.NeedAckFields{Common: s(cid | 1)}, v)...)
	seed = append(seed, fuzzRecord(f, 0x08, 1, &wire.AckFields{Common: c(cid), Acks: []wire.AckEntry{{ClientID: cid, ServerPort: 4000}}}, v)...)
	seed = append(seed, fuzzRecord(f, 0x09, 9, &wire.RPCUnknownFields{Common: c(cid + 2)}, v)...)
	seed = append(seed, fuzzRecord(f, 0x06, 2, &wire.CutoffsFields{Common: s(cid | 1), UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 2}, v)...)
	f.Add(seed, uint8(0))
	f.Add(seed[:len(seed)/2], uint8(1))
	f.Add(append(append([]byte{}, seed...), seed...), uint8(2))
	profiles := Profiles()
	points := []CapturePoint{Switch, HostPoint(fuzzHosts[2]), {Kind: CaptureSent}, {Kind: CaptureDelivered}}
	f.Fuzz(func(t *testing.T, b []byte, how uint8) {
		prof := profiles[int(how)%len(profiles)]
		evs := fuzzEvents(b, prof.Params.Wire)
		rules, err := Select(Rules(), "", Should, prof.Name)
		if err != nil {
			t.Fatal(err)
		}
		c := NewChecker(prof.Name, prof.Params, rules)
		c.SetCapturePoint(points[int(how>>2)%len(points)])
		if how&0x40 != 0 {
			c.SetInferrer(NewInferrer(prof.Params))
		}
		if how&0x80 != 0 {
			c.SetCaptureFromStart()
		}
		for i := range evs {
			c.Feed(&evs[i])
		}
		if rep := c.Finish(); rep == nil {
			t.Fatal("Finish returned no report")
		}
	})
}
