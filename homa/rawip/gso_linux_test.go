package rawip_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa/rawip"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec/wire"
)

// TestRawIPReceivesGSOFrames plays a kernel Homa client: a raw socket in
// namespace h1 sends a 20,000-byte request as HomaModule's multi-segment
// frames (6 segments of 1424 bytes with interleaved seg headers; IP
// fragments them on the 1500-byte veth, the receiving kernel reassembles
// them, so the reference server's raw socket reads each frame whole, as it
// does when a GSO frame crosses veths unsegmented). The server in h2 must
// get every byte right and answer.
func TestRawIPReceivesGSOFrames(t *testing.T) {
	a, b := pair(t)
	server := host(t, b, "198.18.0.2")
	s, err := server.Listen(4000)
	if err != nil {
		t.Fatal(err)
	}
	const msgLen = 20000
	got := make(chan []byte, 1)
	go func() {
		q, err := s.Receive(context.Background())
		if err != nil {
			return
		}
		got <- q.Payload()
		q.Reply([]byte("ok"))
	}()
	var fd int
	if err := a.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, wire.IPProtoHoma)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DONT); err != nil {
		t.Fatal(err)
	}
	dst := &unix.SockaddrInet4{Addr: [4]byte{198, 18, 0, 2}}
	const id = 1000
	for off := 0; off < msgLen; off += 6 * 1424 {
		if err := unix.Sendto(fd, rawip.GSOFrame(t, id, msgLen, off, 1424, 6), 0, dst); err != nil {
			t.Fatalf("send frame at %d: %v", off, err)
		}
	}
	select {
	case p := <-got:
		if len(p) != msgLen {
			t.Fatalf("server got %d bytes, want %d", len(p), msgLen)
		}
		for i, c := range p {
			if c != rawip.MsgByte(i) {
				t.Fatalf("request byte %d is %#x, want %#x", i, c, rawip.MsgByte(i))
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never received the request sent as multi-segment frames")
	}
	// The response comes back to the raw client as ordinary DATA.
	tv := unix.NsecToTimeval(int64(10 * time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 65536)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		ihl := int(buf[0]&0x0f) * 4
		p, err := wire.Decode(buf[ihl:n], wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil || p.Type() != wire.TypeData || p.SenderID() != id+1 {
			continue
		}
		if d := p.Data(); string(d.Payload()) != "ok" || d.MessageLength() != 2 {
			t.Errorf("response %q (length %d), want \"ok\"", d.Payload(), d.MessageLength())
		}
		return
	}
}

// TestRawIPOffloadsOn runs ref to ref over veths whose offloads stay on
// (tx checksum, TSO, GSO: harness.Config.Offloads), 1 B to 1 MB each
// way: every payload byte right.
func TestRawIPOffloadsOn(t *testing.T) {
	a, b := pairWith(t, harness.Config{Offloads: true})
	client, _ := hostVia(t, a, "198.18.0.1", userSpaceParams(), nil)
	server, _ := hostVia(t, b, "198.18.0.2", userSpaceParams(), nil)
	echoOn(t, server, true)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	ctx, cancel := context.WithTimeout(context.Background(), timescale.D(60*time.Second))
	defer cancel()
	for _, n := range []int{1, 1424, 1425, 40001, 100000, 1000000} {
		req := make([]byte, n)
		for i := range req {
			req[i] = byte(i*13 + i/977)
		}
		resp, err := c.Call(ctx, dst, req)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if len(resp) != n {
			t.Fatalf("%d bytes: response of %d", n, len(resp))
		}
		for i := range req {
			if resp[n-1-i] != req[i] {
				t.Fatalf("%d bytes: response differs at %d", n, i)
			}
		}
	}
}
