package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// Cost models a simulated host's packet processing, so that a host is not
// infinitely fast: every packet a host's protocol code sends or takes in
// occupies one of Cores cores for PerPacket (first free core first; a
// packet waits while all are busy). A sent packet reaches the uplink, and
// a received one the protocol code, when its processing ends. The zero
// Cost is free processing.
type Cost struct {
	// PerPacket is the processing time of one packet.
	PerPacket time.Duration `json:"per_packet_ns"`
	// Cores is the number of packets processed at once (at least 1 when
	// PerPacket is set).
	Cores int `json:"cores"`
}

// DefaultCost is 2.5 µs per packet on 4 cores. The 2.5 µs come from
// HomaModule's published latencies (docs/homa-facts.md §5.2, the Homa
// IETF draft: hardware round trip about 5 µs, software round trip at least
// 15-20 µs unloaded): at least 10 µs of host software per round trip of a
// one-packet RPC, which crosses a host stack four times (client send,
// server receive, server send, client receive). The 4 cores are our
// choice: HomaModule spreads its packet processing over cores (ATC'21:
// its throughput is limited by how evenly), and 4 cores carry 1.6 M
// packets/s, a 10 Gbit/s link of full-size packets in both directions at
// once.
var DefaultCost = Cost{PerPacket: 2500 * time.Nanosecond, Cores: 4}

// CostForLink returns DefaultCost with its cores scaled to a link of bps
// bit/s: 4 cores per 10 Gbit/s (rounded up, at least 4), so that a host
// keeps DefaultCost's ratio of packet processing to link rate (a full-size
// packet in each direction at line rate) at 25 and 100 Gbit/s. The
// per-packet time stays 2.5 µs: it is the software latency of a stack
// crossing, which does not shrink with the link; the cores stand for the
// parallelism (cores, and the batching of segmentation offload) that
// real stacks use to keep up with faster links.
func CostForLink(bps int64) Cost {
	c := DefaultCost
	c.Cores = max(c.Cores, int((int64(c.Cores)*bps+10e9-1)/10e9))
	return c
}

// HostConfig configures a host running the reference implementation.
type HostConfig struct {
	// Name names the host in captures and the switch ("h1", ...; default
	// "h" and its 1-based port number).
	Name string
	// Addr is the host's IP address (IPv4 or IPv6); required, unique.
	Addr netip.Addr
	// Params are its protocol parameters (homa.DefaultParams if zero).
	Params homa.Params
	// Faults are fault knobs (homa.FaultNames).
	Faults []homa.Fault
	// PacerBacklog is the machine's pacer backlog (0: homa.HomaBacklog,
	// HomaModule's 5 µs: a simulated host keeps time exactly).
	PacerBacklog time.Duration
}

// Host is one switch port's host: the reference implementation
// (AddHost), or a raw endpoint whose packets the caller handles (AddRaw).
// Its methods act at the simulation's current time; call them from the
// goroutine driving the Sim, between or inside its events.
type Host struct {
	s     *Sim
	index int
	name  string
	addr  netip.Addr
	mac   [6]byte
	m     *homa.Machine // nil for a raw endpoint
	cost  Cost
	// cores are the times each core is next free; next is the core the
	// next packet takes (with one cost per packet and times that never go
	// backwards, round robin gives each packet the first free core).
	cores     []time.Duration
	next      int
	cpuStats  CPUStats
	nicFree   time.Duration // when the uplink is next idle
	timerAt   time.Duration // the machine's deadline event pending; -1: none
	flushing  bool
	onPacket  func(src netip.Addr, prio uint8, pkt []byte)
	stack     Stack // a stack host's protocol stack (AddStackHost); nil otherwise
	onRequest func(homa.Event)
	calls     map[uint64]func(homa.Event)
	// frozen is when a freeze of the host ends (Freeze); packets and
	// timers due before then wait for it.
	frozen time.Duration
}

