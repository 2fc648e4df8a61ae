package tester

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// Packet is one packet the Peer sent or received.
type Packet struct {
	// At is the time the Peer sent it or received it (its Clock's time;
	// for a received packet the kernel's receive time when the transport
	// reports it: homa.Received.At).
	At time.Time
	// Sent is true for packets the Peer sent.
	Sent bool
	// Src and Dst are the IP addresses.
	Src, Dst netip.Addr
	// Priority is the level (0..7): for a received IPv6 packet whose
	// traffic class the transport reported (HasTOS), read with the IUT's
	// shift (SetIPv6Shift), else the IP precedence bits.
	Priority uint8
	// TOS is the IPv4 TOS byte or IPv6 traffic class a received packet
	// arrived with, when HasTOS (the transport reported it:
	// homa.Received.HasTOS); captures write it as it was.
	TOS    uint8
	HasTOS bool
	// Raw is the transport bytes (Homa header and payload); the Peer owns a
	// private copy.
	Raw []byte
	// Pkt is Raw decoded in the Peer's wire format (SetWire); zero if Err
	// is set.
	Pkt wire.Packet
	// Err is the decode error for a malformed packet.
	Err error
	// Note, for a packet the Peer sent on purpose against the protocol
	// (SendDeliberate, SendRaw), says what it breaks; captures carry it as
	// the packet's comment, after DeliberatePrefix.
	Note string
	// consumed is set once an Expect returned the packet.
	consumed bool
}

// String renders the packet on one line for error messages, e.g.
// "GRANT 198.18.0.1>198.18.0.2 p7 id 101 offset 20000 priority 6".
func (p *Packet) String() string {
	if p.Err != nil {
		return fmt.Sprintf("malformed %s>%s: %v", p.Src, p.Dst, p.Err)
	}
	return fmt.Sprintf("%s %s>%s p%d %s", p.Pkt.Type(), p.Src, p.Dst, p.Priority, describe(p.Pkt))
}

// Peer is the tester's end of the exchange: one host address on a
// transport, keeping time with a Clock. Create with New; it is safe for
// concurrent use.
type Peer struct {
	tr    homa.Transport
	clock Clock
	local netip.Addr
	wire  wire.Version // the format it sends and reads (SetWire)
	// shift6 is the shift the IUT writes its IPv6 priority with
	// (SetIPv6Shift; 0: either); learned6 the shift each IPv6 source's
	// latest traffic class only one shift writes showed (ipv6Level).
	shift6   uint8
	learned6 pcap.IPv6Shifts

	mu       sync.Mutex
	log      []*Packet
	arrivals int // packets received so far
	closed   bool
	cutoffs  *CutoffsHost // nil: no CUTOFFS answers (AnswerCutoffs)
}

// New returns a Peer that sends and receives through tr and keeps time
// with clock: NewWallClock's for a transport that delivers in real time (raw
// IP sockets, homa/memnet), the simulation's SimClock for a simulated raw
// endpoint (SimTransport). The Peer installs its handler on tr; close the
// Peer (not tr) when done.
func New(tr homa.Transport, clock Clock) *Peer {
	p := &Peer{tr: tr, clock: clock, local: tr.LocalAddr(), wire: wire.VersionCurrent}
	if bt, ok := tr.(homa.BatchTransport); ok {
		// Batches carry the kernel's receive time where the transport
		// reports it (rawip.Transport.RecvTimestamps).
		bt.SetBatchHandler(p.receiveBatch)
	} else {
		tr.SetHandler(p.receive)
	}
	return p
}

// receiveBatch records a batch of received packets, each at the kernel's
// receive time when the transport gives one (homa.Received.At; the
// packets are the transport's buffers, copied here), else at the clock's
// time now.
func (p *Peer) receiveBatch(pkts []homa.Received) {
	for _, r := range pkts {
		p.logReceived(r, r.At)
	}
}

