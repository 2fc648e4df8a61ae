package homa

import (
	"net/netip"
	"testing"
)

// BenchmarkResendBusySender measures the sender's work for queueing a
// whole 1,000,000-byte request (about 700 packets) for retransmission
// while all of its packets already wait there (a client told RPC_UNKNOWN
// again while its paced restart is still going out): each packet must be
// found in the queue. (A RESEND's retransmissions are not queued: they
// leave at once, resendNow.)
func BenchmarkResendBusySender(b *testing.B) {
	h, err := NewMachine(MachineConfig{Addr: netip.AddrFrom4([4]byte{198, 18, 0, 1})}, 0)
	if err != nil {
		b.Fatal(err)
	}
	port, err := h.Dial()
	if err != nil {
		b.Fatal(err)
	}
	r := &rpc{id: 1 << 40, client: true, peer: netip.AddrFrom4([4]byte{198, 18, 0, 2}), peerPort: 4000, sock: h.sockets[port], state: clientSending}
	h.setOut(r, make([]byte, 1000000))
	r.out.next, r.out.granted = r.out.length(), r.out.length()
	packets := h.queueRetransmit(r, 0, r.out.length(), 7)
	b.ReportAllocs()
	for b.Loop() {
		if q := h.queueRetransmit(r, 0, r.out.length(), 7); q != 0 {
			b.Fatalf("queued %d packets again, want 0 of %d", q, packets)
		}
	}
	b.ReportMetric(float64(packets), "packets")
}
