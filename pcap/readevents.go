package pcap

import (
	"fmt"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// ReadEvents reads every spec event of the capture at path (EachEvent),
// each with its own copy of the packet bytes, so the events can be kept,
// sorted and merged (spec.Judge.Hosts). Errors: the file cannot be
// opened, or is damaged or cut (the error names the file).
func ReadEvents(path string, o ReaderOptions) ([]spec.Event, error) {
	r, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []spec.Event
	err = r.EachEvent(func(e *spec.Event) {
		c := *e
		if c.Err == nil && c.ICMP == nil {
			b := append([]byte(nil), c.Packet.Bytes()...)
			c.Packet, c.Err = wire.Decode(b, wire.DecodeOptions{Version: c.Packet.Version()})
			if c.Payload != nil {
				c.Payload = append([]byte(nil), c.Payload...)
			}
		}
		out = append(out, c)
	})
	if err != nil {
		return out, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}
