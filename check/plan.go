package check

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// layout is what a first pass over a capture finds out about where it was
// taken: the Homa packets each address takes part in and, for pcapng, the
// directions per interface (epb_flags).
type layout struct {
	homa  int
	hosts addrTally
	// ifaces: per pcapng interface, frames by direction and the addresses
	// of the frames that arrived from its host (in) and went to it (out);
	// lastIf caches the latest one used (index lastIfN).
	ifaces  map[int]*ifaceLayout
	lastIf  *ifaceLayout
	lastIfN int
	dirIn   int
	dirOut  int
	// commented counts Homa frames with a comment, dropped those whose
	// comment says a switch dropped them ("dropped: ...").
	commented, dropped int
	// sentBy tallies the sources of the Linux cooked frames the capturing
	// host marked sent by it (pcap.SightSent), toHost the destinations
	// of those it marked addressed to it (pcap.SightToHost).
	sentBy, toHost addrTally
}

type ifaceLayout struct {
	name    string
	in, out int
	from    addrTally // sources of inbound frames
	to      addrTally // destinations of outbound frames
}

// addrTally counts frames by address. The layout pass counts every frame
// of a capture and a capture holds few hosts, so the first
// addrTallyInline addresses are counted in a slice scanned in order,
// which costs less than a map's hashing of a 24-byte key; more spill into
// a map. counts folds the slice into the map and returns it.
type addrTally struct {
	as   []netip.Addr
	ns   []int
	more map[netip.Addr]int
}

// addrTallyInline bounds the addresses an addrTally scans before its map.
const addrTallyInline = 16

// add counts one more frame of a.
func (t *addrTally) add(a netip.Addr) {
	for i := range t.as {
		if t.as[i] == a {
			t.ns[i]++
			return
		}
	}
	if len(t.as) < addrTallyInline {
		t.as, t.ns = append(t.as, a), append(t.ns, 1)
		return
	}
	if t.more == nil {
		t.more = map[netip.Addr]int{}
	}
	t.more[a]++
}

// counts returns the tally as a map from address to frames (shared with
// the tally: read only).
func (t *addrTally) counts() map[netip.Addr]int {
	if t.more == nil {
		t.more = make(map[netip.Addr]int, len(t.as))
	}
	for i, a := range t.as {
		t.more[a] += t.ns[i]
	}
	t.as, t.ns = nil, nil
	return t.more
}

// host returns the host on the far end of the interface: the commonest
// source of the frames arriving from it, else the commonest destination
// of those sent to it.
func (l *ifaceLayout) host() netip.Addr {
	if a, n := commonest(l.from.counts()); n > 0 {
		return a
	}
	a, _ := commonest(l.to.counts())
	return a
}

func commonest(m map[netip.Addr]int) (netip.Addr, int) {
	var best netip.Addr
	n := 0
	for a, k := range m {
		if k > n || k == n && a.Less(best) {
			best, n = a, k
		}
	}
	return best, n
}

// readLayout reads the frames of path once, at most max of them (max < 0:
// all), and reports whether it read them all; it stops with ctx's error
// once ctx has ended.
func readLayout(ctx context.Context, path string, max int) (*layout, bool, error) {
	r, err := pcap.OpenPath(path, pcap.ReaderOptions{Context: ctx})
	if err != nil {
		return nil, false, pcap.OpenError(path, err)
	}
	defer r.Close()
	l := newLayout()
	for n := 0; n != max; n++ {
		f, err := r.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, fmt.Errorf("%s: %w", path, context.Cause(ctx))
			}
			return l, true, nil // a damaged file fails later with a better message
		}
		l.add(r, f)
	}
	return l, false, nil
}

func newLayout() *layout {
	return &layout{ifaces: map[int]*ifaceLayout{}}
}

