package scenario

import (
	"encoding/binary"
	"sync"
	"time"
)

// note is one frame the switch dropped or altered, as its pcapng record
// comments it ("dropped: plan (plan rule 0 (name))", "plan rule 1: delay
// 5ms").
type note struct {
	// Port is the switch port index (0-based: host Port+1) the frame was
	// leaving by.
	Port    int
	Time    time.Time
	Data    []byte
	Comment string
}

// noteFilter is the io.Writer given to the switch as its record
// (netem.SwitchFabric.Record): it reads the pcapng stream block by block
// and keeps only the Enhanced Packet Blocks that carry a comment, so the
// switch can record at 1 Gbit/s without the run storing every frame twice.
// Blocks may arrive cut anywhere (the writer is buffered). It follows the
// pcapng format (IETF draft-ietf-opsawg-pcapng: block type, total length,
// body, total length; options as code, length, value padded to 4 bytes;
// opt_comment is code 1; EPB timestamps in the interface's resolution,
// nanoseconds for pcap.Writer's).
type noteFilter struct {
	mu    sync.Mutex
	buf   []byte
	order binary.ByteOrder
	notes []note
	bad   bool // the stream stopped making sense: ignore the rest
}

const (
	blockSHB = 0x0A0D0D0A
	blockEPB = 6
	optEnd   = 0
	optCmt   = 1
)

// Write consumes p; it never fails (a record the filter cannot read is
// ignored rather than stopping the switch).
func (f *noteFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bad {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	off := 0
	for len(f.buf)-off >= 12 {
		b := f.buf[off:]
		if binary.LittleEndian.Uint32(b) == blockSHB {
			switch binary.LittleEndian.Uint32(b[8:]) {
			case 0x1A2B3C4D:
				f.order = binary.LittleEndian
			case 0x4D3C2B1A:
				f.order = binary.BigEndian
			default:
				f.bad = true
				return len(p), nil
			}
		}
		if f.order == nil {
			f.bad = true
			return len(p), nil
		}
		n := int(f.order.Uint32(b[4:]))
		if n < 12 || n%4 != 0 {
			f.bad = true
			return len(p), nil
		}
		if len(b) < n {
			break
		}
		if f.order.Uint32(b) == blockEPB {
			f.epb(b[8 : n-4])
		}
		off += n
	}
	f.buf = append(f.buf[:0], f.buf[off:]...)
	return len(p), nil
}

// epb keeps an Enhanced Packet Block body if it has a comment.
func (f *noteFilter) epb(body []byte) {
	if len(body) < 20 {
		return
	}
	o := f.order
	capLen := int(o.Uint32(body[12:]))
	if capLen > len(body)-20 {
		return
	}
	opts := body[20+(capLen+3)&^3:]
	for len(opts) >= 4 {
		code, l := o.Uint16(opts), int(o.Uint16(opts[2:]))
		if code == optEnd || 4+l > len(opts) {
			return
		}
		if code == optCmt {
			ts := int64(o.Uint32(body[4:]))<<32 | int64(o.Uint32(body[8:]))
			f.notes = append(f.notes, note{Port: int(o.Uint32(body)), Time: time.Unix(0, ts),
				Data: append([]byte(nil), body[20:20+capLen]...), Comment: string(opts[4 : 4+l])})
			return
		}
		opts = opts[4+(l+3)&^3:]
	}
}

// add keeps note n (the simulator's switch notes come as calls, not as a
// pcapng stream).
func (f *noteFilter) add(n note) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, n)
}

// Notes returns the frames kept so far.
func (f *noteFilter) Notes() []note {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]note(nil), f.notes...)
}
