package homa

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// Socket is a Homa socket bound to one port of a Host. A socket bound to
// a port below 32768 (Listen) is a server: it receives requests. Every
// socket can send requests.
type Socket struct {
	h      *Host
	port   uint16
	reqs   chan *Request
	closed bool
}

// Request is a request received by a server socket.
type Request struct {
	s       *Socket
	ref     RequestRef
	id      uint64
	payload []byte
	client  netip.AddrPort
}

// Payload returns the request's bytes.
func (q *Request) Payload() []byte { return q.payload }

// Client returns the client's address and port.
func (q *Request) Client() netip.AddrPort { return q.client }

// ID returns the RPC's server-side (odd) id.
func (q *Request) ID() uint64 { return q.id }

// Listen returns a server socket on port (1..32767). Errors: port out of
// range or in use, host closed.
func (h *Host) Listen(port uint16) (*Socket, error) {
	if port == 0 || port >= 32768 {
		return nil, fmt.Errorf("homa: server port %d not in 1..32767", port)
	}
	return h.socket(port)
}

// Dial returns a client socket on the next free port from 32768 up.
func (h *Host) Dial() (*Socket, error) { return h.socket(0) }

func (h *Host) socket(port uint16) (*Socket, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	var err error
	if port == 0 {
		port, err = h.m.Dial()
	} else {
		err = h.m.Listen(port)
	}
	if err != nil {
		return nil, err
	}
	s := &Socket{h: h, port: port, reqs: make(chan *Request, 1<<16)}
	h.sockets[port] = s
	return s, nil
}

// Port returns the socket's port.
func (s *Socket) Port() uint16 { return s.port }

// Close closes the socket: its client RPCs fail with ErrClosed, and it
// receives no more requests. No packet is sent (HomaModule does not tell
// servers).
func (s *Socket) Close() error {
	h := s.h
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return nil
	}
	s.closed = true
	delete(h.sockets, s.port)
	close(s.reqs)
	if h.leader != nil && h.leader.sock == s {
		h.pull.Interrupt()
	}
	h.m.CloseSocket(s.port)
	h.unlock()
	return nil
}

// Call sends request to dst and waits for the response. Errors: ErrTimeout
// after timeout_ticks of silence, ErrClosed, ErrTooLong/ErrEmpty, or ctx's
// error (the RPC is then aborted locally, without telling the server).
// request is not copied: it must not change until Call returns.
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
	// No copy: the machine keeps request only while the RPC lives, and
	// Call returns only once it has ended (or been aborted).
	now := h.now()
	id, err := h.m.Call(now, s.port, dst, request)
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	w := h.newWaiter()
	h.calls[id] = w
	h.unlockAt(now)
	if h.pull != nil {
		return h.awaitCall(ctx, id, w)
	}
	if ctx.Done() == nil { // a plain receive: cheaper than a select
		<-w.wake
		r := w.res
		h.putWaiter(w)
		return r.resp, r.err
	}
	select {
	case <-w.wake:
		r := w.res
		h.putWaiter(w)
		return r.resp, r.err
	case <-ctx.Done():
		h.mu.Lock()
		if h.calls[id] == w {
			delete(h.calls, id)
			h.m.Abort(id)
		} else {
			<-w.wake // dispatch set the result under h.mu: drop it
		}
		h.unlock()
		h.putWaiter(w)
		return nil, ctx.Err()
	}
}

// Receive waits for the next request. Errors: ErrClosed, ctx's error.
func (s *Socket) Receive(ctx context.Context) (*Request, error) {
	if s.h.pull != nil {
		return s.receivePull(ctx)
	}
	if ctx.Done() == nil { // a plain receive: cheaper than a select
		q, ok := <-s.reqs
		if !ok {
			return nil, ErrClosed
		}
		return q, nil
	}
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

// receivePull is Receive over a PullTransport: a request already queued,
// or else the wait reads the transport (Host.await).
func (s *Socket) receivePull(ctx context.Context) (*Request, error) {
	select {
	case q, ok := <-s.reqs:
		if !ok {
			return nil, ErrClosed
		}
		return q, nil
	default:
	}
	h := s.h
	w := h.newWaiter()
	w.sock = s
	done := func() bool { return w.req != nil || len(s.reqs) > 0 || s.closed }
	h.mu.Lock()
	for {
		q, ok, got := w.req, true, w.req != nil // handed to it as leader
		w.req = nil
		if !got {
			select {
			case q, ok = <-s.reqs:
				got = true
			default:
				if err := ctx.Err(); err != nil {
					h.endWait(w)
					h.mu.Unlock()
					h.putWaiter(w)
					return nil, err
				}
				q, ok, got = h.await(ctx, w, done, s.reqs)
			}
		}
		if got {
			h.endWait(w) // a lead it was given goes on
			h.mu.Unlock()
			h.putWaiter(w)
			if !ok {
				return nil, ErrClosed
			}
			return q, nil
		}
	}
}

// Reply sends the response. Errors: ErrTooLong/ErrEmpty; replying twice or
// to an RPC the host no longer has (the client gave up, or a timeout)
// returns nil without sending, as HomaModule does.
func (q *Request) Reply(response []byte) error {
	h := q.s.h
	h.mu.Lock()
	now := h.now()
	var resp []byte
	if r := q.ref.r; len(response) <= len(r.srv.smallOut) && r.state == serverInService {
		// Only an RPC still waiting for its response takes a copy here:
		// a second Reply must not overwrite bytes the first one sends.
		resp = r.srv.smallOut[:len(response):len(response)]
		copy(resp, response)
	} else {
		resp = append([]byte(nil), response...)
	}
	err := h.m.Reply(now, q.ref, resp)
	h.unlockAt(now)
	return err
}
