package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// SwitchNotePrefix starts the comment of a record the harness adds to a
// run's capture.pcapng for a frame the switch dropped or altered
// (harness.Annotation): not a frame seen on the wire.
const SwitchNotePrefix = "switch: "

// TesterNotePrefix starts the comment homatest run's capture puts on every
// packet a tester sent (tester.SentNote, tester.DeliberatePrefix for one it
// broke on purpose: malformed, an early RESEND ...): findings charged to
// such a frame's sender are the tester's doing and do not fail a check.
const (
	TesterNotePrefix       = "homatest tester:"
	TesterDeliberatePrefix = "homatest tester: deliberate "
)

// testerCharged reports whether finding f is charged to a tester: its
// frame is a tester's packet and the finding is its sender's doing, or
// the host it is charged to is one whose frames a tester marked (an
// answer a tester never gave).
func (fr *FileReport) TesterCharged(f *spec.Finding) bool {
	return strings.HasPrefix(f.Note, TesterNotePrefix) && f.ChargedTo == f.Src || fr.testers[f.ChargedTo]
}

// readParamsFile reads the NAME=VALUE lines (# comments and blank lines
// skipped) of the file next to a capture that says which parameters its
// run judged it with (homatest run writes capture.pcapng.params). It
// returns nil when there is none.
func readParamsFile(capture string) ([]string, string, error) {
	name := capture + ".params"
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, "", nil
	}
	var kvs []string
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "=") {
			return nil, name, fmt.Errorf("%s line %d: %q is not NAME=VALUE", name, i+1, l)
		}
		kvs = append(kvs, l)
	}
	return kvs, name, nil
}

// layout is what a first pass over a capture finds out about where it was
// taken: the Homa packets each address takes part in and, for pcapng, the
// directions per interface (epb_flags).
type layout struct {
	homa  int
	hosts map[netip.Addr]int
	// ifaces: per pcapng interface, frames by direction and the addresses
	// of the frames that arrived from its host (in) and went to it (out).
	ifaces map[int]*ifaceLayout
	dirIn  int
	dirOut int
	// commented counts Homa frames with a comment, dropped those whose
	// comment says a switch dropped them ("dropped: ...").
	commented, dropped int
}

type ifaceLayout struct {
	name    string
	in, out int
	from    map[netip.Addr]int // sources of inbound frames
	to      map[netip.Addr]int // destinations of outbound frames
}

