package tester

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"sort"

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

// Frame wraps transport bytes (a Homa header and payload, possibly
// malformed) in Ethernet and IP headers with priority prio, as the per-test
// captures hold them. Errors: mixed address families.
func Frame(src, dst netip.Addr, prio uint8, raw []byte) ([]byte, error) {
	return pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: src, Dst: dst, Priority: prio},
		rawFields(raw), wire.EncodeOptions{})
}

// CaptureNote returns the capture comment of a packet the tester sent:
// DeliberatePrefix and its Note for a deliberate one, else SentNote.
func (r *Packet) CaptureNote() string {
	if r.Note != "" {
		return DeliberatePrefix + r.Note
	}
	return SentNote
}

// Merged returns the packets of all peers in time order (sent and
// received), the order WritePcapng and Check number them in (frame i+1 is
// element i).
func Merged(peers ...*Peer) []*Packet {
	var all []*Packet
	for _, p := range peers {
		all = append(all, p.Log()...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
	return all
}

// transportShift is the IPv6 traffic-class shift of the tester's
// transports: homa.Transport writes the level into the IP precedence
// bits (priority<<5, HomaModule main's shift), whatever the IUT's.
var transportShift = wire.IPv6PriorityShift(wire.VersionCurrent)

// WritePcapng writes every packet the peers sent and received, merged in
// time order, as Ethernet frames of one pcapng interface per peer (named
// "tester-N (ADDR)"): a per-test capture that homatest decode and check
// read. Sent packets carry a comment (CaptureNote): homatest check charges
// findings at them to the tester. Errors: framing and write errors.
func WritePcapng(w io.Writer, peers ...*Peer) error {
	var ifaces []pcap.Interface
	index := map[*Peer]int{}
	for i, p := range peers {
		index[p] = i
		ifaces = append(ifaces, pcap.Interface{Name: fmt.Sprintf("tester-%d (%s)", i+1, p.Addr()),
			Description: "homatest tester peer"})
	}
	pw, err := pcap.NewWriter(w, ifaces...)
	if err != nil {
		return err
	}
	owner := map[*Packet]int{}
	for _, p := range peers {
		for _, r := range p.Log() {
			owner[r] = index[p]
		}
	}
	buf := gopacket.NewSerializeBuffer()
	for _, r := range Merged(peers...) {
		// A received packet keeps the class its sender wrote (the IUT's
		// shift); the rest have the class their transport wrote: the
		// level in the IP precedence bits (homa.Transport; rawip and the
		// simulator write priority<<5 over IPv6), whatever the wire
		// format (whose shift, 4 for linux-2024 and linux-2025, is the
		// IUT's, not the tester's).
		frame, err := pcap.BuildFrame(buf, pcap.FrameSpec{Src: r.Src, Dst: r.Dst, Priority: r.Priority, IPv6Shift: transportShift, TOS: r.TOS, KeepTOS: r.HasTOS},
			rawFields(r.Raw), wire.EncodeOptions{Version: peers[owner[r]].Wire()})
		if err != nil {
			return fmt.Errorf("tester: frame %s: %w", r, err)
		}
		comment := ""
		if r.Sent {
			comment = r.CaptureNote()
		}
		if err := pw.WritePacket(owner[r], r.At, frame, len(frame), comment); err != nil {
			return err
		}
	}
	return pw.Flush()
}

// Verify judges everything the peers sent and received (as WritePcapng
// records it, one capture between the hosts: spec.Switch) and returns the
// report and the packets in frame order (frame N is packets[N-1]). Each
// violation names the host that owed the behaviour (ChargedTo): callers
// keep the IUT's with spec.Charged. Errors: framing or decoding errors of
// the trace.
func Verify(judge spec.Judge, peers ...*Peer) (*spec.Report, []*Packet, error) {
	packets := Merged(peers...)
	var buf bytes.Buffer
	if err := WritePcapng(&buf, peers...); err != nil {
		return nil, nil, err
	}
	// The peers' own IPv6 packets carry their transports' shift, not the
	// IUT's (WritePcapng): told in advance, so that a peer's DATA at a
	// level either shift could write is read as sent.
	shifts := pcap.IPv6Shifts{}
	for _, p := range peers {
		if p.Addr().Is6() {
			shifts[p.Addr()] = transportShift
		}
	}
	r, err := pcap.NewReader(&buf, pcap.ReaderOptions{Version: judge.Params.Wire, IPv6HostShifts: shifts, IPv6UnknownShift: judge.Params.IPv6PrioShift})
	if err != nil {
		return nil, nil, err
	}
	c := judge.Stream(spec.Switch)
	if err := r.EachEvent(c.Feed); err != nil {
		return nil, nil, err
	}
	return c.Finish(), packets, nil
}
