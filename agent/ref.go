package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// RefOptions configure ServeRef.
type RefOptions struct {
	// Transport opens the packet transport for one of hello's addresses
	// (default: raw IP sockets, homa/rawip, in the current network
	// namespace; tests pass homa/memnet endpoints).
	Transport func(addr netip.Addr) (homa.Transport, error)
	// Version is reported in hello (default "dev").
	Version string
	// Logger receives the agent's log lines (nil: discard). The CLI logs
	// to standard error.
	Logger *slog.Logger
}

// ServeRef runs the ref agent: the protocol on r (requests) and w (events)
// with the reference implementation (package homa) behind it. On hello it
// opens one homa.Host per address in addrs (one per address family),
// applying the parameter overrides (capability "params"; link_bps first
// selects homa.ParamsForLink) and fault knobs (homa.FaultNames; capability
// "faults"). Servers check every request's payload and count executions
// per (client, call id) for at-most-once accounting (Stats.Served,
// Stats.ServedDuplicates). It returns nil after shutdown or when r ends,
// ctx's end included, and an error only when w cannot be written.
//
// Tests in other packages run it in process over two io.Pipe pairs with a
// memnet Transport and drive it with NewClient.
func ServeRef(ctx context.Context, r io.Reader, w io.Writer, opts RefOptions) error {
	log := agentDefaults(opts.Logger, &opts.Version)
	// Raw IP runs on the wall clock, where the hosts' timers must keep
	// ticks shorter than Go's timers can (homa.Config.PreciseTimer).
	precise := opts.Transport == nil
	if precise {
		opts.Transport = openRawIP
	}
	cnt := &counters{}
	return serve(ctx, r, w, &refBackend{opts: opts, precise: precise, cnt: cnt, log: log}, cnt, log)
}

// refBackend runs package homa: one Host and one client socket per
// address family.
type refBackend struct {
	opts    RefOptions
	precise bool // the hosts' timers are timerfds (raw IP)
	cnt     *counters
	log     *slog.Logger
	hosts   []*homa.Host
	clients map[bool]*homa.Socket // by "is IPv6"
	mu      sync.Mutex
	servers []*homa.Socket
	wg      sync.WaitGroup
}

// refCapabilities are the ref agent's capabilities beyond the address
// families.
var refCapabilities = []string{CapGrants, CapPriorities, CapCutoffs, CapNeedAck, CapParams, CapTimeouts, CapFaults, CapReplyDelay}

// RefCapabilities returns the capabilities the ref agent declares in its
// hello after the address families (ipv4, ipv6): for an environment that
// runs the reference implementation without the agent (package sim) and
// must describe it the same way.
func RefCapabilities() []string { return slices.Clone(refCapabilities) }

func (b *refBackend) hello(req HelloRequest) (Hello, error) {
	if len(req.Addrs) == 0 {
		return Hello{}, errors.New(`"addrs" is empty: give the host's IPv4 and/or IPv6 address`)
	}
	p, err := RefParams(req.Params)
	if err != nil {
		return Hello{}, err
	}
	faults, err := refFaults(req.Faults)
	if err != nil {
		return Hello{}, err
	}
	h := Hello{Impl: "ref", Version: b.opts.Version}
	b.clients = map[bool]*homa.Socket{}
	for _, a := range req.Addrs {
		a = a.Unmap()
		if _, dup := b.clients[a.Is6()]; dup {
			b.close()
			return Hello{}, fmt.Errorf("addrs: two addresses of the same family (%v): give one IPv4 and one IPv6 at most", a)
		}
		t, err := b.opts.Transport(a)
		if err != nil {
			b.close()
			return Hello{}, fmt.Errorf("open %v: %v", a, err)
		}
		host, err := homa.New(homa.Config{Transport: t, Params: p, Faults: faults, PreciseTimer: b.precise})
		if err != nil {
			t.Close()
			b.close()
			return Hello{}, err
		}
		b.hosts = append(b.hosts, host)
		sock, err := host.Dial()
		if err != nil {
			b.close()
			return Hello{}, err
		}
		b.clients[a.Is6()] = sock
		h.Capabilities = append(h.Capabilities, map[bool]string{false: CapIPv4, true: CapIPv6}[a.Is6()])
	}
	h.Capabilities = append(h.Capabilities, refCapabilities...)
	h.Params = ParamsOf(b.hosts[0].Params())
	b.log.Info("hello", "host", req.Host, "addrs", req.Addrs, "faults", req.Faults)
	return h, nil
}

