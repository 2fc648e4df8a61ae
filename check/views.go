package check

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// viewsRead is readPortViews' result for a plan, kept for the plan's
// later checks of the same capture with the same reader options.
type viewsRead struct {
	done  bool
	ro    pcap.ReaderOptions
	views map[int][]spec.Event
	st    pcap.Stats
	err   error
}

// readViews returns readPortViews(path, ro, p), read once per plan (the
// rules take the views as they are: the checkers copy what they keep).
// Options that change what is read (a reorder window, say) read again;
// Progress, which only counts the frames and which checkFile clears
// after the first pass, does not.
func (p capturePlan) readViews(path string, ro pcap.ReaderOptions) (map[int][]spec.Event, pcap.Stats, error) {
	c := p.views
	if c == nil {
		return readPortViews(path, ro, p)
	}
	key := ro
	key.Progress = nil
	if !c.done || !reflect.DeepEqual(c.ro, key) {
		c.views, c.st, c.err = readPortViews(path, ro, p)
		c.done, c.ro = true, key
	}
	return c.views, c.st, c.err
}

// readPortViews reads the capture at path into one view per interface of
// plan.ports (events in file order, frame numbers as in the file, packet
// bytes copied); switch annotations are skipped. A damaged file returns
// the views read before the damage and a *pcap.DamagedError.
func readPortViews(path string, o pcap.ReaderOptions, plan capturePlan) (map[int][]spec.Event, pcap.Stats, error) {
	r, err := pcap.OpenPath(path, o)
	if err != nil {
		return nil, pcap.Stats{}, pcap.OpenError(path, err)
	}
	defer r.Close()
	// Each view is sized from the plan's count of its frames (a frame
	// with several DATA segments grows it): appending hundreds of
	// thousands of events to a slice grown on demand copied each about
	// four times (half the CPU of reading a 600,000-frame capture).
	views := map[int][]spec.Event{}
	for i, n := range plan.frames {
		views[i] = make([]spec.Event, 0, n)
	}
	var evs []spec.Event
	var own pcap.EventOwner
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return views, r.Stats(), &pcap.DamagedError{Path: path, Frames: r.Stats().Frames, Err: err}
		}
		if strings.HasPrefix(f.Comment, switchNotePrefix) {
			continue
		}
		if _, ok := plan.ports[f.Interface]; !ok {
			continue
		}
		evs = f.Events(evs[:0])
		for _, e := range evs {
			own.Own(&e)
			views[f.Interface] = append(views[f.Interface], e)
		}
	}
	if o.Reorder > 0 {
		// The views are in memory: timestamp order is a sort (stable:
		// equal timestamps keep the file's order).
		for _, v := range views {
			sort.SliceStable(v, func(a, b int) bool { return v[a].Time.Before(v[b].Time) })
		}
	}
	st := r.Stats()
	if st.Homa == 0 {
		return views, st, pcap.NoHomaError(path, st)
	}
	return views, st, nil
}

