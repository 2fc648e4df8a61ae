package scenario

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/netip"
	"time"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// lostFrame is a Homa frame of the as-sent view that has no copy in the
// as-delivered view: a frame the switch dropped.
type lostFrame struct {
	// Number is the frame's number in the as-sent capture (1-based).
	Number int
	// Time is when the sender's switch port received it.
	Time     time.Time
	Src, Dst netip.Addr
	// Packet is the decoded packet over its own copy of the bytes; Err
	// the decode error of a malformed frame (Packet then zero).
	Packet wire.Packet
	Err    error
}

// findLost reads the as-sent view sent and the as-delivered view delivered
// (pcapng or pcap captures of every switch port, harness DirIn and DirOut)
// and returns, in as-sent order, the Homa frames sent that were never
// delivered, and the bytes of the Homa frames delivered to each IP
// destination (captured frame lengths, Ethernet header included). Frames are matched by IP source, IP destination and the bytes
// of the Homa packet (header and payload, as captured), as a multiset: n
// identical frames sent and m < n delivered leave the last n-m sent as
// lost. The IP header is not compared, so a frame whose priority the
// switch rewrote still counts as delivered. Only a hash of each frame is
// kept (64 bits, maphash: a collision, about 1 in 10^7 for a million
// frames, could hide one drop). A capture that lost frames itself
// (harness.CaptureStats.KernelDrops) shows its losses here too. Errors: a
// capture that cannot be read.
func findLost(sent, delivered io.Reader, o pcap.ReaderOptions) ([]lostFrame, map[netip.Addr]uint64, error) {
	seed := maphash.MakeSeed()
	var h maphash.Hash
	key := func(f *pcap.Frame) uint64 {
		h.SetSeed(seed)
		h.Write(f.Src.AsSlice())
		h.WriteByte(0)
		h.Write(f.Dst.AsSlice())
		h.WriteByte(0)
		h.Write(f.Raw)
		return h.Sum64()
	}
	copies := map[uint64]int{}
	bytes := map[netip.Addr]uint64{}
	err := eachFrame(delivered, o, func(f *pcap.Frame) {
		copies[key(f)]++
		bytes[f.Dst] += uint64(f.Length)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("as-delivered view: %w", err)
	}
	var lost []lostFrame
	err = eachFrame(sent, o, func(f *pcap.Frame) {
		k := key(f)
		if copies[k] > 0 {
			copies[k]--
			return
		}
		l := lostFrame{Number: f.Number, Time: f.Time, Src: f.Src, Dst: f.Dst, Err: f.Err}
		if f.Err == nil {
			b := append([]byte(nil), f.Packet.Bytes()...)
			l.Packet, l.Err = wire.Decode(b, wire.DecodeOptions{Version: f.Packet.Version()})
		}
		lost = append(lost, l)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("as-sent view: %w", err)
	}
	return lost, bytes, nil
}

// eachFrame calls fn for every Homa frame of capture r.
func eachFrame(r io.Reader, o pcap.ReaderOptions, fn func(*pcap.Frame)) error {
	pr, err := pcap.NewReader(r, o)
	if err != nil {
		return err
	}
	for {
		f, err := pr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(f)
	}
}
