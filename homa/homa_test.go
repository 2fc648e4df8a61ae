package homa_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// testNet is a memnet network with hosts 198.18.0.1.. attached.
type testNet struct {
	net   *memnet.Network
	hosts []*homa.Host
}

// pullEndpoint makes a memnet endpoint a homa.PullTransport, so that the
// tests run Host's leader/follower path (the one it takes over homa/rawip)
// as well as its handler path: packets queue until a Pull takes them.
type pullEndpoint struct {
	*memnet.Endpoint
	mu     sync.Mutex
	q      []homa.Received
	ready  chan struct{} // a packet was queued
	intr   chan struct{} // Interrupt
	closed chan struct{}
	once   sync.Once
}

func newPullEndpoint(ep *memnet.Endpoint) *pullEndpoint {
	p := &pullEndpoint{Endpoint: ep, ready: make(chan struct{}, 1), intr: make(chan struct{}, 1), closed: make(chan struct{})}
	ep.SetHandler(func(src netip.Addr, prio uint8, pkt []byte) {
		p.mu.Lock()
		p.q = append(p.q, homa.Received{Src: src, Prio: prio, Packet: pkt})
		p.mu.Unlock()
		select {
		case p.ready <- struct{}{}:
		default:
		}
	})
	return p
}

func (p *pullEndpoint) Headroom() int { return 0 }

func (p *pullEndpoint) SendBatch(pkts []homa.Transmit) error {
	var first error
	for _, t := range pkts {
		if err := p.Send(t.Dst, t.Prio, t.Packet); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (p *pullEndpoint) SetBatchHandler(func([]homa.Received)) {
	panic("a Host over a PullTransport sets no handler")
}

func (p *pullEndpoint) Pull(wait bool, f func([]homa.Received)) (int, error) {
	for {
		p.mu.Lock()
		if q := p.q; len(q) > 0 {
			p.q = nil
			p.mu.Unlock()
			f(q)
			return len(q), nil
		}
		p.mu.Unlock()
		select {
		case <-p.closed:
			return 0, memnet.ErrClosed
		default:
		}
		if !wait {
			return 0, nil
		}
		select {
		case <-p.ready:
		case <-p.intr:
			return 0, nil
		case <-p.closed:
			return 0, memnet.ErrClosed
		}
	}
}

func (p *pullEndpoint) Interrupt() {
	select {
	case p.intr <- struct{}{}:
	default:
	}
}

func (p *pullEndpoint) Close() error {
	p.once.Do(func() { close(p.closed) })
	return p.Endpoint.Close()
}

func newTestNet(t *testing.T, n int, cfg memnet.Config, params homa.Params, faults ...homa.Fault) *testNet {
	t.Helper()
	tn := &testNet{net: memnet.New(cfg)}
	for i := range n {
		var ep homa.Transport = tn.net.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}))
		if i%2 == 0 || i == n-1 {
			// Half the hosts, and the last (the server of most tests),
			// read their packets in their waiting goroutines.
			ep = newPullEndpoint(ep.(*memnet.Endpoint))
		}
		h, err := homa.New(homa.Config{Transport: ep, Params: params, Faults: faults})
		if err != nil {
			t.Fatal(err)
		}
		tn.hosts = append(tn.hosts, h)
	}
	return tn
}

func (tn *testNet) close() {
	for _, h := range tn.hosts {
		h.Close()
	}
	tn.net.Close()
}

// echoServer answers every request on port with its payload reversed.
func echoServer(t *testing.T, h *homa.Host, port uint16) {
	s, err := h.Listen(port)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			q, err := s.Receive(context.Background())
			if err != nil {
				return
			}
			q.Reply(reverse(q.Payload()))
		}
	}()
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}