// refFaults checks fault names against homa.FaultNames.
func refFaults(names []string) ([]homa.Fault, error) {
	known := map[string]bool{}
	var list []string
	for _, f := range homa.FaultNames() {
		known[f.Name] = true
		list = append(list, f.Name)
	}
	var out []homa.Fault
	for _, n := range names {
		if !known[n] {
			return nil, fmt.Errorf("faults: unknown fault %q (known: %v)", n, list)
		}
		out = append(out, homa.Fault(n))
	}
	return out, nil
}

// listen serves port on every host address (o.IPv6 changes nothing: the
// reference implementation's sockets serve both families).
func (b *refBackend) listen(port uint16, o ListenOptions) error {
	if port >= 32768 {
		return fmt.Errorf(`"port" %d: server ports are 1..32767 (HomaModule: ports from 32768 are client ports)`, port)
	}
	var socks []*homa.Socket
	for _, h := range b.hosts {
		s, err := h.Listen(port)
		if err != nil {
			for _, s := range socks {
				s.Close()
			}
			return err
		}
		socks = append(socks, s)
	}
	b.mu.Lock()
	b.servers = append(b.servers, socks...)
	b.mu.Unlock()
	for _, s := range socks {
		b.wg.Add(1)
		go b.serveSocket(s, o.ReplyDelay)
	}
	return nil
}

// serveSocket answers every request on s, delay after it arrived, until
// s closes.
func (b *refBackend) serveSocket(s *homa.Socket, delay time.Duration) {
	defer b.wg.Done()
	for {
		q, err := s.Receive(context.Background())
		if err != nil {
			return
		}
		resp, ok := serveRequest(q.Payload(), q.Client().String(), b.cnt, b.log)
		switch {
		case !ok:
		case delay > 0:
			// The RPC waits at the server meanwhile (its RESENDs get
			// BUSY); a reply after the socket closed does nothing.
			time.AfterFunc(delay, func() { q.Reply(resp) })
		default:
			q.Reply(resp)
		}
	}
}

func (b *refBackend) call(ctx context.Context, c Call) (func() Completion, error) {
	dst := c.Dst.Unmap()
	sock := b.clients[dst.Is6()]
	if sock == nil {
		fam := map[bool]string{false: "IPv4", true: "IPv6"}[dst.Is6()]
		return nil, fmt.Errorf("%s: %v: this host has no %s address (see hello addrs)", CodeUnreachable, dst, fam)
	}
	ap := netip.AddrPortFrom(dst, c.Port)
	return func() Completion {
		return runCall(ctx, c, b.cnt, func(ctx context.Context, req []byte) ([]byte, error) {
			return sock.Call(ctx, ap, req)
		}, func(err error) bool { return errors.Is(err, homa.ErrTimeout) })
	}, nil
}

func (b *refBackend) stats(s *Stats) {
	for _, h := range b.hosts {
		AddRefStats(s, h.Stats())
	}
}

// AddRefStats adds the reference implementation's counters st to s: the
// packet counts, retransmissions and timeouts, and in Extra the packets
// sent and received by type ("sent_grant", ...), drops, restarts,
// deliveries and duplicates (the ref agent's stats).
func AddRefStats(s *Stats, st homa.Stats) {
	if s.Extra == nil {
		s.Extra = map[string]uint64{}
	}
	for i, n := range st.Sent {
		s.PacketsSent += uint64(n)
		s.Extra["sent_"+packetTypeName(i)] += uint64(n)
	}
	for i, n := range st.Received {
		s.PacketsReceived += uint64(n)
		s.Extra["received_"+packetTypeName(i)] += uint64(n)
	}
	s.Retransmitted += uint64(st.Retransmitted)
	s.Timeouts += uint64(st.Timeouts)
	s.Extra["dropped"] += uint64(st.Dropped)
	s.Extra["restarts"] += uint64(st.Restarts)
	s.Extra["delivered"] += uint64(st.Delivered)
	s.Extra["duplicates"] += uint64(st.Duplicates)
	s.Extra["tx_refused"] += uint64(st.TxRefused)
}

// packetTypeName names Homa packet type 0x10+i in lower case ("data",
// "rpc_unknown", …; spec/wire names).
func packetTypeName(i int) string {
	return strings.ToLower(wire.PacketType(0x10 + i).String())
}

func (b *refBackend) close() error {
	var errs []error
	for _, h := range b.hosts {
		errs = append(errs, h.Close())
	}
	b.hosts = nil
	b.wg.Wait()
	return errors.Join(errs...)
}
