package agent

import (
	"bufio"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/internal/timescale"
)

var loop4 = netip.MustParseAddr("127.0.0.1")

// tcpAgent starts a tcp agent in process and says hello with addrs.
func tcpAgent(t *testing.T, addrs ...netip.Addr) (*Client, Hello) {
	t.Helper()
	c, done := PipeTCP(t.Context(), TCPOptions{}, ClientOptions{})
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	h, err := c.Hello(t.Context(), HelloRequest{Host: "h", Addrs: addrs})
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	return c, h
}

// freeTCPPort returns a TCP port nothing listens on at the moment on
// 127.0.0.1.
func freeTCPPort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

func TestTCPAgentCalls(t *testing.T) {
	ctx := t.Context()
	srv, hs := tcpAgent(t, loop4)
	cli, _ := tcpAgent(t, loop4)
	if hs.Impl != "tcp" || hs.Protocol != ProtocolVersion || !hs.Has(CapIPv4) || !hs.Has(CapTimeouts) || hs.Has(CapGrants) || hs.Has(CapPriorities) || hs.Has(CapIPv6) {
		t.Errorf("hello = %+v, want impl tcp with ipv4 and timeouts only", hs)
	}
	port := freeTCPPort(t)
	if err := srv.ListenWith(ctx, port, ListenOptions{ReplyDelay: time.Second}); err == nil || !strings.Contains(err.Error(), CapReplyDelay) || hs.Has(CapReplyDelay) {
		t.Errorf("listen with a reply delay: %v (capabilities %v), want refused: the tcp agent answers at once", err, hs.Capabilities)
	}
	if err := srv.Listen(ctx, port); err != nil {
		t.Fatal(err)
	}
	// Every size at once: all share one connection, the 1 MB ones
	// interleaved with 1-byte ones.
	sizes := []int{1, 11, 12, 13, 100, 1423, 1424, 1425, 39999, 40000, 40001, 100000, 500000, 1000000}
	want := map[uint64]Call{}
	id := uint64(1)
	for round := 0; round < 3; round++ {
		for i, req := range sizes {
			resp := req
			if req >= PayloadHeaderLen {
				resp = sizes[(i*5+round)%len(sizes)]
				if resp < PayloadHeaderLen {
					resp = 100
				}
			}
			startCall(t, cli, want, Call{ID: id, Dst: loop4, Port: port, Request: req, Response: resp})
			id++
		}
	}
	checkCompletions(t, cli, want)
	st, err := srv.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Served != uint64(len(want)) || st.ServedDuplicates != 0 || st.PayloadErrors != 0 || st.Extra["connections_accepted"] != 1 {
		t.Errorf("server stats = %+v, want served %d on 1 connection", st, len(want))
	}
	cst, err := cli.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cst.Calls != uint64(len(want)) || cst.Completed != cst.Calls || cst.Failed != 0 || cst.Extra["connections_dialled"] != 1 {
		t.Errorf("client stats = %+v, want %d calls over 1 connection", cst, len(want))
	}
}

// TestTCPAgentBadPayload: a server that answers with wrong bytes gives the
// call code "payload".
func TestTCPAgentBadPayload(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		id, req, err := readFrame(br)
		if err != nil {
			return
		}
		n, _, _ := PayloadHeader(req)
		resp := make([]byte, n)
		FillPayload(resp, id, n)
		resp[len(resp)-1] ^= 0xff
		bw := bufio.NewWriter(c)
		writeFrame(bw, id, resp)
		readFrame(br) // wait for the client to go
	}()
	cli, _ := tcpAgent(t, loop4)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	if err := cli.Call(t.Context(), Call{ID: 9, Dst: loop4, Port: port, Request: 100, Response: 200}); err != nil {
		t.Fatal(err)
	}
	comp := collect(t, cli, 1)[9]
	if comp.Code() != CodePayload || !strings.Contains(comp.Error, "byte 199 of 200") {
		t.Errorf("completion = %+v, want code payload at byte 199", comp)
	}
}

// TestTCPAgentUnreachable: a call to a port nobody listens on completes
// with code "unreachable", and the next call dials again.
func TestTCPAgentUnreachable(t *testing.T) {
	ctx := t.Context()
	cli, _ := tcpAgent(t, loop4)
	port := freeTCPPort(t)
	if err := cli.Call(ctx, Call{ID: 1, Dst: loop4, Port: port, Request: 100, Response: 100, TimeoutMs: int64(timescale.D(5*time.Second) / time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	comp := collect(t, cli, 1)[1]
	if comp.Code() != CodeUnreachable {
		t.Fatalf("completion = %+v, want code unreachable", comp)
	}
	srv, _ := tcpAgent(t, loop4)
	if err := srv.Listen(ctx, port); err != nil {
		t.Fatal(err)
	}
	if err := cli.Call(ctx, Call{ID: 2, Dst: loop4, Port: port, Request: 100, Response: 100}); err != nil {
		t.Fatal(err)
	}
	if comp := collect(t, cli, 1)[2]; comp.Error != "" {
		t.Errorf("call after the server came up: %+v", comp)
	}
}

// TestTCPAgentHello: params and faults are refused; shutdown aborts a call
// waiting on a server that never answers.
func TestTCPAgentHello(t *testing.T) {
	ctx := t.Context()
	for _, req := range []HelloRequest{
		{Addrs: []netip.Addr{loop4}, Params: Params{"tick_ns": 1}},
		{Addrs: []netip.Addr{loop4}, Faults: []string{"no-grants"}},
		{},
	} {
		c, done := PipeTCP(ctx, TCPOptions{}, ClientOptions{})
		if _, err := c.Hello(ctx, req); err == nil {
			t.Errorf("hello %+v: no error", req)
		}
		c.Close()
		<-done
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, _ := tcpAgent(t, loop4)
	if err := cli.Call(ctx, Call{ID: 3, Dst: loop4, Port: uint16(ln.Addr().(*net.TCPAddr).Port), Request: 50, Response: 50}); err != nil {
		t.Fatal(err)
	}
	if err := cli.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if comp := collect(t, cli, 1)[3]; comp.Code() != CodeAborted {
		t.Errorf("call at shutdown: %+v, want code aborted", comp)
	}
}
