package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// errNoHoma is returned for a readable capture without a single Homa packet.
var errNoHoma = errors.New("no Homa packets found (IP protocol 146 or 253, or TCP with the hijack marks)")

// streamEvents reads path and calls fn for every spec event, in capture
// order. It returns the reader's stats and a read error (a damaged file),
// or errNoHoma.
func streamEvents(path string, o pcap.ReaderOptions, fn func(*spec.Event)) (pcap.Stats, error) {
	if o.IPv6PriorityShift == 0 && path != "-" {
		o.IPv6PriorityShift, _ = pcap.DetectIPv6Shift(path, o)
	}
	r, err := pcap.Open(path, o)
	if err != nil {
		return pcap.Stats{}, openError(path, err)
	}
	defer r.Close()
	var evs []spec.Event
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r.Stats(), fmt.Errorf("%s: capture damaged or cut short: %w", path, err)
		}
		evs = f.Events(evs[:0])
		for i := range evs {
			fn(&evs[i])
		}
	}
	st := r.Stats()
	if st.Homa == 0 {
		return st, fmt.Errorf("%s: %w", path, errNoHoma)
	}
	return st, nil
}

// detectProfile picks a profile from the first Homa packet of path:
// linux-2024 for the 2024 wire format, upstream without the marks, else
// linux.
func detectProfile(path string) (string, error) {
	r, err := pcap.Open(path, pcap.ReaderOptions{})
	if err != nil {
		return "", openError(path, err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if err != nil {
			return "linux", nil
		}
		if f.Err != nil {
			continue
		}
		switch f.Packet.Version() {
		case wire.Version2024:
			return "linux-2024", nil
		case wire.VersionUpstream:
			return "upstream", nil
		default:
			return "linux", nil
		}
	}
}
