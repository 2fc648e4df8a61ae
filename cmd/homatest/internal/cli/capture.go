package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// errNoHoma is returned for a readable capture without a single Homa packet.
var errNoHoma = errors.New("no Homa packets found (IP protocol 146 or 253, or TCP with the hijack marks)")

// stdinData holds standard input once read, so that "-" can be read twice
// (profile detection, then checking); stdinMu guards it (check reads
// files in parallel).
var (
	stdinData []byte
	stdinMu   sync.Mutex
)

// openCapture opens path for reading; "-" is standard input, read into
// memory on first use.
func openCapture(path string, o pcap.ReaderOptions) (*pcap.Reader, error) {
	if path != "-" {
		return pcap.Open(path, o)
	}
	stdinMu.Lock()
	if stdinData == nil {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			stdinMu.Unlock()
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		stdinData = b
	}
	data := stdinData
	stdinMu.Unlock()
	r, err := pcap.NewReader(bytes.NewReader(data), o)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return r, nil
}

// streamEvents reads path and calls fn for every spec event, in capture
// order (o.IPv6PriorityShift as found by prescan). It returns the reader's
// stats and a read error (a damaged file), or errNoHoma.
func streamEvents(path string, o pcap.ReaderOptions, fn func(*spec.Event)) (pcap.Stats, error) {
	r, err := openCapture(path, o)
	if err != nil {
		return pcap.Stats{}, openError(path, err)
	}
	defer r.Close()
	if err := r.EachEvent(fn); err != nil {
		return r.Stats(), fmt.Errorf("%s: capture damaged or cut short: %w", path, err)
	}
	st := r.Stats()
	if st.Homa == 0 {
		return st, fmt.Errorf("%s: %w", path, errNoHoma)
	}
	return st, nil
}

// detectShift returns the IPv6 priority shift of the capture (0 if it
// cannot tell).
func detectShift(path string, o pcap.ReaderOptions) uint8 {
	r, err := openCapture(path, o)
	if err != nil {
		return 0
	}
	defer r.Close()
	s, _ := pcap.DetectIPv6Shift(r) // a damaged file fails later with a better message
	return s
}

// prescan reads the first frames of path once (pcap.DetectFormat) and
// returns the profile of the format they suggest (spec.ProfileForWire) and
// the IPv6 priority shift (0 if it cannot tell). A damaged file is not an
// error here; reading it for real reports it.
func prescan(path string) (profile string, shift uint8, err error) {
	r, err := openCapture(path, pcap.ReaderOptions{})
	if err != nil {
		return "", 0, openError(path, err)
	}
	defer r.Close()
	v, shift := pcap.DetectFormat(r)
	return spec.ProfileForWire(v), shift, nil
}

// sentView returns the reader options that read each packet of the
// capture at path once: for a pcapng holding both directions of switch
// ports (epb_flags, as homatest run and scenario run write capture.pcapng),
// only the inbound frames (each packet as its host sent it: what
// sent.pcapng holds); o unchanged otherwise. dedup reports whether it
// filtered.
func sentView(path string, o pcap.ReaderOptions) (pcap.ReaderOptions, bool) {
	r, err := openCapture(path, pcap.ReaderOptions{})
	if err != nil {
		return o, false
	}
	defer r.Close()
	in, out := false, false
	for !(in && out) {
		f, err := r.Next()
		if err != nil || f.Number > pcap.DetectFrames {
			break
		}
		in = in || f.Direction == pcap.DirInbound
		out = out || f.Direction == pcap.DirOutbound
	}
	if in && out {
		o.Direction = pcap.DirInbound
		return o, true
	}
	return o, false
}
