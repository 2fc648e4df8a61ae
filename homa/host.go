package homa

import (
	"errors"
	"net/netip"
	"sync"
	"time"
)

// Config configures a Host.
type Config struct {
	// Transport carries the packets; required.
	Transport Transport
	// Params are the protocol parameters (DefaultParams if zero).
	Params Params
	// Faults are deliberate misbehaviours (see FaultNames).
	Faults []Fault
}

// Host is one Homa endpoint in real time, like one Linux host with the
// Homa module loaded: a Machine driven by the wall clock (time.Since the
// host was created, so testing/synctest's virtual time drives it too)
// over a Transport. One mutex serialises the machine; the transport's
// handler feeds it packets, one timer (time.AfterFunc) wakes it at its
// Deadline for timer ticks and the pacer, and application calls (Call,
// Reply, ...) feed it the rest. Packets leave in the order the machine
// built them, after the mutex is released.
type Host struct {
	m     *Machine
	tr    Transport
	batch BatchTransport // tr, when it sends and receives in batches
	epoch time.Time

	mu sync.Mutex
	// sendMu keeps packets leaving in the order they were built under mu:
	// unlock takes it before releasing mu and holds it while it hands the
	// packets to the transport, so a timer pass cannot send (say) a
	// NEED_ACK ahead of the response DATA an earlier input built.
	sendMu  sync.Mutex
	timer   *time.Timer
	armedAt time.Duration // the deadline the timer is set for
	sockets map[uint16]*Socket
	calls   map[uint64]chan callResult
	// results recycles Call's result channels (one buffered slot each):
	// a channel goes back empty, once no dispatch can send on it. Per
	// host, not global: a channel made in a testing/synctest bubble
	// belongs to it.
	results sync.Pool
	dropped int // requests a full receive queue refused
	closed  bool
	// sent holds the buffers of the packets sent (under sendMu), given
	// back to the machine by the next unlock, which holds both locks.
	sent [][]byte
}

// outPool recycles the packet lists of Host.unlock: two unlocks may be
// filling and sending lists at once.
var outPool = sync.Pool{New: func() any { return new([]Transmit) }}

// callResult is the end of one Call.
type callResult struct {
	resp []byte
	err  error
}

// New starts a host on cfg.Transport. It returns an error for bad
// parameters or fault names.
func New(cfg Config) (*Host, error) {
	if cfg.Transport == nil {
		return nil, errors.New("homa: Config.Transport is required")
	}
	mc := MachineConfig{Addr: cfg.Transport.LocalAddr(), Params: cfg.Params, Faults: cfg.Faults}
	bt, _ := cfg.Transport.(BatchTransport)
	if bt != nil {
		mc.Headroom = bt.Headroom()
	}
	m, err := NewMachine(mc, 0)
	if err != nil {
		return nil, err
	}
	h := &Host{m: m, tr: cfg.Transport, batch: bt, epoch: time.Now(), sockets: map[uint16]*Socket{}, calls: map[uint64]chan callResult{}}
	h.results.New = func() any { return make(chan callResult, 1) }
	h.mu.Lock()
	h.armedAt = m.nextTick
	h.timer = time.AfterFunc(m.nextTick, h.onTimer)
	h.mu.Unlock()
	if bt != nil {
		bt.SetBatchHandler(h.receiveBatch)
	} else {
		cfg.Transport.SetHandler(h.receive)
	}
	return h, nil
}

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.m.Addr() }

// Params returns the host's parameters.
func (h *Host) Params() Params { return h.m.Params() }

// Stats returns a copy of the host's counters.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.m.Stats()
	st.Dropped += h.dropped
	return st
}

// now is the host's clock: the time since it was created.
func (h *Host) now() time.Duration { return time.Since(h.epoch) }

// Close aborts every RPC, closes every socket, stops the host's timer and
// closes the transport.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.m.Close()
	h.dispatch()
	h.closed = true
	for _, s := range h.sockets {
		s.closed = true
		close(s.reqs)
	}
	h.sockets = nil
	h.timer.Stop()
	h.mu.Unlock()
	// Packets built before Close may still be on their way to the
	// transport: let them go before it closes.
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	return h.tr.Close()
}

// receive is the transport's handler.
func (h *Host) receive(src netip.Addr, prio uint8, pkt []byte) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.m.HandlePacket(h.now(), src, prio, pkt)
	h.unlock()
}

// receiveBatch is a BatchTransport's handler: every packet of the batch
// goes into the machine under one lock, and what they provoke leaves in
// one batch.
func (h *Host) receiveBatch(pkts []Received) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	now := h.now()
	for _, p := range pkts {
		h.m.HandlePacket(now, p.Src, p.Prio, p.Packet)
	}
	h.unlock()
}

// onTimer runs when the machine's deadline has come.
func (h *Host) onTimer() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.armedAt = -1
	h.m.HandleTimeout(h.now())
	h.unlock()
}

// dispatch hands the machine's events to the sockets and callers. Called
// with h.mu held.
func (h *Host) dispatch() {
	for {
		e, ok := h.m.PollEvent()
		if !ok {
			return
		}
		switch e.Kind {
		case EventRequest:
			s := h.sockets[e.Port]
			if s == nil {
				continue
			}
			q := &Request{s: s, ref: e.Request, id: e.ID, payload: e.Payload, client: e.Peer}
			select {
			case s.reqs <- q:
			default:
				h.dropped++ // receive queue full
			}
		case EventCallDone:
			if ch := h.calls[e.ID]; ch != nil {
				delete(h.calls, e.ID)
				ch <- callResult{e.Payload, e.Err}
			}
		}
	}
}

// unlock hands out the machine's events, takes the packets it wants sent
// now, sets the timer for its deadline, releases h.mu and then transmits
// the packets, in order (in one batch when the transport can).
func (h *Host) unlock() {
	h.dispatch()
	now := h.now()
	list := outPool.Get().(*[]Transmit)
	out := (*list)[:0]
	for {
		t, ok := h.m.PollTransmit(now)
		if !ok {
			break
		}
		out = append(out, t)
	}
	if d, ok := h.m.Deadline(); ok && d != h.armedAt {
		h.armedAt = d
		h.timer.Reset(max(0, d-now))
	}
	h.sendMu.Lock()
	for _, b := range h.sent {
		h.m.Reuse(b)
	}
	h.sent = h.sent[:0]
	h.mu.Unlock()
	if h.batch != nil {
		if len(out) > 0 {
			_ = h.batch.SendBatch(out)
		}
	} else {
		for _, t := range out {
			_ = h.tr.Send(t.Dst, t.Prio, t.Packet)
		}
	}
	for i, t := range out {
		h.sent = append(h.sent, t.Frame())
		out[i] = Transmit{}
	}
	h.sendMu.Unlock()
	*list = out[:0]
	outPool.Put(list)
}
