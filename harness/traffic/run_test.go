package traffic

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// refHosts starts n reference agents in this process on one in-memory
// network and says hello to each (addresses 198.18.2.1, .2, …).
func refHosts(t *testing.T, n int, nc memnet.Config) []Endpoint {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	net := memnet.New(nc)
	t.Cleanup(func() { cancel(); net.Close() })
	var hosts []Endpoint
	for i := range n {
		a := netip.AddrFrom4([4]byte{198, 18, 2, byte(1 + i)})
		c, _ := agent.PipeRef(ctx, agent.RefOptions{Transport: func(netip.Addr) (homa.Transport, error) { return net.Attach(a), nil }},
			agent.ClientOptions{})
		t.Cleanup(func() { c.Close() })
		// A 10 ms tick keeps tick-counted timers from firing early on a
		// loaded machine (see conformance's benches).
		if _, err := c.Hello(ctx, agent.HelloRequest{Host: fmt.Sprintf("h%d", i+1), Addrs: []netip.Addr{a},
			Params: agent.Params{"tick_ns": int64(10e6)}}); err != nil {
			t.Fatalf("hello h%d: %v", i+1, err)
		}
		hosts = append(hosts, Endpoint{Name: fmt.Sprintf("h%d", i+1), Addr: a, Client: c})
	}
	return hosts
}

