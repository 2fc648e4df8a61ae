package pcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// TestUnreadableDrops: drops written with the frames the capture could
// not read said apart (WriteDropStats) read back as such
// (Stats.UnreadableDrops), beside the whole count, tshark-readable
// blocks; a homatest file declaring drops without that count is marked
// (DropsCauseUnsaid), another writer's is not.
func TestUnreadableDrops(t *testing.T) {
	for _, tc := range []struct {
		app                 string
		dropped, unreadable uint64
		wantDrops, wantUnrd uint64
		wantUnsaid          bool
	}{
		{"homatest", 7, 5, 9, 5, false},
		{"homatest", 5, 5, 7, 5, false},
		{"homatest", 3, 0, 5, 0, false},
		{"old", 3, 0, 5, 0, true},
		{"dumpcap", 3, 0, 5, 0, false},
	} {
		st, err := readAll(t, dropsCapture(t, tc.app, tc.dropped, tc.unreadable))
		if err != nil {
			t.Fatal(err)
		}
		if st.CaptureDrops != tc.wantDrops || st.UnreadableDrops != tc.wantUnrd || st.DropsCauseUnsaid != tc.wantUnsaid {
			t.Errorf("%s %d/%d: drops %d, unreadable %d, unsaid %v; want %d, %d, %v", tc.app, tc.dropped, tc.unreadable,
				st.CaptureDrops, st.UnreadableDrops, st.DropsCauseUnsaid, tc.wantDrops, tc.wantUnrd, tc.wantUnsaid)
		}
	}
}

// dropsCapture is a two-interface pcapng written by app ("homatest";
// "old": homatest before UnreadableComment; "dumpcap") with one frame on
// interface 0, which declares dropped drops, unreadable of them frames
// the capture could not read (said by homatest only), and 2 drops on
// interface 1.
func dropsCapture(t *testing.T, app string, dropped, unreadable uint64) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "a"}, Interface{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if app != "homatest" && app != "old" {
		// Another application's file: only the header's name differs.
		buf.Reset()
		w, err = newWriterApp(&buf, app, Interface{Name: "a"}, Interface{Name: "b"})
		if err != nil {
			t.Fatal(err)
		}
	}
	ts := time.Unix(1, 0)
	frame := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err := w.WritePacket(0, ts, frame, 0, ""); err != nil {
		t.Fatal(err)
	}
	if app == "old" || app == "dumpcap" {
		// homatest before UnreadableComment, or dumpcap: isb_ifdrop alone.
		err = w.ng.WriteInterfaceStats(0, pcapgo.NgInterfaceStatistics{LastUpdate: ts, PacketsDropped: dropped, PacketsReceived: pcapgo.NgNoValue64})
	} else {
		err = w.WriteDropStats(0, ts, dropped, unreadable)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteInterfaceStats(1, ts, 2); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