// Freeze stops the host's protocol code until until, as an operating
// system that does not run the process stops it: packets that arrive
// and timers that come due meanwhile are taken at until, in the order
// they came, and so are its application's replies and aborts (a caller
// starting RPCs waits for Frozen); its uplink still sends what it had
// queued. For tests of
// how a verdict weighs a stalled implementation (a stall monitor would
// measure this one). A raw endpoint's handler is frozen too.
func (h *Host) Freeze(until time.Duration) { h.frozen = max(h.frozen, until) }

// Frozen returns when the host's latest freeze ends (Freeze; zero if it
// never froze).
func (h *Host) Frozen() time.Duration { return h.frozen }

// AddHost adds a host running the reference implementation (a
// homa.Machine created at the current time) on the next switch port.
// Errors: the clock has run, a missing or duplicate address, bad
// parameters or faults.
func (s *Sim) AddHost(cfg HostConfig) (*Host, error) {
	h, err := s.addHost(cfg.Name, cfg.Addr)
	if err != nil {
		return nil, err
	}
	backlog := cfg.PacerBacklog
	if backlog == 0 {
		backlog = homa.HomaBacklog
	}
	m, err := homa.NewMachine(homa.MachineConfig{Addr: cfg.Addr, Params: cfg.Params, Faults: cfg.Faults,
		PacerBacklog: backlog, Headroom: headerLen(cfg.Addr)}, s.now)
	if err != nil {
		return nil, err
	}
	h.m, h.cost = m, s.cost
	if h.cost.PerPacket > 0 {
		h.cores = make([]time.Duration, h.cost.Cores)
	}
	h.commit()
	h.arm()
	return h, nil
}

// AddRaw adds a raw endpoint named name at addr on the next switch port:
// packets for addr go to the handler set with OnPacket, and Send sends
// any packet; its processing costs nothing. Errors: as AddHost.
func (s *Sim) AddRaw(name string, addr netip.Addr) (*Host, error) {
	h, err := s.addHost(name, addr)
	if err != nil {
		return nil, err
	}
	h.commit()
	return h, nil
}

// Stack is a protocol stack that the simulator runs on a host without
// knowing it (package sim/simtcp: gVisor's TCP/IP stack). The simulator
// hands it the IP packets addressed to its host, after the host's
// processing cost; it sends IP packets with Host.SendIP. Its methods run
// on the goroutine driving the Sim, inside its events.
type Stack interface {
	// DeliverIP takes one IP packet (IPv4 or IPv6 header first) addressed
	// to the host. pkt is the stack's to keep.
	DeliverIP(pkt []byte)
}

// AddStackHost adds a host named name at addr on the next switch port
// whose protocol is st: it pays the Sim's Cost for every packet it sends
// (SendIP) or takes in, as a homa host does, and its uplink is the same.
// Errors: as AddHost.
func (s *Sim) AddStackHost(name string, addr netip.Addr, st Stack) (*Host, error) {
	if st == nil {
		return nil, errors.New("sim: AddStackHost needs a stack")
	}
	h, err := s.addHost(name, addr)
	if err != nil {
		return nil, err
	}
	h.stack, h.cost = st, s.cost
	if h.cost.PerPacket > 0 {
		h.cores = make([]time.Duration, h.cost.Cores)
	}
	h.commit()
	return h, nil
}

// SendIP sends IP packet pkt (a header for the host's address family
// first; kept by the Sim) from a stack host now: it is recorded as sent,
// processed, queued on the uplink and enters the switch, as a homa
// host's packets do. Errors: not a stack host, not an IP packet of the
// host's family.
func (h *Host) SendIP(pkt []byte) error {
	if h.stack == nil {
		return errors.New("sim: SendIP is for stack hosts (AddStackHost)")
	}
	dst, ok := ipDst(pkt)
	if !ok || dst.Is4() != h.addr.Is4() {
		return fmt.Errorf("sim: %v sent a packet that is not an IP packet of its family", h.addr)
	}
	dm := [6]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff}
	if d := h.s.byAddr[dst]; d != nil {
		dm = d.mac
	}
	f := make([]byte, ethLen+len(pkt))
	copy(f[0:6], dm[:])
	copy(f[6:12], h.mac[:])
	if h.addr.Is4() {
		f[12], f[13] = 0x08, 0x00
	} else {
		f[12], f[13] = 0x86, 0xDD
	}
	copy(f[ethLen:], pkt)
	h.send(f, dst)
	return nil
}

