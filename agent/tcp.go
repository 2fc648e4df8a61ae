package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// TCPOptions configure ServeTCP.
type TCPOptions struct {
	// Version is reported in hello (default "dev").
	Version string
	// Logger receives the agent's log lines (nil: discard).
	Logger *slog.Logger
}

// TCPFrameHeaderLen is the length in bytes of the tcp agent's frame
// header: the message length (uint32 little-endian) and the call id
// (uint64 little-endian). The simulated TCP hosts (sim/simtcp) frame
// their messages the same way.
const TCPFrameHeaderLen = 12

// PutTCPFrameHeader writes the frame header of an n-byte message of call
// id into h (at least TCPFrameHeaderLen bytes).
func PutTCPFrameHeader(h []byte, n uint32, id uint64) {
	binary.LittleEndian.PutUint32(h[0:4], n)
	binary.LittleEndian.PutUint64(h[4:12], id)
}

// ParseTCPFrameHeader reads a frame header (TCPFrameHeaderLen bytes of
// h): the message length and the call id. A length of 0 or above
// MaxMessage is an error.
func ParseTCPFrameHeader(h []byte) (n uint32, id uint64, err error) {
	if len(h) < TCPFrameHeaderLen {
		return 0, 0, fmt.Errorf("frame header of %d bytes: want %d", len(h), TCPFrameHeaderLen)
	}
	n = binary.LittleEndian.Uint32(h[0:4])
	if n < 1 || n > MaxMessage {
		return 0, 0, fmt.Errorf("frame length %d out of range 1..%d", n, MaxMessage)
	}
	return n, binary.LittleEndian.Uint64(h[4:12]), nil
}

// ServeTCP runs the tcp agent: the protocol on r and w (exactly as
// ServeRef) with RPCs carried over TCP instead of Homa, so that a benchmark
// drives Homa and TCP the same way. It is the baseline of the Homa papers'
// comparisons, not a Homa implementation.
//
// listen opens a TCP listener on port (1..65535) on every address of hello.
// A call dials dst:port on its first use and keeps that connection: all
// calls from this agent to one server share one connection. Each message is
// one frame, a 12-byte header (message length in bytes, uint32
// little-endian; the call id, uint64 little-endian) then the message in the
// payload format of docs/agent-protocol.md. The server reads the requests of
// a connection one at a time and writes each response before reading the
// next, so a long message delays every message queued behind it on that
// connection (TCP's head-of-line blocking). TCP_NODELAY is set on every
// connection. The latency is from the call's start (the dial included on
// first use) to the whole response read. A failed dial completes the call
// with code "unreachable"; a connection that breaks fails the calls waiting
// on it with code "error" and is dialled again by the next call.
//
// Capabilities: the address families of hello and "timeouts"; hello
// rejects params and faults (TCP has none of Homa's). Returns as ServeRef.
func ServeTCP(ctx context.Context, r io.Reader, w io.Writer, opts TCPOptions) error {
	log := agentDefaults(opts.Logger, &opts.Version)
	cnt := &counters{}
	return serve(ctx, r, w, &tcpBackend{opts: opts, cnt: cnt, log: log, conns: map[netip.AddrPort]*tcpConn{}}, cnt, log)
}

// tcpBackend is the tcp agent: listeners for servers, one kept connection
// per server for clients.
type tcpBackend struct {
	opts  TCPOptions
	cnt   *counters
	log   *slog.Logger
	addrs []netip.Addr

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	accepted  map[net.Conn]bool
	conns     map[netip.AddrPort]*tcpConn // client connections by server
	wg        sync.WaitGroup

	dialled, acceptedN, broken atomic.Uint64
}

func (b *tcpBackend) hello(req HelloRequest) (Hello, error) {
	if len(req.Addrs) == 0 {
		return Hello{}, errors.New(`"addrs" is empty: give the host's IPv4 and/or IPv6 address`)
	}
	if len(req.Params) > 0 {
		return Hello{}, errors.New(`params: the tcp agent has no parameters (TCP is the baseline, not a Homa implementation): send none`)
	}
	if len(req.Faults) > 0 {
		return Hello{}, errors.New(`faults: the tcp agent has no fault knobs: send none`)
	}
	h := Hello{Impl: "tcp", Version: b.opts.Version}
	fams := map[bool]bool{}
	for _, a := range req.Addrs {
		a = a.Unmap()
		if fams[a.Is6()] {
			return Hello{}, fmt.Errorf("addrs: two addresses of the same family (%v): give one IPv4 and one IPv6 at most", a)
		}
		fams[a.Is6()] = true
		b.addrs = append(b.addrs, a)
		h.Capabilities = append(h.Capabilities, map[bool]string{false: CapIPv4, true: CapIPv6}[a.Is6()])
	}
	h.Capabilities = append(h.Capabilities, CapTimeouts)
	b.log.Info("hello", "host", req.Host, "addrs", req.Addrs)
	return h, nil
}

