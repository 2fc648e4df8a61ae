package pcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// TestSnapCutHeaders: a frame the snap length cut inside its Homa header
// (captured length below the frame's length, as editcap -s 54 leaves one)
// counts in Stats.SnapCut with the bytes kept (SnapLen); a frame cut only
// in its payload is Truncated, not SnapCut; a short frame that the snap
// length did not cut (a malformed header) is a decode error, not SnapCut.
func TestSnapCutHeaders(t *testing.T) {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(54, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	data := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	grant := buildFrame(t, FrameSpec{Src: addrB, Dst: addrA, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	write := func(frame []byte, keep, length int) {
		t.Helper()
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: keep, Length: length}, frame[:keep]); err != nil {
			t.Fatal(err)
		}
	}
	write(data, 54, len(data))   // 20 bytes of the DATA header
	write(grant, 54, len(grant)) // 20 bytes of the GRANT header
	write(data, 128, len(data))  // header whole, payload cut
	write(grant, 40, 40)         // not cut: the frame is that short
	st, err := readAll(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if st.Homa != 4 || st.SnapCut != 2 || st.SnapLen != 54 || st.DecodeErrors != 3 || st.Truncated != 1 {
		t.Fatalf("homa %d snap cut %d snap len %d decode errors %d truncated %d, want 4 2 54 3 1", st.Homa, st.SnapCut, st.SnapLen, st.DecodeErrors, st.Truncated)
	}
}
