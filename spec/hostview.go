package spec

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// ViewSource says where an event of a host view came from: Delivered is
// false for an event of the as-sent list and true for one of the
// as-delivered list; Frame is the event's frame number in that list's
// capture.
type ViewSource struct {
	Delivered bool `json:"delivered"`
	Frame     int  `json:"frame"`
}

// HostReport is the check of one host's view (see Judge.Hosts).
type HostReport struct {
	// Host is the host's address.
	Host netip.Addr `json:"host"`
	// Report is the checker's whole report over the host's view; its
	// frame numbers are 1-based positions in the view. Its Violations
	// include findings charged to other hosts (Finding.ChargedTo; each is
	// judged again in its own host's view) and those in Excused: they do
	// not count against Host (NotCharged counts them). Use Violations,
	// and ChargedRules for the rule table.
	Report *Report `json:"report"`
	// Charged is len(Violations), the violations that count against Host;
	// NotCharged the violations of Report that do not (charged to another
	// host, Excused, or Altered). Report.Violations lists Charged + NotCharged
	// findings (at most MaxFindings per rule).
	Charged    int `json:"violations_charged"`
	NotCharged int `json:"violations_not_charged"`
	// Violations are the findings of Report charged to Host, in view
	// order: at frames Host sent, or for rules whose ChargesReceiver is
	// true at frames Host received.
	Violations []Finding `json:"violations"`
	// Excused are findings charged to Host that Params.Reaction excused
	// (timing findings at a packet Host sent right after a packet of the
	// same RPC was delivered to it).
	Excused []Finding `json:"excused,omitempty"`
	// Altered are findings charged to Host that name a packet delivered
	// to it altered on the way (no packet of the as-sent capture matches
	// it: a corrupting link), or are about an RPC such a packet had
	// reached Host of by then: Host reacted to what it got (altered.go).
	// They do not count against it; ChargedRules counts them
	// inconclusive.
	Altered []Finding `json:"altered,omitempty"`
	// Sources maps view frame i (1-based) to Sources[i-1], the event's
	// list and frame number in its capture.
	Sources []ViewSource `json:"-"`
	// View is the host's view as checked (Frame = position, 1-based).
	View []Event `json:"-"`
	// sparse, set by HostsStream instead of View and Sources, holds the
	// view frames the findings name.
	sparse *sparseView
}

// Locate names view frame i (1-based) by the capture its event came
// from, the view's own numbers naming no file: "SENT frame N" or
// "DELIVERED frame N", sent and delivered being the names of the as-sent
// and as-delivered captures Hosts merged the view from; "view frame i"
// when i is outside the view.
func (hr *HostReport) Locate(i int, sent, delivered string) string {
	s, ok := hr.Source(i)
	if !ok {
		return fmt.Sprintf("view frame %d", i)
	}
	if s.Delivered {
		return fmt.Sprintf("%s frame %d", delivered, s.Frame)
	}
	return fmt.Sprintf("%s frame %d", sent, s.Frame)
}

// viewFrameRef is a frame number in a finding's reason ("frame 39").
var viewFrameRef = regexp.MustCompile(`\bframe (\d+)\b`)

// LocateText rewrites every frame number in text (a finding's Why, whose
// numbers are view positions) as Locate names it, so that a line naming
// frames of both captures says which is which. Without Sources (a view
// judged by Host, numbered as its file) text is returned as it is.
func (hr *HostReport) LocateText(text, sent, delivered string) string {
	if hr.Sources == nil && hr.sparse == nil {
		return text
	}
	return viewFrameRef.ReplaceAllStringFunc(text, func(m string) string {
		i, err := strconv.Atoi(m[len("frame "):])
		if err != nil {
			return m
		}
		return hr.Locate(i, sent, delivered)
	})
}

