package pcap

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/spec/wire"
)

var (
	addrA  = netip.MustParseAddr("198.18.0.1")
	addrB  = netip.MustParseAddr("198.18.0.2")
	addr6A = netip.MustParseAddr("fd00::1")
	addr6B = netip.MustParseAddr("fd00::2")
)

// sampleFields returns one packet of every type (current wire format).
func sampleFields() []wire.Fields {
	c := func(id uint64) wire.CommonFields {
		return wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: id}
	}
	return []wire.Fields{
		&wire.DataFields{Common: c(2), MessageLength: 5000, Incoming: 5000, CutoffVersion: 1,
			SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 1424)},
		&wire.GrantFields{Common: c(3), Offset: 60000, Priority: 2},
		&wire.ResendFields{Common: c(3), Offset: 1424, Length: 2848, Priority: 7},
		&wire.RPCUnknownFields{Common: c(3)},
		&wire.BusyFields{Common: c(3)},
		&wire.CutoffsFields{Common: c(3), UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 1},
		&wire.FreezeFields{Common: c(0)},
		&wire.NeedAckFields{Common: c(3)},
		&wire.AckFields{Common: c(2), Acks: []wire.AckEntry{{ClientID: 2, ServerPort: 4000}}},
	}
}

func buildFrame(t testing.TB, s FrameSpec, f wire.Fields, o wire.EncodeOptions) []byte {
	t.Helper()
	b, err := BuildFrame(gopacket.NewSerializeBuffer(), s, f, o)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}
