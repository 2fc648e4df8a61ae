package tester

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// rawFields wraps already-encoded transport bytes as wire.Fields so that
// pcap.BuildFrame can frame them (malformed packets included).
type rawFields []byte

func (r rawFields) PacketType() wire.PacketType {
	if len(r) > 11 {
		return wire.PacketType(r[11])
	}
	return 0
}
func (r rawFields) CommonFields() *wire.CommonFields { return &wire.CommonFields{} }
func (r rawFields) AppendTo(b []byte, _ wire.EncodeOptions) ([]byte, error) {
	return append(b, r...), nil
}

// WritePcapng writes every packet the Peer sent and received, in order, as
// Ethernet frames of one pcapng interface named name (a per-test capture
// that homatest decode and check read). Sent packets carry the comment
// "tester sent". Errors: framing and write errors.
func (p *Peer) WritePcapng(w io.Writer, name string) error {
	pw, err := pcap.NewWriter(w, pcap.Interface{Name: name, Description: "homatest tester peer"})
	if err != nil {
		return err
	}
	buf := gopacket.NewSerializeBuffer()
	for _, r := range p.Log() {
		frame, err := pcap.BuildFrame(buf, pcap.FrameSpec{Src: r.Src, Dst: r.Dst, Priority: r.Priority},
			rawFields(r.Raw), wire.EncodeOptions{})
		if err != nil {
			return fmt.Errorf("tester: frame %s: %w", r, err)
		}
		comment := ""
		if r.Sent {
			comment = "tester sent"
		}
		if err := pw.WritePacket(0, r.At, frame, len(frame), comment); err != nil {
			return err
		}
	}
	return pw.Flush()
}

// Check runs the spec checker with the given profile parameters and rules
// over everything the Peer sent and received (as WritePcapng would record
// it) and returns the report. Findings about packets the tester itself
// sent are the tester's doing, not the IUT's: callers filter by sender.
// Errors: framing or decoding errors of the trace.
func (p *Peer) Check(profile string, params spec.Params, rules []*spec.Rule) (*spec.Report, error) {
	var buf bytes.Buffer
	if err := p.WritePcapng(&buf, "tester"); err != nil {
		return nil, err
	}
	r, err := pcap.NewReader(&buf, pcap.ReaderOptions{Version: params.Wire})
	if err != nil {
		return nil, err
	}
	c := spec.NewChecker(profile, params, rules)
	var evs []spec.Event
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		evs = f.Events(evs[:0])
		for i := range evs {
			c.Feed(&evs[i])
		}
	}
	return c.Finish(), nil
}
