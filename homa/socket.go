package homa

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Socket is a Homa socket bound to one port of a host. A socket bound to
// a port below 32768 (Listen) is a server: it receives requests. Every
// socket can send requests.
type Socket struct {
	h      *Host
	port   uint16
	server bool
	reqs   chan *Request
	closed bool
}

// Request is a request received by a server socket.
type Request struct {
	s       *Socket
	r       *rpc
	payload []byte
	client  netip.AddrPort
}

// Payload returns the request's bytes.
func (q *Request) Payload() []byte { return q.payload }

// Client returns the client's address and port.
func (q *Request) Client() netip.AddrPort { return q.client }

// ID returns the RPC's server-side (odd) id.
func (q *Request) ID() uint64 { return q.r.id }

// Listen returns a server socket on port (1..32767). Errors: port out of
// range or in use, host closed.
func (h *Host) Listen(port uint16) (*Socket, error) {
	if port == 0 || port >= 32768 {
		return nil, fmt.Errorf("homa: server port %d not in 1..32767", port)
	}
	return h.socket(port, true)
}

// Dial returns a client socket on the next free port from 32768 up.
func (h *Host) Dial() (*Socket, error) { return h.socket(0, false) }

func (h *Host) socket(port uint16, server bool) (*Socket, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if port == 0 {
		for i := 0; i < 32768; i++ {
			p := h.nextPort
			h.nextPort++
			if h.nextPort == 0 {
				h.nextPort = 32768
			}
			if h.sockets[p] == nil {
				port = p
				break
			}
		}
		if port == 0 {
			return nil, errors.New("homa: no free client port")
		}
	} else if h.sockets[port] != nil {
		return nil, fmt.Errorf("homa: port %d in use", port)
	}
	s := &Socket{h: h, port: port, server: server, reqs: make(chan *Request, 1<<16)}
	h.sockets[port] = s
	return s, nil
}

// Port returns the socket's port.
func (s *Socket) Port() uint16 { return s.port }

// Close closes the socket: its client RPCs fail with ErrClosed, and it
// receives no more requests. No packet is sent (HomaModule does not tell
// servers).
func (s *Socket) Close() error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.closeLocked()
	return nil
}

func (s *Socket) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.h.sockets, s.port)
	for _, r := range s.h.clients {
		if r.sock == s {
			s.h.finishClient(r, ErrClosed)
		}
	}
	for k, r := range s.h.servers {
		if r.sock == s {
			delete(s.h.servers, k)
			s.h.forget(r)
		}
	}
	close(s.reqs)
}

// Call sends request to dst and waits for the response. Errors: ErrTimeout
// after timeout_ticks of silence, ErrClosed, ErrTooLong/ErrEmpty, or ctx's
// error (the RPC is then aborted locally, without telling the server).
func (s *Socket) Call(ctx context.Context, dst netip.AddrPort, request []byte) ([]byte, error) {
	if len(request) == 0 {
		return nil, ErrEmpty
	}
	if len(request) > wire.MaxMessageLength {
		return nil, ErrTooLong
	}
	h := s.h
	h.mu.Lock()
	if h.closed || s.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	h.rpcSeq++
	r := &rpc{id: h.nextID, client: true, peer: dst.Addr(), peerPort: dst.Port(), sock: s,
		state: clientSending, done: make(chan struct{}), seq: h.rpcSeq}
	h.nextID += 2
	r.out = h.newMsgOut(request)
	h.clients[r.id] = r
	h.queueSend(r)
	h.mu.Unlock()
	h.wake()
	select {
	case <-r.done:
		if r.err != nil {
			return nil, r.err
		}
		return r.in.buf, nil
	case <-ctx.Done():
		h.mu.Lock()
		if h.clients[r.id] == r {
			delete(h.clients, r.id)
			h.forget(r)
		}
		h.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Receive waits for the next request. Errors: ErrClosed, ctx's error.
func (s *Socket) Receive(ctx context.Context) (*Request, error) {
	select {
	case q, ok := <-s.reqs:
		if !ok {
			return nil, ErrClosed
		}
		return q, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Reply sends the response. Errors: ErrTooLong/ErrEmpty; replying twice or
// to an RPC the host no longer has (the client gave up, or a timeout)
// returns nil without sending, as HomaModule does.
func (q *Request) Reply(response []byte) error {
	if len(response) == 0 {
		return ErrEmpty
	}
	if len(response) > wire.MaxMessageLength {
		return ErrTooLong
	}
	h := q.s.h
	h.mu.Lock()
	r := q.r
	if h.servers[serverKey{r.peer, r.clientID()}] != r || r.state != serverInService {
		h.mu.Unlock()
		return nil
	}
	r.out = h.newMsgOut(response)
	r.state = serverSending
	h.queueSend(r)
	h.mu.Unlock()
	h.wake()
	return nil
}

// newMsgOut prepares a message for sending: U bytes are granted at once.
func (h *Host) newMsgOut(data []byte) *msgOut {
	u := min(len(data), h.p.UnschedBytes)
	if h.faults[FaultUnschedOverflow] && len(data) > u {
		u = min(len(data), u+h.p.maxSegData(h.v6))
	}
	return &msgOut{data: append([]byte(nil), data...), unsched: min(len(data), h.p.UnschedBytes), granted: u, started: time.Now()}
}

// finishClient completes a client RPC with err (nil: response received).
// Called with h.mu held.
func (h *Host) finishClient(r *rpc, err error) {
	if h.clients[r.id] != r {
		return
	}
	delete(h.clients, r.id)
	h.forget(r)
	r.err = err
	close(r.done)
	if err == nil && !h.faults[FaultNoAcks] {
		pr := h.peer(r.peer)
		e := wire.AckEntry{ClientID: r.id, ServerPort: r.peerPort}
		if len(pr.acks) >= wire.MaxAcksPerPkt {
			// A 6th pending ack: send the five in an ACK whose header
			// names this RPC (homa_peer_add_ack).
			h.send(r.peer, h.topPriority(), &wire.AckFields{Common: h.control(r), Acks: pr.acks})
			pr.acks = nil
			return
		}
		pr.acks = append(pr.acks, e)
		if h.faults[FaultUnpromptedAck] {
			h.send(r.peer, h.topPriority(), &wire.AckFields{Common: h.control(r)})
		}
	}
}