// SetIPv6Shift makes the Peer read the priority level of a received IPv6
// packet from its traffic class with shift s, the IUT's (its profile's
// ipv6_prio_shift): 4 for HomaModule before 548056f (linux_6.13.9,
// linux_6.1.38), 5 since. 0 (New's) means either: a source's shift is
// that of its latest traffic class only one shift writes
// (pcap.IPv6Shifts.Follow), else the Peer's wire format's
// (wire.IPv6PriorityShift), as pcap's Reader reads a capture. Transports
// that report no traffic class (homa.Received.HasTOS) give the level
// their own way.
func (p *Peer) SetIPv6Shift(s uint8) {
	p.mu.Lock()
	p.shift6 = s
	p.mu.Unlock()
}

// ipv6Level is the level of an IPv6 packet from src with traffic class
// tc, read as SetIPv6Shift says. Called with p.mu held.
func (p *Peer) ipv6Level(src netip.Addr, tc uint8) uint8 {
	s := p.shift6
	if s == 0 {
		s = p.learned6.Follow(src, tc)
	}
	if s == 0 {
		s = wire.IPv6PriorityShift(p.wire)
	}
	return wire.PriorityFromTrafficClass(tc, s)
}

// SetWire makes the Peer send and read wire format v (New: the current
// one; VersionAuto is the current one): an IUT of an older HomaModule
// (e.g. linux_6.1.38, wire.Version2024) speaks only its own. Call it
// before the Peer sends or receives; the transport must carry v's IP
// protocol (v.IPProtocol()).
func (p *Peer) SetWire(v wire.Version) {
	if v == wire.VersionAuto {
		v = wire.VersionCurrent
	}
	p.mu.Lock()
	p.wire = v
	p.mu.Unlock()
}

// Wire is the wire format the Peer sends and reads.
func (p *Peer) Wire() wire.Version {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wire
}

// encode encodes f in the Peer's wire format, as HomaModule does (lengths,
// marks and checksum filled in), for dst.
func (p *Peer) encode(dst netip.Addr, f wire.Fields) ([]byte, error) {
	b, err := f.AppendTo(nil, wire.EncodeOptions{Version: p.Wire(), FixLengths: true, SetMarks: true,
		ComputeChecksums: true, Src: p.local, Dst: dst})
	if err != nil {
		return nil, fmt.Errorf("tester: encode %s: %w", f.PacketType(), err)
	}
	return b, nil
}

// Addr is the Peer's IP address.
func (p *Peer) Addr() netip.Addr { return p.local }

// Clock is the Peer's clock.
func (p *Peer) Clock() Clock { return p.clock }

// Now is the Peer's clock's time.
func (p *Peer) Now() time.Time { return p.clock.Now() }

func (p *Peer) receive(src netip.Addr, prio uint8, pkt []byte) {
	p.logReceived(homa.Received{Src: src, Prio: prio, Packet: pkt}, time.Time{})
}

// logReceived logs one received packet r (a copy of its bytes) at time at
// (zero: the clock's time now), its IPv6 level read with the IUT's shift
// (ipv6Level), answers it with CUTOFFS when asked to (AnswerCutoffs) and
// wakes the waits.
func (p *Peer) logReceived(r homa.Received, at time.Time) {
	if at.IsZero() {
		at = p.clock.Now()
	}
	src := r.Src
	rec := &Packet{At: at, Src: src, Dst: p.local, Priority: r.Prio, TOS: r.TOS, HasTOS: r.HasTOS, Raw: append([]byte(nil), r.Packet...)}
	rec.Pkt, rec.Err = wire.Decode(rec.Raw, wire.DecodeOptions{Version: p.Wire()})
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if r.HasTOS && src.Is6() && !src.Is4In6() {
		rec.Priority = p.ipv6Level(src, r.TOS)
	}
	p.log = append(p.log, rec)
	p.arrivals++
	ch := p.cutoffs
	p.mu.Unlock()
	if ch != nil && rec.Err == nil {
		if f, prio, ok := ch.answer(rec); ok {
			// Errors are the transport's (closed, unreachable): the
			// answer is best effort, as HomaModule's is.
			_ = p.sendInHandler(src, prio, f)
		}
	}
	p.clock.Notify()
}

