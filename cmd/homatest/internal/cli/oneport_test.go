package cli

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// writeOnePort writes a pcapng of one interface, the IUT's link, as
// homatest explore writes a failure capture: a tester client's request
// (three DATA packets) outbound, delivered to the IUT, and the IUT's
// one-packet response inbound, as it sent it.
func writeOnePort(t *testing.T, path string) {
	t.Helper()
	tester, iut := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.1")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pcap.NewWriter(f, pcap.Interface{Name: "iut(10.0.0.1)"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	write := func(i int, src, dst netip.Addr, d *wire.DataFields, dir pcap.Direction) {
		eth, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: src, Dst: dst}, d, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePacketDir(0, t0.Add(time.Duration(i)*time.Millisecond), eth, len(eth), dir, ""); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		write(i, tester, iut, &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 2},
			MessageLength: 3000, Incoming: 3000, SegOffset: uint32(1000 * i), Payload: make([]byte, 1000)}, pcap.DirOutbound)
	}
	write(3, iut, tester, &wire.DataFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 3},
		MessageLength: 100, Incoming: 100, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, pcap.DirInbound)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestOnePortCapture: a single-interface pcapng with direction flags
// (explore's failure capture) holds the packets the IUT was given only
// as delivered (outbound): rpcs, plot and decode read them, once, as
// check's port view does. On the old code they read only the inbound
// frames: the request was 0 bytes with DATA=1, plot said "request: no
// DATA in the capture", and decode counted 3 frames "other direction".
func TestOnePortCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "failure-1.pcapng")
	writeOnePort(t, path)
	out, err, _ := run(t, "rpcs", "-o", "json", path)
	if err != nil {
		t.Fatal(err, out)
	}
	var row rpcJSON // one JSON line per RPC
	if err := json.Unmarshal([]byte(out), &row); err != nil {
		t.Fatal(err, out)
	}
	if row.RequestLen != 3000 || row.Packets["DATA"] != 4 || !row.ResponseDone {
		t.Errorf("rpcs: %s\nwant one RPC, request 3000 B, DATA=4, response complete", out)
	}
	out, err, _ = run(t, "decode", "--summary-only", path)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "4 Homa") || strings.Contains(out, "other direction") {
		t.Errorf("decode summary: %s\nwant 4 Homa packets, none skipped as the other direction", out)
	}
	svg := filepath.Join(t.TempDir(), "p.svg")
	out, err, _ = run(t, "plot", "--rpc", "2", "-o", svg, path)
	if err != nil || strings.Contains(out, "no DATA") {
		t.Errorf("plot: %v %s", err, out)
	}
}

// TestOnePortCount: check of a one-port capture (explore's) counts its
// packets as packets: each is in it once, as sent or as delivered. Before,
// it said "4 Homa frames (a packet sent and delivered is two)", true only
// of a capture that holds both ends' ports.
func TestOnePortCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oneport.pcapng")
	writeOnePort(t, path)
	out, _, _ := run(t, "check", path)
	if !strings.Contains(out, "oneport.pcapng (profile ") || !strings.Contains(out, "): 4 Homa packets, ") || strings.Contains(out, "sent and delivered is two") {
		t.Errorf("check's first line, want 4 Homa packets and no \"sent and delivered is two\":\n%s", strings.SplitN(out, "\n", 2)[0])
	}
	if !strings.Contains(out, "capture point: ports") {
		t.Errorf("want the ports plan:\n%s", out)
	}
}