// add counts frame f of reader r (switch annotations skipped; an ICMP
// frame, which only a reader with ReaderOptions.ICMP returns, too).
func (l *layout) add(r *pcap.Reader, f *pcap.Frame) {
	if f.ICMP != nil || strings.HasPrefix(f.Comment, switchNotePrefix) {
		return
	}
	l.homa++
	if f.Comment != "" {
		l.commented++
	}
	if strings.HasPrefix(f.Comment, droppedNotePrefix) {
		l.dropped++
	}
	l.hosts.add(f.Src)
	if f.Dst != f.Src {
		l.hosts.add(f.Dst)
	}
	il := l.lastIf
	if il == nil || l.lastIfN != f.Interface {
		if il = l.ifaces[f.Interface]; il == nil {
			il = &ifaceLayout{name: r.InterfaceName(f.Interface)}
			l.ifaces[f.Interface] = il
		}
		l.lastIf, l.lastIfN = il, f.Interface
	}
	switch f.Sighting {
	case pcap.SightSent:
		l.sentBy.add(f.Src)
	case pcap.SightToHost:
		l.toHost.add(f.Dst)
	}
	switch f.Direction {
	case pcap.DirInbound:
		il.in++
		il.from.add(f.Src)
		l.dirIn++
	case pcap.DirOutbound:
		il.out++
		il.to.add(f.Dst)
		l.dirOut++
	}
}

// viewMode is how check reads a capture.
type viewMode uint8

const (
	// oneView: the capture holds each packet once (a tap at one point);
	// one Checker at the capture point.
	oneView viewMode = iota
	// portViews: every interface holds both directions of one switch
	// port (as the harness writes capture.pcapng): each interface is its
	// host's own link, judged as a host view.
	portViews
	// notesOnly: every frame is a switch's note on a frame it dropped or
	// altered (scenario run's switch-notes.pcapng): not the traffic, so
	// nothing is judged.
	notesOnly
)

// capturePlan is where check takes a capture to have been made, and why.
type capturePlan struct {
	mode viewMode
	cp   spec.CapturePoint
	why  string
	// ports maps each interface to its host (portViews); frames to the
	// number of Homa frames the layout counted on it (a capacity hint
	// for its view).
	ports  map[int]netip.Addr
	frames map[int]int
	// views holds the ports' views once read (portViews): a check runs
	// the rules more than once over them (hintFindings tries the
	// parameters the capture implies), and reading and owning every
	// event again cost as much as judging them.
	views *viewsRead
	// oneEnd is set when auto took the capture for one end of every
	// host's link (all frames inbound, or all outbound, in epb_flags):
	// judged with spec.Judge.OneEnd.
	oneEnd bool
	// bothDirs is set when a one-view point was given for a file whose
	// frames carry both directions in epb_flags: every packet then counts
	// twice, which the checker may take for two instances merged.
	bothDirs bool
	// count, when set, is filled with the layout of the whole capture by
	// the check's own pass (oneView), for a plan guessed from the first
	// frames (see File): no pass of its own to confirm the guess.
	count *layout
}

// bothDirsAdvice says how to judge a file whose frames carry both
// directions in epb_flags (a run's capture.pcapng) when a one-view
// --capture-point was given for it.
const bothDirsAdvice = "drop --capture-point (auto, or ports, judges each host on its own link), or extract one direction to judge at that point: tshark -r FILE -Y 'frame.packet_flags_direction==1' -w sent.pcapng (inbound: each packet as sent) or 'frame.packet_flags_direction==2' -w delivered.pcapng (outbound: as delivered), or one port's interface to judge at its host's point: tshark -r FILE -Y 'frame.interface_id==N' -w port.pcapng, then --capture-point host:ADDR"

// String names the plan as the report prints it.
func (p capturePlan) String() string {
	switch p.mode {
	case portViews:
		return "ports"
	case notesOnly:
		return "none"
	}
	return p.cp.String()
}

