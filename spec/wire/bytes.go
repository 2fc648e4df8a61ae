package wire

import "encoding/binary"

// Bounds-safe big-endian readers and writers. Every view accessor goes
// through them, so a view over a short slice reads zeros and writes nothing
// instead of panicking.

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

func put8(b []byte, off int, v uint8) {
	if off >= 0 && off < len(b) {
		b[off] = v
	}
}

func put16(b []byte, off int, v uint16) {
	if off >= 0 && off+2 <= len(b) {
		binary.BigEndian.PutUint16(b[off:], v)
	}
}

func put32(b []byte, off int, v uint32) {
	if off >= 0 && off+4 <= len(b) {
		binary.BigEndian.PutUint32(b[off:], v)
	}
}

func put64(b []byte, off int, v uint64) {
	if off >= 0 && off+8 <= len(b) {
		binary.BigEndian.PutUint64(b[off:], v)
	}
}
