package homa_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// lagged is one packet on its way in runLagged: it reaches its
// destination's machine at at.
type lagged struct {
	at   time.Duration
	src  netip.Addr
	prio uint8
	pkt  []byte
}

// laggedRun is what runLagged saw.
type laggedRun struct {
	err         error // the call's end (nil: the response came back whole)
	end         time.Duration
	executed    int  // requests the server's application got
	restarts    int  // the client's restarts after RPC_UNKNOWN
	unknowns    int  // RPC_UNKNOWNs the server sent
	unknownLate bool // an RPC_UNKNOWN from the server after it had executed the request
}

// runLagged runs one RPC of a 100-byte request between a client and an
// echo server Machine on one simulated clock. Every packet reaches the
// server lagS after it was sent and the client lagC after: the time a
// host whose CPU does not keep up leaves a received packet waiting before
// it handles it (TestRawIPLoss's hosts measure theirs). The first lost
// request DATA packets the client sends (the request, then its restarts)
// are lost.
func runLagged(t *testing.T, p homa.Params, lagS, lagC time.Duration, lost int) laggedRun {
	t.Helper()
	cli, err := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := homa.NewMachine(homa.MachineConfig{Addr: peerAddr, Params: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(4000); err != nil {
		t.Fatal(err)
	}
	port, _ := cli.Dial()
	req := bytes.Repeat([]byte{7}, 100)
	id, err := cli.Call(0, port, netip.AddrPortFrom(peerAddr, 4000), req)
	if err != nil {
		t.Fatal(err)
	}
	// Each host's lag is constant, so its packets arrive in the order
	// they were sent: a FIFO per host.
	queues := map[*homa.Machine][]lagged{}
	var run laggedRun
	flush := func(m *homa.Machine, now time.Duration) {
		for _, tr := range drain(m, now) {
			pk := decode(t, tr.Packet)
			if m == cli && pk.Type() == wire.TypeData && lost > 0 {
				lost--
				continue
			}
			if m == srv && pk.Type() == wire.TypeRPCUnknown {
				run.unknowns++
				if run.executed > 0 {
					run.unknownLate = true
				}
			}
			dst, lag := srv, lagS
			if tr.Dst == iutAddr {
				dst, lag = cli, lagC
			}
			queues[dst] = append(queues[dst], lagged{at: now + lag, src: m.Addr(), prio: tr.Prio, pkt: tr.Packet})
		}
	}
	flush(cli, 0)
	for now := time.Duration(0); now < time.Duration(p.TimeoutTicks+10*p.ResendInterval)*p.Tick+lagS+lagC; {
		next, _ := cli.Deadline()
		if d, _ := srv.Deadline(); d < next {
			next = d
		}
		for _, q := range queues {
			if len(q) > 0 && q[0].at < next {
				next = q[0].at
			}
		}
		now = next
		for _, m := range []*homa.Machine{cli, srv} {
			for len(queues[m]) > 0 && queues[m][0].at == now {
				l := queues[m][0]
				queues[m] = queues[m][1:]
				m.HandlePacket(now, l.src, l.prio, l.pkt)
				flush(m, now)
			}
		}
		for _, m := range []*homa.Machine{cli, srv} {
			if d, _ := m.Deadline(); d <= now {
				m.HandleTimeout(now)
			}
			flush(m, now)
		}
		for {
			e, ok := srv.PollEvent()
			if !ok {
				break
			}
			run.executed++
			if err := srv.Reply(now, e.Request, e.Payload); err != nil {
				t.Fatal(err)
			}
			flush(srv, now)
		}
		if e, ok := cli.PollEvent(); ok {
			if e.Kind != homa.EventCallDone || e.ID != id {
				t.Fatalf("client event %+v, want the call's end", e)
			}
			if e.Err == nil && !bytes.Equal(e.Payload, req) {
				t.Fatalf("response of %d bytes differs from the request", len(e.Payload))
			}
			run.err, run.end = e.Err, now
			run.restarts = cli.Stats().Restarts
			return run
		}
	}
	t.Fatal("the call did not end within timeout_ticks and the lags")
	return run
}

// restartLagBound is the sum of the server's and the client's input lag
// from which a client RPC may time out although the network lost only its
// request and lost-1 restarts: the client's RESENDs go every
// resend_interval from resend_ticks on whatever the lag, each answered by
// RPC_UNKNOWN one lag sum later, each RPC_UNKNOWN restarts the request,
// and the restart that gets through (the lost-th) brings the response
// back one more lag sum later; nothing from the server resets the
// client's silence before that response (RPC_UNKNOWN is not DATA, GRANT
// or BUSY), so the response must come within timeout_ticks of silence.
func restartLagBound(p homa.Params, lost int) time.Duration {
	ticks := p.TimeoutTicks - p.ResendTicks - (lost-1)*p.ResendInterval
	return time.Duration(ticks) * p.Tick / 2
}

// TestRestartLoopUnderLag reproduces, on a simulated clock, the RPCs
// TestRawIPLoss lost on a CPU-starved machine: the request's DATA and its
// first restart are lost, and every packet waits lagS at the server and
// lagC at the client before its host handles it. The client loops
// RESEND → RPC_UNKNOWN → restart (the protocol's answer to a server that
// does not have the RPC: homa_resend_pkt, homa_rpc_unknown_pkt), and the
// server never answers RPC_UNKNOWN once it has the request. With the lag
// sum a tick below restartLagBound the call completes; a tick above it,
// the client's timer aborts it (ErrTimeout) after restarting at least
// twice, although the server executed the request once; no lag makes the
// server execute a request twice. TestRawIPLoss excuses a timeout only when
// its hosts' measured lags reach that bound.
func TestRestartLoopUnderLag(t *testing.T) {
	p := homa.DefaultParams()
	const lost = 2
	bound := restartLagBound(p, lost)
	for _, c := range []struct {
		name        string
		lagS, lagC  time.Duration
		wantTimeout bool
	}{
		{"no lag", 0, 0, false},
		{"below the bound", bound - p.Tick - 3*p.Tick/4, 3 * p.Tick / 4, false},
		{"above the bound", bound + p.Tick - p.Tick/4, p.Tick / 4, true},
		{"above the bound at the client", 0, bound + p.Tick, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := runLagged(t, p, c.lagS, c.lagC, lost)
			if got := errors.Is(run.err, homa.ErrTimeout); got != c.wantTimeout || run.err != nil && !got {
				t.Fatalf("call ended at %v with %v; want timeout %v (lag sum %v, bound %v)", run.end, run.err, c.wantTimeout, c.lagS+c.lagC, bound)
			}
			if run.restarts < lost {
				t.Errorf("%d restarts, want at least %d (one per lost request)", run.restarts, lost)
			}
			if run.executed > 1 {
				t.Errorf("the server executed the request %d times", run.executed)
			}
			if run.err == nil && run.executed != 1 {
				t.Errorf("the call completed but the server executed the request %d times", run.executed)
			}
			if run.unknownLate {
				t.Error("the server answered RPC_UNKNOWN after it had executed the request")
			}
			t.Logf("ended at %v (%v): %d restarts, %d RPC_UNKNOWNs, executed %d", run.end, run.err, run.restarts, run.unknowns, run.executed)
		})
	}
}

// lossFreeLagBound is the sum of the server's and the client's input lag
// from which a client RPC may time out although the network lost
// nothing: the response comes back one lag sum after the request left,
// and the client counts silence at each timer pass from then on, the
// first pass up to a tick after the request left, so timeout_ticks passes
// may fall within (timeout_ticks-1) ticks of it.
func lossFreeLagBound(p homa.Params) time.Duration {
	return time.Duration(p.TimeoutTicks-1) * p.Tick
}

// TestLagWithoutLoss: with nothing lost, an RPC survives any lag sum
// below lossFreeLagBound (here its request leaves at a pass, the best
// phase, so it survives up to timeout_ticks) and times out at
// timeout_ticks of lag; TestRawIPThousandRPCs excuses a timeout only when
// its hosts' measured lags reach lossFreeLagBound. The server executes
// the request once either way.
func TestLagWithoutLoss(t *testing.T) {
	p := homa.DefaultParams()
	bound := lossFreeLagBound(p)
	for _, c := range []struct {
		lagS, lagC  time.Duration
		wantTimeout bool
	}{
		{bound - p.Tick/2, 0, false},
		{bound / 2, bound / 2, false},
		{bound + p.Tick/2, p.Tick / 4, false},
		{bound / 2, bound/2 + p.Tick + p.Tick/4, true},
		{0, bound + 2*p.Tick, true},
	} {
		run := runLagged(t, p, c.lagS, c.lagC, 0)
		if got := errors.Is(run.err, homa.ErrTimeout); got != c.wantTimeout || run.err != nil && !got {
			t.Errorf("lags %v + %v: call ended at %v with %v; want timeout %v (bound %v)", c.lagS, c.lagC, run.end, run.err, c.wantTimeout, bound)
		}
		if run.executed != 1 || run.restarts != 0 {
			t.Errorf("lags %v + %v: the server executed the request %d times, the client restarted it %d times; want 1 and 0", c.lagS, c.lagC, run.executed, run.restarts)
		}
	}
}