// planCapture decides where the capture at path was taken: flag is
// --capture-point (auto, switch, host:ADDR, sent, delivered or ports).
func planCapture(flag string, l *layout) (capturePlan, error) {
	hosts := l.hosts.counts()
	ports := func() capturePlan {
		p := capturePlan{mode: portViews, ports: map[int]netip.Addr{}, frames: map[int]int{}, views: &viewsRead{}}
		var hs []string
		for i, il := range l.ifaces {
			if il.in+il.out == 0 {
				continue
			}
			p.ports[i], p.frames[i] = il.host(), il.in+il.out
			hs = append(hs, fmt.Sprintf("%s %v", ifName(i, il), p.ports[i]))
		}
		sort.Strings(hs)
		p.why = fmt.Sprintf("%s both directions of one host's link (%s): each host is judged on its own link, every packet once as sent and once as delivered", plural.Of(len(p.ports), "interface holds", "interfaces each hold"), strings.Join(hs, ", "))
		return p
	}
	switch flag {
	case "ports":
		if l.dirIn == 0 || l.dirOut == 0 {
			return capturePlan{}, fmt.Errorf("--capture-point ports needs a pcapng whose frames carry both directions in epb_flags (as homatest run writes capture.pcapng)")
		}
		return ports(), nil
	case "auto", "":
	default:
		cp, err := spec.ParseCapturePoint(flag)
		if err != nil {
			return capturePlan{}, err
		}
		if cp.Kind == spec.CaptureHost && hosts[cp.Host] == 0 {
			return capturePlan{}, fmt.Errorf("--capture-point %s: no Homa packet of the capture is to or from %v", flag, cp.Host)
		}
		why := "as --capture-point says"
		both := l.dirIn > 0 && l.dirOut > 0
		if il := l.onlyIface(); both && cp.Kind == spec.CaptureHost && il != nil && il.host() == cp.Host {
			// The frames of one port, the tapped host's (one interface
			// of a run's capture.pcapng, as tshark extracts it), hold
			// each of its packets once: a tap on its link.
			both = false
		}
		if both {
			// One view of a file that holds every packet on two switch
			// ports sees each twice: duplicates and reorderings it would
			// charge to the hosts.
			why += "; WARNING: the frames carry both directions per interface (epb_flags), as a capture of every switch port holds each packet twice: --capture-point names where the frames were taken and selects none, so judged as one view every packet counts twice; " + bothDirsAdvice
		}
		return capturePlan{cp: cp, why: why, bothDirs: both}, nil
	}
	switch {
	case l.homa > 0 && l.commented == l.homa && l.dropped > 0:
		return capturePlan{mode: notesOnly, why: fmt.Sprintf("every frame carries a switch's note and %d say the switch dropped them: frames dropped or altered on their way (as a run's switch-notes.pcapng), not the traffic, so no rule is judged; check the run's capture.pcapng (or give --capture-point to judge these frames anyway)", l.dropped)}, nil
	case l.dirIn > 0 && l.dirOut > 0:
		return ports(), nil
	case l.dirIn > 0:
		return capturePlan{cp: spec.CapturePoint{Kind: spec.CaptureSent}, oneEnd: true,
			why: fmt.Sprintf("every frame is inbound at its interface (epb_flags): each packet as its host sent it (as a run's sent.pcapng)")}, nil
	case l.dirOut > 0:
		return capturePlan{cp: spec.CapturePoint{Kind: spec.CaptureDelivered}, oneEnd: true,
			why: fmt.Sprintf("every frame is outbound at its interface (epb_flags): each packet as it was delivered (as a run's delivered.pcapng)")}, nil
	}
	if cp, why, ok := l.cookedHost(hosts); ok {
		return capturePlan{cp: cp, why: why}, nil
	}
	if len(hosts) >= 3 {
		for a, n := range hosts {
			if n == l.homa {
				return capturePlan{cp: spec.HostPoint(a),
					why: fmt.Sprintf("every Homa packet is to or from %v, which talks with %s: a tap on its link (give --capture-point switch for a mirror filtered on that host)", a, plural.Of(len(hosts)-1, "host", "hosts"))}, nil
			}
		}
	}
	why := fmt.Sprintf("the packets of %d hosts with no direction marks: a tap between them, which may also talk with hosts it does not show (give --capture-point switch when every packet of theirs crosses it, host:ADDR for a tap on one host's own link)", len(hosts))
	if len(hosts) == 2 {
		why = "two hosts and no direction marks: a tap somewhere between them, which may also talk with hosts it does not show (give --capture-point switch when every packet of both crosses it, host:ADDR when it was on one host's own link)"
	}
	if n := len(l.sentBy.counts()); n >= 2 {
		// Marked, but no one host's: tcpdump -i any where packets are
		// forwarded (a bridge's ports, a router) marks them sent by it.
		why = fmt.Sprintf("Linux cooked frames (tcpdump -i any) marked sent by the capturing host from %d addresses: taken where the packets are forwarded (a bridge's ports, a router), a tap between the hosts, which may also talk with hosts it does not show (give --capture-point switch when every packet of theirs crosses it)", n)
	}
	return capturePlan{cp: spec.CapturePoint{Kind: spec.CaptureSwitch, Open: true}, why: why}, nil
}

