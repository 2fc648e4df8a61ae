package wire

import "encoding/binary"

// Bounds-safe big-endian readers at a computed offset (the interleaved seg
// headers of a GSO frame, the bytes of common.ack): a short slice reads
// zeros instead of panicking. Header fields go through read8 … write64
// below, which take the field from a layout table.

func get8(b []byte, off int) uint8 {
	if off < 0 || off >= len(b) {
		return 0
	}
	return b[off]
}

func get16(b []byte, off int) uint16 {
	if off < 0 || off+2 > len(b) {
		return 0
	}
	return binary.BigEndian.Uint16(b[off:])
}

func get32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.BigEndian.Uint32(b[off:])
}

func get64(b []byte, off int) uint64 {
	if off < 0 || off+8 > len(b) {
		return 0
	}
	return binary.BigEndian.Uint64(b[off:])
}

// Readers and writers of one field of a layout table (layout.go). A field
// of another size than the accessor's, in particular one its version lacks
// (Size 0), reads 0 and is not written, so the tables alone decide what a
// version has; a field past the end of b reads 0 and is not written. The
// tables' offsets lie in 0..MaxHeaderLen (TestLayoutTiles), so reading
// them as uint16 changes nothing and lets the compiler drop all but one
// bounds check per access (off+n cannot overflow).

// Readers at an offset taken from an atTable (hdrs.at, commonAt): a
// field the version lacks, or has at another size than its getter reads,
// has offset absent there, past any slice, so each read costs one load of
// the offset and one bounds check where the table readers below also load
// and compare the field's size.

// absent is the offset of a field a version lacks: off+8 stays above any
// slice length without overflowing.
const absent = ^uint(0) >> 1

func at8(b []byte, off uint) uint8 {
	if off < uint(len(b)) {
		return b[off]
	}
	return 0
}

func at16(b []byte, off uint) uint16 {
	if off+2 <= uint(len(b)) {
		return binary.BigEndian.Uint16(b[off : off+2])
	}
	return 0
}

func at32(b []byte, off uint) uint32 {
	if off+4 <= uint(len(b)) {
		return binary.BigEndian.Uint32(b[off : off+4])
	}
	return 0
}

func at64(b []byte, off uint) uint64 {
	if off+8 <= uint(len(b)) {
		return binary.BigEndian.Uint64(b[off : off+8])
	}
	return 0
}

// atOf returns f's offset for a getter that reads size bytes: absent
// unless f exists at that size.
func atOf(f FieldLayout, size int) uint {
	if size == 0 || f.Size != size || f.Off < 0 {
		return absent
	}
	return uint(f.Off)
}

func read8(b []byte, f *FieldLayout) uint8 {
	if off := uint(uint16(f.Off)); f.Size == 1 && off < uint(len(b)) {
		return b[off]
	}
	return 0
}

func read16(b []byte, f *FieldLayout) uint16 {
	if off := uint(uint16(f.Off)); f.Size == 2 && off+2 <= uint(len(b)) {
		return binary.BigEndian.Uint16(b[off : off+2])
	}
	return 0
}

func read32(b []byte, f *FieldLayout) uint32 {
	if off := uint(uint16(f.Off)); f.Size == 4 && off+4 <= uint(len(b)) {
		return binary.BigEndian.Uint32(b[off : off+4])
	}
	return 0
}

func read64(b []byte, f *FieldLayout) uint64 {
	if off := uint(uint16(f.Off)); f.Size == 8 && off+8 <= uint(len(b)) {
		return binary.BigEndian.Uint64(b[off : off+8])
	}
	return 0
}

func write8(b []byte, f *FieldLayout, v uint8) {
	if off := uint(uint16(f.Off)); f.Size == 1 && off < uint(len(b)) {
		b[off] = v
	}
}

func write16(b []byte, f *FieldLayout, v uint16) {
	if off := uint(uint16(f.Off)); f.Size == 2 && off+2 <= uint(len(b)) {
		binary.BigEndian.PutUint16(b[off:off+2], v)
	}
}

func write32(b []byte, f *FieldLayout, v uint32) {
	if off := uint(uint16(f.Off)); f.Size == 4 && off+4 <= uint(len(b)) {
		binary.BigEndian.PutUint32(b[off:off+4], v)
	}
}

func write64(b []byte, f *FieldLayout, v uint64) {
	if off := uint(uint16(f.Off)); f.Size == 8 && off+8 <= uint(len(b)) {
		binary.BigEndian.PutUint64(b[off:off+8], v)
	}
}
