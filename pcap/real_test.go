package pcap

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// realCounts are the per-type packet counts listed in the README of each
// capture directory under testdata/real (DATA, GRANT, RESEND, RPC_UNKNOWN,
// BUSY, CUTOFFS, FREEZE, NEED_ACK, ACK), the retransmitted DATA and the
// frame totals.
var realCounts = []struct {
	file        string
	frames      int
	types       [9]int
	retransmits int
	other       int
	version     wire.Version
	hijacked    bool
}{
	{"linux-6.1-proto253/a-small-rpcs.pcap", 47, [9]int{40, 0, 0, 0, 0, 2, 0, 1, 1}, 0, 3, wire.Version2024, false},
	{"linux-6.1-proto253/b-500k-grants.pcap", 1926, [9]int{1770, 145, 0, 0, 0, 3, 0, 1, 1}, 0, 6, wire.Version2024, false},
	{"linux-6.1-proto253/c-500k-loss3pct-server-side.pcap", 2146, [9]int{1780, 246, 73, 0, 11, 3, 0, 30, 1}, 64, 2, wire.Version2024, false},
	{"linux-6.1-proto253/e2-server-forgets-request.pcap", 73, [9]int{33, 1, 17, 1, 16, 3, 0, 1, 1}, 16, 0, wire.Version2024, false},
	{"linux-6.1-proto253/f1-ipv6.pcap", 70, [9]int{58, 4, 0, 0, 0, 2, 0, 2, 1}, 0, 3, wire.Version2024, false},
	{"linux-6.13-proto146/a-small-rpcs.pcap", 46, [9]int{40, 0, 0, 0, 0, 2, 0, 1, 1}, 0, 2, wire.VersionCurrent, false},
	{"linux-6.13-proto146/b-500k-grants.pcap", 1922, [9]int{1770, 145, 0, 0, 0, 2, 0, 1, 1}, 0, 3, wire.VersionCurrent, false},
	{"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap", 2076, [9]int{1770, 229, 54, 0, 15, 2, 0, 1, 1}, 37, 4, wire.VersionCurrent, false},
	{"linux-6.13-proto146/f4-hijack-tcp.pcap", 272, [9]int{244, 16, 0, 0, 0, 2, 0, 4, 1}, 0, 5, wire.VersionCurrent, true},
	// Both directions of every switch port: each packet as sent and, unless
	// netem lost it, as delivered.
	{"lab-scenarios/linux-6.13-netem-incast.pcapng", 1639, [9]int{1348, 82, 39, 8, 6, 12, 0, 79, 65}, 32, 0, wire.VersionCurrent, false},
	{"lab-scenarios/linux-6.1-netem-incast.pcapng", 2621, [9]int{1214, 130, 34, 2, 2, 15, 0, 702, 522}, 32, 0, wire.Version2024, false},
}