// Hosts judges every host on its own link: for each host it runs j's
// checker over the events that host
// sent, taken from sent (the packets as the hosts sent them, e.g. a switch
// port capture of frames arriving from the host), merged in time order
// with the events delivered to it, taken from delivered (the packets as the
// switch delivered them), and keeps the violations charged to the host:
// those at frames it sent, or for rules whose Rule.ChargesReceiver is
// true (obligations such as "a RESEND is answered") at frames it received.
// This is the capture a tap on the host's own link would give, so queueing
// between hosts cannot fake a violation, which a single switch-wide capture
// in either direction does ("no NEED_ACK after the ACK" fires when the ACK
// was still queued).
//
// A timing finding (one with a tolerance) at a packet the host sent less
// than Params.Reaction after a packet of the same RPC was delivered to it goes
// to HostReport.Excused instead: the host's timer may have decided before
// the packet reached it. A finding that names a packet delivered to the
// host altered on the way (no as-sent packet matches it: a corrupting
// link), or is about an RPC such a packet had reached the host of, goes
// to HostReport.Altered: the host reacted to what it got.
//
// hosts lists the hosts to judge; nil means every source address in sent
// and destination address in delivered, in address order. The events are
// copied (their Frame renumbered to the view position); events whose Err is
// set are fed as they are (the wire rules judge them). The result has one
// HostReport per host, in hosts' order. It never fails: a host with no
// events gets an empty report.
func (j Judge) Hosts(sent, delivered []Event, hosts []netip.Addr) []HostReport {
	out, _ := j.HostsContext(context.Background(), sent, delivered, hosts)
	return out
}

