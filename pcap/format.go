package pcap

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// AppendText appends the one-line text form of segment i of the frame's
// packet (i indexes f.Segments and is ignored for control packets; a GSO
// frame prints as frame.N, one line per segment) to b, with the time
// relative to start:
//
//	17 0.000123456 10.0.0.11:32768 > 10.0.0.1:4000 p4 DATA id 2 msg_len 500000 off 0 len 1424 incoming 40000 cutoff_version 0
//
// Fields after the type depend on it: DATA message length, offset, data
// length, incoming, cutoff_version, then "retransmit" and "ack ID:PORT" when
// set; GRANT offset and priority; RESEND offset, length ("all" for
// 0xFFFFFFFF) and priority; CUTOFFS the eight cutoffs and version; ACK the
// valid acks. A frame with Err prints the error instead: a header the
// snap length cut after the common header as "TYPE id N [Homa header cut
// by the snap length: ERR]", and one cut only in an ACK's unused acks
// slots (SnapWhole) as the whole ACK it was, with "[snap length cut only
// unused acks slots]".
func (f *Frame) AppendText(b []byte, start time.Time, i int) []byte {
	nseg := len(f.Segments)
	var seg wire.Segment
	if i >= 0 && i < nseg {
		seg = f.Segments[i]
	}
	b = strconv.AppendInt(b, int64(f.Number), 10)
	if nseg > 1 {
		b = fmt.Appendf(b, ".%d", i+1)
	}
	b = append(b, ' ')
	b = appendSeconds(b, f.Time.Sub(start))
	b = append(b, ' ')
	c := wire.Common(f.Raw)
	b = appendEndpoint(b, f.Src, c.Sport(), len(f.Raw) >= 2)
	b = append(b, " > "...)
	b = appendEndpoint(b, f.Dst, c.Dport(), len(f.Raw) >= 4)
	b = fmt.Appendf(b, " p%d", f.Priority)
	if alt, ok := f.PriorityOr(); ok {
		b = fmt.Appendf(b, "/%d", alt)
	}
	whole := f.SnapWhole()
	if f.Err != nil && !whole {
		if f.SnapCut && f.Packet.Partial() {
			// Its common header was read: the packet is there, its
			// other fields unseen (check counts it so).
			return fmt.Appendf(b, " %s id %d [Homa header cut by the snap length: %v]", f.Packet.Type(), c.SenderID(), f.Err)
		}
		return fmt.Appendf(b, " decode error: %v", f.Err)
	}
	b = fmt.Appendf(b, " %s id %d", f.Packet.Type(), c.SenderID())
	if f.Hijacked {
		b = append(b, " hijacked"...)
	}
	p := f.Packet
	switch p.Type() {
	case wire.TypeData:
		d := p.Data()
		b = fmt.Appendf(b, " msg_len %d off %d len %d incoming %d cutoff_version %d",
			d.MessageLength(), seg.Offset, seg.Length, d.Incoming(), d.CutoffVersion())
		if d.Retransmit() != 0 {
			b = append(b, " retransmit"...)
		}
		if id := d.AckClientID(); id != 0 {
			b = fmt.Appendf(b, " ack %d:%d", id, d.AckServerPort())
		}
		if nseg > 1 {
			b = fmt.Appendf(b, " gso %d/%d", i+1, nseg)
			if seg.Assumed {
				b = append(b, " (segment size assumed: seg headers not captured)"...)
			}
		}
	case wire.TypeGrant:
		g := p.Grant()
		b = fmt.Appendf(b, " offset %d priority %d", g.Offset(), g.Priority())
		if g.ResendAll() != 0 {
			b = append(b, " resend_all"...)
		}
	case wire.TypeResend:
		r := p.Resend()
		b = fmt.Appendf(b, " offset %d length ", r.Offset())
		if r.IsResendAll() {
			b = append(b, "all"...)
		} else {
			b = strconv.AppendUint(b, uint64(r.Length()), 10)
		}
		if p.Version().HasPriorities() {
			b = fmt.Appendf(b, " priority %d", r.Priority())
		}
	case wire.TypeCutoffs:
		cu := p.Cutoffs()
		b = append(b, " cutoffs "...)
		for i, v := range cu.UnschedCutoffs() {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(v), 10)
		}
		b = fmt.Appendf(b, " version %d", cu.CutoffVersion())
	case wire.TypeAck:
		a := p.Ack()
		b = fmt.Appendf(b, " num_acks %d", a.NumAcks())
		for i := range a.ValidAcks() {
			e := a.Entry(i)
			b = fmt.Appendf(b, " %d:%d", e.ClientID, e.ServerPort)
		}
	}
	if p.Truncated() && p.Type() != wire.TypeData && !whole {
		b = append(b, " [truncated]"...)
	}
	if whole {
		b = append(b, " [snap length cut only unused acks slots]"...)
	}
	return b
}

