package scenario

import (
	"context"
	"net/netip"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// overloadRun runs testdata/w3-overload-all-to-all-sim.yaml on 4 hosts
// for d in the simulator into a new folder and returns its result.
func overloadRun(t *testing.T, d time.Duration) *Result {
	t.Helper()
	s := loadExample(t, "w3-overload-all-to-all-sim.yaml")
	s.Topology.Hosts, s.Workload.Duration = 4, d
	res, _ := simRun(t, s, filepath.Join(t.TempDir(), "run"))
	return res
}

// TestJudgeHostsStreamedAsWhole: the run's check reads its captures as
// streams (judgeHosts, spec.Judge.HostsStream); on the 4-host overload,
// whose as-sent capture interleaves the hosts out of time order and
// whose views hold hundreds of findings, it judges as the views read
// whole did (spec.Judge.HostsContext): the same reports, charges and
// excuses, the same sources and events at every frame a finding names,
// at the simulator's reaction time (0) and at a namespace run's (1 ms,
// which excuses timing findings after a delivery).
func TestJudgeHostsStreamedAsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates and checks 60 ms of a 4-host overload (about 10 s)")
	}
	res := overloadRun(t, 60*time.Millisecond)
	c := res.Scenario.Check
	params, err := agent.Params(res.Hellos[0].Params).Spec(c.Profile)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []netip.Addr
	for _, h := range res.Hosts {
		hosts = append(hosts, h.Host)
	}
	sentPath, deliveredPath := filepath.Join(res.Dir, "sent.pcapng"), filepath.Join(res.Dir, "delivered.pcapng")
	sent, err := pcap.ReadEvents(sentPath, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delivered, err := pcap.ReadEvents(deliveredPath, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	findings, excused := 0, 0
	for _, reaction := range []time.Duration{0, time.Millisecond} {
		j, err := spec.NewJudge(c.Profile, params, c.Rules, c.level())
		if err != nil {
			t.Fatal(err)
		}
		j.FromStart = true
		j.Params.Slack, j.Params.Jitter, j.Params.Reaction = 0, 0, reaction
		want, err := j.HostsContext(context.Background(), sent, delivered, hosts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := judgeHosts(context.Background(), j, sentPath, deliveredPath, params.Wire, hosts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			w, g := &want[i], &got[i]
			if g.View != nil {
				t.Fatalf("host %v: judgeHosts kept the whole view (%d events); want it streamed", w.Host, len(g.View))
			}
			if !reflect.DeepEqual(g.Report, w.Report) || !reflect.DeepEqual(g.Violations, w.Violations) || !reflect.DeepEqual(g.Excused, w.Excused) ||
				g.Charged != w.Charged || g.NotCharged != w.NotCharged {
				t.Fatalf("reaction %v, host %v: streamed %d charged, %d excused, %d found; whole %d, %d, %d", reaction, w.Host,
					g.Charged, len(g.Excused), len(g.Report.Violations), w.Charged, len(w.Excused), len(w.Report.Violations))
			}
			findings += len(w.Report.Violations)
			excused += len(w.Excused)
			for _, v := range w.Report.Violations {
				for _, n := range append([]int{v.Frame}, v.Frames...) {
					ws, _ := w.Source(n)
					gs, _ := g.Source(n)
					we, _ := w.Event(n)
					ge, ok := g.Event(n)
					if ws != gs || !ok || !reflect.DeepEqual(ge.Packet.Bytes(), we.Packet.Bytes()) || !ge.Time.Equal(we.Time) || ge.Frame != we.Frame {
						t.Fatalf("host %v view frame %d: streamed %+v, want %+v", w.Host, n, gs, ws)
					}
				}
				if a, b := g.LocateText(v.Why, "s", "d"), w.LocateText(v.Why, "s", "d"); a != b {
					t.Fatalf("host %v: streamed %q, want %q", w.Host, a, b)
				}
			}
		}
	}
	if findings < 100 || excused == 0 {
		t.Fatalf("%d findings, %d excused: the comparison wants many findings and some excused", findings, excused)
	}
}

// heapWatch is an EventStream that measures the live heap (after a
// collection) each time the run's streams have read every more events
// between them: at the same points of the check in every run, whatever
// the machine's load.
type heapWatch struct {
	spec.EventStream
	n     *int // events read from every stream of the run
	every int
	peak  *uint64
}

func (h *heapWatch) Next() (*spec.Event, error) {
	if *h.n++; *h.n%h.every == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		*h.peak = max(*h.peak, ms.HeapAlloc)
	}
	return h.EventStream.Next()
}

// TestSimCheckMemoryPerRPC: a run's check holds no packet it has judged.
// The live heap of a 4-host W3 overload in the simulator, measured after
// a collection every 16384 events the check reads (the same points in
// every run, whatever the machine's load), grows from a 40 ms run to a
// 120 ms one by at most 20 KB per additional RPC: the rules' state of
// each RPC in both hosts' views, which the checker keeps for
// spec.EvictAfter (10 s of capture time) after the RPC ends, so that it
// grows with the run until then and stays flat after (measured: 22.0 MB
// at 40 ms, 84.1 MB at 120 ms, 12.6 KB per RPC). Keeping an owned copy of
// each event the views were fed measures 45.5 KB per RPC; reading the
// captures whole and copying them into the views held 1.9 GB at 275 ms.
func TestSimCheckMemoryPerRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates and checks 40 and 120 ms of a 4-host overload (about 30 s)")
	}
	peak := func(d time.Duration) (uint64, int) {
		var p uint64
		n := 0
		orig := openEventStream
		openEventStream = func(path string, ro pcap.ReaderOptions) (spec.EventStream, error) {
			s, err := orig(path, ro)
			if err != nil {
				return nil, err
			}
			return &heapWatch{EventStream: s, n: &n, every: 16384, peak: &p}, nil
		}
		defer func() { openEventStream = orig }()
		res := overloadRun(t, d)
		return p, res.Summary.RPCs
	}
	short, n1 := peak(40 * time.Millisecond)
	long, n2 := peak(120 * time.Millisecond)
	perRPC := (float64(long) - float64(short)) / float64(n2-n1)
	t.Logf("live heap during the check: %.1f MB at 40 ms (%d RPCs), %.1f MB at 120 ms (%d RPCs): %.1f KB per RPC",
		float64(short)/1e6, n1, float64(long)/1e6, n2, perRPC/1e3)
	if short == 0 || long == 0 {
		t.Fatalf("the check read no capture as a stream (live heap %d and %d bytes): it read them whole", short, long)
	}
	if n2 < 2*n1 || perRPC > 20e3 {
		t.Errorf("the check's live heap grew by %.1f KB per RPC from %d to %d RPCs; want at most 20 KB (the rules' state of an RPC, no packets)", perRPC/1e3, n1, n2)
	}
}
