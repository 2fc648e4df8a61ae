//go:build linux

package rawip_test

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
)

// BenchmarkEchoFloor measures what BenchmarkEcho100B's transport costs
// without the protocol: 150-byte packets of IP protocol 146 echoed by a
// rawip.Transport whose batch handler sends each one back at once, in the
// same namespaces as TCP's 100-byte echo (the baseline), in alternating
// blocks of 100 round trips. The client either reads the reply in the
// calling goroutine (direct: a plain raw socket, as Go's TCP client
// reads, and as homa.Host's callers read through Transport.Pull) or
// through a reader goroutine that hands it over a channel (hopped: the
// same sockets and system calls, plus the handoff homa.Host's callers paid
// before they read the socket themselves), or is a rawip.Transport with a
// batch handler (transport: its reader goroutine, then the handoff). Metrics per variant: X/tcp, TCP's time
// over X's (a rate ratio, above 1 when X is faster), and X-cpu-ns/rt,
// the process's CPU time per round trip in X's blocks.
func BenchmarkEchoFloor(b *testing.B) {
	cli, srv := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	pkt := make([]byte, 150)
	pkt[0] = 0x10 // a DATA type byte; the echo does not parse it
	dst := &net.IPAddr{IP: srv.AsSlice()}
	// echoServer makes srv in on a raw-IP echo for protocol 146.
	echoServer := func(on *harness.Host) {
		var st *rawip.Transport
		if err := on.Do(func() (err error) { st, err = rawip.Open(srv); return err }); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		st.SetBatchHandler(func(pkts []homa.Received) {
			for _, r := range pkts {
				_ = st.Send(r.Src, 0, r.Packet)
			}
		})
	}
	// rawClient opens a plain raw socket for protocol 146 at cli in on.
	rawClient := func(on *harness.Host) net.PacketConn {
		var pc net.PacketConn
		if err := on.Do(func() (err error) { pc, err = net.ListenPacket("ip4:146", cli.String()); return err }); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { pc.Close() })
		return pc
	}

	// TCP and direct share one pair of namespaces; hopped and transport
	// get their own, as raw sockets in one namespace all see each
	// protocol-146 packet.
	a, bb := pairB(b)
	echoServer(bb)
	pc := rawClient(a)
	rb := make([]byte, 2048)
	direct := func() error {
		if _, err := pc.WriteTo(pkt, dst); err != nil {
			return err
		}
		_, _, err := pc.ReadFrom(rb)
		return err
	}

	a2, bb2 := pairB(b)
	echoServer(bb2)
	pc2 := rawClient(a2)
	got := make(chan error, 1)
	go func() {
		rb := make([]byte, 2048)
		for {
			_, _, err := pc2.ReadFrom(rb)
			got <- err
			if err != nil {
				return
			}
		}
	}()
	hopped := func() error {
		if _, err := pc2.WriteTo(pkt, dst); err != nil {
			return err
		}
		return <-got
	}

	a3, bb3 := pairB(b)
	echoServer(bb3)
	var ct *rawip.Transport
	if err := a3.Do(func() (err error) { ct, err = rawip.Open(cli); return err }); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ct.Close() })
	got3 := make(chan struct{}, 1)
	ct.SetBatchHandler(func([]homa.Received) { got3 <- struct{}{} })
	transport := func() error {
		if err := ct.Send(srv, 0, pkt); err != nil {
			return err
		}
		<-got3
		return nil
	}

	var ln net.Listener
	if err := bb.Do(func() (err error) { ln, err = net.Listen("tcp4", srv.String()+":4000"); return err }); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, 100)
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			conn.Write(buf)
		}
	}()
	var conn net.Conn
	if err := a.Do(func() (err error) { conn, err = net.Dial("tcp4", srv.String()+":4000"); return err }); err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req, resp := make([]byte, 100), make([]byte, 100)
	tcp := func() error {
		if _, err := conn.Write(req); err != nil {
			return err
		}
		_, err := io.ReadFull(conn, resp)
		return err
	}

	names := []string{"tcp", "direct", "hopped", "transport"}
	rts := []func() error{tcp, direct, hopped, transport}
	spent := make([]time.Duration, len(rts))
	cpu := make([]time.Duration, len(rts))
	run := func(j, k int) {
		t0, c0 := time.Now(), cpuTime(b)
		for range k {
			if err := rts[j](); err != nil {
				b.Fatalf("%s: %v", names[j], err)
			}
		}
		spent[j] += time.Since(t0)
		cpu[j] += cpuTime(b) - c0
	}
	for j := range rts { // warm up: first packets, ARP
		run(j, 10)
		spent[j], cpu[j] = 0, 0
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += echoBlock {
		k := min(echoBlock, b.N-done)
		for i := range rts {
			run((i+done/echoBlock)%len(rts), k) // rotate which goes first
		}
	}
	for j, n := range names {
		b.ReportMetric(float64(cpu[j].Nanoseconds())/float64(b.N), n+"-cpu-ns/rt")
		if j > 0 {
			b.ReportMetric(float64(spent[0])/float64(spent[j]), n+"/tcp")
		}
	}
}