// listen serves port on each of the host's addresses (o.IPv6 changes
// nothing: every address is served).
func (b *tcpBackend) listen(port uint16, o ListenOptions) error {
	if o.ReplyDelay > 0 {
		return fmt.Errorf(`"reply_delay_ms": the tcp agent answers at once (it lacks capability %q)`, CapReplyDelay)
	}
	var lns []net.Listener
	for _, a := range b.addrs {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(a, port).String())
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		for _, l := range lns {
			l.Close()
		}
		return errors.New("the agent is shutting down")
	}
	b.listeners = append(b.listeners, lns...)
	for _, ln := range lns {
		b.wg.Add(1)
		go b.accept(ln)
	}
	return nil
}

// accept serves every connection ln accepts until ln closes.
func (b *tcpBackend) accept(ln net.Listener) {
	defer b.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		if b.accepted == nil {
			b.accepted = map[net.Conn]bool{}
		}
		b.accepted[c] = true
		b.wg.Add(1)
		b.mu.Unlock()
		b.acceptedN.Add(1)
		go b.serveConn(c)
	}
}

// serveConn answers the requests on c one at a time, in order, until c
// breaks or closes.
func (b *tcpBackend) serveConn(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.accepted, c)
		b.mu.Unlock()
		c.Close()
	}()
	setNoDelay(c)
	client := c.RemoteAddr().String()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	for {
		id, req, err := readFrame(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.log.Warn("request stream", "client", client, "err", err)
			}
			return
		}
		resp, ok := serveRequest(req, client, b.cnt, b.log)
		if !ok {
			return // the client waits for this response forever otherwise
		}
		if err := writeFrame(bw, id, resp); err != nil {
			b.log.Warn("response stream", "client", client, "err", err)
			return
		}
	}
}

func (b *tcpBackend) call(ctx context.Context, c Call) (func() Completion, error) {
	dst := netip.AddrPortFrom(c.Dst.Unmap(), c.Port)
	return func() Completion {
		return runCall(ctx, c, b.cnt, func(ctx context.Context, req []byte) ([]byte, error) {
			conn, err := b.conn(ctx, dst)
			if err != nil {
				return nil, err
			}
			return conn.roundTrip(ctx, c.ID, req)
		}, func(error) bool { return false })
	}, nil
}

// conn returns the kept connection to dst, dialling it first if there is
// none (concurrent first calls share one dial). A failed dial is
// errUnreachable.
func (b *tcpBackend) conn(ctx context.Context, dst netip.AddrPort) (*tcpConn, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, context.Canceled
	}
	tc := b.conns[dst]
	if tc == nil {
		tc = &tcpConn{b: b, dst: dst, ready: make(chan struct{}), pending: map[uint64]chan tcpResult{}}
		b.conns[dst] = tc
		b.mu.Unlock()
		tc.dial(ctx)
	} else {
		b.mu.Unlock()
	}
	select {
	case <-tc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if tc.dialErr != nil {
		return nil, tc.dialErr
	}
	return tc, nil
}

// forget removes tc from the kept connections (after it broke), so the next
// call dials again.
func (b *tcpBackend) forget(tc *tcpConn) {
	b.mu.Lock()
	if b.conns[tc.dst] == tc {
		delete(b.conns, tc.dst)
	}
	b.mu.Unlock()
}

func (b *tcpBackend) stats(s *Stats) {
	s.Extra = map[string]uint64{
		"connections_dialled":  b.dialled.Load(),
		"connections_accepted": b.acceptedN.Load(),
		"connections_broken":   b.broken.Load(),
	}
}

func (b *tcpBackend) close() error {
	b.mu.Lock()
	b.closed = true
	var errs []error
	for _, l := range b.listeners {
		errs = append(errs, l.Close())
	}
	for c := range b.accepted {
		c.Close()
	}
	conns := b.conns
	b.conns = map[netip.AddrPort]*tcpConn{}
	b.mu.Unlock()
	for _, tc := range conns {
		tc.fail(net.ErrClosed)
	}
	b.wg.Wait()
	return errors.Join(errs...)
}

