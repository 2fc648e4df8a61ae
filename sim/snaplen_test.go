package sim_test

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec/wire"
)

// TestCaptureSnapLenIPv6: a capture cut to SnapLen 128 keeps every Homa
// header over IPv6 as over IPv4: an IPv6 frame keeps IPv6SnapExtra more
// bytes (148), so an 80-byte ACK with five acks reads whole (at 128 it
// lost 6 bytes of its acks slots: a decode error in homatest decode),
// and a DATA frame keeps the same 94 bytes past its IP header as over
// IPv4. Fails on the old code (SnapCut 1, DATA cut at 128).
func TestCaptureSnapLenIPv6(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		s, err := sim.New(sim.Config{Seed: 1, Link: netem.LinkConfig{Rate: netem.Gbit}})
		if err != nil {
			t.Fatal(err)
		}
		ip := func(i byte) netip.Addr {
			if v6 {
				return netip.AddrFrom16([16]byte{0x20, 0x01, 0, 2, 15: i})
			}
			return netip.AddrFrom4([4]byte{198, 18, 0, i})
		}
		a, _ := s.AddRaw("a", ip(1))
		b, _ := s.AddRaw("b", ip(2))
		var buf bytes.Buffer
		if err := s.Capture(sim.CaptureConfig{Both: &buf, SnapLen: 128}); err != nil {
			t.Fatal(err)
		}
		acks := make([]wire.AckEntry, 5)
		for i := range acks {
			acks[i] = wire.AckEntry{ClientID: uint64(2 * (i + 1)), ServerPort: 4000}
		}
		ack, err := wire.Encode(&wire.AckFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 12}, NumAcks: 5, Acks: acks},
			wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
		if err != nil {
			t.Fatal(err)
		}
		data, err := wire.Encode(&wire.DataFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 12}, MessageLength: 1000, Payload: make([]byte, 1000)},
			wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
		if err != nil {
			t.Fatal(err)
		}
		s.At(time.Microsecond, func() {
			if err := a.Send(b.Addr(), 7, ack); err != nil {
				t.Error(err)
			}
			if err := a.Send(b.Addr(), 7, data); err != nil {
				t.Error(err)
			}
		})
		s.RunUntil(time.Millisecond)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		r, err := pcap.NewReader(&buf, pcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gotAcks, dataKept := -1, 0
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case f.Err != nil:
				t.Errorf("v6 %v: frame %d: %v", v6, f.Number, f.Err)
			case f.Packet.Type() == wire.TypeAck:
				gotAcks = len(f.Packet.Ack().Fields().Acks)
			case f.Packet.Type() == wire.TypeData:
				dataKept = len(f.Raw)
			}
		}
		if st := r.Stats(); st.SnapCut != 0 || gotAcks != 5 || dataKept != 94 {
			t.Errorf("v6 %v: snap_cut %d, ACK read with %d acks, DATA kept %d bytes past its IP header; want 0, 5 and 94", v6, st.SnapCut, gotAcks, dataKept)
		}
	}
}
