package agent

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

var (
	addrA  = netip.MustParseAddr("198.18.0.1")
	addrB  = netip.MustParseAddr("198.18.0.2")
	addrA6 = netip.MustParseAddr("fd00::1")
	addrB6 = netip.MustParseAddr("fd00::2")
)

// memRef starts a ref agent in process on nw and says hello with addrs.
func memRef(t *testing.T, nw *memnet.Network, req HelloRequest) (*Client, Hello, <-chan error) {
	t.Helper()
	c, done := PipeRef(t.Context(), RefOptions{Transport: func(a netip.Addr) (homa.Transport, error) { return nw.Attach(a), nil }}, ClientOptions{})
	t.Cleanup(func() { c.Close() })
	h, err := c.Hello(t.Context(), req)
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	return c, h, done
}

// startCall starts c on cli and notes it in want.
func startCall(t *testing.T, cli *Client, want map[uint64]Call, c Call) {
	t.Helper()
	want[c.ID] = c
	if err := cli.Call(t.Context(), c); err != nil {
		t.Fatalf("call %+v: %v", c, err)
	}
}

// checkCompletions reads a completion for every call in want and checks
// it succeeded with the asked sizes.
func checkCompletions(t *testing.T, cli *Client, want map[uint64]Call) {
	t.Helper()
	got := collect(t, cli, len(want))
	for id, c := range want {
		comp := got[id]
		if comp.Error != "" || comp.Request != c.Request || comp.Response != c.Response || comp.LatencyNs <= 0 {
			t.Errorf("call %+v: completion %+v", c, comp)
		}
	}
}

// collect reads n completions (or fails when the channel closes early).
func collect(t *testing.T, c *Client, n int) map[uint64]Completion {
	t.Helper()
	got := map[uint64]Completion{}
	for len(got) < n {
		comp, ok := <-c.Completions()
		if !ok {
			t.Fatalf("completions closed after %d of %d: %v", len(got), n, c.Err())
		}
		got[comp.ID] = comp
	}
	return got
}

func TestRefOverMemnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond})
		defer nw.Close()
		ctx := t.Context()
		srv, hs, srvDone := memRef(t, nw, HelloRequest{Host: "h2", Addrs: []netip.Addr{addrB, addrB6}})
		cli, hc, cliDone := memRef(t, nw, HelloRequest{Host: "h1", Addrs: []netip.Addr{addrA, addrA6}, Params: Params{"resend_ticks": 7}})
		if hs.Impl != "ref" || hs.Protocol != ProtocolVersion || !hs.Has(CapIPv6) || !hs.Has(CapGrants) || !hs.Has(CapFaults) {
			t.Errorf("server hello = %+v", hs)
		}
		if v, _ := hc.Params.Int("resend_ticks"); v != 7 {
			t.Errorf("client resend_ticks in effect = %v, want the override 7", hc.Params["resend_ticks"])
		}
		if v, _ := hs.Params.Int("unsched_bytes"); v != 40000 {
			t.Errorf("server unsched_bytes = %v, want the default 40000", hs.Params["unsched_bytes"])
		}
		if cut, ok := hs.Params.Ints("unsched_cutoffs"); !ok || len(cut) != 8 || cut[4] != 1000000 {
			t.Errorf("server unsched_cutoffs = %v", hs.Params["unsched_cutoffs"])
		}
		if err := srv.Listen(ctx, 4000); err != nil {
			t.Fatal(err)
		}
		sizes := []int{1, 11, 12, 13, 100, 1423, 1424, 1425, 39999, 40000, 40001, 100000, 500000, 1000000}
		want := map[uint64]Call{}
		id := uint64(1)
		for _, dst := range []netip.Addr{addrB, addrB6} {
			for _, req := range sizes {
				resp := req
				if req >= PayloadHeaderLen {
					resp = sizes[(int(id)*5)%len(sizes)] // a different size
					if resp < PayloadHeaderLen {
						resp = 100
					}
				}
				startCall(t, cli, want, Call{ID: id, Dst: dst, Port: 4000, Request: req, Response: resp})
				id++
			}
		}
		checkCompletions(t, cli, want)
		st, err := srv.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Served != uint64(len(want)) || st.ServedDuplicates != 0 || st.PayloadErrors != 0 || st.PacketsReceived == 0 {
			t.Errorf("server stats = %+v, want served %d", st, len(want))
		}
		cst, err := cli.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cst.Calls != uint64(len(want)) || cst.Completed != cst.Calls || cst.Failed != 0 || cst.PacketsSent == 0 || cst.Extra["sent_data"] == 0 {
			t.Errorf("client stats = %+v", cst)
		}
		for _, c := range []*Client{cli, srv} {
			if err := c.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
		}
		for _, d := range []<-chan error{cliDone, srvDone} {
			if err := <-d; err != nil {
				t.Errorf("ServeRef returned %v", err)
			}
		}
		if _, ok := <-cli.Completions(); ok {
			t.Errorf("completions not closed after shutdown")
		}
		if !errors.Is(cli.Err(), ErrAgentExited) {
			t.Errorf("after shutdown Err = %v, want ErrAgentExited", cli.Err())
		}
	})
}

func TestRefConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond, Loss: 0.01, Seed: 3})
		defer nw.Close()
		ctx := t.Context()
		srv, _, _ := memRef(t, nw, HelloRequest{Addrs: []netip.Addr{addrB}})
		cli, _, _ := memRef(t, nw, HelloRequest{Addrs: []netip.Addr{addrA}})
		if err := srv.Listen(ctx, 4000); err != nil {
			t.Fatal(err)
		}
		const n = 100
		errs := make(chan error, n)
		for i := range n {
			go func() {
				errs <- cli.Call(ctx, Call{ID: uint64(1000 + i), Dst: addrB, Port: 4000, Request: 100 + 997*i, Response: 50000 - 400*i})
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		got := collect(t, cli, n)
		for i := range n {
			c := got[uint64(1000+i)]
			if c.Error != "" || c.Request != 100+997*i || c.Response != 50000-400*i {
				t.Errorf("call %d: %+v", 1000+i, c)
			}
		}
		st, err := srv.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Served != n || st.ServedDuplicates != 0 {
			t.Errorf("server served %d (duplicates %d), want %d calls served once each", st.Served, st.ServedDuplicates, n)
		}
		cst, _ := cli.Stats(ctx)
		if cst.Calls != n || cst.Completed != n || cst.Retransmitted+st.Retransmitted == 0 {
			t.Errorf("client stats %+v; want %d completed and retransmissions under 1%% loss", cst, n)
		}
	})
}

func TestRefErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{})
		defer nw.Close()
		ctx := t.Context()
		c, _ := PipeRef(ctx, RefOptions{Transport: func(a netip.Addr) (homa.Transport, error) { return nw.Attach(a), nil }}, ClientOptions{})
		defer c.Close()
		wantErr := func(what string, err error, text string) {
			t.Helper()
			var aerr *AgentError
			if !errors.As(err, &aerr) || !strings.Contains(aerr.Message, text) {
				t.Errorf("%s: %v; want an agent error containing %q", what, err, text)
			}
		}
		wantErr("call before hello", c.Call(ctx, Call{ID: 1, Dst: addrB, Port: 1, Request: 20, Response: 20}), "send hello first")
		_, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{addrA}, Params: Params{"resend_tick": 3}})
		wantErr("unknown parameter", err, `unknown parameter "resend_tick"`)
		_, err = c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{addrA}, Faults: []string{"no-such-fault"}})
		wantErr("unknown fault", err, `unknown fault "no-such-fault"`)
		_, err = c.Hello(ctx, HelloRequest{Protocol: 2, Addrs: []netip.Addr{addrA}})
		wantErr("protocol 2", err, "protocol version 2 not supported")
		h, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{addrA}, Faults: []string{"no-grants"}, Params: Params{"link_bps": 1e9, "unsched_cutoffs": []int{0, 0, 0, 0, 0, 0, 5000, 100}}})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := h.Params.Int("link_bps"); v != 1e9 || h.Has(CapIPv6) {
			t.Errorf("hello = %+v", h)
		}
		if cut, _ := h.Params.Ints("unsched_cutoffs"); cut[6] != 5000 {
			t.Errorf("unsched_cutoffs in effect %v, want the override", cut)
		}
		_, err = c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{addrA}})
		wantErr("second hello", err, "already")
		wantErr("IPv6 call", c.Call(ctx, Call{ID: 1, Dst: addrB6, Port: 1, Request: 20, Response: 20}), "unreachable")
		wantErr("short request", c.Call(ctx, Call{ID: 1, Dst: addrB, Port: 1, Request: 5, Response: 20}), `"response" must equal "request"`)
		wantErr("too long", c.Call(ctx, Call{ID: 1, Dst: addrB, Port: 1, Request: MaxMessage + 1, Response: 20}), "must be 1..1000000")
		wantErr("client port", c.Listen(ctx, 40000), "server ports are 1..32767")
		_, err = c.request(ctx, Request{Op: "dance"})
		wantErr("unknown op", err, `unknown op "dance"`)
		// A call to a host nobody listens on times out within timeout_ms.
		if err := c.Call(ctx, Call{ID: 5, Dst: addrB, Port: 4000, Request: 20, Response: 20, TimeoutMs: 50}); err != nil {
			t.Fatal(err)
		}
		wantErr("duplicate id", c.Call(ctx, Call{ID: 5, Dst: addrB, Port: 4000, Request: 20, Response: 20}), "already in flight")
		if comp := <-c.Completions(); comp.ID != 5 || comp.Code() != CodeTimeout {
			t.Errorf("call to nobody: %+v, want a timeout", comp)
		}
	})
}

func TestRefShutdownAbortsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{})
		defer nw.Close()
		ctx := t.Context()
		c, _, done := memRef(t, nw, HelloRequest{Addrs: []netip.Addr{addrA}})
		// Nobody has addrB: the call stays in flight until shutdown.
		if err := c.Call(ctx, Call{ID: 8, Dst: addrB, Port: 4000, Request: 100, Response: 100}); err != nil {
			t.Fatal(err)
		}
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		comp, ok := <-c.Completions()
		if !ok || comp.ID != 8 || comp.Code() != CodeAborted {
			t.Errorf("call in flight at shutdown: %+v, %v; want aborted", comp, ok)
		}
		if err := <-done; err != nil {
			t.Errorf("ServeRef: %v", err)
		}
	})
}

func TestRefContextEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{})
		defer nw.Close()
		ctx, cancel := context.WithCancel(t.Context())
		c, done := PipeRef(ctx, RefOptions{Transport: func(a netip.Addr) (homa.Transport, error) { return nw.Attach(a), nil }}, ClientOptions{})
		defer c.Close()
		if _, err := c.Hello(t.Context(), HelloRequest{Addrs: []netip.Addr{addrA}}); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeRef after ctx end: %v", err)
		}
		if _, err := c.Stats(t.Context()); !errors.Is(err, ErrAgentExited) {
			t.Errorf("stats after the agent ended: %v, want ErrAgentExited", err)
		}
	})
}

// TestRefReplyDelay: a server listening with ReplyDelay answers each
// request that long after it came, and the RPC survives the wait though
// it is three times the client's timeout_ticks (100 ms): the client's
// RESENDs get BUSY (homa_resend_pkt), which keeps its RPC alive. A port
// without the option answers at once; the agent refuses a delay out of
// 0..MaxReplyDelayMs, and the tcp agent any delay.
func TestRefReplyDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond})
		defer nw.Close()
		ctx := t.Context()
		srv, hs, _ := memRef(t, nw, HelloRequest{Host: "h2", Addrs: []netip.Addr{addrB}})
		cli, _, _ := memRef(t, nw, HelloRequest{Host: "h1", Addrs: []netip.Addr{addrA}})
		if !hs.Has(CapReplyDelay) {
			t.Fatalf("hello lacks %s: %v", CapReplyDelay, hs.Capabilities)
		}
		if err := srv.Listen(ctx, 4000); err != nil {
			t.Fatal(err)
		}
		const delay = 300 * time.Millisecond
		if err := srv.ListenWith(ctx, 4001, ListenOptions{ReplyDelay: delay}); err != nil {
			t.Fatal(err)
		}
		want := map[uint64]Call{}
		startCall(t, cli, want, Call{ID: 1, Dst: addrB, Port: 4001, Request: 100, Response: 5000})
		startCall(t, cli, want, Call{ID: 2, Dst: addrB, Port: 4000, Request: 100, Response: 5000})
		got := collect(t, cli, 2)
		if c := got[1]; c.Error != "" || c.Response != 5000 || c.Latency() < delay || c.Latency() > delay+10*time.Millisecond {
			t.Errorf("delayed call: %+v (latency %v), want 5000 bytes after %v", c, c.Latency(), delay)
		}
		if c := got[2]; c.Error != "" || c.Latency() >= time.Millisecond {
			t.Errorf("call to the undelayed port: %+v (latency %v)", c, c.Latency())
		}
		st, err := srv.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Extra["sent_busy"] == 0 {
			t.Errorf("server sent no BUSY while the application worked: %v", st.Extra)
		}
		for _, d := range []int64{-1, MaxReplyDelayMs + 1} {
			_, err := srv.request(ctx, Request{Op: OpListen, Call: Call{Port: 4002}, ReplyDelayMs: d})
			var aerr *AgentError
			if !errors.As(err, &aerr) || !strings.Contains(aerr.Message, "reply_delay_ms") {
				t.Errorf("reply_delay_ms %d: %v, want an agent error naming it", d, err)
			}
		}
	})
}
