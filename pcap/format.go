package pcap

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// AppendText appends the one-line text form of segment seg of the frame's
// packet (seg is ignored for non-DATA packets; nseg > 1 marks a GSO frame)
// to b, with the time relative to start:
//
//	17 0.000123456 10.0.0.11:32768 > 10.0.0.1:4000 p4 DATA id 2 msg_len 500000 off 0 len 1424 incoming 40000 cutoff_version 0
//
// Fields after the type depend on it: DATA message length, offset, data
// length, incoming, cutoff_version, then "retransmit" and "ack ID:PORT" when
// set; GRANT offset and priority; RESEND offset, length ("all" for
// 0xFFFFFFFF) and priority; CUTOFFS the eight cutoffs and version; ACK the
// valid acks. A frame with Err prints the error instead.
func (f *Frame) AppendText(b []byte, start time.Time, seg wire.Segment, i, nseg int) []byte {
	b = strconv.AppendInt(b, int64(f.Number), 10)
	if nseg > 1 {
		b = fmt.Appendf(b, ".%d", i+1)
	}
	d := f.Time.Sub(start)
	b = fmt.Appendf(b, " %d.%09d ", int64(d/time.Second), int64(d%time.Second))
	c := wire.Common(f.Raw)
	b = appendEndpoint(b, f.Src, c.Sport())
	b = append(b, " > "...)
	b = appendEndpoint(b, f.Dst, c.Dport())
	if f.Err != nil {
		return fmt.Appendf(b, " decode error: %v", f.Err)
	}
	b = fmt.Appendf(b, " p%d %s id %d", f.Priority, f.Packet.Type(), c.SenderID())
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
	if p.Truncated() && p.Type() != wire.TypeData {
		b = append(b, " [truncated]"...)
	}
	return b
}

func appendEndpoint(b []byte, a netip.Addr, port uint16) []byte {
	if a.Is6() && !a.Is4In6() {
		b = append(b, '[')
		b = a.AppendTo(b)
		b = append(b, ']')
	} else {
		b = a.AppendTo(b)
	}
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(port), 10)
}

// JSONPacket is the JSON form of one Homa packet (one GSO segment) as
// printed by homatest decode -o json. Header holds the HomaModule header
// struct with HomaModule's field names (common, message_length, incoming,
// ack, cutoff_version, retransmit, seg, offset, priority, length,
// unsched_cutoffs, num_acks, acks ...).
type JSONPacket struct {
	File     string      `json:"file,omitempty"`
	Frame    int         `json:"frame"`
	Segment  int         `json:"segment,omitempty"`  // 1-based, GSO frames only
	Segments int         `json:"segments,omitempty"` // GSO frames only
	Time     time.Time   `json:"time"`
	RelTime  float64     `json:"rel_time"` // seconds since the first Homa packet of the file
	Src      netip.Addr  `json:"src"`
	Dst      netip.Addr  `json:"dst"`
	Sport    uint16      `json:"sport"`
	Dport    uint16      `json:"dport"`
	IPProto  uint8       `json:"ip_proto"`
	TOS      uint8       `json:"tos"`
	Priority uint8       `json:"priority"`
	Hijacked bool        `json:"hijacked,omitempty"`
	Wire     string      `json:"wire,omitempty"`
	Type     string      `json:"type,omitempty"`
	SenderID uint64      `json:"sender_id"`
	Role     string      `json:"role,omitempty"`
	Offset   *uint32     `json:"offset,omitempty"`   // DATA: effective offset of the segment
	DataLen  *int        `json:"data_len,omitempty"` // DATA: bytes in the segment
	Header   wire.Fields `json:"header,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// JSON returns the JSON form of segment seg (i of nseg) of f.
func (f *Frame) JSON(start time.Time, seg wire.Segment, i, nseg int) JSONPacket {
	c := wire.Common(f.Raw)
	j := JSONPacket{
		Frame: f.Number, Time: f.Time.UTC(), RelTime: f.Time.Sub(start).Seconds(),
		Src: f.Src, Dst: f.Dst, Sport: c.Sport(), Dport: c.Dport(), IPProto: f.IPProto,
		TOS: f.TOS, Priority: f.Priority, Hijacked: f.Hijacked,
	}
	if f.Err != nil {
		j.Error = f.Err.Error()
		return j
	}
	p := f.Packet
	j.Wire, j.Type, j.SenderID, j.Role = p.Version().String(), p.Type().String(), p.SenderID(), p.Role().String()
	j.Header = p.Fields()
	if p.Type() == wire.TypeData {
		off, n := seg.Offset, seg.Length
		j.Offset, j.DataLen = &off, &n
		if nseg > 1 {
			j.Segment, j.Segments = i+1, nseg
		}
	}
	return j
}
