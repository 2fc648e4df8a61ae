package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec/wire"
)

// noiseSamples is how many round trips measureNoise times.
const noiseSamples = 20

// measureNoise times noiseSamples short RPCs (100-byte request and
// response) from tester host 0 to the IUT and noiseSamples 1 ms timer
// sleeps, and returns the worst delay (round trip, or timer lateness) and
// the median. The suite's slack is sized from the slowest, so a
// loaded machine widens every window instead of failing specs.
func measureNoise(ctx context.Context, e *Env) (worst, median time.Duration, err error) {
	p, err := e.openPeer(0, false)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	addr := e.IUT.Info().Addr
	pr := e.Params()
	var rtts []time.Duration
	for i := 0; i < noiseSamples; i++ {
		id := e.NewRPCID()
		sport := uint16(40000 + id%20000)
		start := time.Now()
		if err := p.Send(addr, unschedLevel(pr, 100), wire.NewData(wire.CommonFields{Sport: sport, Dport: ServerPort, SenderID: id},
			100, 100, pr.CutoffVersion, 0, requestPayload(id, 100, 100), false)); err != nil {
			return 0, 0, err
		}
		r, err := p.Expect(ctx, tester.Match{Type: wire.TypeData, From: addr, RPC: id}, timescale.D(2*time.Second))
		if err != nil {
			return 0, 0, fmt.Errorf("measuring the environment's round trip: %w", err)
		}
		rtts = append(rtts, r.At.Sub(start))
		if err := p.SendDeliberate(addr, ctrlLevel(pr), &wire.AckFields{Common: wire.CommonFields{Sport: sport, Dport: ServerPort, SenderID: id}},
			"ACK with no NEED_ACK (the noise measurement frees its RPC at once)"); err != nil {
			return 0, 0, err
		}
	}
	// Timer-driven behaviour (RESEND, NEED_ACK, timeouts) also suffers
	// from late timer wake-ups: time how late 1 ms sleeps wake up.
	for i := 0; i < noiseSamples; i++ {
		start := time.Now()
		time.Sleep(time.Millisecond) // measuring the scheduler, not waiting for an event
		rtts = append(rtts, time.Since(start)-time.Millisecond)
	}
	slices.Sort(rtts)
	return rtts[len(rtts)-1], rtts[len(rtts)/2], nil
}

// slackFor sizes the suite's timing slack from measured noise: three
// times the worst delay, at least 5 ms, times HOMATEST_TIME_SCALE. Slack
// only widens "within" windows (a correct IUT then passes on a loaded
// machine, a broken one still fails, later); "no earlier than" bounds use
// at most one tick of it.
func slackFor(worst time.Duration) time.Duration {
	return timescale.D(max(5*time.Millisecond, 3*worst))
}
