package seqplot

import (
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

var realDir = filepath.Join("..", "..", "pcap", "testdata", "real")

// load reads the capture at path twice: once through a spec.Trace for its
// RPCs (sorted by first frame), once through a Builder for the RPC pick
// chooses.
func load(t *testing.T, path string, pick func([]*spec.RPC) *spec.RPC) *Model {
	t.Helper()
	prof, err := spec.LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	tr := spec.NewTrace(&prof.Params)
	tr.KeepFinished()
	each(t, path, tr.Apply)
	rpcs := tr.RPCs()
	sort.Slice(rpcs, func(i, j int) bool { return rpcs[i].FirstFrame < rpcs[j].FirstFrame })
	r := pick(rpcs)
	if r == nil {
		t.Fatalf("%s: no RPC picked among %d", path, len(rpcs))
	}
	b := NewBuilder(r)
	each(t, path, b.Add)
	return b.Model()
}

func each(t *testing.T, path string, fn func(*spec.Event)) {
	t.Helper()
	rd, err := pcap.Open(path, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := rd.EachEvent(fn); err != nil {
		t.Fatal(err)
	}
}

func byID(id uint64) func([]*spec.RPC) *spec.RPC {
	return func(rs []*spec.RPC) *spec.RPC {
		for _, r := range rs {
			if r.Key.ClientID == id {
				return r
			}
		}
		return nil
	}
}

var faultsDir = filepath.Join("..", "..", "cmd", "homatest", "internal", "cli", "testdata", "faults")

// TestRetransmitMarkedCrafted: in BR-26 the server asks (frames 62, 63)
// for two ranges of request 4 and the client resends them with
// retransmit=1 from frame 64 (offsets from homatest decode).
func TestRetransmitMarkedCrafted(t *testing.T) {
	m := load(t, filepath.Join(faultsDir, "BR-26-resent-then-sent-again.pcapng"), byID(4))
	q := &m.Request
	if len(q.Retransmits) != 22 {
		t.Fatalf("retransmits %d, want 22 (decode's summary)", len(q.Retransmits))
	}
	if got, want := q.Retransmits[0], (Mark{At: m.Request.Retransmits[0].At, Frame: 64, Offset: 47120, End: 48544, Priority: 7}); got != want {
		t.Errorf("first retransmit %+v, want %+v", got, want)
	}
	if at := q.Retransmits[0].At; at != 5170*time.Microsecond { // 5.270 ms - 0.100 ms (frame 5)
		t.Errorf("first retransmit at %v, want 5.17ms", at)
	}
	for prio, ds := range q.Data {
		for _, d := range ds {
			if d.Frame == 64 {
				t.Errorf("retransmitted frame 64 also among first transmissions (p%d)", prio)
			}
		}
	}
	wantResends := []Mark{{Frame: 62, Offset: 47120, End: 48544, Priority: 7}, {Frame: 63, Offset: 71328, End: 100000, Priority: 7}}
	if len(q.Resends) != 2 {
		t.Fatalf("resends %+v, want 2", q.Resends)
	}
	for i, w := range wantResends {
		g := q.Resends[i]
		g.At = 0
		if g != w {
			t.Errorf("resend %d %+v, want %+v", i, g, w)
		}
	}
	if len(q.Grants) != 6 || q.Grants[0].Offset != 51392 || q.Grants[0].Frame != 17 {
		t.Errorf("grants %+v, want 6 starting at offset 51392 in frame 17", q.Grants)
	}
	if q.Unscheduled != 40000 || q.Length != 100000 {
		t.Errorf("unscheduled %d length %d, want 40000 and 100000", q.Unscheduled, q.Length)
	}
	if len(m.Response.Retransmits) != 0 || len(m.Response.Grants) != 0 || m.Response.Length != 100 {
		t.Errorf("response panel %+v, want 100 B without grants or retransmits", m.Response)
	}
}

// TestRetransmitMarkedReal: HomaModule 6.1 losing 3% of packets; RPC 4's
// retransmissions, grants and RESENDs match what the trace counted, and
// frame 604 (DATA off 37056 len 1424 retransmit, per homatest decode) is
// the first retransmission.
func TestRetransmitMarkedReal(t *testing.T) {
	var rpc *spec.RPC
	m := load(t, filepath.Join(realDir, "linux-6.1-proto253", "c-500k-loss3pct-server-side.pcap"), func(rs []*spec.RPC) *spec.RPC {
		rpc = byID(4)(rs)
		return rpc
	})
	q := &m.Request
	if got, want := q.Retransmits[0], (Mark{At: q.Retransmits[0].At, Frame: 604, Offset: 37056, End: 38480, Priority: 7}); got != want {
		t.Errorf("first retransmit %+v, want %+v", got, want)
	}
	var bytes uint64
	for _, r := range append(q.Retransmits, m.Response.Retransmits...) {
		bytes += uint64(r.End - r.Offset)
	}
	if bytes != 18512 || bytes != rpc.Request.RetxBytes+rpc.Response.RetxBytes {
		t.Errorf("retransmitted %d B, want 18512 (homatest rpcs) = trace's %d", bytes, rpc.Request.RetxBytes+rpc.Response.RetxBytes)
	}
	if len(q.Grants) != rpc.Request.Grants || len(q.Grants) != 53 {
		t.Errorf("request grants %d, want 53 = trace's %d", len(q.Grants), rpc.Request.Grants)
	}
	if n := len(q.Resends) + len(m.Response.Resends); n != 19 {
		t.Errorf("RESENDs %d, want 19", n)
	}
	if n := len(q.Busy) + len(m.Response.Busy); n != 3 {
		t.Errorf("BUSY %d, want 3", n)
	}
	// Frame 603 asks for offset 223600 with a length that wraps past 2^32:
	// the bar is clipped at the message's end.
	for _, r := range q.Resends {
		if r.Frame == 603 && (r.Offset != 223600 || r.End != 500000) {
			t.Errorf("RESEND frame 603 %+v, want [223600, 500000)", r)
		}
	}
	if q.DataCount()+m.Response.DataCount() != rpc.Packets[0] {
		t.Errorf("DATA marks %d, want the trace's %d", q.DataCount()+m.Response.DataCount(), rpc.Packets[0])
	}
	if m.Latency != Latency(rpc) || m.Latency <= 0 || m.Latency > m.Span {
		t.Errorf("latency %v, span %v, want 0 < latency <= span", m.Latency, m.Span)
	}
}

// TestBusyAndResendAll: in BR-30 the client asks twice for the whole
// response (RESEND offset 0 length all) and the server answers BUSY; both
// belong to the response panel, the BUSY marks at offset 0 (nothing of the
// response sent yet), the RESEND bars over the 100-byte response.
func TestBusyAndResendAll(t *testing.T) {
	m := load(t, filepath.Join(faultsDir, "BR-30-timeout-kills-live-rpc.pcapng"), byID(12))
	r := &m.Response
	if len(r.Busy) != 2 || r.Busy[0].Frame != 5 || r.Busy[1].Frame != 11 || r.Busy[0].Offset != 0 {
		t.Errorf("response BUSY %+v, want frames 5 and 11 at offset 0", r.Busy)
	}
	if len(r.Resends) != 3 || r.Resends[0].Offset != 0 || r.Resends[0].End != 100 || r.Resends[0].At != 5200*time.Microsecond {
		t.Errorf("response RESENDs %+v, want 3, the first [0, 100) at 5.2ms", r.Resends)
	}
	if len(m.Request.Busy)+len(m.Request.Resends) != 0 {
		t.Errorf("request panel has BUSY %v RESEND %v, want none", m.Request.Busy, m.Request.Resends)
	}
	if len(m.Request.Retransmits) != 1 || m.Request.Retransmits[0].Frame != 18 {
		t.Errorf("request retransmits %+v, want frame 18", m.Request.Retransmits)
	}
	if m.Latency != 20*time.Millisecond {
		t.Errorf("latency %v, want 20ms (frame 24 completes the response)", m.Latency)
	}
}