// host returns the host on the far end of the interface: the commonest
// source of the frames arriving from it, else the commonest destination
// of those sent to it.
func (l *ifaceLayout) host() netip.Addr {
	if a, n := commonest(l.from); n > 0 {
		return a
	}
	a, _ := commonest(l.to)
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

// readLayout reads every frame of path once (switch annotations skipped).
func readLayout(path string) (*layout, error) {
	r, err := pcap.OpenPath(path, pcap.ReaderOptions{})
	if err != nil {
		return nil, pcap.OpenError(path, err)
	}
	defer r.Close()
	l := &layout{hosts: map[netip.Addr]int{}, ifaces: map[int]*ifaceLayout{}}
	for {
		f, err := r.Next()
		if err != nil {
			break // a damaged file fails later with a better message
		}
		if strings.HasPrefix(f.Comment, SwitchNotePrefix) {
			continue
		}
		l.homa++
		if f.Comment != "" {
			l.commented++
		}
		if strings.HasPrefix(f.Comment, DroppedNotePrefix) {
			l.dropped++
		}
		l.hosts[f.Src]++
		if f.Dst != f.Src {
			l.hosts[f.Dst]++
		}
		il := l.ifaces[f.Interface]
		if il == nil {
			il = &ifaceLayout{name: r.InterfaceName(f.Interface), from: map[netip.Addr]int{}, to: map[netip.Addr]int{}}
			l.ifaces[f.Interface] = il
		}
		switch f.Direction {
		case pcap.DirInbound:
			il.in++
			il.from[f.Src]++
			l.dirIn++
		case pcap.DirOutbound:
			il.out++
			il.to[f.Dst]++
			l.dirOut++
		}
	}
	return l, nil
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

// DroppedNotePrefix starts the comment a switch (netem, scenario's tc
// backend) writes on a frame it dropped.
const DroppedNotePrefix = "dropped: "

// capturePlan is where check takes a capture to have been made, and why.
type capturePlan struct {
	mode viewMode
	cp   spec.CapturePoint
	why  string
	// ports maps each interface to its host (portViews).
	ports map[int]netip.Addr
}

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
	ports := func() capturePlan {
		p := capturePlan{mode: portViews, ports: map[int]netip.Addr{}}
		var hs []string
		for i, il := range l.ifaces {
			if il.in+il.out == 0 {
				continue
			}
			p.ports[i] = il.host()
			hs = append(hs, fmt.Sprintf("%s %v", ifName(i, il), p.ports[i]))
		}
		sort.Strings(hs)
		p.why = fmt.Sprintf("%d interfaces each hold both directions of one host's link (%s): each host is judged on its own link, every packet once as sent and once as delivered", len(p.ports), strings.Join(hs, ", "))
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
		if cp.Kind == spec.CaptureHost && l.hosts[cp.Host] == 0 {
			return capturePlan{}, fmt.Errorf("--capture-point %s: no Homa packet of the capture is to or from %v", flag, cp.Host)
		}
		return capturePlan{cp: cp, why: "as --capture-point says"}, nil
	}
	switch {
	case l.homa > 0 && l.commented == l.homa && l.dropped > 0:
		return capturePlan{mode: notesOnly, why: fmt.Sprintf("every frame carries a switch's note and %d say the switch dropped them: frames dropped or altered on their way (as a run's switch-notes.pcapng), not the traffic, so no rule is judged; check the run's capture.pcapng (or give --capture-point to judge these frames anyway)", l.dropped)}, nil
	case l.dirIn > 0 && l.dirOut > 0:
		return ports(), nil
	case l.dirIn > 0:
		return capturePlan{cp: spec.CapturePoint{Kind: spec.CaptureSent},
			why: fmt.Sprintf("every frame is inbound at its interface (epb_flags): each packet as its host sent it (as a run's sent.pcapng)")}, nil
	case l.dirOut > 0:
		return capturePlan{cp: spec.CapturePoint{Kind: spec.CaptureDelivered},
			why: fmt.Sprintf("every frame is outbound at its interface (epb_flags): each packet as it was delivered (as a run's delivered.pcapng)")}, nil
	}
	if len(l.hosts) >= 3 {
		for a, n := range l.hosts {
			if n == l.homa {
				return capturePlan{cp: spec.HostPoint(a),
					why: fmt.Sprintf("every Homa packet is to or from %v, which talks with %d hosts: a tap on its link (give --capture-point switch for a mirror filtered on that host)", a, len(l.hosts)-1)}, nil
			}
		}
	}
	why := fmt.Sprintf("the packets of %d hosts with no direction marks: a tap between them (give --capture-point host:ADDR for a tap on one host's own link)", len(l.hosts))
	if len(l.hosts) == 2 {
		why = "two hosts and no direction marks: a tap somewhere between them (give --capture-point host:ADDR when it was on one host's own link)"
	}
	return capturePlan{cp: spec.Switch, why: why}, nil
}

func ifName(i int, il *ifaceLayout) string {
	if il.name != "" {
		return il.name
	}
	return fmt.Sprintf("interface %d", i)
}

// readPortViews reads the capture at path into one view per interface of
// plan.ports (events in file order, frame numbers as in the file, packet
// bytes copied); switch annotations are skipped.
func readPortViews(path string, o pcap.ReaderOptions, plan capturePlan) (map[int][]spec.Event, pcap.Stats, error) {
	r, err := pcap.OpenPath(path, o)
	if err != nil {
		return nil, pcap.Stats{}, pcap.OpenError(path, err)
	}
	defer r.Close()
	views := map[int][]spec.Event{}
	var evs []spec.Event
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return views, r.Stats(), fmt.Errorf("%s: capture damaged or cut short: %w", path, err)
		}
		if strings.HasPrefix(f.Comment, SwitchNotePrefix) {
			continue
		}
		if _, ok := plan.ports[f.Interface]; !ok {
			continue
		}
		evs = f.Events(evs[:0])
		for _, e := range evs {
			if e.Err == nil && e.ICMP == nil {
				b := append([]byte(nil), e.Packet.Bytes()...)
				e.Packet, e.Err = wire.Decode(b, wire.DecodeOptions{Version: e.Packet.Version(), WireLen: e.Packet.WireLen()})
			}
			views[f.Interface] = append(views[f.Interface], e)
		}
	}
	st := r.Stats()
	if st.Homa == 0 {
		return views, st, fmt.Errorf("%s: %w", path, pcap.ErrNoHoma)
	}
	return views, st, nil
}

