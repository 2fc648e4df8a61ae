//go:build linux

package rawip_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
	"github.com/homatest/homatest/internal/timescale"
)

// TestMain removes first what a test binary killed before it cleaned up
// (its go test -timeout) left: harness.RemoveDeadRuns.
func TestMain(m *testing.M) {
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}

// pair builds two hosts with the harness: network namespaces h1
// (198.18.0.1, fd00::1) and h2 (198.18.0.2, fd00::2) behind a kernel-bridge
// switch, removed when the test ends. Harness names (ht<run id>-…) and its
// run lock let homatest cleanup remove what a killed test left.
func pair(t testing.TB) (a, b *harness.Host) { return pairWith(t, harness.Config{}) }

// pairWith is pair with cfg's other settings (Hosts is set to 2).
func pairWith(t testing.TB, cfg harness.Config) (a, b *harness.Host) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and raw sockets")
	}
	arts, err := harness.NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hosts, cfg.Artifacts = 2, arts
	topo, err := harness.Build(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo.Hosts[0], topo.Hosts[1]
}

// host opens a raw-IP host at addr in host on with HomaModule's default
// parameters (for the benchmarks).
func host(t testing.TB, on *harness.Host, addr string) *homa.Host {
	t.Helper()
	h, _ := hostVia(t, on, addr, homa.DefaultParams(), nil)
	return h
}

