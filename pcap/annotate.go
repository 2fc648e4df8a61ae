package pcap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopacket/gopacket/pcapgo"
)

// Annotate rewrites the pcapng file at path in place (atomically), adding
// to every frame the comment note returns for it (nothing for ""): the
// interfaces, timestamps, lengths, directions and existing comments are
// kept. note sees each frame decoded with o (Frame.Number counts every
// frame of the file; frames that are not Homa are passed with a zero
// Packet and no addresses). Errors: the file is not pcapng, cannot be read
// or written.
func Annotate(path string, o ReaderOptions, note func(f *Frame) string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	ng, err := pcapgo.NewNgReader(in, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrFormat, err)
	}
	// A second reader decodes the same frames for note.
	dec, err := Open(path, o)
	if err != nil {
		return err
	}
	defer dec.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	var w *Writer
	n := 0
	var next *Frame
	for {
		data, ci, opts, err := ng.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tmp.Close()
			return fmt.Errorf("%s: frame %d: %w", path, n+1, err)
		}
		n++
		if w == nil {
			var ifs []Interface
			for i := 0; i < ng.NInterfaces(); i++ {
				ifc, _ := ng.Interface(i)
				ifs = append(ifs, Interface{Name: ifc.Name, Description: ifc.Description, LinkType: ifc.LinkType, SnapLen: ifc.SnapLength})
			}
			if w, err = NewWriter(tmp, ifs...); err != nil {
				tmp.Close()
				return err
			}
		}
		// Advance the decoding reader to this frame (it skips non-Homa).
		for next == nil || next.Number < n {
			f, err := dec.Next()
			if err != nil {
				break
			}
			c := *f
			next = &c
		}
		comments := append([]string(nil), opts.Comments...)
		if next != nil && next.Number == n {
			if c := note(next); c != "" {
				comments = append(comments, c)
			}
		}
		dir := DirUnknown
		if opts.Flags != nil {
			dir = Direction(opts.Flags.Direction & pcapgo.NgEpbFlagDirectionMask)
		}
		if err := w.WritePacketDir(ci.InterfaceIndex, ci.Timestamp, data, ci.Length, dir, strings.Join(comments, "; ")); err != nil {
			tmp.Close()
			return err
		}
	}
	if w != nil {
		if err := w.Flush(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err == nil {
		os.Chmod(tmp.Name(), st.Mode())
	}
	return os.Rename(tmp.Name(), path)
}
