//go:build unix

package homa_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
)

// BenchmarkMachineEcho100B measures the protocol core alone: 100-byte
// echo RPCs between two Machines whose packets are handed from one to the
// other directly (no Host, goroutine, lock or system call), each round
// trip a Call, two DATA packets built and handled, a Reply and the two
// events. It is the share of BenchmarkEcho100B's CPU per RPC (homa/rawip)
// that is the protocol's own. The virtual clock advances 20 µs per RPC
// (about BenchmarkEcho100B's rate), so a timer pass comes every 50 RPCs
// and the server's memory of acked RPCs (kept 10 timeouts long) holds
// about 50,000. Metrics: cpu-ns/rpc, the process's CPU time per RPC (ns/op
// is wall time, which a loaded machine stretches), and allocations.
func BenchmarkMachineEcho100B(b *testing.B) {
	homa.SetQueueChecks(false) // the tests' O(n) check per input
	defer homa.SetQueueChecks(true)
	cli, srv := netip.AddrFrom4([4]byte{198, 18, 0, 1}), netip.AddrFrom4([4]byte{198, 18, 0, 2})
	mc, err := homa.NewMachine(homa.MachineConfig{Addr: cli}, 0)
	if err != nil {
		b.Fatal(err)
	}
	ms, err := homa.NewMachine(homa.MachineConfig{Addr: srv}, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := ms.Listen(4000); err != nil {
		b.Fatal(err)
	}
	port, err := mc.Dial()
	if err != nil {
		b.Fatal(err)
	}
	dst := netip.AddrPortFrom(srv, 4000)
	// deliver hands every packet from's machine wants sent to to's.
	deliver := func(now time.Duration, from, to *homa.Machine, src netip.Addr) {
		for {
			t, ok := from.PollTransmit(now)
			if !ok {
				return
			}
			to.HandlePacket(now, src, t.Prio, t.Packet)
			from.Reuse(t.Frame())
		}
	}
	req := make([]byte, 100)
	var now time.Duration
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		now += 20 * time.Microsecond // a virtual clock at 50,000 RPCs per second
		if _, err := mc.Call(now, port, dst, req); err != nil {
			b.Fatal(err)
		}
		deliver(now, mc, ms, cli)
		e, ok := ms.PollEvent()
		if !ok || e.Kind != homa.EventRequest {
			b.Fatalf("server event %+v, %v: want a request", e, ok)
		}
		if e, ok := ms.PollEvent(); ok { // PollEvent is called until it says no
			b.Fatalf("server event %+v: want none", e)
		}
		if err := ms.Reply(now, e.Request, e.Payload); err != nil {
			b.Fatal(err)
		}
		deliver(now, ms, mc, srv)
		if e, ok := mc.PollEvent(); !ok || e.Kind != homa.EventCallDone || e.Err != nil || len(e.Payload) != len(req) {
			b.Fatalf("client event %+v, %v: want the response", e, ok)
		}
		if e, ok := mc.PollEvent(); ok {
			b.Fatalf("client event %+v: want none", e)
		}
		for _, m := range []*homa.Machine{mc, ms} {
			if d, ok := m.Deadline(); ok && now >= d {
				m.HandleTimeout(now)
			}
		}
		deliver(now, mc, ms, cli) // what the timer passes sent, NEED_ACK and ACK
		deliver(now, ms, mc, srv)
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/rpc")
}
