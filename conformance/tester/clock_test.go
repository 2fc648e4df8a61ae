package tester

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestSimClockExact: on the simulation's clock a wait ends at exactly
// its deadline when nothing comes, and a packet is stamped at the virtual
// instant it arrived: a RESEND for a gap comes resend_ticks after the
// last DATA, to the tick, however loaded the machine is.
func TestSimClockExact(t *testing.T) {
	p, params := setup(t)
	ctx := context.Background()
	start := p.Now()
	if err := p.ExpectNone(ctx, Match{Type: wire.TypeGrant}, 3*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Now is strictly increasing: 1 ns per call at one virtual instant.
	if got := p.Now().Sub(start); got < 3*time.Millisecond || got > 3*time.Millisecond+10 {
		t.Errorf("ExpectNone for 3ms moved the clock by %v", got)
	}
	// A request of 3 segments, the middle one missing.
	const msgLen = 3 * 1400
	for _, off := range []int{0, 2800} {
		err := p.Send(iutAddr, 6, &wire.DataFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 600},
			MessageLength: msgLen, Incoming: msgLen, SegOffset: uint32(off), Payload: make([]byte, 1400)})
		if err != nil {
			t.Fatal(err)
		}
	}
	sent := p.Now()
	r, err := p.Expect(ctx, Match{Type: wire.TypeResend, RPC: 600, Checks: []Check{Is("offset", 1400), Is("length", 1400)}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The server's timer counts resend_ticks silent ticks; the first may
	// be partial (the gap began between two ticks).
	gap, silence := r.At.Sub(sent), time.Duration(params.ResendTicks)*params.Tick
	if gap <= silence-params.Tick || gap > silence+10*time.Microsecond {
		t.Errorf("RESEND %v after the last DATA; resend_ticks %d of %v allow (%v, %v]", gap, params.ResendTicks, params.Tick,
			silence-params.Tick, silence)
	}
	// A cancelled context ends a wait at once, with its error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := p.Now()
	if _, err := p.Expect(cctx, Match{Type: wire.TypeGrant}, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Expect with a cancelled context: %v, want context.Canceled", err)
	}
	if d := p.Now().Sub(before); d > time.Microsecond {
		t.Errorf("a cancelled wait moved the clock by %v", d)
	}
}

// TestWallClock: a wait on the wall clock re-checks its condition at every
// Notify, ends at its deadline otherwise, and ends with ctx.
func TestWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewWallClock()
		ctx := context.Background()
		var flag atomic.Bool // set by another goroutine while Wait reads it
		go func() {
			time.Sleep(10 * time.Millisecond)
			flag.Store(true)
			c.Notify()
		}()
		start := time.Now()
		got, err := c.Wait(ctx, start.Add(time.Second), flag.Load)
		if !got || err != nil || time.Since(start) != 10*time.Millisecond {
			t.Errorf("Wait = %v, %v after %v; want true at the Notify 10ms in", got, err, time.Since(start))
		}
		start = time.Now()
		got, err = c.Wait(ctx, start.Add(50*time.Millisecond), func() bool { return false })
		if got || err != nil || time.Since(start) != 50*time.Millisecond {
			t.Errorf("Wait = %v, %v after %v; want false at the deadline", got, err, time.Since(start))
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		start = time.Now()
		got, err = c.Wait(cctx, start.Add(time.Hour), func() bool { return false })
		if got || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Millisecond {
			t.Errorf("Wait = %v, %v after %v; want the context's end at 5ms", got, err, time.Since(start))
		}
	})
}

// TestSimSendStampedWhenSent: a packet a Peer sends while another
// goroutine steps the simulation (a Wait, holding it) is stamped at the
// virtual time it enters the simulation, after that step, not at the time
// it was handed to Send: stamped before, a tester's NEED_ACK sent while
// the clock moved on 2 ms looked answered 2 ms late, and the IUT's answer
// (a RESEND) a timer round too soon. Fails on the old Peer, which stamped
// the packet before taking the simulation (when Send gets there first,
// as it does but on a machine too loaded to run it in 10000 yields).
func TestSimSendStampedWhenSent(t *testing.T) {
	p, _ := setup(t)
	c := p.Clock().(*SimClock)
	start := c.Now()
	locked, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go c.Do(func() {
		close(locked)
		<-proceed
		c.s.RunUntil(c.s.Now() + 2*time.Millisecond) // another goroutine's Wait
	})
	<-locked
	go func() {
		done <- p.Send(iutAddr, 7, &wire.NeedAckFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 601}})
	}()
	for i := 0; i < 10000 && len(p.Log()) == 0; i++ {
		runtime.Gosched()
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log := p.Log()
	if len(log) == 0 || !log[0].Sent {
		t.Fatalf("log %v: want the NEED_ACK sent", log)
	}
	if d := log[0].At.Sub(start); d < 2*time.Millisecond {
		t.Errorf("NEED_ACK stamped %v after the start, entering the simulation 2ms after it", d)
	}
}