// inHandlerSender is a transport whose handler runs where its Send may
// not be called (the simulator's: Send takes the lock the handler runs
// under); sendInHandler sends from inside the handler.
type inHandlerSender interface {
	sendInHandler(dst netip.Addr, prio uint8, pkt []byte) error
}

// sendInHandler sends f to dst from the transport's receive handler.
func (p *Peer) sendInHandler(dst netip.Addr, prio uint8, f wire.Fields) error {
	b, err := p.encode(dst, f)
	if err != nil {
		return err
	}
	send := p.tr.Send
	if h, ok := p.tr.(inHandlerSender); ok {
		send = h.sendInHandler
	}
	return p.record(dst, prio, b, "", send)
}

// Send encodes f in the Peer's wire format (lengths, marks and checksum
// filled in as HomaModule does) and sends it to dst at priority prio. Errors: encoding errors from
// spec/wire and the transport's send error.
func (p *Peer) Send(dst netip.Addr, prio uint8, f wire.Fields) error {
	return p.SendDeliberate(dst, prio, f, "")
}

// SendDeliberate is Send for a packet that breaks the protocol on purpose
// (an early RESEND, a packet for an RPC that never existed ...): why says
// what it breaks, and the capture marks the packet with it, so that
// homatest check charges its findings to the tester. why "" is Send.
func (p *Peer) SendDeliberate(dst netip.Addr, prio uint8, f wire.Fields, why string) error {
	b, err := p.encode(dst, f)
	if err != nil {
		return err
	}
	return p.send(dst, prio, b, why)
}

// DeliberatePrefix starts the capture comment of a packet a tester broke
// on purpose; SentNote is the comment of the tester's other packets.
const (
	DeliberatePrefix = "homatest tester: deliberate "
	SentNote         = "homatest tester: sent"
)

// SendRaw sends b as is (for malformed and truncated packets) and records
// it as deliberate.
func (p *Peer) SendRaw(dst netip.Addr, prio uint8, b []byte) error {
	return p.send(dst, prio, b, "hand-built bytes (malformed, truncated or out of the protocol)")
}

func (p *Peer) send(dst netip.Addr, prio uint8, b []byte, why string) error {
	if ls, ok := p.tr.(loggedSender); ok {
		var err error
		ls.sendLogged(dst, prio, b, func() { err = p.record(dst, prio, b, why, ls.sendInHandler) })
		return err
	}
	return p.record(dst, prio, b, why, p.tr.Send)
}

// loggedSender is a transport whose packets enter a simulation that
// other goroutines may step (the simulator's): sendLogged runs log, which
// stamps, logs and sends the packet (with sendInHandler), with the
// simulation held, so that the stamp is the virtual time the packet
// leaves. Stamped before the lock, a NEED_ACK went out after a Wait of
// another goroutine had moved the clock on, and the IUT's answer to it
// came more than the simulator's 1 µs slack after its stamp: a timer
// RESEND round too soon (HOMA-RESEND-008) in TestHeldUpTesters.
type loggedSender interface {
	inHandlerSender
	sendLogged(dst netip.Addr, prio uint8, pkt []byte, log func())
}

// record logs b as sent with note why, then sends it with send.
func (p *Peer) record(dst netip.Addr, prio uint8, b []byte, why string, send func(netip.Addr, uint8, []byte) error) error {
	rec := &Packet{At: p.clock.Now(), Sent: true, Src: p.local, Dst: dst, Priority: prio, Raw: append([]byte(nil), b...), Note: why}
	rec.Pkt, rec.Err = wire.Decode(rec.Raw, wire.DecodeOptions{Version: p.Wire()})
	p.mu.Lock()
	p.log = append(p.log, rec)
	p.mu.Unlock()
	if err := send(dst, prio, b); err != nil {
		return fmt.Errorf("tester: send to %s: %w", dst, err)
	}
	return nil
}

// Log returns a snapshot of every packet sent and received so far, in
// order. The packets must not be modified.
func (p *Peer) Log() []*Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Packet(nil), p.log...)
}

// Close stops recording and closes the transport.
func (p *Peer) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.tr.Close()
}
