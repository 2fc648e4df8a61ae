package homa_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/spec/wire"
)

// TestPacerRate: with LinkRate 100 Mbit/s, a 1 MB request (all of it
// unscheduled) leaves at the link rate on average, and the sender is never
// more than the pacer's 500 µs backlog plus one packet ahead of the link.
func TestPacerRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		type sent struct {
			at   time.Time
			wire int // bytes on the link: Ethernet, IP, Homa header and data
		}
		var data []sent
		client := netip.MustParseAddr("198.18.0.1")
		n := memnet.New(memnet.Config{Tap: func(ts time.Time, src, _ netip.Addr, _ uint8, pkt []byte) {
			p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
			if err == nil && src == client && p.Type() == wire.TypeData {
				mu.Lock()
				data = append(data, sent{ts, 14 + 20 + wire.DataHeaderLen + p.Data().DataLen()})
				mu.Unlock()
			}
		}})
		defer n.Close()
		p := homa.DefaultParams()
		p.UnschedBytes, p.LinkRate = 1000000, 100e6
		p.DeferMinBytes = 0 // the last 352 bytes would leave past the pacer (TestMachineDeferMinBytes)
		var hosts []*homa.Host
		for _, a := range []netip.Addr{client, netip.MustParseAddr("198.18.0.2")} {
			h, err := homa.New(homa.Config{Transport: n.Attach(a), Params: p})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			hosts = append(hosts, h)
		}
		echoServer(t, hosts[1], 4000)
		c, _ := hosts[0].Dial()
		if _, err := c.Call(context.Background(), netip.AddrPortFrom(hosts[1].Addr(), 4000), make([]byte, 1000000)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(data) != 703 {
			t.Fatalf("%d request DATA packets, want 703", len(data))
		}
		linkTime := func(bytes int) time.Duration { return time.Duration(int64(bytes) * 8 * int64(time.Second) / 100e6) }
		total, worst := 0, time.Duration(0)
		for _, d := range data {
			// Link time handed out before this packet, against the time
			// that has passed since the first one.
			worst = max(worst, linkTime(total)-d.at.Sub(data[0].at))
			total += d.wire
		}
		took, want := data[len(data)-1].at.Sub(data[0].at), linkTime(total-data[len(data)-1].wire)
		if took < want-600*time.Microsecond || took > want+want/100 {
			t.Errorf("703 packets took %v to leave, want the link time %v (100 Mbit/s) within the backlog", took, want)
		}
		if limit := 500*time.Microsecond + linkTime(1514); worst > limit {
			t.Errorf("the sender ran %v ahead of the link, want at most %v", worst, limit)
		}
	})
}
