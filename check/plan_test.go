package check

import (
	"context"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// TestGuessedPlan: File plans a capture from its first frames and lets the
// check's pass confirm the plan on the whole capture; where the whole
// capture says otherwise (a third host's packets, direction marks, both
// directions only later), the report is the one planned from the whole
// capture up front, byte for byte.
func TestGuessedPlan(t *testing.T) {
	a, b, c, d := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.4")
	type pkt struct {
		src, dst netip.Addr
		dir      pcap.Direction
	}
	// Eight one-packet requests, each answered.
	rpcs := func(dirs ...pcap.Direction) []pkt {
		var out []pkt
		for i := range 8 {
			cl, sv := a, b
			if i%2 == 1 {
				cl = c
			}
			d := dirs[min(i, len(dirs)-1)]
			out = append(out, pkt{cl, sv, d}, pkt{sv, cl, d})
		}
		return out
	}
	tail := func(p []pkt, q ...pkt) []pkt { return append(p, q...) }
	for _, tc := range []struct {
		name, flag  string
		pkts        []pkt
		guess, want string // guess "": the first frames give no plan
	}{
		{"one host, then a third pair", "auto", tail(rpcs(pcap.DirUnknown), pkt{a, c, pcap.DirUnknown}), "host:10.0.0.2", "switch"},
		{"no marks, then inbound", "auto", rpcs(pcap.DirUnknown, pcap.DirUnknown, pcap.DirInbound), "host:10.0.0.2", "sent"},
		{"inbound, then outbound", "auto", rpcs(pcap.DirInbound, pcap.DirInbound, pcap.DirOutbound), "sent", "ports"},
		{"the same throughout", "auto", rpcs(pcap.DirUnknown), "host:10.0.0.2", "host:10.0.0.2"},
		{"given, a third pair later", "switch", tail(rpcs(pcap.DirUnknown), pkt{a, c, pcap.DirUnknown}), "switch", "switch"},
		{"given host only later", "host:10.0.0.4", tail(rpcs(pcap.DirUnknown), pkt{d, b, pcap.DirUnknown}), "", "host:10.0.0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.pcapng")
			fw, err := pcap.Create(path, pcap.Interface{Name: "p0"})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
			for i, p := range tc.pkts {
				id := uint64(2 + 2*(i/2))
				if p.src == b {
					id |= 1
				}
				f := &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: id},
					MessageLength: 100, Incoming: 100, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}
				if p.src == b {
					f.Common.Sport, f.Common.Dport = 4000, 32768
				}
				fr, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: p.src, Dst: p.dst}, f, wire.EncodeOptions{FixLengths: true, SetMarks: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := fw.WritePacketDir(0, t0.Add(time.Duration(i)*time.Millisecond), fr, len(fr), p.dir, ""); err != nil {
					t.Fatal(err)
				}
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			check := func(prefix int) (FileReport, string) {
				t.Helper()
				defer func(p int) { layoutPrefix = p }(layoutPrefix)
				layoutPrefix = prefix
				o := opts()
				o.CapturePoint = tc.flag
				fr := File(o, path)
				if fr.Error != "" {
					t.Fatalf("prefix %d: %s", prefix, fr.Error)
				}
				js, err := json.Marshal(fr)
				if err != nil {
					t.Fatal(err)
				}
				return fr, string(js)
			}
			lay, _, err := readLayout(context.Background(), path, 4)
			if err != nil {
				t.Fatal(err)
			}
			switch p, err := planCapture(tc.flag, lay); {
			case tc.guess == "" && err == nil:
				t.Fatalf("plan from the first 4 frames %s, want an error", p)
			case tc.guess != "" && p.String() != tc.guess:
				t.Fatalf("plan from the first 4 frames %s (%v), want %s", p, err, tc.guess)
			}
			whole, wholeJS := check(-1)
			if whole.CapturePoint != tc.want {
				t.Fatalf("whole capture planned as %s, want %s", whole.CapturePoint, tc.want)
			}
			guessed, guessedJS := check(4)
			if guessedJS != wholeJS {
				t.Errorf("planned from 4 frames then confirmed:\n%s\nplanned from the whole capture:\n%s", guessedJS, wholeJS)
			}
			if guessed.CapturePoint != tc.want {
				t.Errorf("capture point %s, want %s", guessed.CapturePoint, tc.want)
			}
		})
	}
}
