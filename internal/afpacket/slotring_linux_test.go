package afpacket

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSlotRingRead: frames come out in slot order with their receive
// stamps; a frame cut to its slot whose whole copy waits on the socket
// (TP_STATUS_COPY) is read through the copy function into the ring's own
// buffer, and a failed copy or a frame cut without one is an error that
// still consumes its slot; every slot read is handed back on Release and
// the ring wraps.
func TestSlotRingRead(t *testing.T) {
	r := MemSlotRing(4, 256)
	small := bytes.Repeat([]byte{1}, 60)
	big := bytes.Repeat([]byte{2}, 1000) // larger than a slot
	if !r.Put(small, len(small), 0) || !r.Put(big, len(big), unix.TP_STATUS_COPY) || !r.Put(big, len(big), unix.TP_STATUS_COPY) || !r.Put(big, len(big), 0) {
		t.Fatal("a slot of 4 was not free")
	}
	if r.Put(small, len(small), 0) {
		t.Fatal("a fifth frame fit a ring of 4 slots")
	}
	copies := 0
	copyFn := func(fd int, buf []byte) (int, error) {
		if copies++; copies == 2 {
			return 0, unix.EFAULT
		}
		if fd != -1 || len(buf) != MaxCopy {
			t.Errorf("copy from fd %d into %d bytes, want -1 and %d", fd, len(buf), MaxCopy)
		}
		return copy(buf, big), nil
	}
	for i, want := range []struct {
		data []byte
		err  string
	}{{small, ""}, {big, ""}, {nil, "recvmsg: bad address"}, {nil, "larger than a ring slot"}} {
		data, ts, ok, err := r.Read(copyFn)
		if !ok || !bytes.Equal(data, want.data) || (err == nil) != (want.err == "") || err != nil && !strings.Contains(err.Error(), want.err) {
			t.Errorf("slot %d: %d bytes, ok %v, %v; want %d bytes, error %q", i, len(data), ok, err, len(want.data), want.err)
		}
		if want.err == "" && ts != 1e9 {
			t.Errorf("slot %d: stamp %d, want 1e9", i, ts)
		}
		r.Release()
	}
	if _, _, ok, _ := r.Read(copyFn); ok || r.Ready() {
		t.Error("a frame read past the last one put")
	}
	for i := range 4 {
		if !r.Put(small, len(small), 0) {
			t.Fatalf("slot %d not handed back", i)
		}
	}
	if data, _, ok, err := r.Read(nil); !ok || err != nil || !bytes.Equal(data, small) {
		t.Errorf("after wrapping: %d bytes, %v, %v", len(data), ok, err)
	}
}
