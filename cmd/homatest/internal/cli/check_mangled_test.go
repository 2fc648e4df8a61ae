package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// labIncast is a real ports capture from scenario run (every switch port,
// both directions; pcapng interface statistics at its end).
const labIncast = "../../../../pcap/testdata/real/lab-scenarios/linux-6.13-netem-incast.pcapng"

// ngBlock is one block of a little-endian pcapng file, whole (type,
// lengths and body), for the tests that mangle a capture as mergecap,
// editcap and reordercap do, block by block.
type ngBlock []byte

// ngEPB is the type of an enhanced packet block.
const ngEPB = 6

func (b ngBlock) typ() uint32 { return binary.LittleEndian.Uint32(b) }

// ts returns an EPB's timestamp in the units of its interface (the lab
// captures' are nanoseconds).
func (b ngBlock) ts() uint64 {
	return uint64(binary.LittleEndian.Uint32(b[12:]))<<32 | uint64(binary.LittleEndian.Uint32(b[16:]))
}

// withTS returns a copy of the EPB b stamped ts.
func (b ngBlock) withTS(ts uint64) ngBlock {
	c := append(ngBlock(nil), b...)
	binary.LittleEndian.PutUint32(c[12:], uint32(ts>>32))
	binary.LittleEndian.PutUint32(c[16:], uint32(ts))
	return c
}

// readNgBlocks splits the little-endian pcapng at path into its blocks.
func readNgBlocks(t *testing.T, path string) []ngBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || binary.LittleEndian.Uint32(data[8:]) != 0x1A2B3C4D {
		t.Fatalf("%s: not a little-endian pcapng", path)
	}
	var out []ngBlock
	for len(data) >= 12 {
		n := binary.LittleEndian.Uint32(data[4:])
		if n < 12 || int(n) > len(data) {
			t.Fatalf("%s: bad block length %d", path, n)
		}
		out = append(out, ngBlock(data[:n]))
		data = data[n:]
	}
	return out
}

// writeNgBlocks writes blocks as dir/name and returns its path.
func writeNgBlocks(t *testing.T, dir, name string, blocks []ngBlock) string {
	t.Helper()
	var b []byte
	for _, x := range blocks {
		b = append(b, x...)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// splitNg returns blocks' header blocks (those before the first EPB),
// EPBs and the rest (interface statistics).
func splitNg(blocks []ngBlock) (head, epbs, tail []ngBlock) {
	for _, b := range blocks {
		switch {
		case b.typ() == ngEPB:
			epbs = append(epbs, b)
		case len(epbs) == 0:
			head = append(head, b)
		default:
			tail = append(tail, b)
		}
	}
	return head, epbs, tail
}
