package pcap

import (
	"math/bits"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// pcapgo (v1.x) converts the timestamp of a pcapng interface whose
// if_tsresol is a binary fraction 2^-e (the option's top bit set, as
// hardware capture cards and their converters write it) with a whole
// number of nanoseconds per unit: 1e9/2^e rounded down for e < 30, which
// makes 2^-20 s units 953 ns instead of 953.67, and 2^e/1e9 rounded down
// units per nanosecond for e >= 30, which reads 2^-32 s units as a
// quarter nanosecond instead of 0.233. Timestamps then run slow within
// each second: up to 0.7 ms behind at the end of a second at 2^-20 and
// 70 ms at 2^-32, jumping back on at the next (tshark reads them right);
// a check saw RESENDs come too early (HOMA-RESEND-001) that came in time.
// The reader converts them exactly: the fast path (ngFast) from the
// block's raw timestamp, pcapgo's path from the raw timestamp peeked
// before pcapgo reads the block (ngFast.peekTime), or, where that cannot
// be peeked (a later section), from what pcapgo made of it (binaryTime).

// tsIface is what the reader needs of a pcapng interface's timestamps:
// the exponent e of a binary resolution 2^-e (0: decimal, left as pcapgo
// converts it) and if_tsoffset in seconds.
type tsIface struct {
	exp uint8
	off uint64
}

// tsIfaceOf returns interface i's tsIface, cached per section in
// r.tsIfaces (zero for an interface pcapgo does not know).
func (r *Reader) tsIfaceOf(i int) tsIface {
	if i >= len(r.tsIfaces) {
		for j := len(r.tsIfaces); j < r.ng.NInterfaces(); j++ {
			var ti tsIface
			if ifc, err := r.ng.Interface(j); err == nil && ifc.TimestampResolution.Binary() {
				ti = tsIface{exp: ifc.TimestampResolution.Exponent(), off: ifc.TimestampOffset}
			}
			r.tsIfaces = append(r.tsIfaces, ti)
		}
	}
	if i < 0 || i >= len(r.tsIfaces) {
		return tsIface{}
	}
	return r.tsIfaces[i]
}

// binaryTime returns the time that t, as pcapgo computed it for a frame
// of an interface of resolution 2^-e (1 <= e <= 63), stands for: the
// units it read recovered from the nanoseconds it made of them, and
// converted exactly (to below a nanosecond). For e >= 30 pcapgo's
// nanoseconds may pass a second, which time.Unix carries into the
// seconds: a fraction read at the start of a second may then be the end
// of the one before, 69 ms (at 2^-32) earlier, which is taken when it is
// not before prev (the previous frame's time): a capture's time goes on.
func binaryTime(t time.Time, e uint8, prev time.Time) time.Time {
	if e == 0 || e > 63 {
		return t
	}
	mask := uint64(1) << e
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if mask < 1e9 {
		units := nsec / (1e9 / mask) // exact: pcapgo multiplied by the divisor
		return time.Unix(sec, int64(exactNanos(units, e))).UTC()
	}
	per := mask / 1e9 // units per nanosecond as pcapgo took it
	at := time.Unix(sec, int64(exactNanos(nsec*per, e))).UTC()
	if units := (nsec + 1e9) * per; units < mask {
		// Also a reading of the second before, whose fraction pcapgo
		// carried past the second.
		before := time.Unix(sec-1, int64(exactNanos(units, e))).UTC()
		if !prev.IsZero() && !before.Before(prev) {
			return before
		}
	}
	return at
}

// exactNanos returns units of 2^-e s (units < 2^e) in nanoseconds,
// rounded down.
func exactNanos(units uint64, e uint8) uint64 {
	hi, lo := bits.Mul64(units, 1e9)
	return hi<<(64-e) | lo>>e
}

// fixTime corrects the timestamp ts pcapgo read for a frame of pcapng
// interface iface when the interface's resolution is binary: exactly
// from raw, the block's own timestamp, when rawOK, else binaryTime. It
// notes the result as the previous frame's time.
func (r *Reader) fixTime(ts *time.Time, iface int, raw uint64, rawOK bool) {
	if ti := r.tsIfaceOf(iface); ti.exp != 0 && ti.exp <= 63 {
		if rawOK {
			*ts = exactBinaryTime(raw, ti.exp, ti.off)
		} else {
			*ts = binaryTime(*ts, ti.exp, r.prevTS)
		}
	}
	r.prevTS = *ts
}

// exactBinaryTime returns raw pcapng timestamp ts in units of 2^-e s
// (1 <= e <= 63) plus off seconds, to the nanosecond rounded down.
func exactBinaryTime(ts uint64, e uint8, off uint64) time.Time {
	return time.Unix(int64(ts>>e+off), int64(exactNanos(ts&(1<<e-1), e))).UTC()
}

// resetTimeResolutions forgets the interfaces' resolutions at the end of
// a section (the next section declares its own).
func (r *Reader) resetTimeResolutions([]pcapgo.NgInterface) { r.tsIfaces = r.tsIfaces[:0] }