// mergeHostReports folds the host views of a multi-port capture into one
// report: rule counts summed over the views, the violations and downgrades
// each view charges to its own host, and the views' inconclusive findings
// (at most spec.MaxFindings per rule).
func mergeHostReports(hrs []spec.HostReport) *spec.Report {
	out := &spec.Report{CapturePoint: "ports", Violations: []spec.Finding{}}
	byRule := map[string]int{}
	downs := map[[2]string]*spec.DowngradeCount{}
	for i, hr := range hrs {
		rep := hr.Report
		out.Profile, out.Params = rep.Profile, rep.Params
		out.Events += rep.Events
		out.RPCs = max(out.RPCs, rep.RPCs)
		out.Answered = max(out.Answered, rep.Answered)
		if out.Merged == nil {
			out.Merged = rep.Merged
		}
		// A reload shows on its host's link and its peers': once.
		out.Reloads = append(out.Reloads, lacking(out.Reloads, rep.Reloads)...)
		for _, rr := range hr.ChargedRules() {
			i, ok := byRule[rr.ID]
			if !ok {
				i = len(out.Rules)
				byRule[rr.ID] = i
				out.Rules = append(out.Rules, spec.RuleResult{ID: rr.ID, Level: rr.Level, Rule: rr.Rule})
			}
			r := &out.Rules[i]
			r.Checked += rr.Checked
			r.Passed += rr.Passed
			r.Violated += rr.Violated
			r.Inconclusive += rr.Inconclusive
			r.MaxSlack = max(r.MaxSlack, rr.MaxSlack)
		}
		out.Violations = append(out.Violations, hr.Violations...)
		// (ChargedRules counts a view's Altered findings inconclusive.)
		out.Inconclusive = append(append(out.Inconclusive, rep.Inconclusive...), hr.Altered...)
		// Each view judges its own port's drops; the caller raises
		// CaptureDrops to the whole capture's. A port's view may show
		// its own loss (CaptureDropsShown), which the whole's count
		// lacks: without it the verdict was INCOMPLETE with no word on
		// drops, and check exited 0.
		out.CaptureDrops = max(out.CaptureDrops, rep.CaptureDrops)
		if out.CaptureDropsShown == "" {
			out.CaptureDropsShown = rep.CaptureDropsShown
		}
		out.CaptureDropLimit = max(out.CaptureDropLimit, rep.CaptureDropLimit)
		out.CaptureDropExcused += rep.CaptureDropExcused
		out.CaptureDropTooMany = out.CaptureDropTooMany || rep.CaptureDropTooMany
		// A view shows its host's port: one that saw both ways of a
		// pair judged whole exchanges.
		out.OneDirection = (i == 0 || out.OneDirection) && rep.OneDirection
		out.OneDirectionExcused += rep.OneDirectionExcused
		out.TimeGaps = append(out.TimeGaps, rep.TimeGaps...)
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
	// violations each view charges to its own host (HostReport.ChargedRules).
	for _, d := range downs {
		out.Downgrades = append(out.Downgrades, *d)
	}
	sort.Slice(out.Downgrades, func(i, j int) bool {
		a, b := out.Downgrades[i], out.Downgrades[j]
		return a.Rule < b.Rule || a.Rule == b.Rule && a.Cause < b.Cause
	})
	sort.SliceStable(out.Violations, func(i, j int) bool { return out.Violations[i].Frame < out.Violations[j].Frame })
	sort.SliceStable(out.Reloads, func(i, j int) bool { return out.Reloads[i].Frame < out.Reloads[j].Frame })
	// A silence of the whole capture is one in every view that has
	// packets on both sides of it: listed once, the first view's.
	sort.SliceStable(out.TimeGaps, func(i, j int) bool { return out.TimeGaps[i].From.Before(out.TimeGaps[j].From) })
	gaps := out.TimeGaps[:0]
	for _, g := range out.TimeGaps {
		if n := len(gaps); n == 0 || !g.From.Before(gaps[n-1].From.Add(gaps[n-1].Gap)) {
			gaps = append(gaps, g)
		}
	}
	out.TimeGaps = gaps
	sort.SliceStable(out.Inconclusive, func(i, j int) bool { return out.Inconclusive[i].Frame < out.Inconclusive[j].Frame })
	// The inconclusive findings are listed as they are counted: every
	// view's, whichever host they concern (a tester's view cannot decide
	// on an IUT's GRANT paid for by a packet it does not show; the IUT's
	// own view judges it again). Keeping only those charged to the view's
	// host listed none of a rule counted thousands of times. At most
	// spec.MaxFindings per rule, the first in frame order (a port's view
	// keeps its first ones).
	kept := map[string]int{}
	inc := out.Inconclusive[:0]
	for _, f := range out.Inconclusive {
		if kept[f.Rule] < spec.MaxFindings {
			kept[f.Rule]++
			inc = append(inc, f)
		}
	}
	clear(out.Inconclusive[len(inc):])
	out.Inconclusive = inc
	return out
}

// excuseMergedViews makes every violation of rep, the host views of a
// multi-port capture folded by mergeHostReports, inconclusive
// (spec.CauseMerged) when one view showed two instances of its host
// interleaved (rep.Merged), and zeroes the hosts' counts: the capture
// then merges two on every port, though the other views need not show
// it, and the warning says every violation is inconclusive (as one view
// of the capture makes them), where the other views' violations stood.
func excuseMergedViews(rep *spec.Report, hosts []HostResult) {
	m := rep.Merged
	if m == nil || len(rep.Violations) == 0 {
		return
	}
	moved := rep.Violations
	rep.Violations = []spec.Finding{}
	for i := range moved {
		moved[i].Why = fmt.Sprintf("%s (%s: frame %d shows two instances of %s interleaved)", moved[i].Why, spec.CauseMerged, m.Frame, m.Host)
	}
	fileInconclusive(rep, spec.CauseMerged, moved, false)
	for i := range hosts {
		hosts[i].Violations = 0
	}
}

// sharedRestarts returns the sections every host view of hrs must
// begin: the timestamp jumps of the whole capture (spec.TimeJumps), then
// the host restarts the views found (spec.SectionStart with Restarted
// set), one per restart: the same restart seen on two links (its
// host's and a peer's) is one, the earliest sighting, when the two lie
// within spec.TimeJump in the same stretch of time between jumps (a
// host restarts again only after a silence longer than its peers'
// timeout). Each restart's From is the frame of the last jump before it
// (times order the views' events only between jumps); the result is in
// the order a view reaches them (Judge.Restarts).
func sharedRestarts(hrs []spec.HostReport, jumps []spec.SectionStart) []spec.SectionStart {
	var all []spec.SectionStart
	for _, hr := range hrs {
		if hr.Report == nil {
			continue
		}
		for _, s := range withFrom(hr.Report.Sections, jumps) {
			if s.Restarted.IsValid() { // (jumps has the whole capture's jumps)
				all = append(all, s)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		return all[i].From < all[j].From || all[i].From == all[j].From && all[i].At.Before(all[j].At)
	})
	out := append([]spec.SectionStart(nil), jumps...)
	for _, s := range all {
		if len(lacking(out, []spec.SectionStart{s})) == 0 {
			continue
		}
		out = append(out, s)
	}
	// A jump before the restarts of its stretch.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.From != b.From {
			return a.From < b.From
		}
		return !a.Restarted.IsValid() && b.Restarted.IsValid()
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// seenJumps returns the timestamp jumps of the whole capture
// (spec.TimeJumps of views) that a host view of hrs saw too: a section
// of the same kind (a jump back, or the return to the time before it)
// begun by the view itself at or after the jump's frame and before the
// capture's next one. A record moved in the file, or captures joined
// end to end, show in the view of the record's port, or in every view;
// interfaces stamped by clocks that disagree make the file's order jump
// back and forth between them, which no view shows, and each port's
// view, judged on its own clock, stays whole. None (and no pass over
// the views) when no view began such a section.
func seenJumps(hrs []spec.HostReport, views [][]spec.Event) []spec.SectionStart {
	var own []spec.SectionStart
	for _, hr := range hrs {
		if hr.Report == nil {
			continue
		}
		for _, s := range hr.Report.Sections {
			if !s.Restarted.IsValid() {
				own = append(own, s)
			}
		}
	}
	if len(own) == 0 {
		return nil
	}
	all := spec.TimeJumps(views...)
	var out []spec.SectionStart
	for i, j := range all {
		next := math.MaxInt
		if i+1 < len(all) {
			next = all[i+1].Frame
		}
		for _, s := range own {
			if s.Frame >= j.Frame && s.Frame < next && (s.Back > 0) == (j.Back > 0) {
				out = append(out, j)
				break
			}
		}
	}
	return out
}

// withFrom returns a copy of secs, a view's sections, each with From
// the frame of the last of jumps at or before it (0 if none): the
// stretch of time it lies in.
func withFrom(secs, jumps []spec.SectionStart) []spec.SectionStart {
	out := make([]spec.SectionStart, len(secs))
	for i, s := range secs {
		s.From = 0
		for _, j := range jumps {
			if j.Frame <= s.Frame {
				s.From = j.Frame
			}
		}
		out[i] = s
	}
	return out
}

// lacking returns the restarts of shared (not its jumps) that have no
// counterpart in secs (the same host, in the same stretch of time
// between jumps, within spec.TimeJump).
func lacking(secs, shared []spec.SectionStart) []spec.SectionStart {
	var out []spec.SectionStart
	for _, r := range shared {
		if !r.Restarted.IsValid() {
			continue
		}
		found := false
		for _, s := range secs {
			if s.Restarted == r.Restarted && s.From == r.From && max(s.At.Sub(r.At), r.At.Sub(s.At)) <= spec.TimeJump {
				found = true
				break
			}
		}
		if !found {
			out = append(out, r)
		}
	}
	return out
}

// wholeGaps keeps the silences of one port's view (spec.TimeGap) over
// which the whole capture, every view, was silent longer than bound too
// (the protocol's timeout: spec.Params.LateTicks of timeout_ticks), each
// then named by the frames around that whole silence. A host's link
// silent while others carry packets is the host's own silence, which the
// rules judge.
func wholeGaps(gaps []spec.TimeGap, views map[int][]spec.Event, bound time.Duration) []spec.TimeGap {
	if len(gaps) == 0 {
		return gaps
	}
	type seen struct {
		t     time.Time
		frame int
	}
	var all []seen
	for _, v := range views {
		for j := range v {
			all = append(all, seen{v[j].Time, v[j].Frame})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].t.Before(all[j].t) || all[i].t.Equal(all[j].t) && all[i].frame < all[j].frame
	}) // frames break ties: one output every run
	out := gaps[:0]
	for _, g := range gaps {
		end := g.From.Add(g.Gap)
		i := sort.Search(len(all), func(i int) bool { return !all[i].t.Before(g.From) })
		for ; i+1 < len(all) && !all[i+1].t.After(end); i++ {
			if d := all[i+1].t.Sub(all[i].t); d > bound {
				out = append(out, g.Within(all[i].frame, all[i+1].frame, all[i].t, d))
				break
			}
		}
	}
	return out
}
