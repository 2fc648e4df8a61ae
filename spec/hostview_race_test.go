package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

func TestRaced(t *testing.T) {
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
	view := []Event{
		{Time: at(0), Src: peer, Dst: h, Packet: data(10)},    // RPC 10's DATA arrives
		{Time: at(200), Src: h, Dst: peer, Packet: data(11)},  // h acts 200 µs later
		{Time: at(5000), Src: h, Dst: peer, Packet: data(13)}, // another RPC, nothing delivered
	}
	key := KeyOf(&view[0])
	other := KeyOf(&view[2])
	cases := []struct {
		name string
		f    Finding
		want bool
	}{
		{"timer action 200 µs after a delivery of its RPC", Finding{Frame: 2, RPC: &key, Slack: time.Millisecond}, true},
		{"not a timing finding", Finding{Frame: 2, RPC: &key}, false},
		{"another RPC's delivery", Finding{Frame: 2, RPC: &other, Slack: time.Millisecond}, false},
		{"action 5 ms after the delivery", Finding{Frame: 3, RPC: &other, Slack: time.Millisecond}, false},
		{"a packet h received", Finding{Frame: 1, RPC: &key, Slack: time.Millisecond}, false},
	}
	for _, c := range cases {
		if got := Raced(c.f, view, c.f.Frame-1, h, time.Millisecond); got != c.want {
			t.Errorf("%s: raced = %v, want %v", c.name, got, c.want)
		}
	}
}
