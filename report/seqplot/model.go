package seqplot

import (
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Mark is one packet drawn on a panel: a byte range of the panel's message
// at a time. For a point (GRANT, BUSY) Offset and End are equal.
type Mark struct {
	// At is the packet's capture time minus the RPC's first packet's
	// (negative if the capture's clock stepped back).
	At time.Duration
	// Frame is the packet's 1-based frame number in the capture.
	Frame int
	// Offset is the first byte and End one past the last byte, in bytes
	// from the start of the message.
	Offset, End uint32
	// Priority is the packet's priority level (0..7) from its IP header;
	// for a GRANT or RESEND it is the header's priority field: the level
	// the sender is told to use.
	Priority uint8
}

// Panel holds the marks of one message (request or response) of the RPC.
type Panel struct {
	// Role is the message's sender: wire.RoleClient for the request,
	// wire.RoleServer for the response.
	Role wire.Role
	// Length is message_length in bytes from the first DATA (0: no DATA).
	Length uint32
	// Unscheduled is the incoming field (bytes) of the message's first
	// DATA with retransmit=0, at UnscheduledAt: where the granted-offset
	// line starts (0: no such DATA).
	Unscheduled   uint32
	UnscheduledAt time.Duration
	// Data holds the first transmissions (retransmit=0) by priority level.
	Data [8][]Mark
	// Retransmits holds the DATA segments with retransmit=1 (Priority is
	// their IP priority level).
	Retransmits []Mark
	// Grants holds every GRANT for the message (Offset = End = its offset
	// field), in capture order.
	Grants []Mark
	// Resends holds every RESEND for the message: the range it asked for,
	// [offset, offset+length), clipped to Length (length 0xFFFFFFFF, "all
	// sent so far", reaches Length, or the highest end seen when Length is
	// unknown).
	Resends []Mark
	// Busy holds every BUSY the message's sender sent, at Offset = End =
	// the highest DATA end seen for the message so far.
	Busy []Mark
	// highest is the highest DATA end seen so far.
	highest uint32
}

// Top returns the highest byte offset any mark of p reaches, at least
// Length.
func (p *Panel) Top() uint32 {
	top := max(p.Length, p.highest, p.Unscheduled)
	for _, ms := range [][]Mark{p.Grants, p.Resends} {
		for _, m := range ms {
			top = max(top, m.End)
		}
	}
	return top
}

// DataCount returns the number of DATA segments on p, first transmissions
// and retransmissions.
func (p *Panel) DataCount() int {
	n := len(p.Retransmits)
	for _, d := range p.Data {
		n += len(d)
	}
	return n
}

// Model is everything the sequence graph of one RPC shows, in plain data.
type Model struct {
	// Key identifies the RPC (client and server addresses, client's id).
	Key spec.RPCKey
	// ClientPort and ServerPort are the Homa ports.
	ClientPort, ServerPort uint16
	// Start is the capture time of the RPC's first packet: time 0 of the
	// x axis.
	Start time.Time
	// Span is the time from the first to the last packet of the RPC.
	Span time.Duration
	// Latency is Latency(rpc): first packet to the response's last missing
	// byte; 0 when the response never completed.
	Latency time.Duration
	// Request and Response are the two messages' panels.
	Request, Response Panel
}

// Panels returns the request and response panels, in that order.
func (m *Model) Panels() []*Panel { return []*Panel{&m.Request, &m.Response} }

// Builder collects one RPC's packets into a Model. Feed it every event of
// the capture, in capture order; events of other RPCs are ignored.
type Builder struct {
	m   Model
	key spec.RPCKey
}

// NewBuilder returns a Builder for r, an RPC found by a spec.Trace over the
// same capture (its key, ports, first packet time and completion are used).
func NewBuilder(r *spec.RPC) *Builder {
	b := &Builder{key: r.Key}
	b.m = Model{Key: r.Key, ClientPort: r.ClientPort, ServerPort: r.ServerPort, Start: r.First,
		Span: r.Last.Sub(r.First), Latency: Latency(r)}
	b.m.Request.Role, b.m.Response.Role = wire.RoleClient, wire.RoleServer
	b.m.Request.Length, b.m.Response.Length = r.Request.Length, r.Response.Length
	return b
}

// panel returns the panel of the message sent by role.
func (b *Builder) panel(role wire.Role) *Panel {
	if role == wire.RoleClient {
		return &b.m.Request
	}
	return &b.m.Response
}

// Add takes one event; it keeps nothing that points into e (the reader
// reuses its buffers).
func (b *Builder) Add(e *spec.Event) {
	if e.Err != nil {
		return
	}
	typ := e.Type()
	switch typ {
	case wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeBusy:
	default:
		return
	}
	if spec.KeyOf(e) != b.key {
		return
	}
	role := e.Packet.Role()
	at := e.Time.Sub(b.m.Start)
	mk := Mark{At: at, Frame: e.Frame, Priority: e.Priority & 7}
	switch typ {
	case wire.TypeData:
		p := b.panel(role)
		d := e.Packet.Data()
		if p.Length == 0 {
			p.Length = d.MessageLength()
		}
		mk.Offset, mk.End = e.Offset, e.End()
		if mk.End < mk.Offset { // offset+length wrapped past 2^32
			mk.End = ^uint32(0)
		}
		p.highest = max(p.highest, mk.End)
		if d.Retransmit() != 0 {
			p.Retransmits = append(p.Retransmits, mk)
			return
		}
		if p.Unscheduled == 0 && d.Incoming() > 0 {
			p.Unscheduled, p.UnscheduledAt = d.Incoming(), at
		}
		p.Data[mk.Priority] = append(p.Data[mk.Priority], mk)
	case wire.TypeGrant:
		p := b.panel(opposite(role))
		g := e.Packet.Grant()
		mk.Offset, mk.End, mk.Priority = g.Offset(), g.Offset(), g.Priority()
		p.Grants = append(p.Grants, mk)
	case wire.TypeResend:
		p := b.panel(opposite(role))
		rs := e.Packet.Resend()
		end := uint64(rs.Offset()) + uint64(rs.Length())
		if rs.IsResendAll() {
			end = uint64(max(p.Length, p.highest, rs.Offset()))
		}
		if p.Length > 0 {
			end = min(end, uint64(max(p.Length, rs.Offset())))
		}
		mk.Offset, mk.End, mk.Priority = rs.Offset(), uint32(min(end, 1<<32-1)), rs.Priority()
		p.Resends = append(p.Resends, mk)
	case wire.TypeBusy:
		p := b.panel(role)
		mk.Offset, mk.End = p.highest, p.highest
		p.Busy = append(p.Busy, mk)
	}
}

// Model returns the model built so far.
func (b *Builder) Model() *Model {
	m := b.m
	return &m
}

// opposite returns the other end's role: a GRANT or RESEND is about the
// message the other end sends.
func opposite(r wire.Role) wire.Role {
	if r == wire.RoleClient {
		return wire.RoleServer
	}
	return wire.RoleClient
}
