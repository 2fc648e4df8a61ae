package wire

import (
	"bytes"
	"testing"
)

func TestAppendGSOFrame(t *testing.T) {
	payload := make([]byte, 6*1424-100)
	for i := range payload {
		payload[i] = byte(i * 3)
	}
	f := &DataFields{Common: CommonFields{Sport: 32768, Dport: 4000, SenderID: 8, Sequence: 2848}, MessageLength: 100000, Incoming: 40000, SegOffset: 2848, Payload: payload}
	b, err := AppendGSOFrame(nil, f, 1424, EncodeOptions{SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != DataHeaderLen+len(payload)+5*SegHeaderLen || b[12] != DoffGSO {
		t.Fatalf("%d bytes, doff %#x", len(b), b[12])
	}
	p, err := Decode(b, DecodeOptions{Version: VersionCurrent})
	if err != nil {
		t.Fatal(err)
	}
	segs, err := p.Data().Segments(nil, 1424)
	if err != nil || len(segs) != 6 {
		t.Fatalf("%d segments, %v", len(segs), err)
	}
	var joined []byte
	for i, s := range segs {
		if s.Offset != 2848+uint32(i*1424) {
			t.Errorf("segment %d at %d", i, s.Offset)
		}
		joined = append(joined, s.Data...)
	}
	if !bytes.Equal(joined, payload) {
		t.Error("the segments do not give the payload back")
	}
	if _, err := AppendGSOFrame(nil, f, 0, EncodeOptions{}); err == nil {
		t.Error("0-byte segments accepted")
	}
}
