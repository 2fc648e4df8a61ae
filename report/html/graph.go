package html

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/seqplot"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Capture is a capture's RPCs and events, read once to draw several of
// its RPCs.
type Capture struct {
	events []spec.Event
	rpcs   []*spec.RPC
}

// ReadCapture reads the capture at path (wire format v; VersionAuto picks
// per packet) and groups its packets into RPCs, with the parameters of the
// HomaModule profile of its format.
func ReadCapture(path string, v wire.Version) (*Capture, error) {
	evs, err := pcap.ReadEvents(path, pcap.ReaderOptions{Version: v})
	if err != nil {
		return nil, err
	}
	profile := "linux"
	for i := range evs {
		if evs[i].Err != nil {
			continue
		}
		if pv := evs[i].Packet.Version(); pv == wire.Version2024 || pv == wire.Version2025 {
			profile = spec.ProfileForWire(pv) // 2024 wins, as in pcap.DetectFormat
			if pv == wire.Version2024 {
				break
			}
		}
	}
	return groupRPCs(evs, profile)
}

// ReadCaptureRPCs is ReadCapture of the RPCs under keys alone: it streams
// the capture and keeps only their packets (each RPC is grouped from its
// own packets), so that its memory follows those RPCs, not the capture's
// length: what a page drawing a few RPCs of a long run reads.
func ReadCaptureRPCs(path string, v wire.Version, keys map[spec.RPCKey]bool) (*Capture, error) {
	var evs []spec.Event
	var own pcap.EventOwner
	profile, found2024 := "linux", false
	_, err := pcap.StreamPath(path, pcap.ReaderOptions{Version: v}, func(e *spec.Event) {
		if e.Err != nil {
			return
		}
		if pv := e.Packet.Version(); !found2024 && (pv == wire.Version2024 || pv == wire.Version2025) {
			profile = spec.ProfileForWire(pv) // 2024 wins, as in pcap.DetectFormat
			found2024 = pv == wire.Version2024
		}
		if keys[spec.KeyOf(e)] {
			c := *e
			own.Own(&c)
			evs = append(evs, c)
		}
	})
	if err != nil && !errors.Is(err, pcap.ErrNoHoma) {
		return nil, err
	}
	return groupRPCs(evs, profile)
}

// groupRPCs groups evs into RPCs under the parameters of profile.
func groupRPCs(evs []spec.Event, profile string) (*Capture, error) {
	prof, err := spec.LookupProfile(profile)
	if err != nil {
		return nil, err
	}
	tr := spec.NewTrace(&prof.Params)
	tr.KeepFinished()
	for i := range evs {
		tr.Apply(&evs[i])
	}
	rpcs := tr.RPCs()
	sort.Slice(rpcs, func(i, j int) bool { return rpcs[i].FirstFrame < rpcs[j].FirstFrame })
	return &Capture{events: evs, rpcs: rpcs}, nil
}

// RPCs returns the capture's RPCs in order of their first frame.
func (c *Capture) RPCs() []*spec.RPC { return c.rpcs }

// Find returns the RPC with key k, or nil (also on a nil Capture).
func (c *Capture) Find(k spec.RPCKey) *spec.RPC {
	if c == nil {
		return nil
	}
	for _, r := range c.rpcs {
		if r.Key == k {
			return r
		}
	}
	return nil
}

// Worst returns the RPC a failure most likely shows: the slowest complete
// one (seqplot.Slowest), else the one with the most packets; nil if the
// capture has no RPC.
func (c *Capture) Worst() *spec.RPC {
	if r := seqplot.Slowest(c.rpcs); r != nil {
		return r
	}
	var best *spec.RPC
	count := func(r *spec.RPC) int {
		n := 0
		for _, x := range r.Packets {
			n += x
		}
		return n
	}
	for _, r := range c.rpcs {
		if best == nil || count(r) > count(best) {
			best = r
		}
	}
	return best
}

// Graph draws r's sequence graph as a PNG picture, captioned with its
// title lines.
func (c *Capture) Graph(r *spec.RPC) (*Picture, error) {
	b := seqplot.NewBuilder(r)
	for i := range c.events {
		b.Add(&c.events[i])
	}
	m := b.Model()
	var buf bytes.Buffer
	if err := m.Render(&buf, "png"); err != nil {
		return nil, fmt.Errorf("sequence graph of RPC %d: %w", r.Key.ClientID, err)
	}
	l1, l2 := m.Title()
	return &Picture{Caption: l1 + "; " + l2, PNG: buf.Bytes()}, nil
}