func payload(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestPayloadIntegrity: requests of 1 B to 1,000,000 B come back intact.
func TestPayloadIntegrity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTestNet(t, 2, memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond}, homa.DefaultParams())
		defer tn.close()
		echoServer(t, tn.hosts[1], 4000)
		c, _ := tn.hosts[0].Dial()
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{1, 100, 1423, 1424, 1425, 39999, 40000, 40001, 100000, 500000, 1000000} {
			req := payload(rng, n)
			resp, err := c.Call(context.Background(), netip.AddrPortFrom(tn.hosts[1].Addr(), 4000), req)
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if !bytes.Equal(resp, reverse(req)) {
				t.Fatalf("%d bytes: response differs", n)
			}
		}
		st := tn.hosts[1].Stats()
		if st.Delivered != 11 || st.Timeouts != 0 {
			t.Errorf("server stats %+v", st)
		}
	})
}

// TestConcurrentRPCs: 1,000 RPCs from 8 clients to one server complete.
func TestConcurrentRPCs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTestNet(t, 9, memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond}, homa.DefaultParams())
		defer tn.close()
		server := tn.hosts[8]
		echoServer(t, server, 4000)
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for c := range 8 {
			sock, _ := tn.hosts[c].Dial()
			for i := range 125 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(c), uint64(i)))
					req := payload(rng, 1+rng.IntN(120000))
					resp, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 4000), req)
					if err == nil && !bytes.Equal(resp, reverse(req)) {
						err = fmt.Errorf("client %d rpc %d: response differs", c, i)
					}
					if err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if st := server.Stats(); st.Delivered != 1000 {
			t.Errorf("delivered %d requests, want 1000 (%+v)", st.Delivered, st)
		}
	})
}

// TestPullWaits runs the waits of Host over a PullTransport, where the
// goroutines waiting in Call and Receive read the transport themselves:
// calls to a server that never answers end with their contexts whether
// they lead or follow, while echo calls beside them complete (the lead
// passes on as waits end); a Receive ends with its context, or with
// ErrClosed when its socket closes; closing the host ends a waiting Call.
func TestPullWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTestNet(t, 2, memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond}, homa.DefaultParams())
		defer tn.close()
		client, server := tn.hosts[0], tn.hosts[1] // both over the pull adapter
		echoServer(t, server, 4000)
		if _, err := server.Listen(5000); err != nil { // never received: never answered
			t.Fatal(err)
		}
		sock, _ := client.Dial()
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := range 20 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i)*time.Millisecond)
				defer cancel()
				if _, err := sock.Call(ctx, netip.AddrPortFrom(server.Addr(), 5000), []byte{byte(i)}); err != context.DeadlineExceeded {
					errs <- fmt.Errorf("call %d to the silent port: %v, want %v", i, err, context.DeadlineExceeded)
				}
			}()
			go func() {
				defer wg.Done()
				for j := range 5 {
					req := []byte{byte(i), byte(j), 1, 2, 3}
					resp, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 4000), req)
					if err != nil || !bytes.Equal(resp, reverse(req)) {
						errs <- fmt.Errorf("echo %d/%d: %v", i, j, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// Alone, the call leads: its context must interrupt its read, not
		// the BUSY that answers its first RESEND (resend_ticks later).
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		if _, err := sock.Call(ctx, netip.AddrPortFrom(server.Addr(), 5000), []byte{1}); err != context.DeadlineExceeded || time.Since(start) != time.Millisecond {
			t.Errorf("a lone call to the silent port: %v after %v, want %v after 1ms", err, time.Since(start), context.DeadlineExceeded)
		}
		cancel()

		s2, _ := server.Listen(6000)
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
		if _, err := s2.Receive(ctx); err != context.DeadlineExceeded {
			t.Errorf("Receive with nothing to receive: %v, want %v", err, context.DeadlineExceeded)
		}
		cancel()
		got := make(chan error, 1)
		go func() { _, err := s2.Receive(context.Background()); got <- err }()
		time.Sleep(time.Millisecond)
		s2.Close()
		if err := <-got; err != homa.ErrClosed {
			t.Errorf("Receive on a socket closed while it waits: %v, want %v", err, homa.ErrClosed)
		}

		go func() {
			_, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 5000), []byte{1})
			got <- err
		}()
		time.Sleep(time.Millisecond)
		client.Close()
		if err := <-got; err != homa.ErrClosed {
			t.Errorf("Call waiting when its host closes: %v, want %v", err, homa.ErrClosed)
		}
	})
}
