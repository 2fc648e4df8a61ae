package explore

import (
	"context"
	"testing"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// TestDelayedPacketOfNoRPC: the explored network may delay (FateLong) a
// packet the IUT sent for no RPC of the case (in a shared namespaces
// environment, one of an earlier case's RPCs the case never bound); the
// run holds it and goes on. It panicked (nil pointer: the delay was
// noted on the packet's RPC), ending a namespaces explore session with a
// stack trace; this test fails on that code.
func TestDelayedPacketOfNoRPC(t *testing.T) {
	ctx := context.Background()
	w, err := newWorld(ctx, SimEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// A BUSY from the IUT's server side for client id 1000, which no
	// tester host of the case uses (their ids start at 2).
	b, err := wire.Encode(&wire.BusyFields{Common: wire.CommonFields{Sport: serverPort, Dport: 40000, SenderID: 1001}},
		wire.EncodeOptions{Version: w.info.Params.Wire, FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	w.in.put(w.clock, 0, w.info.Addr, 7, b)
	held := Choice{Key: Key{Kind: KindIn, Host: 0, Type: uint8(wire.TypeBusy)}, Value: FateLong}
	out := play(ctx, w, &runConfig{level: spec.Should}, &Case{RPCs: []RPC{{Host: 0, Request: 100, Response: 100}}},
		newDecider([]Choice{held}, nil, [numKinds]float64{}))
	if out.interrupted != nil || out.fail != nil {
		t.Fatalf("case with a held packet of no RPC: interrupted %v, fail %v", out.interrupted, out.fail)
	}
	if out.used[KindIn] == 0 {
		t.Errorf("the held BUSY's fate was not decided (used %v): the test no longer reaches the delay", out.used)
	}
}
