package homa_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// Addresses of hostWithPeer's host under test and its tester peer.
var (
	iutAddr  = netip.MustParseAddr("198.18.0.1")
	peerAddr = netip.MustParseAddr("198.18.0.2")
)

// hostWithPeer builds a host with params p at iutAddr and a tester peer at
// peerAddr on a 10 Gbit/s in-memory network (one-way delay d), both closed
// when the test ends. Call it inside synctest.Test.
func hostWithPeer(t *testing.T, p homa.Params, d time.Duration) (*homa.Host, *tester.Peer) {
	t.Helper()
	n := memnet.New(memnet.Config{Rate: 10e9, Delay: d})
	h, err := homa.New(homa.Config{Transport: n.Attach(iutAddr), Params: p})
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	peer := tester.New(n.Attach(peerAddr), tester.NewWallClock())
	t.Cleanup(func() { peer.Close(); h.Close(); n.Close() })
	return h, peer
}
