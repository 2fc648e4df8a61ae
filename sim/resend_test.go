package sim_test

import (
	"testing"
	"time"

	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec/wire"
)

// loadedRun runs three clients sending W4 requests (100-byte responses)
// to one server at load (a fraction of the server's 1 Gbit/s downlink,
// Poisson arrivals) for d of simulated time, with the parameters of the
// w4-half-load scenario (ParamsForLink(1e9), 10 ms tick), the server's
// faults set to faults, and no loss.
func loadedRun(t *testing.T, load float64, d time.Duration, faults []homa.Fault) loaded {
	t.Helper()
	rate := netem.Gbit
	s, err := sim.New(sim.Config{Seed: 1, Link: netem.LinkConfig{Rate: rate, Priorities: 8}})
	if err != nil {
		t.Fatal(err)
	}
	p := homa.ParamsForLink(int64(rate))
	p.Tick = 10 * time.Millisecond
	var hosts []*sim.Host
	for i := range 4 {
		cfg := sim.HostConfig{Addr: addr(i + 1), Params: p}
		if i == 3 { // ManyToOne: the last host serves
			cfg.Faults = faults
		}
		h, err := s.AddHost(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	w4, err := workload.Parse("w4")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.StartTraffic(hosts, traffic.Config{Requests: w4, Pattern: traffic.ManyToOne, Load: load,
		LinkBps: float64(rate), Duration: d, Seed: 1, ResponseBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	s.RunWhile(func() bool { return !tr.Done() })
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if drops := s.Switch().Drops.Total(); drops != 0 {
		t.Fatalf("the switch dropped %d frames; the run must be loss-free", drops)
	}
	var l loaded
	for _, h := range hosts {
		st := h.Stats()
		l.resends += st.Sent[wire.TypeResend-wire.MinType]
		l.busy += st.Sent[wire.TypeBusy-wire.MinType]
		l.retx += st.Retransmitted
	}
	l.grants = hosts[3].Stats().Sent[wire.TypeGrant-wire.MinType]
	l.maxQueue = s.Switch().Ports[hosts[3].Index()].MaxQueueBytes
	for _, r := range tr.Result().Records {
		if r.Err != "" {
			l.failed++
		}
	}
	l.rpcs = len(tr.Result().Records)
	return l
}

// loaded is what loadedRun counted: the RPCs issued and those that
// failed, the RESENDs and BUSYs all hosts sent, the DATA packets they
// retransmitted, the GRANTs the server sent, and the largest backlog of
// the switch port toward the server, in bytes.
type loaded struct {
	rpcs, failed, resends, busy, retx, grants, maxQueue int
}

// TestLoadedNoResend: without loss, and below the load at which SRPT
// starves a granted message longer than resend_ticks (5 ticks, 50 ms),
// no host sends a RESEND and nothing is retransmitted (RTX-01: a RESEND
// only for data owed and silent for resend_ticks). The run is on the
// simulator's virtual clock, so it does not depend on this machine's
// load. At 70% of a 1 Gbit/s link the server sends tens of thousands of
// GRANTs and the switch port toward it queues tens of packets (45 KB at
// most with this seed), so granted bytes do wait behind other traffic.
//
// Above saturation RESENDs are what HomaModule does and are not
// checked here: a closed loop keeps requests waiting for grants longer
// than resend_ticks (their clients send RESEND {0, -1}, answered by BUSY:
// RTX-01 (b), RTX-07), and granted bytes at priority 0 wait behind a
// higher-ranked message that fills the link alone, so the receiver asks
// for them again although nothing was lost (homa_timer_check_rpc counts
// silent ticks for any RPC with granted bytes not yet received).
func TestLoadedNoResend(t *testing.T) {
	l := loadedRun(t, 0.7, time.Second, nil)
	t.Logf("%d RPCs, %d GRANTs, server port backlog up to %d B, %d RESENDs, %d BUSYs, %d retransmissions", l.rpcs, l.grants, l.maxQueue, l.resends, l.busy, l.retx)
	if l.rpcs < 1000 || l.grants < 1000 || l.maxQueue < 10*1500 {
		t.Fatalf("%d RPCs, %d GRANTs, a backlog of %d B: the run is not loaded enough to test anything", l.rpcs, l.grants, l.maxQueue)
	}
	if l.failed != 0 || l.resends != 0 || l.busy != 0 || l.retx != 0 {
		t.Errorf("without loss: %d failed RPCs, %d RESENDs, %d BUSYs, %d retransmissions; want 0 of each", l.failed, l.resends, l.busy, l.retx)
	}
}

// TestLoadedNoResendCatchesEarlyResend: the same run with a server that
// sends RESEND after one silent tick (FaultEarlyResend) does send RESENDs
// and retransmit, so TestLoadedNoResend's zero is a finding, not a
// property of a run in which nothing could wait.
func TestLoadedNoResendCatchesEarlyResend(t *testing.T) {
	l := loadedRun(t, 0.7, time.Second, []homa.Fault{homa.FaultEarlyResend})
	if l.resends == 0 || l.retx == 0 {
		t.Errorf("a server resending after one silent tick sent %d RESENDs and caused %d retransmissions; want some of each", l.resends, l.retx)
	}
}