// TestRealCaptures decodes every real HomaModule capture with wire version
// auto and checks the README's counts, no decode errors, and that auto
// picked the branch's version for every packet.
func TestRealCaptures(t *testing.T) {
	for _, c := range realCounts {
		t.Run(c.file, func(t *testing.T) {
			r, err := Open(filepath.Join("testdata", "real", c.file), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for {
				f, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.Err != nil {
					t.Errorf("frame %d: %v", f.Number, f.Err)
					continue
				}
				if got := f.Packet.Version(); got != c.version {
					t.Errorf("frame %d: version %v, want %v", f.Number, got, c.version)
				}
				if f.Hijacked != c.hijacked {
					t.Errorf("frame %d: hijacked %v, want %v", f.Number, f.Hijacked, c.hijacked)
				}
			}
			st := r.Stats()
			if st.Frames != c.frames {
				t.Errorf("frames = %d, want %d", st.Frames, c.frames)
			}
			for i, ty := range wire.AllTypes {
				if got := st.Count(ty); got != c.types[i] {
					t.Errorf("%s = %d, want %d", ty, got, c.types[i])
				}
			}
			if st.Retransmits != c.retransmits {
				t.Errorf("retransmits = %d, want %d", st.Retransmits, c.retransmits)
			}
			if st.NonHoma() != c.other {
				t.Errorf("other = %d (%v), want %d", st.NonHoma(), st.Other, c.other)
			}
			if st.DecodeErrors != 0 {
				t.Errorf("decode errors = %d, want 0", st.DecodeErrors)
			}
		})
	}
}

// TestRealCaptureDetails checks facts the READMEs state about single packets.
func TestRealCaptureDetails(t *testing.T) {
	frames := func(t *testing.T, file string) []Frame {
		t.Helper()
		r, err := Open(filepath.Join("testdata", "real", file), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []Frame
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			g := *f
			g.Raw = append([]byte(nil), f.Raw...)
			g.Packet, _ = wire.Decode(g.Raw, wire.DecodeOptions{Version: f.Packet.Version(), WireLen: f.Packet.WireLen()})
			out = append(out, g)
		}
	}
	t.Run("b-500k grants current", func(t *testing.T) {
		// README: GRANT offsets of each message are 44176, 50000, 58544, then
		// steps of 17088, ending at 500000; all priority 0. Each request has 29
		// unscheduled packets, the last 128 bytes at 39872.
		var offs []uint32
		var short int
		for _, f := range frames(t, "linux-6.13-proto146/b-500k-grants.pcap") {
			p := f.Packet
			switch p.Type() {
			case wire.TypeGrant:
				if p.Grant().Priority() != 0 {
					t.Errorf("frame %d: grant priority %d, want 0", f.Number, p.Grant().Priority())
				}
				if p.SenderID() == 3 {
					offs = append(offs, p.Grant().Offset())
				}
			case wire.TypeData:
				d := p.Data()
				if d.MessageLength() == 500000 && d.Offset() == 39872 {
					short++
					if d.DataLen() != 128 {
						t.Errorf("frame %d: len %d at 39872, want 128", f.Number, d.DataLen())
					}
					if d.Incoming() != 40000 {
						t.Errorf("frame %d: incoming %d, want 40000", f.Number, d.Incoming())
					}
				}
			}
		}
		if short != 5 {
			t.Errorf("128-byte packets at 39872: %d, want 5", short)
		}
		if len(offs) != 29 {
			t.Fatalf("grants for RPC 2: %d, want 29", len(offs))
		}
		want := []uint32{44176, 50000, 58544, 58544 + 17088}
		for i, w := range want {
			if offs[i] != w {
				t.Errorf("grant %d offset %d, want %d", i, offs[i], w)
			}
		}
		if offs[28] != 500000 {
			t.Errorf("last grant offset %d, want 500000", offs[28])
		}
	})
	t.Run("a-small 2024 acks and seg offset", func(t *testing.T) {
		var dataSentinel, acks int
		for _, f := range frames(t, "linux-6.1-proto253/a-small-rpcs.pcap") {
			p := f.Packet
			if p.Type() == wire.TypeData {
				d := p.Data()
				if d.SegOffset() == wire.SegOffsetInSequence {
					dataSentinel++
				}
				if d.Offset() != 0 || d.DataLen() != 100 || d.MessageLength() != 100 {
					t.Errorf("frame %d: off %d len %d msg %d, want 0 100 100", f.Number, d.Offset(), d.DataLen(), d.MessageLength())
				}
			}
			if p.Type() == wire.TypeAck {
				acks++
				if p.HeaderLen() != 90 || p.Ack().NumAcks() != 1 {
					t.Errorf("ACK header %d num_acks %d, want 90 1", p.HeaderLen(), p.Ack().NumAcks())
				}
			}
			if f.Priority > 7 {
				t.Errorf("priority %d", f.Priority)
			}
		}
		if dataSentinel != 40 || acks != 1 {
			t.Errorf("sentinel DATA %d acks %d, want 40 1", dataSentinel, acks)
		}
	})
	t.Run("f1 ipv6 priorities and segments", func(t *testing.T) {
		for _, f := range frames(t, "linux-6.1-proto253/f1-ipv6.pcap") {
			if f.IPVersion != 6 {
				t.Fatalf("frame %d: IPv%d", f.Number, f.IPVersion)
			}
			p := f.Packet
			if p.Type().IsControl() && f.Priority != 7 {
				t.Errorf("frame %d: %s priority %d (tc 0x%02x), want 7", f.Number, p.Type(), f.Priority, f.TOS)
			}
			if p.Type() == wire.TypeData && p.Data().MessageLength() == 30000 && p.Data().DataLen() > 1404 {
				t.Errorf("frame %d: IPv6 segment of %d bytes > 1404", f.Number, p.Data().DataLen())
			}
		}
	})
	t.Run("e2 rpc unknown restart", func(t *testing.T) {
		var unknown, retx int
		for _, f := range frames(t, "linux-6.1-proto253/e2-server-forgets-request.pcap") {
			p := f.Packet
			if p.Type() == wire.TypeRPCUnknown {
				unknown++
				if p.Role() != wire.RoleServer {
					t.Errorf("RPC_UNKNOWN from %v, want server", p.Role())
				}
			}
			if p.Type() == wire.TypeData && p.Data().Retransmit() == 1 {
				retx++
				d := p.Data()
				if d.SegOffset() != d.Common().Sequence() {
					t.Errorf("frame %d: retransmit seg.offset %d != sequence %d", f.Number, d.SegOffset(), d.Common().Sequence())
				}
				if d.Incoming() != 20000 {
					t.Errorf("frame %d: restart incoming %d, want 20000", f.Number, d.Incoming())
				}
			}
		}
		if unknown != 1 || retx != 16 {
			t.Errorf("RPC_UNKNOWN %d retransmits %d, want 1 16", unknown, retx)
		}
	})
}