// cookedHost returns the capture point a Linux cooked capture's marks
// name (ok): every frame the capturing host marked sent by it is from
// one address, every one it marked addressed to it is to that address,
// and every Homa packet is to or from it. tcpdump -i any on a host marks
// its frames so: the capture was taken at that host, on its own link
// (HomaModule's packets leave and arrive through the interfaces it
// sees). hosts is the layout's Homa packets by address.
func (l *layout) cookedHost(hosts map[netip.Addr]int) (spec.CapturePoint, string, bool) {
	sent, to := l.sentBy.counts(), l.toHost.counts()
	var at netip.Addr
	for _, m := range []map[netip.Addr]int{sent, to} {
		for a := range m {
			if at.IsValid() && a != at {
				return spec.CapturePoint{}, "", false
			}
			at = a
		}
	}
	if !at.IsValid() || hosts[at] != l.homa {
		return spec.CapturePoint{}, "", false
	}
	ns, nt := 0, 0
	for _, n := range sent {
		ns += n
	}
	for _, n := range to {
		nt += n
	}
	return spec.HostPoint(at), fmt.Sprintf("Linux cooked frames (tcpdump -i any) the capturing host marked: %s sent by it, all from %v, and %s to it, all to %v: taken on %v itself, its own link",
		plural.Of(ns, "frame", "frames"), at, plural.Of(nt, "frame", "frames"), at, at), true
}

// onlyIface returns the one interface that holds frames, or nil when
// none or more than one does.
func (l *layout) onlyIface() *ifaceLayout {
	var only *ifaceLayout
	for _, il := range l.ifaces {
		if il.in+il.out == 0 {
			continue
		}
		if only != nil {
			return nil
		}
		only = il
	}
	return only
}

func ifName(i int, il *ifaceLayout) string {
	if il.name != "" {
		return il.name
	}
	return fmt.Sprintf("interface %d", i)
}

// SentView returns the reader options that read each Homa packet of the
// capture at path once, as check's port views place it (homatest rpcs,
// plot and decode): for a pcapng whose frames carry both directions
// (epb_flags), the inbound frames (each packet as its host sent it) and
// the outbound frames from hosts with no port of their own in the
// capture (planCapture's ports: a tester in explore's one-port capture of
// the IUT's link shows only as delivered); o unchanged otherwise. The
// bool reports whether it filtered. A stream's layout is read from its
// first pcap.DetectFrames frames, so that it is not held back to its end.
func SentView(ctx context.Context, path string, o pcap.ReaderOptions) (pcap.ReaderOptions, bool) {
	if ctx == nil {
		ctx = context.Background()
	}
	so, ports := pcap.SentView(path, o)
	if !ports {
		return o, false
	}
	max := -1
	if pcap.IsStream(path) {
		max = pcap.DetectFrames
	}
	lay, _, err := readLayout(ctx, path, max)
	if err != nil {
		return so, true // read for real, the capture says what is wrong
	}
	p, err := planCapture("ports", lay)
	if err != nil {
		return so, true
	}
	so.SentBy = []netip.Addr{}
	for _, h := range p.ports {
		if !slices.Contains(so.SentBy, h) {
			so.SentBy = append(so.SentBy, h)
		}
	}
	return so, true
}
