package check

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// writeGrant34Capture writes what HomaModule main between be127d8
// (2024-12-10: homa_ack without client_port, ACK 80 bytes) and 04df9e0
// (2025-07-07: GRANT loses resend_all, 34 → 33 bytes), and branch
// linux_6.10.6, put on the wire (IP protocol 146): RPC 2 sends a
// 100000-byte request (40000 unscheduled, then a 34-byte GRANT to the
// end); its 100-byte response's DATA at offset 0 is lost and the client's
// RESEND for it gets a retransmission (retransmit 1, incoming 100); then
// RPC 4's request DATA piggy-backs the ack of RPC 2 and the server's
// NEED_ACK for RPC 4 gets an 80-byte ACK. ackPort is the server port the
// piggy-backed ack names (4000 is right); v is the layout of every packet
// but the GRANT (Version2024: main between f7e4717 and be127d8, 12-byte
// homa_ack over IP protocol 146). It returns the path.
func writeGrant34Capture(t *testing.T, ackPort uint16, v wire.Version) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grant34.pcapng")
	fw, err := pcap.Create(path, pcap.Interface{Name: "p0"})
	if err != nil {
		t.Fatal(err)
	}
	client, server := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	now := time.Date(2025, 4, 1, 12, 0, 0, 0, time.UTC)
	sb := gopacket.NewSerializeBuffer()
	emit := func(fromClient bool, prio uint8, f wire.Fields, v wire.Version, after time.Duration) {
		t.Helper()
		src, dst := server, client
		c := f.CommonFields()
		c.Sport, c.Dport = 4000, 32768
		if fromClient {
			src, dst = client, server
			c.Sport, c.Dport = 32768, 4000
		}
		now = now.Add(after)
		fr, err := pcap.BuildFrame(sb, pcap.FrameSpec{Src: src, Dst: dst, Priority: prio, IPProto: wire.IPProtoHoma}, f,
			wire.EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WritePacket(0, now, fr, len(fr), ""); err != nil {
			t.Fatal(err)
		}
	}
	data := func(fromClient bool, id uint64, msgLen, off, n, incoming uint32, prio uint8, retransmit bool, ack uint64) {
		f := &wire.DataFields{Common: wire.CommonFields{SenderID: id, Sequence: off}, MessageLength: msgLen, Incoming: incoming,
			CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, n)}
		if retransmit {
			f.Retransmit, f.SegOffset = 1, off
		}
		if ack != 0 {
			// The 2024 layout's ack also names the client's port
			// (homa_peer_add_ack); the main layout has no such field.
			f.Ack = wire.AckEntry{ClientID: ack, ClientPort: 32768, ServerPort: ackPort}
		}
		emit(fromClient, prio, f, v, 5*time.Microsecond)
	}
	emit(false, 7, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: 3},
		UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 1}, v, 0)
	for off := uint32(0); off < 40000; off += 1424 {
		data(true, 2, 100000, off, min(1424, 40000-off), 40000, 4, false, 0)
	}
	// GRANT with resend_all: 34 bytes (Version2024's GRANT layout).
	emit(false, 7, &wire.GrantFields{Common: wire.CommonFields{SenderID: 3}, Offset: 100000}, wire.Version2024, 10*time.Microsecond)
	for off := uint32(40000); off < 100000; off += 1424 {
		data(true, 2, 100000, off, min(1424, 100000-off), 40000, 0, false, 0)
	}
	// The response's only packet is lost before the capture point; the
	// client's RESEND after resend_ticks gets it again.
	emit(true, 7, &wire.ResendFields{Common: wire.CommonFields{SenderID: 2}, Offset: 0, Length: 100, Priority: 7}, v, 5*time.Millisecond)
	data(false, 3, 100, 0, 100, 100, 7, true, 0)
	data(true, 4, 100, 0, 100, 100, 7, false, 2) // piggy-backs RPC 2's ack
	data(false, 5, 100, 0, 100, 100, 7, false, 0)
	emit(false, 7, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 5}}, v, 2*time.Millisecond)
	emit(true, 7, &wire.AckFields{Common: wire.CommonFields{SenderID: 4}}, v, 20*time.Microsecond)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFileGrant34Proto146: a capture of HomaModule main 2024-12-10 ..
// 2025-07-07 or linux_6.10.6 (IP protocol 146, 10-byte homa_ack, 34-byte
// GRANT) is read in its own layout (wire 2025), under the profile of that
// era (linux-2025), and passes. Read as linux_6.1.38's format, as the
// 34-byte GRANT once made the checker do, it fails: every DATA field after
// ack.client_id is misplaced (a retransmission reads as a first
// transmission, HOMA-WIRE-010; the ack's server_port, HOMA-ACK-004;
// cutoff_version, HOMA-PRIO-002) and the 80-byte ACK is truncated
// (HOMA-WIRE-001). A real fault still shows: an ack naming the wrong
// server port.
func TestFileGrant34Proto146(t *testing.T) {
	o := opts()
	o.Params = nil
	fr := File(o, writeGrant34Capture(t, 4000, wire.VersionCurrent))
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	if fr.Profile != "linux-2025" || fr.Verdict != "pass" {
		t.Errorf("profile %s verdict %s, want linux-2025 pass; violations %v", fr.Profile, fr.Verdict, fr.Report.Violations)
	}
	if fr.Stats.Retransmits != 1 || fr.Stats.DecodeErrors != 0 {
		t.Errorf("retransmits %d decode errors %d, want 1 and 0", fr.Stats.Retransmits, fr.Stats.DecodeErrors)
	}

	old := o
	old.Profile, old.Wire = "linux-2024", wire.Version2024
	old.Params = []string{"unsched_bytes=40000", "window=100000"}
	fr = File(old, writeGrant34Capture(t, 4000, wire.VersionCurrent))
	got := map[string]bool{}
	for _, f := range fr.Report.Violations {
		got[f.Rule] = true
	}
	for _, id := range []string{"HOMA-WIRE-010", "HOMA-ACK-004", "HOMA-PRIO-002", "HOMA-WIRE-001"} {
		if !got[id] {
			t.Errorf("read as linux_6.1.38's format: no %s violation; violations %v", id, fr.Report.Violations)
		}
	}

	fr = File(o, writeGrant34Capture(t, 4001, wire.VersionCurrent))
	if len(fr.Report.Violations) != 1 || fr.Report.Violations[0].Rule != "HOMA-ACK-004" {
		t.Errorf("ack naming server port 4001: violations %v, want one HOMA-ACK-004", fr.Report.Violations)
	}
}

// TestFileProto146Layout2024: HomaModule main between f7e4717 (IP protocol
// 146) and be127d8 (10-byte homa_ack) sent the 2024 layout over 146 (ACK
// 90 bytes): read as linux-2024 from the capture's own evidence, without
// the warning for a format forced on the wrong capture, and it passes
// with that era's unsched_bytes.
func TestFileProto146Layout2024(t *testing.T) {
	o := opts()
	o.Params = []string{"unsched_bytes=40000", "window=100000"}
	fr := File(o, writeGrant34Capture(t, 4000, wire.Version2024))
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	if fr.Profile != "linux-2024" || fr.Verdict != "pass" || fr.Stats.VersionMismatch != 0 {
		t.Errorf("profile %s verdict %s version mismatches %d, want linux-2024 pass 0; violations %v",
			fr.Profile, fr.Verdict, fr.Stats.VersionMismatch, fr.Report.Violations)
	}
}