// tcpResult is one response (or the connection's failure) for a waiting
// call.
type tcpResult struct {
	resp []byte
	err  error
}

// tcpConn is one client connection to a server: calls write their request
// frames under wmu and wait for the frame with their call id, which the
// connection's reader hands over.
type tcpConn struct {
	b       *tcpBackend
	dst     netip.AddrPort
	ready   chan struct{} // closed when the dial ended
	dialErr error
	c       net.Conn

	wmu sync.Mutex
	bw  *bufio.Writer

	mu      sync.Mutex
	err     error // set when the connection broke
	pending map[uint64]chan tcpResult
}

// dial connects to tc.dst, starts the reader and closes ready.
func (tc *tcpConn) dial(ctx context.Context) {
	defer close(tc.ready)
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", tc.dst.String())
	if err != nil {
		tc.b.forget(tc)
		if ctx.Err() != nil {
			tc.dialErr = ctx.Err()
		} else {
			tc.dialErr = fmt.Errorf("%w: %v", errUnreachable, err)
		}
		return
	}
	setNoDelay(c)
	tc.b.dialled.Add(1)
	tc.c = c
	tc.bw = bufio.NewWriterSize(c, 64<<10)
	tc.b.mu.Lock()
	closed := tc.b.closed
	if !closed {
		tc.b.wg.Add(1)
	}
	tc.b.mu.Unlock()
	if closed {
		c.Close()
		tc.dialErr = context.Canceled
		return
	}
	go tc.read()
}

// read hands every response frame to the call waiting for its id until the
// connection breaks.
func (tc *tcpConn) read() {
	defer tc.b.wg.Done()
	br := bufio.NewReaderSize(tc.c, 64<<10)
	for {
		id, resp, err := readFrame(br)
		if err != nil {
			tc.fail(fmt.Errorf("connection to %v lost: %v", tc.dst, err))
			return
		}
		tc.mu.Lock()
		ch := tc.pending[id]
		delete(tc.pending, id)
		tc.mu.Unlock()
		if ch != nil {
			ch <- tcpResult{resp: resp}
		}
	}
}

// fail breaks the connection: every waiting call gets err, and the next
// call dials again.
func (tc *tcpConn) fail(err error) {
	tc.mu.Lock()
	first := tc.err == nil
	if first {
		tc.err = err
	}
	pending := tc.pending
	tc.pending = map[uint64]chan tcpResult{}
	tc.mu.Unlock()
	if first {
		tc.b.forget(tc)
		if !errors.Is(err, net.ErrClosed) {
			tc.b.broken.Add(1)
		}
		if tc.c != nil {
			tc.c.Close()
		}
	}
	for _, ch := range pending {
		ch <- tcpResult{err: err}
	}
}

// roundTrip sends req as call id's request frame and waits for its
// response, ctx's end or the connection's failure.
func (tc *tcpConn) roundTrip(ctx context.Context, id uint64, req []byte) ([]byte, error) {
	ch := make(chan tcpResult, 1)
	tc.mu.Lock()
	if tc.err != nil {
		tc.mu.Unlock()
		return nil, tc.err
	}
	tc.pending[id] = ch
	tc.mu.Unlock()
	tc.wmu.Lock()
	err := writeFrame(tc.bw, id, req)
	tc.wmu.Unlock()
	if err != nil {
		tc.fail(fmt.Errorf("connection to %v lost: %v", tc.dst, err))
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		tc.mu.Lock()
		delete(tc.pending, id)
		tc.mu.Unlock()
		return nil, ctx.Err()
	}
}

// writeFrame writes one frame (header, then msg) to w and flushes it.
func writeFrame(w *bufio.Writer, id uint64, msg []byte) error {
	var h [TCPFrameHeaderLen]byte
	PutTCPFrameHeader(h[:], uint32(len(msg)), id)
	w.Write(h[:])
	w.Write(msg)
	return w.Flush()
}

// readFrame reads one frame from r: the call id and the message. A length
// of 0 or above MaxMessage is an error.
func readFrame(r *bufio.Reader) (uint64, []byte, error) {
	var h [TCPFrameHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n, id, err := ParseTCPFrameHeader(h[:])
	if err != nil {
		return 0, nil, err
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, nil, err
	}
	return id, msg, nil
}

// setNoDelay turns Nagle's algorithm off on c (Go's default, made
// explicit: each frame leaves at once).
func setNoDelay(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		t.SetNoDelay(true)
	}
}