func (s *Sim) addHost(name string, addr netip.Addr) (*Host, error) {
	switch {
	case s.sealed:
		return nil, errSealed
	case !addr.IsValid():
		return nil, errors.New("sim: a host needs an IP address")
	case s.byAddr[addr] != nil:
		return nil, fmt.Errorf("sim: address %v used twice", addr)
	}
	i := len(s.hosts)
	if name == "" {
		name = fmt.Sprintf("h%d", i+1)
	}
	for _, o := range s.hosts {
		if o.name == name {
			return nil, fmt.Errorf("sim: host name %q used twice", name)
		}
	}
	return &Host{s: s, index: i, name: name, addr: addr, mac: hostMAC(i), timerAt: -1, calls: map[uint64]func(homa.Event){}}, nil
}

// commit puts h on its switch port.
func (h *Host) commit() {
	h.s.hosts = append(h.s.hosts, h)
	h.s.byAddr[h.addr] = h
}

// Name returns the host's name.
func (h *Host) Name() string { return h.name }

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.addr }

// Index returns the host's switch port (its index in Sim.Hosts).
func (h *Host) Index() int { return h.index }

// Machine returns the host's protocol state machine (nil for a raw
// endpoint), for its parameters and counters: inputs must go through the
// Host's methods, which take the machine's output.
func (h *Host) Machine() *homa.Machine { return h.m }

// Stats returns the machine's counters (zero for a raw endpoint).
func (h *Host) Stats() homa.Stats {
	if h.m == nil {
		return homa.Stats{}
	}
	return h.m.Stats()
}

// errRaw is returned by protocol calls on a raw endpoint.
var errRaw = errors.New("sim: a raw endpoint runs no protocol: send packets with Send")

// Listen opens a server socket on port (homa.Machine.Listen).
func (h *Host) Listen(port uint16) error {
	if h.m == nil {
		return errRaw
	}
	return h.m.Listen(port)
}

// Dial opens a client socket and returns its port (homa.Machine.Dial).
func (h *Host) Dial() (uint16, error) {
	if h.m == nil {
		return 0, errRaw
	}
	return h.m.Dial()
}

// CloseSocket closes the socket on port (homa.Machine.CloseSocket).
func (h *Host) CloseSocket(port uint16) {
	if h.m != nil {
		h.m.CloseSocket(port)
		h.flush()
	}
}

// Close closes the host's machine: its calls end with homa.ErrClosed and
// it sends nothing more (a crashed host).
func (h *Host) Close() {
	if h.m != nil {
		h.m.Close()
		h.flush()
	}
}

// OnRequest sets the server application: fn gets every request (an
// homa.EventRequest) as it arrives complete and may answer it with Reply,
// at once or later. Without it requests go unanswered.
func (h *Host) OnRequest(fn func(homa.Event)) { h.onRequest = fn }

// Call starts an RPC now from the client socket on port to dst with
// request; done gets its homa.EventCallDone (response or error). It
// returns the RPC's id. Errors: those of homa.Machine.Call.
func (h *Host) Call(port uint16, dst netip.AddrPort, request []byte, done func(homa.Event)) (uint64, error) {
	if h.m == nil {
		return 0, errRaw
	}
	id, err := h.m.Call(h.s.now, port, dst, request)
	if err != nil {
		return 0, err
	}
	h.calls[id] = done
	h.flush()
	return id, nil
}

// Abort gives up on client RPC id without telling the server (its done
// function is not called).
func (h *Host) Abort(id uint64) {
	if h.s.now < h.frozen {
		h.s.At(h.frozen, func() { h.Abort(id) }) // the application runs once the freeze ends
		return
	}
	if h.m != nil {
		delete(h.calls, id)
		h.m.Abort(id)
		h.flush()
	}
}

