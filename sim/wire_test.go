package sim_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec"
)

// starvedW4 runs the conformance suite's WORKLOAD-w4 (W4 capped at 250 KB
// from two clients to one server over links losing 1%, the passive
// specs' 10 ms tick) on hosts whose packets cost cost each on one core,
// captured at the protocol code or at the switch ports (wire), and
// returns the MUST findings of the hosts' views by rule, judged with the
// tolerances given.
func starvedW4(t *testing.T, cost time.Duration, wire bool, slack, jitter, reaction time.Duration) map[string]int {
	t.Helper()
	p, err := agent.RefParams(agent.Params{"link_bps": int64(10e9), "tick_ns": int64(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Seed: 12, Cost: &sim.Cost{PerPacket: cost, Cores: 1},
		Link: netem.LinkConfig{Loss: netem.LossConfig{Model: "random", Probability: 0.01}}})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*sim.Host
	var addrs []netip.Addr
	for i := range 3 {
		h, err := s.AddHost(sim.HostConfig{Addr: addr(i + 1), Params: p})
		if err != nil {
			t.Fatal(err)
		}
		hosts, addrs = append(hosts, h), append(addrs, h.Addr())
	}
	dir := t.TempDir()
	sf, _ := os.Create(filepath.Join(dir, "sent.pcapng"))
	df, _ := os.Create(filepath.Join(dir, "delivered.pcapng"))
	if err := s.Capture(sim.CaptureConfig{Sent: sf, Delivered: df, Wire: wire}); err != nil {
		t.Fatal(err)
	}
	o := workload.DefaultOptions
	o.MaxLength = 250000
	req, _ := workload.ParseOptions("w4", o)
	o.MaxLength = 100000
	resp, _ := workload.ParseOptions("w4", o)
	tr, err := s.StartTraffic(hosts, traffic.Config{Pattern: traffic.ManyToOne, Port: 4000, Requests: req, Responses: resp,
		Concurrency: 4, Count: 60, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	s.RunWhile(func() bool { return !tr.Done() })
	s.RunFor(500 * time.Millisecond) // NEED_ACKs and ACKs
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	df.Close()
	for _, r := range tr.Result().Records {
		if r.Err != "" {
			t.Fatalf("RPC %d: %s", r.Seq, r.Err)
		}
	}
	sent, err := pcap.ReadEvents(sf.Name(), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delivered, err := pcap.ReadEvents(df.Name(), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := agent.ParamsOf(p).Spec("linux")
	if err != nil {
		t.Fatal(err)
	}
	sp.Slack, sp.Jitter, sp.Reaction = slack, jitter, reaction
	rules, err := spec.Select(spec.Rules(), "HOMA-*", spec.Must, "linux")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	for _, hr := range (spec.Judge{Profile: "linux", Params: sp, Rules: rules}).Hosts(sent, delivered, addrs) {
		for _, v := range hr.Violations {
			found[v.Rule]++
		}
	}
	return found
}

// TestWireViewShowsProcessingLag: hosts slower than their traffic (200 µs
// per packet on one core: 5,000 packets/s against W4's bursts of 175)
// act on packets tens of ms after the packets reached them. Judged where
// the protocol took the packets in, the same run keeps every MUST rule
// exactly; judged on the switch ports' capture (CaptureConfig.Wire), with
// the tolerances of the namespace benches (three and two 10 ms ticks, a
// 1 ms reaction), a server asks for ACKs it has already been sent:
// HOMA-ACK-003, the finding of homatest run --ns-workloads on this 2-core
// machine, from the reference implementation unchanged. At 2.5 µs per
// packet (sim.DefaultCost's) the wire view is clean too: the finding is
// the lag, not the protocol.
func TestWireViewShowsProcessingLag(t *testing.T) {
	const tick = 10 * time.Millisecond
	slow := 200 * time.Microsecond
	if got := starvedW4(t, slow, false, sim.ViewTolerance, sim.ViewTolerance, 0); len(got) != 0 {
		t.Errorf("slow hosts, protocol view, exact timing: findings %v, want none", got)
	}
	if got := starvedW4(t, slow, true, 3*tick, 2*tick, time.Millisecond); got["HOMA-ACK-003"] == 0 {
		t.Errorf("slow hosts, wire view: findings %v, want HOMA-ACK-003 (NEED_ACK after an ACK that waits in the server's backlog)", got)
	}
	if got := starvedW4(t, sim.DefaultCost.PerPacket, true, 3*tick, 2*tick, time.Millisecond); len(got) != 0 {
		t.Errorf("default cost, wire view: findings %v, want none", got)
	}
}
