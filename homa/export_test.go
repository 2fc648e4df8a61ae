package homa

import (
	"fmt"
	"slices"
	"time"
)

func init() { SetQueueChecks(true) }

// SetQueueChecks turns the per-input consistency check of the grant and
// send queues on or off (on by default in tests; benchmarks turn it off).
func SetQueueChecks(on bool) {
	if on {
		f := mustCheckQueues
		checkQueues.Store(&f)
	} else {
		checkQueues.Store(nil)
	}
}

func mustCheckQueues(h *Machine) {
	if err := h.verifyQueues(); err != nil {
		panic(err)
	}
}

// verifyQueues recomputes what the queues keep incrementally by scanning
// every RPC, as the grant decision and the sender did before they had the
// queues, and reports the first difference.
func (h *Machine) verifyQueues() error {
	// Grantable messages: the set, the SRPT ranking of the active ones,
	// the oldest, and the outstanding bytes.
	ungranted := 0
	for _, r := range h.servers {
		if r.out != nil && r.out.granted < r.out.length() {
			ungranted++
		}
	}
	if ungranted != h.ungranted {
		return fmt.Errorf("%d server RPCs wait for response GRANTs, the machine counts %d", ungranted, h.ungranted)
	}
	var gs []*grantable
	want := 0
	for _, r := range h.servers {
		if r.state == serverReceiving && r.in != nil && r.in.grantable && !r.in.complete {
			gs = append(gs, r.in.g)
		}
	}
	for _, r := range h.clients {
		if r.in != nil && r.in.grantable && !r.in.complete {
			gs = append(gs, r.in.g)
		}
	}
	for _, g := range gs {
		if g == nil {
			return fmt.Errorf("a grantable message is not in the grant queue")
		}
		want += max(0, g.m.granted-g.m.received())
	}
	if len(gs) != h.grants.len() || len(h.grants.active)+h.grants.waiting.Len() != len(gs) {
		return fmt.Errorf("grant queue holds %d messages (%d active, %d waiting), want %d",
			h.grants.len(), len(h.grants.active), h.grants.waiting.Len(), len(gs))
	}
	if h.grants.outstanding != want {
		return fmt.Errorf("grant queue outstanding %d bytes, want %d", h.grants.outstanding, want)
	}
	slices.SortFunc(gs, func(a, b *grantable) int {
		if srptLess(a, b) {
			return -1
		}
		return 1
	})
	if n := min(len(gs), h.grants.k); !slices.Equal(gs[:n], h.grants.active) {
		return fmt.Errorf("active messages differ from the first %d in SRPT order", n)
	}
	for i, g := range h.grants.waiting.items {
		if g.waitIdx != i || i > 0 && srptLess(g, h.grants.waiting.items[(i-1)/2]) {
			return fmt.Errorf("waiting heap broken at %d", i)
		}
	}
	if len(gs) > 0 && slices.MinFunc(gs, func(a, b *grantable) int {
		if fifoLess(a, b) {
			return -1
		}
		return 1
	}) != h.grants.oldest() {
		return fmt.Errorf("oldest grantable message differs")
	}
	// Send queue: every RPC that can send is in it, every one in it is
	// live, and the heap is in order.
	for i, r := range h.sendQ.items {
		if r.sendIdx != i+1 || !h.live(r) || i > 0 && sendLess(r, h.sendQ.items[(i-1)/2]) {
			return fmt.Errorf("send queue broken at %d", i)
		}
	}
	for _, r := range h.clients {
		if freshOut(r) != nil && r.sendIdx == 0 {
			return fmt.Errorf("client RPC %d can send but is not in the send queue", r.id)
		}
	}
	for _, r := range h.servers {
		if freshOut(r) != nil && r.sendIdx == 0 {
			return fmt.Errorf("server RPC %d can send but is not in the send queue", r.id)
		}
	}
	return nil
}

// ArmFrom arms the host's timer for its deadline as an input handled at
// host time now does (unlockAt): what a goroutine that read the clock at
// now and was preempted before arming does.
func (h *Host) ArmFrom(now time.Duration) {
	h.mu.Lock()
	h.armedAt = -1
	h.unlockAt(now)
}

// Passes returns how many timer passes the host's machine ran.
func (h *Host) Passes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m.tick
}
