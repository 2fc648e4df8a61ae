package simtcp

import (
	"bytes"
	"net/netip"
	"slices"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/homatest/homatest/agent"
)

// serverReadAhead is how many bytes a server reads from its socket at a
// time: the tcp agent's 64 KB bufio.Reader.
const serverReadAhead = 64 << 10

// conn is one TCP connection carrying RPC frames: a client's kept
// connection to a server (calls) or a server's accepted one (serve).
type conn struct {
	h      *Host
	ep     tcpip.Endpoint
	wq     *waiter.Queue
	entry  waiter.Entry
	queued bool // guarded by h.mu

	// A client's: the server, the calls waiting for their response by
	// frame id, the last id used, and whether the handshake is on.
	dst        netip.AddrPort
	calls      map[uint64]func([]byte, error)
	nextID     uint64
	connecting bool

	// A server's: the application and the client.
	serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))
	peer  netip.AddrPort

	// out holds the frames not yet taken by the socket (the first one
	// from off on).
	out [][]byte
	off int

	// in holds bytes read and not yet parsed; a frame is parsed into
	// hdr (nh bytes so far), then body.
	in   []byte
	hdr  [agent.TCPFrameHeaderLen]byte
	nh   int
	id   uint64
	body []byte
	nb   int

	dead bool
}

// newConn wraps endpoint ep (TCP_NODELAY set) and listens to its events.
func newConn(h *Host, ep tcpip.Endpoint, wq *waiter.Queue, serve func([]byte, netip.AddrPort, func([]byte))) *conn {
	c := &conn{h: h, ep: ep, wq: wq, serve: serve}
	ep.SocketOptions().SetDelayOption(false)
	c.entry = waiter.NewFunctionEntry(waiter.ReadableEvents|waiter.WritableEvents|waiter.EventHUp|waiter.EventErr,
		func(waiter.EventMask) { h.notify(c, &c.queued) })
	wq.EventRegister(&c.entry)
	return c
}

// service acts on the connection's socket events: the end of the
// handshake, room to write, bytes to read, a failure.
func (c *conn) service() {
	c.h.mu.Lock()
	c.queued = false
	c.h.mu.Unlock()
	if c.dead {
		return
	}
	if c.connecting {
		switch st := c.ep.(*tcp.Endpoint).EndpointState(); st {
		case tcp.StateEstablished:
			c.connecting = false
		case tcp.StateInitial, tcp.StateConnecting, tcp.StateSynSent:
			return
		default:
			c.fail()
			return
		}
	}
	c.flush()
	c.read()
}

// send queues frame id with msg.
func (c *conn) send(id uint64, msg []byte) {
	f := make([]byte, agent.TCPFrameHeaderLen+len(msg))
	agent.PutTCPFrameHeader(f, uint32(len(msg)), id)
	copy(f[agent.TCPFrameHeaderLen:], msg)
	c.out = append(c.out, f)
}

// flush writes queued frames until the socket takes no more.
func (c *conn) flush() {
	for len(c.out) > 0 && !c.connecting && !c.dead {
		f := c.out[0]
		n, terr := c.ep.Write(bytes.NewReader(f[c.off:]), tcpip.WriteOptions{})
		c.off += int(n)
		if c.off == len(f) {
			c.out[0] = nil
			c.out, c.off = c.out[1:], 0
		}
		switch terr.(type) {
		case nil:
		case *tcpip.ErrWouldBlock:
			return
		default:
			c.fail()
			return
		}
	}
}

// appender is an io.Writer appending to a slice.
type appender struct{ b *[]byte }

func (a appender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// read parses frames from the socket and hands them on: a response to its
// call, a request to the application (a server reads the next request
// only once the previous response is all written).
func (c *conn) read() {
	for !c.dead {
		if c.serve != nil && len(c.out) > 0 {
			return
		}
		if len(c.in) == 0 {
			lim := int64(1 << 62)
			if c.serve != nil {
				lim = serverReadAhead
			}
			c.in = c.in[:0]
			_, terr := c.ep.Read(&tcpip.LimitedWriter{W: appender{&c.in}, N: lim}, tcpip.ReadOptions{})
			switch terr.(type) {
			case nil:
			case *tcpip.ErrWouldBlock:
				return
			default:
				c.fail()
				return
			}
			if len(c.in) == 0 {
				return
			}
		}
		c.parse()
	}
}

// parse consumes c.in up to the end of the next frame and hands the frame
// on when it is complete.
func (c *conn) parse() {
	p := c.in
	defer func() {
		// Keep the unparsed rest at the front of the buffer.
		c.in = c.in[:copy(c.in, p)]
	}()
	for len(p) > 0 {
		if c.body == nil {
			k := copy(c.hdr[c.nh:], p)
			c.nh += k
			p = p[k:]
			if c.nh < len(c.hdr) {
				return
			}
			n, id, err := agent.ParseTCPFrameHeader(c.hdr[:])
			if err != nil {
				c.fail()
				return
			}
			c.id, c.body, c.nb = id, make([]byte, n), 0
		}
		k := copy(c.body[c.nb:], p)
		c.nb += k
		p = p[k:]
		if c.nb < len(c.body) {
			return
		}
		id, msg := c.id, c.body
		c.nh, c.body = 0, nil
		c.deliver(id, msg)
		return
	}
}

// deliver hands complete frame id on.
func (c *conn) deliver(id uint64, msg []byte) {
	if c.serve == nil {
		if done := c.calls[id]; done != nil {
			delete(c.calls, id)
			done(msg, nil)
		}
		return
	}
	c.serve(msg, c.peer, func(resp []byte) {
		if c.dead {
			return
		}
		c.send(id, resp)
		c.flush()
	})
}

// fail breaks the connection: its waiting calls get errBroken (in call
// order) and the next call to its server dials again.
func (c *conn) fail() {
	if c.dead {
		return
	}
	c.dead = true
	c.h.cnt.broken++
	c.wq.EventUnregister(&c.entry)
	c.ep.Close()
	if c.serve != nil {
		return
	}
	if c.h.conns[c.dst] == c {
		delete(c.h.conns, c.dst)
	}
	ids := make([]uint64, 0, len(c.calls))
	for id := range c.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if done := c.calls[id]; done != nil {
			delete(c.calls, id)
			done(nil, errBroken)
		}
	}
}