// HostsContext is Hosts that stops with ctx's error once ctx has ended
// (checked every few thousand events): a run's check of millions of
// packets stops at a Ctrl-C instead of judging on. The reports are nil
// then.
func (j Judge) HostsContext(ctx context.Context, sent, delivered []Event, hosts []netip.Addr) ([]HostReport, error) {
	if hosts == nil {
		seen := map[netip.Addr]bool{}
		for i := range sent {
			seen[sent[i].Src] = true
		}
		for i := range delivered {
			seen[delivered[i].Dst] = true
		}
		for h := range seen {
			if h.IsValid() {
				hosts = append(hosts, h)
			}
		}
		slices.SortFunc(hosts, func(a, b netip.Addr) int { return a.Compare(b) })
	}
	prints := newSentPrints(false)
	for i := range sent {
		prints.add(&sent[i])
	}
	if j.Started == nil {
		j.Started = StartedRPCs(sent)
	}
	// The hosts' views are independent checks (each its own Checker; the
	// rules are shared and never modified): up to GOMAXPROCS at once.
	out := make([]HostReport, len(hosts))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k, h := range hosts {
		g.Go(func() error {
			hr, err := j.hostOf(ctx, h, sent, delivered, prints)
			out[k] = hr
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// StartedRPCs returns the RPCs whose request's first transmission of
// offset 0 is among events, each at the earliest time it is
// (Judge.Started); nil if none.
func StartedRPCs(events ...[]Event) map[RPCKey]time.Time {
	var out map[RPCKey]time.Time
	for _, v := range events {
		for i := range v {
			e := &v[i]
			if e.Err != nil || e.ICMP != nil || !hasRPC(e) || !startsRequest(e) {
				continue
			}
			k := KeyOf(e)
			if at, ok := out[k]; !ok || e.Time.Before(at) {
				if out == nil {
					out = map[RPCKey]time.Time{}
				}
				out[k] = e.Time
			}
		}
	}
	return out
}

// hostOf is Hosts for host h: its view built from sent and delivered
// (prints: every packet of sent), sorted and checked.
func (j Judge) hostOf(ctx context.Context, h netip.Addr, sent, delivered []Event, prints *sentPrints) (HostReport, error) {
	var view []Event
	var src []ViewSource
	for i := range sent {
		if sent[i].Src == h {
			view = append(view, sent[i])
			src = append(src, ViewSource{Frame: sent[i].Frame})
		}
	}
	for i := range delivered {
		if delivered[i].Dst == h {
			view = append(view, delivered[i])
			src = append(src, ViewSource{Delivered: true, Frame: delivered[i].Frame})
		}
	}
	order := make([]int, len(view))
	for i := range order {
		order[i] = i
	}
	// Stable: at equal times what the host sent comes before what it
	// got, and each list keeps its own order.
	sort.SliceStable(order, func(i, j int) bool { return view[order[i]].Time.Before(view[order[j]].Time) })
	sorted := make([]Event, len(view))
	sources := make([]ViewSource, len(view))
	var alt alteredSet
	for i, k := range order {
		sorted[i], sources[i] = view[k], src[k]
		sorted[i].Frame = i + 1
		if src[k].Delivered && prints.altered(&view[k]) {
			key, keyed := alteredKey(&view[k])
			alt.note(i+1, key, keyed, view[k].Time)
		}
	}
	hr, err := j.host(ctx, h, sorted, &alt)
	if err != nil {
		return HostReport{}, err
	}
	hr.Sources = sources
	return hr, nil
}

// Host judges host h on view, the packets it sent and received in the
// order its own link carried them, as a capture at HostPoint(h): j's
// checker runs over the whole view and Violations keeps the findings
// charged to h (see Hosts). Frame numbers are kept as they are
// (a view may be one interface of a multi-port capture, numbered as its
// file); a finding names the first event with its frame. The view is
// kept in HostReport.View; Sources is left to the caller.
func (j Judge) Host(h netip.Addr, view []Event) HostReport {
	hr, _ := j.host(context.Background(), h, view, nil)
	return hr
}

// host is Host that stops with ctx's error once ctx has ended; findings
// alt touches go to HostReport.Altered (alt may be nil).
func (j Judge) host(ctx context.Context, h netip.Addr, view []Event, alt *alteredSet) (HostReport, error) {
	c := j.Stream(HostPoint(h))
	for i := range view {
		if i%4096 == 4095 && ctx.Err() != nil {
			return HostReport{}, ctx.Err()
		}
		c.Feed(&view[i])
	}
	rep := c.Finish()
	// pos: the first event of each frame a violation names, found in
	// one scan after the check (a map of every event's frame cost a
	// map insert per event).
	pos := make(map[int]int, len(rep.Violations))
	for _, v := range rep.Violations {
		pos[v.Frame] = -1
	}
	for i := 0; i < len(view) && len(pos) > 0; i++ {
		if k, ok := pos[view[i].Frame]; ok && k < 0 {
			pos[view[i].Frame] = i
		}
	}
	for f, k := range pos {
		if k < 0 {
			delete(pos, f)
		}
	}
	hr := HostReport{Host: h, Report: rep, View: view}
	for _, v := range rep.Violations {
		i, ok := pos[v.Frame]
		switch {
		case !ok || v.ChargedTo != h:
		case alt.touches(&v):
			hr.Altered = append(hr.Altered, v)
		case Raced(v, view, i, h, j.Params.Reaction):
			hr.Excused = append(hr.Excused, v)
		default:
			hr.Violations = append(hr.Violations, v)
		}
	}
	hr.Charged, hr.NotCharged = len(hr.Violations), len(rep.Violations)-len(hr.Violations)
	return hr, nil
}

// ChargedRules returns the rule table of hr as it counts against Host:
// Report.Rules with Violated the violations charged to Host (Violations)
// and Checked = Passed + Violated + Inconclusive, so that the columns add
// up; a violation the view found but charged to another host or excused
// counts in none of them.
func (hr *HostReport) ChargedRules() []RuleResult {
	if hr.Report == nil {
		return nil
	}
	charged, altered := map[string]int{}, map[string]int{}
	for _, v := range hr.Violations {
		charged[v.Rule]++
	}
	for _, v := range hr.Altered {
		altered[v.Rule]++
	}
	out := make([]RuleResult, len(hr.Report.Rules))
	for i, rr := range hr.Report.Rules {
		rr.Violated = charged[rr.ID]
		rr.Inconclusive += altered[rr.ID]
		rr.Checked = rr.Passed + rr.Violated + rr.Inconclusive
		out[i] = rr
	}
	return out
}

// Raced reports whether timing finding f, at view[at] (0-based), a packet
// h sent, comes less than reaction after a packet of the same RPC was
// delivered to h (see Params.Reaction): h's timer may have decided before
// that packet reached it.
func Raced(f Finding, view []Event, at int, h netip.Addr, reaction time.Duration) bool {
	if reaction <= 0 || !f.Timing() || f.RPC == nil || at < 0 || at >= len(view) {
		return false
	}
	act := &view[at]
	if act.Src != h {
		return false
	}
	for i := at - 1; i >= 0; i-- {
		e := &view[i]
		if act.Time.Sub(e.Time) >= reaction {
			return false
		}
		if e.Dst == h && e.Err == nil && e.ICMP == nil && KeyOf(e) == *f.RPC {
			return true
		}
	}
	return false
}
