package tester

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// loopTransport keeps what is sent and lets a test deliver packets to the
// Peer's handler.
type loopTransport struct {
	mu      sync.Mutex
	sent    [][]byte
	handler func(netip.Addr, uint8, []byte)
}

func (l *loopTransport) LocalAddr() netip.Addr { return testerAddr }
func (l *loopTransport) Send(_ netip.Addr, _ uint8, pkt []byte) error {
	l.mu.Lock()
	l.sent = append(l.sent, append([]byte(nil), pkt...))
	l.mu.Unlock()
	return nil
}
func (l *loopTransport) SetHandler(h func(netip.Addr, uint8, []byte)) { l.handler = h }
func (l *loopTransport) Close() error                                 { return nil }

// TestPeerWire2024 checks that a Peer set to the 2024 wire format
// (HomaModule linux_6.1.38) sends and reads that format: an ACK entry is
// 12 bytes there (client_port), so an ACK is 90 bytes where the current
// format's is 80, a received 2024 GRANT keeps its resend_all,
// and the Peer's per-test capture carries IP protocol 253. Before SetWire
// the Peer sent the current format to every IUT.
func TestPeerWire2024(t *testing.T) {
	for _, tc := range []struct {
		v       wire.Version
		ackLen  int
		ipProto uint8
	}{{wire.VersionCurrent, 80, wire.IPProtoHoma}, {wire.Version2024, 90, wire.IPProtoHoma2024}} {
		tr := &loopTransport{}
		p := New(tr, NewWallClock())
		p.SetWire(tc.v)
		c := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}
		ack := &wire.AckFields{Common: c, Acks: []wire.AckEntry{{ClientID: 102, ClientPort: 33000, ServerPort: 4000}}}
		if err := p.Send(iutAddr, 7, ack); err != nil {
			t.Fatal(err)
		}
		if n := len(tr.sent[0]); n != tc.ackLen {
			t.Errorf("%s: ACK is %d bytes, want %d", tc.v, n, tc.ackLen)
		}
		g, err := (&wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101}, Offset: 20000, Priority: 3, ResendAll: 1}).
			AppendTo(nil, wire.EncodeOptions{Version: tc.v, FixLengths: true})
		if err != nil {
			t.Fatal(err)
		}
		tr.handler(iutAddr, 7, g)
		log := p.Log()
		got := log[len(log)-1]
		if got.Err != nil || got.Pkt.Type() != wire.TypeGrant || got.Pkt.Grant().Offset() != 20000 || got.Pkt.Version() != tc.v {
			t.Errorf("%s: received GRANT decoded as %v (%v)", tc.v, got, got.Err)
		}
		var protos []uint8
		eachCaptureFrame(t, func(f *pcap.Frame) { protos = append(protos, f.IPProto) }, p)
		if len(protos) != 2 || protos[0] != tc.ipProto || protos[1] != tc.ipProto {
			t.Errorf("%s: capture IP protocols %v, want %d", tc.v, protos, tc.ipProto)
		}
	}
}
