package pcap

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestDirectionAndInterfaceName: WritePacketDir stores the direction in
// epb_flags, and the Reader gives it back per frame together with the
// interface's name.
func TestDirectionAndInterfaceName(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "p1(h1)"}, Interface{Name: "p2(h2)"})
	if err != nil {
		t.Fatal(err)
	}
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 7}}, wire.EncodeOptions{})
	ts := time.Unix(1700000000, 0)
	want := []struct {
		iface int
		dir   Direction
		name  string
	}{{0, DirInbound, "p1(h1)"}, {1, DirOutbound, "p2(h2)"}, {1, DirUnknown, "p2(h2)"}}
	for i, c := range want {
		if err := w.WritePacketDir(c.iface, ts.Add(time.Duration(i)), fr, 0, c.dir, ""); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	r, err := NewReader(bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range want {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Interface != c.iface || f.Direction != c.dir || r.InterfaceName(f.Interface) != c.name {
			t.Errorf("frame %d: interface %d %q direction %v, want %d %q %v", i, f.Interface, r.InterfaceName(f.Interface), f.Direction, c.iface, c.name, c.dir)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after 3 frames: %v, want EOF", err)
	}
	if r.InterfaceName(5) != "" || r.InterfaceName(-1) != "" {
		t.Error("InterfaceName of an unknown index is not empty")
	}
	if DirInbound.String() != "inbound" || DirOutbound.String() != "outbound" || DirUnknown.String() != "unknown" {
		t.Error("Direction.String")
	}
}