// Reply sends the response to request q now (homa.Machine.Reply).
func (h *Host) Reply(q homa.RequestRef, response []byte) error {
	if h.m == nil {
		return errRaw
	}
	if h.s.now < h.frozen {
		// The application runs once the freeze ends; an error then is
		// the protocol's to count (a reply to a forgotten RPC).
		h.s.At(h.frozen, func() { _ = h.Reply(q, response) })
		return nil
	}
	err := h.m.Reply(h.s.now, q, response)
	h.flush()
	return err
}

// OnPacket sets a raw endpoint's handler: it gets every Homa packet for
// the endpoint's address (the transport bytes, not kept by the Sim) as it
// arrives, with the sender and the IP priority.
func (h *Host) OnPacket(fn func(src netip.Addr, prio uint8, pkt []byte)) { h.onPacket = fn }

// Send sends Homa packet pkt (the transport bytes; copied) from a raw
// endpoint to dst at IP priority prio, now. Errors: not a raw endpoint,
// dst of another IP family.
func (h *Host) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	if h.m != nil {
		return errors.New("sim: Send is for raw endpoints; a homa host sends what its protocol says")
	}
	if dst.Is4() != h.addr.Is4() {
		return fmt.Errorf("sim: %v cannot send to %v (another IP family)", h.addr, dst)
	}
	h.transmit(homa.Transmit{Dst: dst, Prio: prio, Packet: pkt})
	return nil
}

// CPUStats are a host's modelled packet processing so far (Host.CPU):
// what says whether its cores kept up with the packets it sent and took in.
type CPUStats struct {
	// Packets is the number of packets the host's cores processed (sent
	// and taken in).
	Packets uint64 `json:"packets"`
	// Busy is the core time they took (Packets × Cost.PerPacket, summed
	// over the cores).
	Busy time.Duration `json:"busy_ns"`
	// MaxWait is the longest a packet waited for a free core: near 0
	// while the cores keep up, growing without bound once packets arrive
	// faster than Cores / PerPacket.
	MaxWait time.Duration `json:"max_wait_ns"`
}

// CPU returns the host's processing counters so far (zero when its
// processing costs nothing: a raw endpoint, or a Sim without a Cost).
func (h *Host) CPU() CPUStats { return h.cpuStats }

// Cost returns the host's processing cost (Config.Cost; zero: free).
func (h *Host) Cost() Cost { return h.cost }

// cpu returns when a packet handed to the host's cores now is processed.
func (h *Host) cpu() time.Duration {
	now := h.s.now
	if len(h.cores) == 0 {
		return now
	}
	start := max(now, h.cores[h.next])
	done := start + h.cost.PerPacket
	h.cpuStats.Packets++
	h.cpuStats.Busy += h.cost.PerPacket
	h.cpuStats.MaxWait = max(h.cpuStats.MaxWait, start-now)
	h.cores[h.next] = done
	h.next = (h.next + 1) % len(h.cores)
	return done
}

// transmit sends one packet of the host's now: it is recorded as sent,
// processed, queued on the uplink and enters the switch at the end of its
// serialisation plus the uplink delay.
func (h *Host) transmit(t homa.Transmit) {
	s := h.s
	dm := [6]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff} // nobody's: flooded
	if d := s.byAddr[t.Dst]; d != nil {
		dm = d.mac
	}
	f := t.Frame()
	if len(f) == headerLen(h.addr)+len(t.Packet) {
		putHeaders(f, h.mac, dm, h.addr, t.Dst, t.Prio) // the machine left room
	} else {
		f = buildFrame(h.mac, dm, h.addr, t.Dst, t.Prio, t.Packet)
	}
	h.send(f, t.Dst)
}

// send records frame f (to dst) as sent now, processes it and queues it
// on the uplink; it enters the switch at the end of its serialisation
// plus the uplink delay.
func (h *Host) send(f []byte, dst netip.Addr) {
	s := h.s
	s.stats.Frames++
	s.stats.PacketEvents++
	if s.cap != nil && !s.cap.wire {
		s.cap.sent(h.index, s.now, f)
	}
	start := max(h.cpu(), h.nicFree)
	end := start + s.uplink.TxTime(len(f))
	h.nicFree = end
	s.push(event{at: end + s.cfg.UplinkDelay, kind: evIngress, host: int32(h.index), dst: dst, data: f})
}

