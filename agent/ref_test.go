package agent

import (
	"errors"
	"net/netip"
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
				c := Call{ID: id, Dst: dst, Port: 4000, Request: req, Response: resp}
				want[id] = c
				if err := cli.Call(ctx, c); err != nil {
					t.Fatalf("call %+v: %v", c, err)
				}
				id++
			}
		}
		got := collect(t, cli, len(want))
		for id, c := range want {
			comp := got[id]
			if comp.Error != "" || comp.Request != c.Request || comp.Response != c.Response || comp.LatencyNs <= 0 {
				t.Errorf("call %+v: completion %+v", c, comp)
			}
		}
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
