package homa_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// TestFaultKnobsCaught: each fault knob, on the server host, makes the
// checker report the rule it breaks (and the clean run reports none of
// them; see TestTrafficPassesChecker): the first rule of the knob's
// CaughtBy in the catalogue (homa.FaultNames). The cases hold only how
// each knob is provoked.
func TestFaultKnobsCaught(t *testing.T) {
	cases := []struct {
		fault homa.Fault
		loss  float64
		slow  bool // the server computes 30 ms: clients RESEND meanwhile
	}{
		{homa.FaultNoAcks, 0, false},
		{homa.FaultIgnoreRPCUnknown, 0, true},
		{homa.FaultWrongPriorityBits, 0, false},
		{homa.FaultGrantPastEnd, 0, false},
		{homa.FaultRepeatGrants, 0, false},
		{homa.FaultNoGrants, 0, false},
		{homa.FaultOvercommit, 0, false},
		{homa.FaultGrantTopPriority, 0, false},
		{homa.FaultUnschedOverflow, 0, false},
		{homa.FaultEarlyResend, 0, false},
		{homa.FaultNoRetransmitFlag, 0.05, false},
		{homa.FaultNoBusy, 0, true},
		{homa.FaultControlLowPriority, 0, false},
		{homa.FaultStaleCutoffVersion, 0, false},
		{homa.FaultDuplicateData, 0, false},
		{homa.FaultResendPriorityZero, 0.05, false},
		{homa.FaultResendPastGrant, 0.05, false},
		{homa.FaultLateResend, 0.05, false},
		{homa.FaultUnpromptedAck, 0, false},
		{homa.FaultCutoffsUnprompted, 0, false},
		{homa.FaultControlSequence, 0, false},
		{homa.FaultRestartPriority, 0, true},
		{homa.FaultIDZero, 0, false},
		{homa.FaultRetransmitWrongBytes, 0.05, false},
		{homa.FaultOversizeSegment, 0, false},
		{homa.FaultForgetHeldRPC, 0, false},
		{homa.FaultReuseTimedOutID, 0, false},
		{homa.FaultAckPartialResponse, 0, false},
		{homa.FaultGrantStopAndWait, 0, false},
		{homa.FaultBusySecondResend, 0, false},
	}
	for _, c := range cases {
		info, ok := homa.LookupFault(string(c.fault))
		if !ok || len(info.CaughtBy) == 0 {
			t.Fatalf("%s: not in the catalogue, or caught by no rule there", c.fault)
		}
		rule := info.CaughtBy[0]
		t.Run(string(c.fault), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rate := int64(10e9)
				if c.fault == homa.FaultForgetHeldRPC {
					rate = 1e9 // a 1 MB response takes 8 ms
				}
				tn, finish := checkedNet(t, 5, memnet.Config{Rate: rate, Delay: 5 * time.Microsecond, Loss: c.loss, Seed: 3}, homa.DefaultParams(), "")
				defer tn.close()
				// The fault sits on every host: servers and clients.
				for i, h := range tn.hosts {
					h.Close()
					ep := tn.net.Attach(h.Addr())
					nh, err := homa.New(homa.Config{Transport: ep, Faults: []homa.Fault{c.fault}})
					if err != nil {
						t.Fatal(err)
					}
					tn.hosts[i] = nh
				}
				switch {
				case c.fault == homa.FaultIgnoreRPCUnknown:
					// The server "restarts" (closes and re-opens its socket,
					// forgetting the RPC) while the client waits.
					s, _ := tn.hosts[4].Listen(4000)
					go func() {
						if _, err := s.Receive(context.Background()); err == nil {
							s.Close()
							tn.hosts[4].Listen(4000)
						}
					}()
					sock, _ := tn.hosts[0].Dial()
					sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500))
				case c.fault == homa.FaultForgetHeldRPC:
					// Client 0's request is in service for 30 ms: the server
					// answers its first RESEND with BUSY and forgets it at
					// the second. Client 1's, sent at the same time, is
					// answered after 9.5 ms with a 1 MB response that is
					// still going out after the RPC_UNKNOWN: the witness
					// that the socket was not closed.
					s, _ := tn.hosts[4].Listen(4000)
					go func() {
						for {
							q, err := s.Receive(context.Background())
							if err != nil {
								return
							}
							go func() {
								if len(q.Payload()) == 1 {
									time.Sleep(9500 * time.Microsecond)
									q.Reply(make([]byte, 1000000))
									return
								}
								time.Sleep(30 * time.Millisecond)
								q.Reply([]byte("done"))
							}()
						}
					}()
					to := netip.AddrPortFrom(tn.hosts[4].Addr(), 4000)
					go func() {
						sock, _ := tn.hosts[1].Dial()
						sock.Call(context.Background(), to, []byte{1})
					}()
					// Each restart is forgotten again: give up after 100 ms.
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					defer cancel()
					sock, _ := tn.hosts[0].Dial()
					sock.Call(ctx, to, make([]byte, 500))
				case c.fault == homa.FaultReuseTimedOutID:
					// The server host is gone (its endpoint closed): the
					// client's RPC times out. A new host at that address
					// then serves the client's next RPC, whose DATA
					// carries the fault (the timed-out RPC's id again).
					addr := tn.hosts[4].Addr()
					tn.hosts[4].Close()
					to := netip.AddrPortFrom(addr, 4000)
					sock, _ := tn.hosts[0].Dial()
					if _, err := sock.Call(context.Background(), to, make([]byte, 500)); !errors.Is(err, homa.ErrTimeout) {
						t.Fatalf("RPC to a closed host: %v, want ErrTimeout", err)
					}
					nh, err := homa.New(homa.Config{Transport: tn.net.Attach(addr), Faults: []homa.Fault{c.fault}})
					if err != nil {
						t.Fatal(err)
					}
					tn.hosts[4] = nh
					slowServer(t, nh, 4000, 0)
					if _, err := sock.Call(context.Background(), to, make([]byte, 500)); err != nil {
						t.Fatalf("RPC to the new host: %v", err)
					}
				case c.fault == homa.FaultOvercommit:
					// Enough long requests at once that more than
					// max_overcommit (8) are incoming at the server.
					runWorkload(t, tn, 4, 25, 300000, true)
				case c.fault == homa.FaultRestartPriority:
					// The server restarts (its socket closed and re-opened,
					// the RPC forgotten) while the client waits, then
					// serves: the client restarts its request.
					s, _ := tn.hosts[4].Listen(4000)
					go func() {
						if _, err := s.Receive(context.Background()); err == nil {
							s.Close()
							slowServer(t, tn.hosts[4], 4000, 0)
						}
					}()
					sock, _ := tn.hosts[0].Dial()
					sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500))
				case c.fault == homa.FaultCutoffsUnprompted:
					// Two RPCs: the first's stale DATA (no CUTOFFS known
					// yet) pays for one CUTOFFS each way; the second's
					// current version draws one more.
					slowServer(t, tn.hosts[4], 4000, 0)
					sock, _ := tn.hosts[0].Dial()
					for range 2 {
						if _, err := sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500)); err != nil {
							t.Fatalf("RPC: %v", err)
						}
						time.Sleep(10 * time.Millisecond)
					}
				case c.fault == homa.FaultStaleCutoffVersion:
					// The workload can end within the checker's slack (2 ms)
					// of the first CUTOFFS; one more RPC well after it must
					// still carry the echoed cutoff_version.
					runWorkload(t, tn, 4, 10, 150000, true)
					time.Sleep(10 * time.Millisecond)
					sock, _ := tn.hosts[0].Dial()
					if _, err := sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500)); err != nil {
						t.Fatalf("late RPC: %v", err)
					}
				case c.fault == homa.FaultGrantStopAndWait:
					// One 1 MB request at a time, echoed: each request is
					// its server's only long message, each response its
					// client's, so the window stays that of one message.
					echoServer(t, tn.hosts[4], 4000)
					sock, _ := tn.hosts[0].Dial()
					for range 2 {
						if _, err := sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 1000000)); err != nil {
							t.Fatalf("RPC: %v", err)
						}
					}
				case c.fault == homa.FaultBusySecondResend:
					// The server computes 60 ms: the client's RESEND at
					// about 10 ms, the second, waits past response_timeout
					// (20 ms) for its answer (the response at 60 ms).
					slowServer(t, tn.hosts[4], 4000, 60*time.Millisecond)
					sock, _ := tn.hosts[0].Dial()
					sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500))
				case c.slow:
					slowServer(t, tn.hosts[4], 4000, 30*time.Millisecond)
					sock, _ := tn.hosts[0].Dial()
					sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[4].Addr(), 4000), make([]byte, 500))
				default:
					runWorkload(t, tn, 4, 10, 150000, true)
				}
				time.Sleep(200 * time.Millisecond)
				rep := finish()
				for _, rr := range rep.Rules {
					if rr.ID == rule {
						if rr.Violated == 0 {
							t.Errorf("%s: %s checked %d times, never violated", c.fault, rule, rr.Checked)
						}
						return
					}
				}
				t.Errorf("%s: rule %s not in the report", c.fault, rule)
			})
		})
	}
}

// slowServer answers every request on port after d.
func slowServer(t *testing.T, h *homa.Host, port uint16, d time.Duration) {
	s, err := h.Listen(port)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			q, err := s.Receive(context.Background())
			if err != nil {
				return
			}
			time.Sleep(d)
			q.Reply([]byte("done"))
		}
	}()
}
