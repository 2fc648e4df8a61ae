package conformance

import (
	"context"
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/internal/timescale"
)

// MemEnvConfig configures NewMemEnv.
type MemEnvConfig struct {
	// Faults are reference-implementation fault knobs for the IUT.
	Faults []homa.Fault
	// Rate is the link rate in bit/s (0: no serialisation delay).
	Rate int64
}

// NewMemEnv builds an environment in this process: the reference
// implementation as IUT on an in-memory network (homa/memnet) with two
// tester hosts. It needs no privileges; timing is real time.
func NewMemEnv(cfg MemEnvConfig) (*Env, error) {
	// Packets go through at once (no serialisation or propagation delay):
	// in real time, per-packet timers would cost far more than the
	// modelled microseconds. Parameters are those of a 10 Gbit/s link.
	n := memnet.New(memnet.Config{Rate: cfg.Rate})
	addr := netip.MustParseAddr("198.18.0.1")
	p := homa.ParamsForLink(10e9)
	h, err := homa.New(homa.Config{Transport: n.Attach(addr), Params: p, Faults: cfg.Faults})
	if err != nil {
		n.Close()
		return nil, err
	}
	t := &refTarget{host: h, served: map[uint16]bool{}}
	t.info, err = refInfo(h, addr)
	if err != nil {
		h.Close()
		n.Close()
		return nil, err
	}
	e := &Env{IUT: t, Profile: "linux", Slack: timescale.D(2 * time.Millisecond),
		Describe: "in-memory network"}
	for i := 0; i < 2; i++ {
		a := netip.AddrFrom4([4]byte{198, 18, 0, byte(2 + i)})
		e.TesterAddrs = append(e.TesterAddrs, a)
		e.Testers = append(e.Testers, func() (homa.Transport, error) { return n.Attach(a), nil })
	}
	e.Close = func() error { t.Close(); n.Close(); return nil }
	return e, nil
}

// refInfo builds the TargetInfo of an in-process reference host.
func refInfo(h *homa.Host, addr netip.Addr) (TargetInfo, error) {
	hp := h.Params()
	cut := make([]any, 8)
	for i, c := range hp.UnschedCutoffs {
		cut[i] = c
	}
	hello := map[string]any{
		"unsched_bytes": hp.UnschedBytes, "max_incoming": hp.MaxIncoming, "max_overcommit": hp.MaxOvercommit,
		"window": hp.Window, "num_priorities": hp.NumPriorities, "max_sched_prio": hp.MaxSchedPrio,
		"unsched_cutoffs": cut, "cutoff_version": hp.CutoffVersion, "fifo_grant_increment": hp.FIFOGrantIncrement,
		"tick_ns": hp.Tick.Nanoseconds(), "resend_ticks": hp.ResendTicks, "resend_interval": hp.ResendInterval,
		"timeout_ticks": hp.TimeoutTicks, "request_ack_ticks": hp.RequestAckTicks, "mtu": hp.MTU,
	}
	sp, mtu, err := SpecParams("linux", hello)
	if err != nil {
		return TargetInfo{}, err
	}
	return TargetInfo{Impl: "ref", Version: "in-process", Addr: addr, Params: sp, MTU: mtu,
		Capabilities: []string{"ipv4", "grants", "priorities", "cutoffs", "need-ack", "faults"}}, nil
}

// refTarget drives an in-process reference host directly (the agent
// protocol's operations without the process boundary).
type refTarget struct {
	host *homa.Host
	info TargetInfo

	mu     sync.Mutex
	served map[uint16]bool
	count  uint64
	cancel []context.CancelFunc
}

func (t *refTarget) Info() TargetInfo { return t.info }

func (t *refTarget) Listen(ctx context.Context, port uint16) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.served[port] {
		return nil
	}
	s, err := t.host.Listen(port)
	if err != nil {
		return err
	}
	t.served[port] = true
	c, cancel := context.WithCancel(context.Background())
	t.cancel = append(t.cancel, cancel)
	go func() {
		for {
			q, err := s.Receive(c)
			if err != nil {
				return
			}
			t.mu.Lock()
			t.count++
			t.mu.Unlock()
			n := 100
			if b := q.Payload(); len(b) >= 4 {
				n = int(binary.LittleEndian.Uint32(b))
			}
			q.Reply(make([]byte, n))
		}
	}()
	return nil
}

func (t *refTarget) Call(ctx context.Context, dst netip.AddrPort, reqLen, respLen int) (<-chan CallResult, error) {
	s, err := t.host.Dial()
	if err != nil {
		return nil, err
	}
	req := requestPayload(0, reqLen, respLen, 0, reqLen)
	ch := make(chan CallResult, 1)
	go func() {
		defer s.Close()
		start := time.Now()
		resp, err := s.Call(context.Background(), dst, req)
		r := CallResult{Latency: time.Since(start), Response: len(resp)}
		if err != nil {
			r.Err = err.Error()
		}
		ch <- r
	}()
	return ch, nil
}

func (t *refTarget) Stats(ctx context.Context) (map[string]uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return map[string]uint64{"served": t.count}, nil
}

func (t *refTarget) Close() error {
	t.mu.Lock()
	for _, c := range t.cancel {
		c()
	}
	t.mu.Unlock()
	return t.host.Close()
}