// mergeHostReports folds the host views of a multi-port capture into one
// report: rule counts summed over the views, the violations and downgrades
// each view charges to its own host, the inconclusive findings at frames
// its host sent.
func mergeHostReports(hrs []spec.HostReport) *spec.Report {
	out := &spec.Report{CapturePoint: "ports", Violations: []spec.Finding{}}
	byRule := map[string]int{}
	downs := map[[2]string]*spec.DowngradeCount{}
	for _, hr := range hrs {
		rep := hr.Report
		out.Profile, out.Params = rep.Profile, rep.Params
		out.Events += rep.Events
		out.RPCs = max(out.RPCs, rep.RPCs)
		for _, rr := range rep.Rules {
			i, ok := byRule[rr.ID]
			if !ok {
				i = len(out.Rules)
				byRule[rr.ID] = i
				out.Rules = append(out.Rules, spec.RuleResult{ID: rr.ID, Level: rr.Level, Rule: rr.Rule})
			}
			r := &out.Rules[i]
			r.Checked += rr.Checked
			r.Passed += rr.Passed
			r.Inconclusive += rr.Inconclusive
			r.MaxSlack = max(r.MaxSlack, rr.MaxSlack)
		}
		out.Violations = append(out.Violations, hr.Violations...)
		for _, v := range hr.Violations {
			out.Rules[byRule[v.Rule]].Violated++
		}
		for _, f := range rep.Inconclusive {
			if f.ChargedTo == hr.Host {
				out.Inconclusive = append(out.Inconclusive, f)
			}
		}
		for _, d := range rep.Downgrades {
			k := [2]string{d.Rule, string(d.Cause)}
			if c := downs[k]; c != nil {
				c.Count += d.Count
				c.Frame = min(c.Frame, d.Frame)
			} else {
				dc := d
				downs[k] = &dc
			}
		}
	}
	// Each packet is in two views (its sender's and its receiver's): the
	// counts are the views' passes and inconclusive findings, and the
	// violations each view charges to its own host.
	for i := range out.Rules {
		r := &out.Rules[i]
		r.Checked = r.Passed + r.Inconclusive + r.Violated
	}
	for _, d := range downs {
		out.Downgrades = append(out.Downgrades, *d)
	}
	sort.Slice(out.Downgrades, func(i, j int) bool {
		a, b := out.Downgrades[i], out.Downgrades[j]
		return a.Rule < b.Rule || a.Rule == b.Rule && a.Cause < b.Cause
	})
	sort.SliceStable(out.Violations, func(i, j int) bool { return out.Violations[i].Frame < out.Violations[j].Frame })
	sort.SliceStable(out.Inconclusive, func(i, j int) bool { return out.Inconclusive[i].Frame < out.Inconclusive[j].Frame })
	return out
}

// readStallsFile reads the stalls a run measured while the capture was
// taken: capture+".stalls.json" (homatest run) or stalls.json in the
// capture's folder (scenario run). It returns nil when there is none.
func readStallsFile(capture string) ([]stall.Span, string, error) {
	for _, name := range []string{capture + ".stalls.json", filepath.Join(filepath.Dir(capture), "stalls.json")} {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		var spans []stall.Span
		if err := json.Unmarshal(b, &spans); err != nil {
			return nil, name, fmt.Errorf("%s: %w", name, err)
		}
		return spans, name, nil
	}
	return nil, "", nil
}

// excuseStalls moves to the inconclusive findings of rep every timing
// violation (one with a tolerance) a measured stall overlaps, within its
// tolerance of its frame's time, as the run's own check does
// (stall.Explaining); it returns how many.
func excuseStalls(rep *spec.Report, spans []stall.Span) int {
	if len(spans) == 0 {
		return 0
	}
	n := 0
	kept := rep.Violations[:0]
	for _, f := range rep.Violations {
		if f.Slack > 0 {
			if sp := stall.Overlaps(spans, f.Time.Add(-f.Slack), f.Time.Add(f.Slack)); len(sp) > 0 {
				f.Why = fmt.Sprintf("%s (timing-inconclusive: %s)", f.Why, sp[0])
				rep.Inconclusive = append(rep.Inconclusive, f)
				for i := range rep.Rules {
					if rep.Rules[i].ID == f.Rule {
						rep.Rules[i].Violated--
						rep.Rules[i].Inconclusive++
					}
				}
				n++
				continue
			}
		}
		kept = append(kept, f)
	}
	rep.Violations = kept
	return n
}
