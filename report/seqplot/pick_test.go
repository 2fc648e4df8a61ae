package seqplot

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

func TestSlowest(t *testing.T) {
	t0 := time.Unix(100, 0)
	rpc := func(id uint64, lat time.Duration, complete bool) *spec.RPC {
		r := &spec.RPC{Key: spec.RPCKey{ClientID: id}, First: t0, Last: t0.Add(time.Second)}
		r.Response.Complete, r.Response.CompleteTime = complete, t0.Add(lat)
		return r
	}
	rs := []*spec.RPC{rpc(2, 3*time.Millisecond, true), rpc(4, 9*time.Millisecond, false), rpc(6, 5*time.Millisecond, true), rpc(8, 5*time.Millisecond, true)}
	if got := Slowest(rs); got.Key.ClientID != 6 {
		t.Errorf("slowest %d, want 6 (4 is incomplete, 8 ties later)", got.Key.ClientID)
	}
	if Latency(rs[1]) != 0 || Latency(rs[0]) != 3*time.Millisecond {
		t.Errorf("latencies %v %v, want 0 and 3ms", Latency(rs[1]), Latency(rs[0]))
	}
	if Slowest(rs[1:2]) != nil || Slowest(nil) != nil {
		t.Error("slowest of no complete RPC is not nil")
	}
}

// TestSlowestReal: of the five 500 KB RPCs of the lossy 6.13 capture, RPC 6
// takes longest (homatest rpcs: 242.071 ms first to last packet, no
// NEED_ACK exchange after it).
func TestSlowestReal(t *testing.T) {
	m := load(t, filepath.Join(realDir, "linux-6.13-proto146", "c-500k-loss3pct-server-side.pcap"), Slowest)
	if m.Key.ClientID != 6 || m.Latency.Round(time.Microsecond) != 242071*time.Microsecond {
		t.Errorf("slowest RPC %d latency %v, want 6 and 242.071ms", m.Key.ClientID, m.Latency)
	}
}
