//go:build linux

package rawip_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
	"github.com/homatest/homatest/internal/timescale"
)

// inNS runs f on a locked OS thread switched into ns. If switching back
// fails the thread is left locked, so it dies with the goroutine.
func inNS(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("restore namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// pair builds two network namespaces joined by a veth pair (see pairDev).
// Each end has an IPv4 (198.18.0.N/24) and an IPv6 (fd00::N/64) address.
func pair(t testing.TB) (a, b netns.NsHandle) {
	a, b, _ = pairDev(t)
	return a, b
}

// pairDev builds two network namespaces joined by a veth pair, 198.18.0.1/24
// and 198.18.0.2/24, and registers their removal before creating them.
func pairDev(t testing.TB) (a, b netns.NsHandle, devA string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and raw sockets")
	}
	sfx := fmt.Sprintf("%d-%d", os.Getpid()%100000, rand.IntN(10000))
	names := []string{"ht-a-" + sfx, "ht-b-" + sfx}
	t.Cleanup(func() {
		for _, n := range names {
			netns.DeleteNamed(n) // removes the veth ends inside too
		}
	})
	var hs []netns.NsHandle
	for _, n := range names {
		var h netns.NsHandle
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			orig, _ := netns.Get()
			defer orig.Close()
			nh, err := netns.NewNamed(n) // switches this thread into it
			if err == nil {
				h = nh
			}
			if e := netns.Set(orig); e != nil {
				errc <- fmt.Errorf("restore namespace: %w", e)
				return // thread stays locked and dies
			}
			runtime.UnlockOSThread()
			errc <- err
		}()
		if err := <-errc; err != nil {
			t.Fatalf("create namespace %s: %v", n, err)
		}
		t.Cleanup(func() { h.Close() })
		hs = append(hs, h)
	}
	va, vb := "hta"+sfx, "htb"+sfx
	if len(va) > 15 {
		va, vb = va[:15], vb[:15]
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: va, MTU: 1500}, PeerName: vb}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(va); err == nil {
			netlink.LinkDel(l)
		}
	})
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("create veth %s: %v", va, err)
	}
	for i, name := range []string{va, vb} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetNsFd(l, int(hs[i])); err != nil {
			t.Fatalf("move %s: %v", name, err)
		}
		nh, err := netlink.NewHandleAt(hs[i])
		if err != nil {
			t.Fatal(err)
		}
		defer nh.Close()
		l, err = nh.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		addr, _ := netlink.ParseAddr(fmt.Sprintf("198.18.0.%d/24", i+1))
		if err := nh.AddrAdd(l, addr); err != nil {
			t.Fatalf("address %s: %v", name, err)
		}
		// IPv6 too, without duplicate address detection (usable at once).
		a6, _ := netlink.ParseAddr(fmt.Sprintf("fd00::%d/64", i+1))
		a6.Flags = unix.IFA_F_NODAD
		if err := nh.AddrAdd(l, a6); err != nil {
			t.Fatalf("IPv6 address %s: %v", name, err)
		}
		if err := nh.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		if lo, err := nh.LinkByName("lo"); err == nil {
			nh.LinkSetUp(lo)
		}
	}
	return hs[0], hs[1], va
}

// host opens a raw-IP host at addr in ns with HomaModule's default
// parameters (for the benchmarks).
func host(t testing.TB, ns netns.NsHandle, addr string) *homa.Host {
	t.Helper()
	h, _ := hostVia(t, ns, addr, homa.DefaultParams(), nil)
	return h
}

// hostVia opens a raw-IP host at addr in ns with parameters p, its
// transport wrapped by wrap (if not nil); it returns the host and the
// (wrapped) transport.
func hostVia(t testing.TB, ns netns.NsHandle, addr string, p homa.Params, wrap func(homa.Transport) homa.Transport) (*homa.Host, homa.Transport) {
	t.Helper()
	var rt *rawip.Transport
	if err := inNS(ns, func() (err error) {
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
	a, b, dev := pairDev(t)
	stop := capture(t, a, dev)
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

func pairB(b *testing.B) (netns.NsHandle, netns.NsHandle) { return pair(b) }

func hostB(b *testing.B, ns netns.NsHandle, addr string) *homa.Host { return host(b, ns, addr) }

// TestRawIPv6 runs RPCs over raw IPv6 sockets between the namespaces:
// payloads of 1 B to 1,000,000 B and 100 concurrent RPCs; every packet on
// the wire has priority<<5 in its traffic class (HomaModule main) for the
// priority its sender chose.
func TestRawIPv6(t *testing.T) {
	a, b, dev := pairDev(t)
	stop := capture(t, a, dev)
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
