package conformance

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

func TestJustDelivered(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	h, peer := netip.MustParseAddr("198.18.1.3"), netip.MustParseAddr("198.18.1.2")
	data := func(id uint64) wire.Packet {
		b, err := wire.Encode(&wire.DataFields{Common: wire.CommonFields{Sport: 40000, Dport: 4000, SenderID: id},
			MessageLength: 10, Incoming: 10, Payload: make([]byte, 10)}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := wire.Decode(b, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	view := []spec.Event{
		{Time: at(0), Src: peer, Dst: h, Packet: data(10)},    // RPC 10's DATA arrives
		{Time: at(200), Src: h, Dst: peer, Packet: data(11)},  // h acts 200 µs later
		{Time: at(5000), Src: h, Dst: peer, Packet: data(13)}, // another RPC, nothing delivered
	}
	key := spec.KeyOf(&view[0])
	other := spec.KeyOf(&view[2])
	cases := []struct {
		name string
		f    spec.Finding
		want bool
	}{
		{"timer action 200 µs after a delivery of its RPC", spec.Finding{Frame: 2, RPC: &key, Slack: time.Millisecond}, true},
		{"not a timing finding", spec.Finding{Frame: 2, RPC: &key}, false},
		{"another RPC's delivery", spec.Finding{Frame: 2, RPC: &other, Slack: time.Millisecond}, false},
		{"action 5 ms after the delivery", spec.Finding{Frame: 3, RPC: &other, Slack: time.Millisecond}, false},
		{"a packet h received", spec.Finding{Frame: 1, RPC: &key, Slack: time.Millisecond}, false},
	}
	for _, c := range cases {
		if got := justDelivered(c.f, view, h); got != c.want {
			t.Errorf("%s: justDelivered = %v, want %v", c.name, got, c.want)
		}
	}
}
