package afpacket

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testBlocks returns a ring of n blocks of size bytes over a plain buffer.
func testBlocks(n, size int) *BlockRing {
	return &BlockRing{mem: make([]byte, n*size), blockSize: size, blocks: n}
}

// fill hands block b to user space holding frames, laid out as the
// kernel lays them (each frame's bytes at mac offset 82 from its header,
// headers 16-byte aligned, linked by next_offset).
func (r *BlockRing) fill(t *testing.T, b int, frames ...[]byte) {
	t.Helper()
	base := b * r.blockSize
	off := blockDescLen
	*r.word(b, blockFirstOff) = uint32(off)
	for i, f := range frames {
		const mac = 82
		h := (*unix.Tpacket3Hdr)(unsafe.Pointer(&r.mem[base+off]))
		*h = unix.Tpacket3Hdr{Sec: uint32(b), Nsec: uint32(i), Snaplen: uint32(len(f)), Len: uint32(len(f) + 1), Mac: mac}
		copy(r.mem[base+off+mac:], f)
		next := (mac + len(f) + 15) &^ 15
		if i < len(frames)-1 {
			h.Next_offset = uint32(next)
		}
		off += next
	}
	*r.word(b, blockNumOff) = uint32(len(frames))
	*r.word(b, blockStatusOff) = unix.TP_STATUS_USER
}

// TestBlockRingNext: frames come out in order with their stamps and wire
// lengths, a block is handed back (TP_STATUS_KERNEL) once read past, the
// ring wraps, and a kernel-owned block reads as nothing yet.
func TestBlockRingNext(t *testing.T) {
	r := testBlocks(2, 4096)
	if _, ok, err := r.Next(); ok || err != nil {
		t.Fatalf("empty ring: ok %v err %v", ok, err)
	}
	a, b, c := bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1500), bytes.Repeat([]byte{3}, 100)
	r.fill(t, 0, a, b)
	r.fill(t, 1, c)
	var got [][]byte
	for {
		f, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if f.Len != len(f.Data)+1 {
			t.Errorf("frame %d: length %d, want %d", len(got), f.Len, len(f.Data)+1)
		}
		got = append(got, bytes.Clone(f.Data))
	}
	if len(got) != 3 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) || !bytes.Equal(got[2], c) {
		t.Fatalf("read %d frames %v", len(got), got)
	}
	for b := range 2 {
		if s := *r.word(b, blockStatusOff); s != unix.TP_STATUS_KERNEL {
			t.Errorf("block %d status %#x after reading past it, want TP_STATUS_KERNEL", b, s)
		}
	}
	r.fill(t, 0, a)
	if f, ok, err := r.Next(); !ok || err != nil || !bytes.Equal(f.Data, a) || f.Stamp != 0 {
		t.Errorf("after wrapping: ok %v err %v, %d bytes stamped %d", ok, err, len(f.Data), f.Stamp)
	}
}

// TestBlockRingBadHeader: a frame header pointing outside its block is an
// error, the rest of that block is skipped, and the next block reads.
func TestBlockRingBadHeader(t *testing.T) {
	r := testBlocks(2, 4096)
	r.fill(t, 0, make([]byte, 100), make([]byte, 100))
	(*unix.Tpacket3Hdr)(unsafe.Pointer(&r.mem[blockDescLen])).Snaplen = 5000
	r.fill(t, 1, []byte{9})
	if _, ok, err := r.Next(); ok || err == nil {
		t.Fatalf("bad header: ok %v err %v, want an error", ok, err)
	}
	f, ok, err := r.Next()
	if !ok || err != nil || !bytes.Equal(f.Data, []byte{9}) {
		t.Errorf("after the bad block: ok %v err %v data %v, want block 1's frame", ok, err, f.Data)
	}
}

// TestWithVLAN: a tag the device took off goes back after the MAC
// addresses, with its protocol when the kernel gave one.
func TestWithVLAN(t *testing.T) {
	eth := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45}
	if got := (Frame{Data: eth}).WithVLAN(nil); !bytes.Equal(got, eth) {
		t.Errorf("untagged: %x", got)
	}
	want := append(append(append([]byte{}, eth[:12]...), 0x81, 0x00, 0x00, 0x07), eth[12:]...)
	if got := (Frame{Data: eth, Status: unix.TP_STATUS_VLAN_VALID, VLANTCI: 7}).WithVLAN(nil); !bytes.Equal(got, want) {
		t.Errorf("tagged: %x, want %x", got, want)
	}
	want[12], want[13] = 0x88, 0xa8
	if got := (Frame{Data: eth, Status: unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID, VLANTCI: 7, VLANTPID: 0x88a8}).WithVLAN(nil); !bytes.Equal(got, want) {
		t.Errorf("802.1ad: %x, want %x", got, want)
	}
}
