package spec

import (
	"hash/maphash"
	"sort"

	"github.com/homatest/homatest/spec/wire"
)

// payloadSeed keys the payload hashes of every trace in the process (the
// hashes never leave it).
var payloadSeed = maphash.MakeSeed()

// payloadBlock is the size of the aligned blocks (offsets multiple of it
// in the message) whose hashes let two copies of the same bytes be
// compared when they were cut at different boundaries.
const payloadBlock = 128

// paySpan is the hash of the captured bytes of one DATA segment: the n
// bytes from message offset off, first seen in frame.
type paySpan struct {
	off, n uint32
	frame  int32
	sum    uint32
	// ack is ackHash of the first copy's piggy-backed ack (a copy of the
	// segment repeats it: HOMA-ACK-004).
	ack uint32
}

// ackHash is a 32-bit digest of the piggy-backed ack DATA d carries (0
// for none): a retransmission or restart copies its segment's header,
// ack included (homa_resend_data), so two copies of one segment compare
// by it. A collision can only hide a difference.
func ackHash(d wire.Data) uint32 {
	id := d.AckClientID()
	if id == 0 {
		return 0
	}
	x := id*0x9E3779B97F4A7C15 ^ uint64(d.AckServerPort())<<16 ^ uint64(d.AckClientPort())
	return uint32(x>>32) ^ uint32(x) | 1
}

// firstAck returns the ackHash of the copy of the segment at message
// offset off seen first and that copy's frame (ok false: none logged).
func (l *payloadLog) firstAck(off uint32) (ack uint32, frame int, ok bool) {
	i := sort.Search(len(l.spans), func(i int) bool { return l.spans[i].off >= off })
	if i == len(l.spans) || l.spans[i].off != off {
		return 0, 0, false
	}
	return l.spans[i].ack, int(l.spans[i].frame), true
}

// payloadLog is what a trace keeps of one message's payload, so that a
// later copy of the same bytes (a retransmission, a restart, a duplicate)
// can be compared with the first (HOMA-WIRE-014): one hash per segment
// start offset (spans, sorted by offset) and one per aligned block of
// payloadBlock bytes. Memory is about 4/payloadBlock of the message plus
// 16 bytes per segment (the first four in the log itself, so that a short
// message costs one allocation), the block hashes only once a segment
// holds a whole block; the log goes with the message's incarnation.
type payloadLog struct {
	spans  []paySpan
	blocks []uint32 // blocks[i]: hash of [i*payloadBlock, (i+1)*payloadBlock), valid if have
	have   []uint64 // bit i set: blocks[i] is known
	first  [4]paySpan
}

// hash32 is the payload hash kept per span and block: 32 bits suffice,
// since a collision can only hide a difference, never invent one.
func hash32(b []byte) uint32 { return uint32(maphash.Bytes(payloadSeed, b)) }

// payDiff is a difference found between a copy of a message's bytes and
// the copy seen first: the byte range compared and the earlier copy's
// frame (0: known only by its block hash).
type payDiff struct {
	off, end uint32
	frame    int
}

