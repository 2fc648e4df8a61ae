package pcap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// pcapng block and option codes SectionComments and ngFast read (pcapng spec,
// draft-ietf-opsawg-pcapng: section header block, opt_comment).
const (
	ngSectionHeader  = 0x0a0d0d0a // the same bytes in either byte order
	ngByteOrderMagic = 0x1a2b3c4d
	// ngBlockEnhancedPacket is the enhanced packet block's type (ngFast).
	ngBlockEnhancedPacket = 6
	ngOptEnd              = 0
	ngOptComment          = 1
	// ngMaxSectionHeader bounds the section header SectionComments reads
	// into memory; a longer one (no capture tool writes one) ends the walk.
	ngMaxSectionHeader = 16 << 20
)

// SectionComments returns every comment of every section header of the
// pcapng capture read from r (each shb_comment option, of every section,
// in file order: a capture may hold several sections, e.g. files joined
// with cat or mergecap -a, and a section several comments; pcapgo keeps
// only a section's last). It reads only block headers and section
// headers. Classic pcap, or anything else that does not start with a
// section header, has none (nil, nil). A damaged or cut block ends the
// walk: the comments before it are returned, since check reports the
// damage itself. Errors are r's, other than io.EOF.
func SectionComments(r io.Reader) ([]string, error) {
	br := bufio.NewReaderSize(r, readBuffer)
	var (
		out   []string
		order binary.ByteOrder // of the current section; nil before the first
		hdr   [8]byte
	)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return out, readErr(err)
		}
		if binary.BigEndian.Uint32(hdr[:4]) == ngSectionHeader {
			var bom [4]byte
			if _, err := io.ReadFull(br, bom[:]); err != nil {
				return out, readErr(err)
			}
			switch {
			case binary.BigEndian.Uint32(bom[:]) == ngByteOrderMagic:
				order = binary.BigEndian
			case binary.LittleEndian.Uint32(bom[:]) == ngByteOrderMagic:
				order = binary.LittleEndian
			default:
				return out, nil
			}
			n := order.Uint32(hdr[4:])
			// Type, length, magic, version, section length, length again.
			if n < 28 || n%4 != 0 || n > ngMaxSectionHeader {
				return out, nil
			}
			// Copied rather than read into a buffer of n bytes: a cut file
			// or a bogus length allocates no more than the input holds.
			var body bytes.Buffer
			if m, err := io.CopyN(&body, br, int64(n-12)); m < int64(n-12) {
				return out, readErr(err)
			}
			b := body.Bytes()
			out = append(out, optionComments(order, b[12:len(b)-4])...)
			continue
		}
		if order == nil {
			return nil, nil // not pcapng
		}
		n := order.Uint32(hdr[4:])
		if n < 12 || n%4 != 0 {
			return out, nil
		}
		if _, err := br.Discard(int(n - 8)); err != nil {
			return out, readErr(err)
		}
	}
}

// optionComments returns the values of the opt_comment options in opts, a
// block's options in byte order order, up to opt_endofopt or the first
// option that runs past the end.
func optionComments(order binary.ByteOrder, opts []byte) []string {
	var out []string
	for len(opts) >= 4 {
		code, n := order.Uint16(opts), int(order.Uint16(opts[2:]))
		if code == ngOptEnd || 4+n > len(opts) {
			break
		}
		if code == ngOptComment {
			out = append(out, string(opts[4:4+n]))
		}
		opts = opts[min(len(opts), 4+(n+3)&^3):]
	}
	return out
}

// readErr is nil for the end of the input (a capture ending in a cut
// block included), else err.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// SectionCommentsPath returns the section-header comments
// (SectionComments) of the capture at path ("-": standard input, read as
// OpenPath reads it, so that it can be read again). Reading a stream that
// is still being written stops once ctx ends (nil: never), with its error.
func SectionCommentsPath(ctx context.Context, path string) ([]string, error) {
	sp, ok, err := stream(path)
	if err != nil {
		return nil, err
	}
	if ok {
		return SectionComments(sp.newReader(ctx))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return SectionComments(f)
}
