package homa_test

import (
	"bytes"
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// countingPull counts the Pulls a host makes: without wait and finding
// nothing (empty polls), without wait and finding packets, and waiting.
type countingPull struct {
	*pullEndpoint
	empty, hits, waits atomic.Int64
}

func (c *countingPull) Pull(wait bool, f func([]homa.Received)) (int, error) {
	n, err := c.pullEndpoint.Pull(wait, f)
	switch {
	case wait:
		c.waits.Add(1)
	case n == 0:
		c.empty.Add(1)
	default:
		c.hits.Add(1)
	}
	return n, err
}

// TestPollUsecs: a goroutine waiting in Call over a PullTransport polls
// the transport before it sleeps in it (Params.PollUsecs, HomaModule's
// poll_usecs), at most 8 polls per µs of it; on testing/synctest's clock,
// which stands still while the poll runs, it makes exactly that many and
// then sleeps. With PollUsecs 0 it never polls. Calls complete either
// way, and a negative PollUsecs is rejected.
func TestPollUsecs(t *testing.T) {
	for _, usecs := range []int{0, 5} {
		synctest.Test(t, func(t *testing.T) {
			n := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond})
			defer n.Close()
			p := homa.DefaultParams()
			p.PollUsecs = usecs
			cp := &countingPull{pullEndpoint: newPullEndpoint(n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 1})))}
			client, err := homa.New(homa.Config{Transport: cp, Params: p})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 2})), Params: p})
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			echoServer(t, server, 4000)
			if _, err := server.Listen(5000); err != nil { // never answered
				t.Fatal(err)
			}
			sock, _ := client.Dial()

			// A lone call to the silent port, ended by its context before
			// the first timer tick: one wait, polled first.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Microsecond)
			if _, err := sock.Call(ctx, netip.AddrPortFrom(server.Addr(), 5000), []byte{1}); err != context.DeadlineExceeded {
				t.Fatalf("poll_usecs %d: call to the silent port: %v, want %v", usecs, err, context.DeadlineExceeded)
			}
			cancel()
			if got, want := cp.empty.Load(), int64(8*usecs); got != want || cp.hits.Load() != 0 {
				t.Errorf("poll_usecs %d: %d empty polls and %d that found packets before sleeping, want %d and 0", usecs, got, cp.hits.Load(), want)
			}
			if cp.waits.Load() < 1 {
				t.Errorf("poll_usecs %d: the call never slept in the transport", usecs)
			}
			for i := range 10 {
				req := []byte{byte(i), 1, 2, 3}
				resp, err := sock.Call(context.Background(), netip.AddrPortFrom(server.Addr(), 4000), req)
				if err != nil || !bytes.Equal(resp, reverse(req)) {
					t.Fatalf("poll_usecs %d: echo %d: %v", usecs, i, err)
				}
			}
		})
	}
	p := homa.DefaultParams()
	if p.PollUsecs != 0 {
		t.Errorf("DefaultParams().PollUsecs = %d, want 0 (off in the ref by default; see Params.PollUsecs)", p.PollUsecs)
	}
	p.PollUsecs = -1
	n := memnet.New(memnet.Config{})
	defer n.Close()
	if _, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, 1})), Params: p}); err == nil {
		t.Error("poll_usecs -1 accepted")
	}
}
