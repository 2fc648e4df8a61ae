package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// gsoResponse sends the server's response of RPC cid, 6 GSO segments of
// 1424 bytes (doff 0xD0) in one batch at offset 0 (one skb with the
// profile's max_gso_size 10000).
func (b *traceBuilder) gsoResponse(cid uint64) {
	for k := range uint32(6) {
		i := b.data(false, cid, 6*1424, k*1424, 1424, 4, func(f *wire.DataFields) { f.SegOffset, f.Common.Sequence = k*1424, 0 })
		wire.Common(b.events[i-1].Packet.Bytes()).SetDoff(wire.DoffGSO)
	}
}

// linuxParams returns the linux profile's parameters.
func linuxParams(t *testing.T) Params {
	t.Helper()
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	return prof.Params
}

// inferredGSO returns the max_gso_size in res and its evidence.
func inferredGSO(t *testing.T, res []Inferred) (string, string) {
	t.Helper()
	for _, x := range res {
		if x.Name == "max_gso_size" {
			return x.Value, x.Evidence
		}
	}
	t.Fatalf("no max_gso_size inferred: %+v", res)
	return "", ""
}

// TestInferGSOPerRPC: a server answers two clients that chose the same
// RPC id (each client numbers its own RPCs), one 6-segment GSO batch at
// offset 0 each: the batches are two RPCs', 6 segments each
// (max_gso_size at least 8640), not one of 12 (17208), which keying a
// batch by its sender and sender_id alone made of them.
func TestInferGSOPerRPC(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.gsoResponse(2)
	b.client = netip.MustParseAddr("198.18.0.3")
	b.gsoResponse(2)
	in := NewInferrer(linuxParams(t))
	for i := range b.events {
		in.Feed(&b.events[i])
	}
	if v, why := inferredGSO(t, in.Result()); v != "8640" || why != "GSO batches of 6 segments (frame 6)" {
		t.Errorf("max_gso_size %s (%s), want 8640 from 6-segment batches (the first complete at frame 6)", v, why)
	}
}

// TestInferGSONewSection: the same batch again after NewSection (a copy
// of the capture joined to it, a restarted host) is a new batch; without
// it, the same RPC's same offset adds to the batch.
func TestInferGSONewSection(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.gsoResponse(2)
	b.gsoResponse(2)
	for _, c := range []struct {
		section bool
		want    string
	}{{true, "8640"}, {false, "17208"}} {
		in := NewInferrer(linuxParams(t))
		for i := range b.events {
			if i == 6 && c.section {
				in.NewSection()
			}
			in.Feed(&b.events[i])
		}
		if v, _ := inferredGSO(t, in.Result()); v != c.want {
			t.Errorf("section %v: max_gso_size %s, want %s", c.section, v, c.want)
		}
	}
}

// TestInferLowerBoundsShortest: request_ack_ticks is a lower bound of
// HOMA-ACK-005 (the first NEED_ACK no sooner than request_ack_ticks-1
// ticks after the response), so the inferred value is the shortest delay
// seen in whole ticks: 18 from 17.6 ms and 19.4 ms. The median (19) made
// the 17.6 ms NEED_ACK a MUST violation once the advice was followed.
func TestInferLowerBoundsShortest(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	for i, d := range []time.Duration{17600 * time.Microsecond, 19400 * time.Microsecond} {
		cid := uint64(2 + 2*i)
		b.after(time.Millisecond).rpcWithResponse(cid, 100)
		b.after(d).ctl(false, cid, wire.TypeNeedAck)
		b.after(100*time.Microsecond).ack(cid, cid)
	}
	in := NewInferrer(linuxParams(t))
	for i := range b.events {
		in.Feed(&b.events[i])
	}
	var got Inferred
	for _, x := range in.Result() {
		if x.Name == "request_ack_ticks" {
			got = x
		}
	}
	if got.Value != "18" || got.Evidence != "shortest of 2 delays from a response's last byte to the first NEED_ACK: 17.6ms" {
		t.Fatalf("request_ack_ticks %q (%s), want 18 from the shortest, 17.6ms", got.Value, got.Evidence)
	}
	rep := b.check("linux", "", "request_ack_ticks="+got.Value)
	for _, f := range rep.Violations {
		if f.Level == Must {
			t.Errorf("with the inferred request_ack_ticks %s: %s %s", got.Value, f.Rule, f.Why)
		}
	}
	wantClean(t, rep, "HOMA-ACK-005")
}