// hostVia opens a raw-IP host at addr in host on with parameters p, its
// transport wrapped by wrap (if not nil); it returns the host and the
// (wrapped) transport.
func hostVia(t testing.TB, on *harness.Host, addr string, p homa.Params, wrap func(homa.Transport) homa.Transport) (*homa.Host, homa.Transport) {
	t.Helper()
	var rt *rawip.Transport
	if err := on.Do(func() (err error) {
		rt, err = rawip.Open(netip.MustParseAddr(addr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var tr homa.Transport = rt
	if wrap != nil {
		tr = wrap(rt)
	}
	h, err := homa.New(homa.Config{Transport: tr, Params: p})
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, tr
}

// TestRawIPRPCs runs the reference implementation over raw IP sockets
// between two namespaces: payload integrity from 1 B to 1,000,000 B and
// 200 concurrent RPCs; every packet on the wire has priority<<5 in its TOS
// for the priority its sender chose.
func TestRawIPRPCs(t *testing.T) {
	a, b := pair(t)
	stop := capture(t, a)
	client, ct := hostVia(t, a, "198.18.0.1", userSpaceParams(), newRecorder)
	server, st := hostVia(t, b, "198.18.0.2", userSpaceParams(), newRecorder)
	echoOn(t, server, true)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	rng := rand.New(rand.NewPCG(5, 6))
	ctx, cancel := context.WithTimeout(context.Background(), timescale.D(60*time.Second))
	defer cancel()
	for _, n := range []int{1, 100, 1424, 1425, 40000, 40001, 100000, 1000000} {
		req := make([]byte, n)
		for i := range req {
			req[i] = byte(rng.Uint32())
		}
		resp, err := c.Call(ctx, dst, req)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		for i := range req {
			if resp[len(req)-1-i] != req[i] {
				t.Fatalf("%d bytes: response differs at %d", n, i)
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := bytes.Repeat([]byte{byte(i)}, 1+i*500)
			_, err := c.Call(ctx, dst, req)
			if err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of 200 concurrent RPCs failed, first: %v", len(failures), failures[0])
	}
	ss := server.Stats()
	t.Logf("server: delivered %d, retransmitted %d, received %v", ss.Delivered, ss.Retransmitted, ss.Received)
	if ss.Delivered != 208 {
		t.Errorf("server executed %d requests, want 208", ss.Delivered)
	}
	client.Close() // every packet sent is now queued at the capture
	server.Close()
	checkPriorities(t, stop(), ct, st)
}

func pairB(b *testing.B) (*harness.Host, *harness.Host) { return pair(b) }

// pollUsecs sets the poll_usecs of the benchmarks' homa hosts (hostB).
var pollUsecs = flag.Int("poll-usecs", -1, "poll_usecs of BenchmarkEcho100B's homa hosts (homa.Params.PollUsecs; -1: homa.DefaultParams')")

// hostB opens a benchmark's raw-IP host at addr in on, with poll_usecs
// from -poll-usecs.
func hostB(b *testing.B, on *harness.Host, addr string) *homa.Host {
	b.Helper()
	p := homa.DefaultParams()
	if *pollUsecs >= 0 {
		p.PollUsecs = *pollUsecs
	}
	h, _ := hostVia(b, on, addr, p, nil)
	return h
}

// TestRawIPv6 runs RPCs over raw IPv6 sockets between the namespaces:
// payloads of 1 B to 1,000,000 B and 100 concurrent RPCs; every packet on
// the wire has priority<<5 in its traffic class (HomaModule main) for the
// priority its sender chose.
func TestRawIPv6(t *testing.T) {
	a, b := pair(t)
	stop := capture(t, a)
	client, ct := hostVia(t, a, "fd00::1", userSpaceParams(), newRecorder)
	server, st := hostVia(t, b, "fd00::2", userSpaceParams(), newRecorder)
	echoOn(t, server, false)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	ctx, cancel := context.WithTimeout(context.Background(), timescale.D(60*time.Second))
	defer cancel()
	for _, n := range []int{1, 1404, 1405, 40001, 1000000} {
		req := bytes.Repeat([]byte{byte(n)}, n)
		resp, err := c.Call(ctx, dst, req)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Call(ctx, dst, make([]byte, 1+i*300)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ss := server.Stats(); ss.Delivered != 105 {
		t.Errorf("server executed %d requests, want 105", ss.Delivered)
	}
	client.Close() // every packet sent is now queued at the capture
	server.Close()
	checkPriorities(t, stop(), ct, st)
}

// echoOn answers requests on port 4000 of h with their payload (reversed
// when reverse is set).
func echoOn(t testing.TB, h *homa.Host, reverse bool) {
	t.Helper()
	s, err := h.Listen(4000)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			q, err := s.Receive(context.Background())
			if err != nil {
				return
			}
			p := q.Payload()
			if reverse {
				out := make([]byte, len(p))
				for i := range p {
					out[len(p)-1-i] = p[i]
				}
				p = out
			}
			q.Reply(p)
		}
	}()
}

// TestRawIPWaitEnds: a Call waiting alone reads the socket itself (it
// leads, homa.PullTransport), so what ends its wait without a packet must
// interrupt that read: its context, and the timeout its host's timer
// declares. No Homa host answers at the destination (its kernel has no
// socket for protocol 146), so no packet ever wakes the caller. Each case
// has its own client host, so that the other end cannot win a race on a
// stalled machine: the context's call times out only after 1000 ticks.
func TestRawIPWaitEnds(t *testing.T) {
	a, _ := pair(t)
	dial := func(timeoutTicks int) *homa.Socket {
		t.Helper()
		p := homa.DefaultParams()
		p.Tick, p.ResendTicks, p.ResendInterval, p.TimeoutTicks = timescale.D(2*time.Millisecond), 2, 2, timeoutTicks
		client, _ := hostVia(t, a, "198.18.0.1", p, nil)
		sock, err := client.Dial()
		if err != nil {
			t.Fatal(err)
		}
		return sock
	}
	dst := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.2"), 4000)
	done := make(chan error, 1)
	wait := func(what string, want error) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", what, err, want)
			}
		case <-time.After(timescale.D(30 * time.Second)): // a lost interrupt waits forever
			t.Fatalf("%s: the call still waits after 30 s", what)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	sock := dial(1000)
	go func() { _, err := sock.Call(ctx, dst, []byte("ctx")); done <- err }()
	wait("a call whose context ends", context.DeadlineExceeded)
	sock = dial(10)
	go func() { _, err := sock.Call(context.Background(), dst, []byte("timeout")); done <- err }()
	wait("a call that times out", homa.ErrTimeout)
}

// TestRawIPNoFragments: a packet above the interface's MTU is refused
// (EMSGSIZE), never fragmented by the kernel, and one that fits is sent;
// the socket writes DF on IPv4 (checkPriorities checks it on the wire).
func TestRawIPNoFragments(t *testing.T) {
	a, _ := pair(t)
	var tr *rawip.Transport
	if err := a.Do(func() (err error) { tr, err = rawip.Open(netip.MustParseAddr("198.18.0.1")); return err }); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	dst := netip.MustParseAddr("198.18.0.2")
	if err := tr.Send(dst, 3, make([]byte, 1400)); err != nil {
		t.Errorf("1400-byte packet: %v", err)
	}
	if err := tr.Send(dst, 3, make([]byte, 3000)); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("3000-byte packet at MTU 1500: %v, want EMSGSIZE", err)
	}
}

// TestRawIPRecvTimestamps: with RecvTimestamps every received packet
// carries the kernel's receive time, which lies between its sender's
// send call and the handler's call (over IPv4 and IPv6); without it the
// time is zero.
func TestRawIPRecvTimestamps(t *testing.T) {
	a, b := pair(t)
	for _, c := range []struct {
		src, dst string
		stamps   bool
	}{{"198.18.0.1", "198.18.0.2", true}, {"fd00::1", "fd00::2", true}, {"198.18.0.1", "198.18.0.2", false}} {
		var tx, rx *rawip.Transport
		if err := a.Do(func() (err error) { tx, err = rawip.Open(netip.MustParseAddr(c.src)); return err }); err != nil {
			t.Fatal(err)
		}
		if err := b.Do(func() (err error) { rx, err = rawip.Open(netip.MustParseAddr(c.dst)); return err }); err != nil {
			t.Fatal(err)
		}
		if c.stamps {
			if err := rx.RecvTimestamps(); err != nil {
				t.Fatal(err)
			}
		}
		type got struct{ at, handled time.Time }
		ch := make(chan got, 100)
		rx.SetBatchHandler(func(pkts []homa.Received) {
			now := time.Now()
			for _, r := range pkts {
				ch <- got{r.At, now}
			}
		})
		const n = 20
		pkt := make([]byte, 100) // a well-formed header is not needed
		for i := range n {
			before := time.Now()
			if err := tx.Send(rx.LocalAddr(), uint8(i%8), pkt); err != nil {
				t.Fatal(err)
			}
			select {
			case g := <-ch:
				switch {
				case !c.stamps && !g.at.IsZero():
					t.Errorf("%s: packet %d stamped %v without RecvTimestamps", c.dst, i, g.at)
				case c.stamps && (g.at.Before(before) || g.at.After(g.handled)):
					t.Errorf("%s: packet %d stamped %v, want between its send (%v) and its handling (%v)", c.dst, i, g.at, before, g.handled)
				}
			case <-time.After(timescale.D(5 * time.Second)):
				t.Fatalf("%s: packet %d not received", c.dst, i)
			}
		}
		tx.Close()
		rx.Close()
	}
}