func mustDist(t *testing.T, name string) workload.Dist {
	t.Helper()
	d, err := workload.Parse(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOpenLoopManyToOne(t *testing.T) {
	hosts := refHosts(t, 3, memnet.Config{Rate: 10e9})
	var progress atomic.Int64
	cfg := Config{Hosts: hosts, Requests: mustDist(t, "w3"), Load: 0.5, LinkBps: 1e9, Count: 200, Seed: 9,
		Progress: func(done, total int) {
			if total != 200 {
				t.Errorf("progress total %d, want 200", total)
			}
			progress.Store(int64(done))
		}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 200 || res.Failed() != 0 {
		t.Fatalf("%d records, %d failed (first: %+v)", len(res.Records), res.Failed(), firstFailure(res))
	}
	if progress.Load() != 200 {
		t.Errorf("last progress %d, want 200", progress.Load())
	}
	var served uint64
	for i, rec := range res.Records {
		if rec.Server != 2 || rec.Client == 2 || rec.Seq != i {
			t.Fatalf("record %d: %+v: want server 2 (the last host), a client 0..1, seq %d", i, rec, i)
		}
		if rec.Latency <= 0 {
			t.Fatalf("record %d has no latency", i)
		}
		if i > 0 && rec.At < res.Records[i-1].At {
			t.Fatalf("record %d due at %v before record %d at %v", i, rec.At, i-1, res.Records[i-1].At)
		}
	}
	served = res.Stats[2].Served
	if served != 200 || res.Stats[0].Completed+res.Stats[1].Completed != 200 {
		t.Fatalf("server executed %d requests, clients completed %d+%d: want 200", served, res.Stats[0].Completed, res.Stats[1].Completed)
	}
	// The offered load: W3 at 50% of 1 Gbit/s is about 23,000 RPC/s, so
	// 200 RPCs take about 9 ms; the measured rate of so few arrivals is
	// within a factor of 2 of the target.
	if res.OfferedBps < 0.25e9 || res.OfferedBps > 1e9 {
		t.Errorf("offered %.3g bit/s, want about 0.5e9", res.OfferedBps)
	}
}

// The same seed issues the same RPCs (sizes, clients, arrival times); a
// different seed does not.
func TestSequenceRepeats(t *testing.T) {
	hosts := refHosts(t, 4, memnet.Config{})
	seq := func(seed uint64) []RPC {
		cfg := Config{Hosts: hosts, Pattern: AllToAll, Requests: mustDist(t, "w4"), Load: 0.8, LinkBps: 1e10, Count: 50, Seed: seed}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		s, err := newSequence(&cfg, len(cfg.Hosts))
		if err != nil {
			t.Fatal(err)
		}
		var out []RPC
		for {
			r, ok := s.Next(-1)
			if !ok {
				return out
			}
			if r.Client == r.Server || r.Server < 0 || r.Server > 3 {
				t.Fatalf("all-to-all RPC %+v", r)
			}
			out = append(out, r)
		}
	}
	a, b, c := seq(1), seq(1), seq(2)
	if len(a) != 50 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("seed 1 gave %d RPCs, and a different sequence the second time", len(a))
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 1 and 2 gave the same sequence")
	}
	servers := map[int]bool{}
	for _, r := range a {
		servers[r.Server] = true
	}
	if len(servers) != 4 {
		t.Errorf("all-to-all used servers %v, want all 4 hosts", servers)
	}
}

func TestClosedLoopAllToAll(t *testing.T) {
	hosts := refHosts(t, 3, memnet.Config{Rate: 10e9})
	res, err := Run(context.Background(), Config{Hosts: hosts, Pattern: AllToAll, Requests: mustDist(t, "w2"),
		Responses: mustDist(t, "w2"), Concurrency: 3, Count: 150, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 150 || res.Failed() != 0 {
		t.Fatalf("%d records, %d failed (first: %+v)", len(res.Records), res.Failed(), firstFailure(res))
	}
	var served uint64
	for _, st := range res.Stats {
		served += st.Served
		if st.Served == 0 {
			t.Errorf("a host served nothing in all-to-all: %+v", res.Stats)
		}
		// Count is shared among the clients however the scheduler ran
		// their workers (a loaded machine once let one host take 149).
		if st.Calls != 50 {
			t.Errorf("a host made %d calls, want its share 50 of 150: %+v", st.Calls, res.Stats)
		}
	}
	if served != 150 {
		t.Errorf("%d requests executed, want 150", served)
	}
}

func TestExplicitListAndTimeout(t *testing.T) {
	// h3 is unreachable: every packet to or from it is dropped.
	h3 := netip.AddrFrom4([4]byte{198, 18, 2, 3})
	hosts := refHosts(t, 3, memnet.Config{Drop: func(src, dst netip.Addr, _ uint8, _ []byte) bool { return src == h3 || dst == h3 }})
	rpcs := []RPC{
		{At: 2 * time.Millisecond, Client: 0, Server: 1, Request: 5000, Response: 7},
		{At: 0, Client: 1, Server: 0, Request: 3, Response: 3},
		{At: time.Millisecond, Client: 0, Server: 2, Request: 100, Response: 100},
	}
	res, err := Run(context.Background(), Config{Hosts: hosts, RPCs: rpcs, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 3 {
		t.Fatalf("%d records", len(res.Records))
	}
	// Issued in time order: the list's second RPC first.
	want := []struct{ client, server, req, resp int }{{1, 0, 3, 3}, {0, 2, 100, 100}, {0, 1, 5000, 7}}
	for i, w := range want {
		r := res.Records[i]
		if r.Client != w.client || r.Server != w.server || r.Request != w.req || r.Response != w.resp {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if res.Records[0].Err != "" || res.Records[2].Err != "" {
		t.Errorf("RPCs between h1 and h2 failed: %q, %q", res.Records[0].Err, res.Records[2].Err)
	}
	if !strings.HasPrefix(res.Records[1].Err, "silent: no done event within 300ms") {
		t.Errorf("RPC to the unreachable h3: err %q, want silent", res.Records[1].Err)
	}
	if res.Failed() != 1 {
		t.Errorf("%d failed, want 1", res.Failed())
	}
}

func TestContextEnds(t *testing.T) {
	hosts := refHosts(t, 2, memnet.Config{})
	// The context ends once three RPCs completed, however slowly a loaded
	// machine got there, so a partial result exists.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ended time.Time
	res, err := Run(ctx, Config{Hosts: hosts, Requests: mustDist(t, "w1"), Load: 0.01, LinkBps: 1e9, Duration: time.Hour,
		Progress: func(done, _ int) {
			if done == 3 {
				ended = time.Now()
				cancel()
			}
		}})
	if err != context.Canceled {
		t.Fatalf("err %v, want the context's", err)
	}
	if took := time.Since(ended); took > 5*time.Second {
		t.Errorf("Run took %v after its context ended", took)
	}
	if res == nil || len(res.Records) == 0 {
		t.Fatal("no partial result")
	}
}

func TestConfigErrors(t *testing.T) {
	hosts := refHosts(t, 2, memnet.Config{})
	w1 := mustDist(t, "w1")
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Hosts: hosts[:1], Requests: w1, Count: 1, Concurrency: 1}, "need at least 2"},
		{Config{Hosts: hosts, Requests: w1, Count: 1}, "exactly one of load"},
		{Config{Hosts: hosts, Requests: w1, Count: 1, Load: 0.5, Concurrency: 1}, "exactly one of load"},
		{Config{Hosts: hosts, Requests: w1, Count: 1, Load: 4.5, LinkBps: 1e9}, "load 4.5"},
		{Config{Hosts: hosts, Requests: w1, Count: 1, Load: 0.5}, "link rate"},
		{Config{Hosts: hosts, Requests: w1, Concurrency: 1}, "duration or a count"},
		{Config{Hosts: hosts, Count: 1, Concurrency: 1}, "no request size distribution"},
		{Config{Hosts: hosts, Pattern: "ring", Requests: w1, Count: 1, Concurrency: 1}, `pattern "ring"`},
		{Config{Hosts: hosts, RPCs: []RPC{{Client: 0, Server: 0, Request: 1, Response: 1}}}, "calls itself"},
		{Config{Hosts: hosts, RPCs: []RPC{{Client: 0, Server: 5, Request: 1, Response: 1}}}, "not a host index"},
		{Config{Hosts: hosts, RPCs: []RPC{{Client: 0, Server: 1, Request: 2000000, Response: 1}}}, "must be 1..1000000"},
	} {
		_, err := Run(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func firstFailure(res *Result) *Record {
	for i := range res.Records {
		if res.Records[i].Err != "" {
			return &res.Records[i]
		}
	}
	return nil
}

func BenchmarkSequence(b *testing.B) {
	d, _ := workload.Parse("w4")
	hosts := make([]Endpoint, 4)
	cfg := Config{Hosts: hosts, Pattern: AllToAll, Requests: d, Load: 0.5, LinkBps: 1e9, Count: 1 << 62, Seed: 1, ResponseBytes: 100}
	s, err := newSequence(&cfg, len(cfg.Hosts))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Next(-1)
	}
}

func TestClosedLoopCountShared(t *testing.T) {
	// 4 hosts many-to-one: 3 clients share 10 RPCs as 4, 3, 3, whatever
	// order their slots free in.
	s, err := NewSequence(Config{Requests: mustDist(t, "w2"), Concurrency: 2, Count: 10, Seed: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int, 3)
	for _, c := range []int{2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 1, 1, 1, 1} {
		if r, ok := s.Next(c); ok {
			if r.Client != c || r.Server != 3 {
				t.Fatalf("Next(%d) gave %+v", c, r)
			}
			got[c]++
		}
	}
	if fmt.Sprint(got) != "[4 3 3]" {
		t.Fatalf("clients issued %v, want [4 3 3]", got)
	}
	if _, ok := s.Next(-1); ok {
		t.Fatal("Next after Count RPCs still issued one")
	}
}