// arrive takes a frame the switch sent to the host: unless it is for
// another address (a flooded frame), the host's cores process it and it
// reaches the protocol code (or the raw handler) when they are done.
func (h *Host) arrive(f []byte) {
	if h.stack != nil {
		if dst, ok := ipDst(f[min(ethLen, len(f)):]); !ok || dst != h.addr {
			return
		}
		h.s.push(event{at: h.cpu(), kind: evDeliver, host: int32(h.index), data: f})
		return
	}
	_, dst, _, _, ok := unframe(f)
	if !ok || dst != h.addr {
		return
	}
	if c := h.s.cap; c != nil && c.wire {
		c.delivered(h.index, h.s.now, f)
	}
	if len(h.cores) == 0 {
		h.deliver(f)
		return
	}
	h.s.push(event{at: h.cpu(), kind: evDeliver, host: int32(h.index), data: f})
}

// deliver hands frame f to the protocol code (or the raw handler) now,
// recording it as delivered.
func (h *Host) deliver(f []byte) {
	s := h.s
	if s.now < h.frozen {
		s.push(event{at: h.frozen, kind: evDeliver, host: int32(h.index), data: f})
		return
	}
	s.stats.PacketEvents++
	if h.stack != nil {
		if s.cap != nil {
			s.cap.delivered(h.index, s.now, f)
		}
		h.stack.DeliverIP(f[ethLen:])
		return
	}
	src, dst, prio, pkt, ok := unframe(f)
	if s.cap != nil && !s.cap.wire {
		s.cap.delivered(h.index, s.now, f)
	}
	if ok && (dst != h.addr || dst.Is4() && wire.IPv4HeaderChecksum(f[ethLen:ethLen+int(f[ethLen]&0x0f)*4]) != 0) {
		// A capture on the host's link sees it; its IP layer drops it.
		s.stats.IPDropped++
		return
	}
	if h.m == nil {
		if h.onPacket != nil {
			h.onPacket(src, prio, pkt)
		}
		return
	}
	h.m.HandlePacket(s.now, src, prio, pkt)
	h.flush()
}

// timer runs the machine's deadline event set for at (ignored if the
// deadline moved since).
func (h *Host) timer(at time.Duration) {
	if at != h.timerAt || h.m == nil {
		return
	}
	if h.s.now < h.frozen {
		h.timerAt = h.frozen
		h.s.push(event{at: h.frozen, kind: evTimer, host: int32(h.index)})
		return
	}
	h.timerAt = -1
	h.m.HandleTimeout(h.s.now)
	h.flush()
}

// flush takes the machine's output after an input: application events to
// their callbacks, packets to transmit, and the next deadline.
func (h *Host) flush() {
	if h.flushing {
		return // a callback's call: the loop below takes its output
	}
	h.flushing = true
	now := h.s.now
	for more := true; more; {
		more = false
		for {
			e, ok := h.m.PollEvent()
			if !ok {
				break
			}
			more = true
			h.dispatch(e)
		}
		for {
			t, ok := h.m.PollTransmit(now)
			if !ok {
				break
			}
			more = true
			h.transmit(t)
		}
	}
	h.flushing = false
	h.arm()
}

// arm schedules the machine's deadline.
func (h *Host) arm() {
	d, ok := h.m.Deadline()
	if !ok {
		return
	}
	d = max(d, h.s.now)
	if h.timerAt >= 0 && h.timerAt <= d {
		// An event at or before d is pending: it runs HandleTimeout
		// (nothing is due yet, or what is due is done) and arms again.
		return
	}
	h.timerAt = d
	h.s.push(event{at: d, kind: evTimer, host: int32(h.index)})
}

// dispatch hands one application event to its callback.
func (h *Host) dispatch(e homa.Event) {
	switch e.Kind {
	case homa.EventRequest:
		if h.onRequest != nil {
			h.onRequest(e)
		}
	case homa.EventCallDone:
		if fn := h.calls[e.ID]; fn != nil {
			delete(h.calls, e.ID)
			fn(e)
		}
	}
}
