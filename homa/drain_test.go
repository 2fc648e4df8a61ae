package homa_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// stalledPull is a PullTransport whose waiting reads never return
// packets (a reader that gets no CPU): only reads without waiting do.
type stalledPull struct{ *pullEndpoint }

func (s *stalledPull) Pull(wait bool, f func([]homa.Received)) (int, error) {
	if !wait {
		return s.pullEndpoint.Pull(false, f)
	}
	select {
	case <-s.intr:
		return 0, nil
	case <-s.closed:
		return 0, memnet.ErrClosed
	}
}

// TestPassReadsFirst: a timer pass over a PullTransport first handles
// the packets waiting in it, also when a leader waits in it and does not
// read them (passIfDue): the server's goroutine in Receive never gets a
// packet from its waiting reads, yet the first pass after the request
// arrived hands it over, and the call completes within two ticks. A pass
// that ran beside the stalled leader without reading counted silence
// with the request unread until the client timed out.
func TestPassReadsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond})
		defer n.Close()
		p := homa.DefaultParams()
		sp := &stalledPull{newPullEndpoint(n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 2})))}
		server, err := homa.New(homa.Config{Transport: sp, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		client, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 1})), Params: p})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		echoServer(t, server, 4000)
		synctest.Wait() // the server's Receive leads, waiting in Pull
		sock, _ := client.Dial()
		start := time.Now()
		resp, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 4000), []byte{1, 2, 3})
		if err != nil || string(resp) != string([]byte{3, 2, 1}) {
			t.Fatalf("call: %v, response %v; want 3 2 1", err, resp)
		}
		if d := time.Since(start); d > 2*p.Tick {
			t.Errorf("call took %v; want within two ticks (%v)", d, 2*p.Tick)
		}
		if st := client.Stats(); st.Timeouts != 0 {
			t.Errorf("client timeouts %d, want 0", st.Timeouts)
		}
	})
}

// stalledHandler is a DrainTransport whose delivery goroutine gets no
// CPU: the packets that arrive wait in it until Drain hands them over.
type stalledHandler struct {
	*memnet.Endpoint
	mu      sync.Mutex
	handler func(netip.Addr, uint8, []byte)
	waiting []func()
}

func (s *stalledHandler) SetHandler(h func(netip.Addr, uint8, []byte)) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
	s.Endpoint.SetHandler(func(src netip.Addr, prio uint8, pkt []byte) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.waiting = append(s.waiting, func() { s.handler(src, prio, pkt) })
	})
}

func (s *stalledHandler) Drain() int {
	s.mu.Lock()
	w := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	for _, f := range w {
		f()
	}
	return len(w)
}

// TestPassDrainsHandler: a timer pass over a handler-fed transport first
// has it hand over the packets that have arrived (homa.DrainTransport,
// memnet's delay line), as over a PullTransport (TestPassReadsFirst): the
// server's transport never delivers by itself, yet the first pass after
// the request arrived hands it over, and the call completes within two
// ticks. Before, a pass counted silence with the request waiting in the
// transport until the client timed out (ErrTimeout after timeout_ticks).
func TestPassDrainsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond})
		defer n.Close()
		p := homa.DefaultParams()
		sh := &stalledHandler{Endpoint: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 2}))}
		server, err := homa.New(homa.Config{Transport: sh, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		client, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 1})), Params: p})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		echoServer(t, server, 4000)
		sock, _ := client.Dial()
		start := time.Now()
		resp, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 4000), []byte{1, 2, 3})
		if err != nil || string(resp) != string([]byte{3, 2, 1}) {
			t.Fatalf("call: %v, response %v; want 3 2 1", err, resp)
		}
		if d := time.Since(start); d > 2*p.Tick {
			t.Errorf("call took %v; want within two ticks (%v)", d, 2*p.Tick)
		}
		if st := client.Stats(); st.Timeouts != 0 {
			t.Errorf("client timeouts %d, want 0", st.Timeouts)
		}
	})
}