// SnapWhole reports whether f is a frame whose Homa header the snap
// length cut only where no receiver reads (an ACK's acks slots past
// num_acks: wire.Packet.Complete): Err says what was cut, and its Packet
// reads as the whole packet it was, as check judges it
// (Stats.SnapComplete counts them).
func (f *Frame) SnapWhole() bool {
	return f.Err != nil && f.SnapCut && f.Packet.Partial() && f.Packet.Complete()
}

// appendSeconds appends d as seconds with 9 decimals, signed ("-0.500000000").
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	return fmt.Appendf(b, "%d.%09d", int64(d/time.Second), int64(d%time.Second))
}

// appendEndpoint appends a and port as ADDR:PORT (ADDR:? without the
// port), an IPv6 address, IPv4-mapped ones too, in brackets as
// net.JoinHostPort writes it (spec.HostPort.String's form).
func appendEndpoint(b []byte, a netip.Addr, port uint16, havePort bool) []byte {
	if a.Is6() {
		b = append(b, '[')
		b = a.AppendTo(b)
		b = append(b, ']')
	} else {
		b = a.AppendTo(b)
	}
	b = append(b, ':')
	if !havePort {
		return append(b, '?')
	}
	return strconv.AppendUint(b, uint64(port), 10)
}

// JSONPacket is the JSON form of one Homa packet (one GSO segment) as
// printed by homatest decode -o json. Header holds the HomaModule header
// struct with HomaModule's field names (common, message_length, incoming,
// ack, cutoff_version, retransmit, seg, offset, priority, length,
// unsched_cutoffs, num_acks, acks ...).
type JSONPacket struct {
	File     string     `json:"file,omitempty"`
	Frame    int        `json:"frame"`
	Segment  int        `json:"segment,omitempty"`  // 1-based, GSO frames only
	Segments int        `json:"segments,omitempty"` // GSO frames only
	Time     time.Time  `json:"time"`
	RelTime  float64    `json:"rel_time"` // seconds since the first Homa packet of the file
	Src      netip.Addr `json:"src"`
	Dst      netip.Addr `json:"dst"`
	Sport    *uint16    `json:"sport,omitempty"` // absent if not captured
	Dport    *uint16    `json:"dport,omitempty"`
	IPProto  uint8      `json:"ip_proto"`
	TOS      uint8      `json:"tos"`
	Priority uint8      `json:"priority"`
	// PriorityOr is the other reading of an IPv6 class whose sender's
	// shift is not known (Frame.PriorityOr; 0: none).
	PriorityOr uint8       `json:"priority_or,omitempty"`
	Hijacked   bool        `json:"hijacked,omitempty"`
	Wire       string      `json:"wire,omitempty"`
	Type       string      `json:"type,omitempty"`
	SenderID   uint64      `json:"sender_id"`
	Role       string      `json:"role,omitempty"`
	Offset     *uint32     `json:"offset,omitempty"`   // DATA: effective offset of the segment
	DataLen    *int        `json:"data_len,omitempty"` // DATA: bytes in the segment
	Assumed    bool        `json:"segment_size_assumed,omitempty"`
	Header     wire.Fields `json:"header,omitempty"`
	Error      string      `json:"error,omitempty"`
	// SnapCut is set when the snap length cut the Homa header: with
	// Header and no Error, only unused acks slots of an ACK
	// (Frame.SnapWhole, read whole); else Error says what is missing.
	SnapCut bool `json:"snap_cut,omitempty"`
}

// JSON returns the JSON form of segment i (see AppendText) of f. In a GSO
// frame, the header's seg.offset is that of the segment.
func (f *Frame) JSON(start time.Time, i int) JSONPacket {
	c := wire.Common(f.Raw)
	j := JSONPacket{
		Frame: f.Number, Time: f.Time.UTC(), RelTime: f.Time.Sub(start).Seconds(),
		Src: f.Src, Dst: f.Dst, IPProto: f.IPProto,
		TOS: f.TOS, Priority: f.Priority, Hijacked: f.Hijacked,
	}
	j.PriorityOr, _ = f.PriorityOr()
	if len(f.Raw) >= 4 {
		sp, dp := c.Sport(), c.Dport()
		j.Sport, j.Dport = &sp, &dp
	}
	if len(f.Raw) > 11 {
		j.Type = c.Type().String()
	}
	if len(f.Raw) >= wire.CommonHeaderLen {
		j.SenderID = c.SenderID()
		j.Role = wire.RoleOf(j.SenderID).String()
	}
	j.SnapCut = f.Err != nil && f.SnapCut
	if f.Err != nil && !f.SnapWhole() {
		j.Error = f.Err.Error()
		return j
	}
	p := f.Packet
	j.Wire = p.Version().String()
	j.Header = p.Fields()
	if p.Type() == wire.TypeData && i >= 0 && i < len(f.Segments) {
		seg := f.Segments[i]
		off, n := seg.Offset, seg.Length
		j.Offset, j.DataLen = &off, &n
		if len(f.Segments) > 1 {
			j.Segment, j.Segments, j.Assumed = i+1, len(f.Segments), seg.Assumed
			if df, ok := j.Header.(*wire.DataFields); ok && i > 0 {
				df.SegOffset = seg.Offset
			}
		}
	}
	return j
}
