package tester

import (
	"context"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// received returns a DATA packet from iutAddr carrying cutoff_version v,
// as if received at t.
func received(t *testing.T, at time.Time, v uint16) *Packet {
	t.Helper()
	b, err := (&wire.DataFields{Common: wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101},
		MessageLength: 100, Incoming: 100, CutoffVersion: v, Payload: make([]byte, 100)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &Packet{At: at, Src: iutAddr, Dst: testerAddr, Raw: b}
	if r.Pkt, err = wire.Decode(b, wire.DecodeOptions{Version: wire.VersionCurrent}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCutoffsHostAnswer: stale DATA draws one CUTOFFS per jiffy per peer,
// DATA with the host's version none (homa_data_pkt; facts CUT-01).
func TestCutoffsHostAnswer(t *testing.T) {
	cut := [wire.NumCutoffs]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}
	h := NewCutoffsHost(cut, 1, 7, time.Millisecond)
	t0 := time.Unix(0, int64(5*time.Millisecond))
	steps := []struct {
		at      time.Duration
		version uint16
		want    bool
	}{
		{0, 1, false},                      // the host's version
		{0, 0, true},                       // stale: answered
		{999 * time.Microsecond, 0, false}, // same jiffy
		{time.Millisecond, 1, false},       // current again
		{time.Millisecond, 2, true},        // next jiffy, another stale version
		{time.Millisecond + 1, 2, false},   // same jiffy
	}
	for i, s := range steps {
		f, prio, ok := h.answer(received(t, t0.Add(s.at), s.version))
		if ok != s.want {
			t.Fatalf("step %d (at +%v, version %d): answered %v, want %v", i, s.at, s.version, ok, s.want)
		}
		if !ok {
			continue
		}
		if prio != 7 || f.CutoffVersion != 1 || f.UnschedCutoffs != cut {
			t.Errorf("step %d: CUTOFFS at p%d version %d cutoffs %v, want p7 version 1 %v", i, prio, f.CutoffVersion, f.UnschedCutoffs, cut)
		}
		if c := f.Common; c.Sport != 33000 || c.Dport != 4000 || c.SenderID != 100 {
			t.Errorf("step %d: CUTOFFS ports %d>%d id %d, want 33000>4000 id 100 (the DATA's RPC seen from its receiver)", i, c.Sport, c.Dport, c.SenderID)
		}
	}
	h.Set(cut, 2)
	if _, _, ok := h.answer(received(t, t0.Add(time.Hour), 2)); ok {
		t.Error("answered DATA carrying the version Set made current")
	}
}

// TestPeerAnswersStaleData: in the simulator, the reference server's
// response to a fresh peer carries cutoff_version 0; a Peer answering
// CUTOFFS sends one, and the next response carries the Peer's version.
func TestPeerAnswersStaleData(t *testing.T) {
	p, params := setup(t)
	p.AnswerCutoffs(NewCutoffsHost(params.UnschedCutoffs, params.CutoffVersion, uint8(params.NumPriorities-1), params.Tick))
	ctx := context.Background()
	for i, id := range []uint64{600, 602} {
		// The first request carries 0 (no CUTOFFS from the server yet),
		// the second the version of the server's CUTOFFS.
		err := p.Send(iutAddr, 6, &wire.DataFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: id},
			MessageLength: 100, Incoming: 100, CutoffVersion: []uint16{0, params.CutoffVersion}[i], Payload: make([]byte, 100)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Expect(ctx, Match{Type: wire.TypeData, RPC: id}, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if want := []uint16{0, params.CutoffVersion}[i]; r.Pkt.Data().CutoffVersion() != want {
			t.Errorf("response %d carries cutoff_version %d, want %d", id, r.Pkt.Data().CutoffVersion(), want)
		}
		if err := p.ExpectNone(ctx, Match{Type: wire.TypeData, RPC: id}, 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	var cutoffs []*Packet
	for _, r := range p.Log() {
		if r.Sent && r.Pkt.Type() == wire.TypeCutoffs {
			cutoffs = append(cutoffs, r)
		}
	}
	if len(cutoffs) != 1 || cutoffs[0].Note != "" || cutoffs[0].Pkt.Cutoffs().CutoffVersion() != params.CutoffVersion {
		t.Fatalf("the Peer sent %v, want one CUTOFFS with version %d, not deliberate", cutoffs, params.CutoffVersion)
	}
	// The exchange keeps HomaModule's CUTOFFS rules on both sides.
	prof, _ := spec.LookupProfile("linux")
	judge, _ := spec.NewJudge("linux", prof.Params, "HOMA-CUTOFF-*", spec.Should)
	rep, _, err := Verify(judge, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 0 {
		t.Errorf("CUTOFFS findings: %v", rep.Violations)
	}
}