// check compares data, the captured bytes of a segment at message offset
// off of a message of length bytes, with every earlier copy of those
// bytes the log holds, then records it. compared is the number of bytes
// it could compare (the earlier copy's captured bytes that data also
// has); ok is false with the first difference found.
func (l *payloadLog) check(off uint32, data []byte, frame int, length, ack uint32) (compared uint32, d payDiff, ok bool) {
	ok = true
	n := uint32(len(data))
	if uint64(off)+uint64(n) > uint64(length) {
		if off >= length {
			return 0, d, true
		}
		n = length - off
		data = data[:n]
	}
	// Same start offset: the captured prefix both copies have.
	i := len(l.spans) // segments mostly come in offset order: append
	if i > 0 && l.spans[i-1].off >= off {
		i = sort.Search(len(l.spans), func(i int) bool { return l.spans[i].off >= off })
	}
	switch {
	case i < len(l.spans) && l.spans[i].off == off:
		s := &l.spans[i]
		if s.n <= n && s.n > 0 {
			compared = s.n
			if hash32(data[:s.n]) != s.sum {
				ok, d = false, payDiff{off, off + s.n, int(s.frame)}
			}
		}
		if n > s.n {
			s.n, s.frame, s.sum = n, int32(frame), hash32(data)
		}
	case n > 0:
		if segs := int(length/wire.MaxSegDataIPv6) + 1; len(l.spans) == 0 && cap(l.spans) < segs {
			// One allocation for a message cut at max_seg_data, none
			// for a short one or in a reused log's array if it fits.
			l.spans = l.first[:0]
			if segs > len(l.first) {
				l.spans = make([]paySpan, 0, segs)
			}
		}
		l.spans = append(l.spans, paySpan{})
		copy(l.spans[i+1:], l.spans[i:])
		l.spans[i] = paySpan{off: off, n: n, frame: int32(frame), sum: hash32(data), ack: ack}
	}
	// Aligned blocks wholly inside the captured bytes.
	if l.blocks == nil && (off+payloadBlock-1)/payloadBlock+1 <= (off+n)/payloadBlock {
		nb := (int(length) + payloadBlock - 1) / payloadBlock
		l.blocks = make([]uint32, nb)
		l.have = make([]uint64, (nb+63)/64)
	}
	var blocks uint32
	b := (off + payloadBlock - 1) / payloadBlock
	for ; (b+1)*payloadBlock <= off+n && int(b) < len(l.blocks); b++ {
		p := b*payloadBlock - off
		h := hash32(data[p : p+payloadBlock])
		if l.have[b/64]&(1<<(b%64)) == 0 {
			l.have[b/64] |= 1 << (b % 64)
			l.blocks[b] = h
			continue
		}
		blocks += payloadBlock
		if l.blocks[b] != h && ok {
			ok, d = false, payDiff{b * payloadBlock, (b + 1) * payloadBlock, l.frameOf(b * payloadBlock)}
		}
	}
	compared = max(compared, blocks)
	return compared, d, ok
}

// frameOf returns the frame of the first span that covers byte off of
// the message (0: none).
func (l *payloadLog) frameOf(off uint32) int {
	f := 0
	for _, s := range l.spans {
		if s.off <= off && off < s.off+s.n && (f == 0 || int(s.frame) < f) {
			f = int(s.frame)
		}
	}
	return f
}

// comparePayload compares the captured payload of DATA segment e of
// message m with the copies of those bytes seen before, and logs it (once
// per event: Apply does not log it again).
func (t *Trace) comparePayload(e *Event, m *Message) (compared uint32, d payDiff, ok bool) {
	t.payDone = e
	length := m.Length
	if length == 0 {
		length = e.Packet.Data().MessageLength()
	}
	if length == 0 || length > t.P.MaxMessageLength || len(e.Payload) == 0 {
		return 0, d, true // WIRE-002 judges a message_length out of range
	}
	if m.payload == nil {
		m.payload = t.newPayload()
	}
	return m.payload.check(e.Offset, e.Payload, e.Frame, length, ackHash(e.Packet.Data()))
}

// payFreeMax bounds Trace.payFree: logs are freed about as fast as new
// messages need them, so a few suffice.
const payFreeMax = 64

// freePayload keeps l, a log no message refers to any more, for
// newPayload to reuse (nil: nothing to keep). Only a log with an array of
// its own is worth keeping.
func (t *Trace) freePayload(l *payloadLog) {
	if l != nil && cap(l.spans) > len(l.first) && len(t.payFree) < payFreeMax {
		t.payFree = append(t.payFree, l)
	}
}

// newPayload returns an empty payload log: a freed one, emptied, whose
// spans array check reuses when it is large enough, or a new one.
func (t *Trace) newPayload() *payloadLog {
	n := len(t.payFree)
	if n == 0 {
		return &payloadLog{}
	}
	l := t.payFree[n-1]
	t.payFree[n-1] = nil
	t.payFree = t.payFree[:n-1]
	*l = payloadLog{spans: l.spans[:0]}
	return l
}
