// Package check is the offline check of capture files (homatest check):
// it reads a capture, decides where it was taken (the capture point,
// inferred from its frames or as the caller says), picks the profile from
// its wire format and the parameters from the run's sidecar file, judges
// it with spec.Judge (each host on its own link for a capture of switch
// ports), excuses timing findings a run's measured stalls explain, and
// returns one report per file with its verdict. It prints nothing: the
// CLI renders the reports.
package check

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Options say how to check captures (homatest check's flags).
type Options struct {
	// Profile is a parameter profile's name, or "auto": the one of the
	// capture's wire format (of Wire when set).
	Profile string
	// Params override parameters, NAME=VALUE each, after the run's
	// sidecar file (capture.pcapng.params).
	Params []string
	// Rules are rule ID globs, comma-separated (empty: all); Level the
	// lowest level checked.
	Rules string
	Level spec.Level
	// Wire forces a wire format (wire.VersionAuto: the profile's).
	Wire wire.Version
	// CapturePoint is auto, switch, host:ADDR, sent, delivered or ports.
	CapturePoint string
	// Strict fails a check on SHOULD violations too.
	Strict bool
	// InferParams infers the parameters the capture implies even when
	// nothing is violated.
	InferParams bool
	// CaptureDrops is the number of packets the capture dropped itself
	// (--capture-drops: tcpdump's "N packets dropped by kernel", which a
	// classic pcap cannot hold); the larger of it and what a pcapng
	// declares (pcap.Stats.CaptureDrops) is used (spec.Judge.CaptureDrops).
	CaptureDrops uint64
	// Context, when set, ends the check once it has ended: every read of
	// a capture stops within a batch of frames (pcap.ReaderOptions.Context)
	// and the report is an error; nil never ends.
	Context context.Context
	// Progress, when set, counts the frames read, over every file, each
	// file's frames once: its first pass through the rules
	// (pcap.ReaderOptions.Progress; a second pass, to reorder, re-plan or
	// try inferred parameters, is not counted again), for a progress
	// display; safe to read while the check runs.
	Progress *atomic.Int64
}

// Validate checks o's profile, parameters and rule selection before any
// capture is read, so that a typo fails at once rather than once per
// file. The parameters are checked against the linux profile; each error
// names the flag (--profile, --param, --rules) and what it wants.
func (o Options) Validate() error {
	if o.Profile != "auto" {
		if _, err := spec.LookupProfile(o.Profile); err != nil {
			names := []string{"auto"}
			for _, p := range spec.Profiles() {
				names = append(names, p.Name)
			}
			return fmt.Errorf("--profile: unknown profile %q: want one of %s", o.Profile, strings.Join(names, ", "))
		}
	}
	switch o.CapturePoint {
	case "", "auto", "ports":
	default:
		// Checked once here, not per file: a bad value is a usage error.
		if _, err := spec.ParseCapturePoint(o.CapturePoint); err != nil {
			return fmt.Errorf("--capture-point: %w", err)
		}
	}
	probe := spec.Profiles()[0].Params
	seen := map[string]bool{}
	for _, kv := range o.Params {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--param %q: want NAME=VALUE", kv)
		}
		// tick_ns and link_bps are aliases of tick and link_mbps: both
		// given is the same parameter twice.
		if canon := spec.CanonicalParam(name); seen[canon] {
			return fmt.Errorf("--param %q: %s is given twice (tick_ns is tick, link_bps is link_mbps); give each parameter once", kv, canon)
		} else {
			seen[canon] = true
		}
		if err := probe.Set(name, val); err != nil {
			return fmt.Errorf("--param: %w", err)
		}
	}
	if _, err := spec.SelectSome(spec.Rules(), o.Rules, o.Level, ""); err != nil {
		return fmt.Errorf("--rules: %w", err)
	}
	return nil
}

// FileReport is the result of checking one file (Error set if it could
// not be checked).
type FileReport struct {
	File    string            `json:"file"`
	Error   string            `json:"error,omitempty"`
	Profile string            `json:"profile,omitempty"`
	Params  map[string]string `json:"params,omitempty"`
	// CapturePoint is where the capture is taken to have been made
	// (switch, host:ADDR, sent, delivered or ports) and CapturePointWhy
	// why (inferred, or as the flag said).
	CapturePoint    string `json:"capture_point,omitempty"`
	CapturePointWhy string `json:"capture_point_why,omitempty"`
	// Verdict is pass, warn (SHOULD violations only, not --strict), fail,
	// incomplete (a damaged capture without a failure before the damage),
	// or error (the file could not be checked: Error says why).
	Verdict string `json:"verdict,omitempty"`
	// ParamsFile names the file next to the capture whose parameters were
	// applied before --param (homatest run writes capture.pcapng.params).
	ParamsFile string `json:"params_file,omitempty"`
	// ParamsHint, when the check inferred parameters (Inferred) of a
	// capture with no parameters file beside it, says so in one line: the
	// capture was judged with the profile's values and --param, and a
	// capture a homatest run wrote has lost its file (a copy cut with
	// editcap, or renamed, does not carry it).
	ParamsHint string `json:"params_hint,omitempty"`
	// ProfileOverridden, when the profile was named (Options.Profile not
	// auto) and ParamsFile names another wire format than that profile's,
	// says so in one line: each value the file set otherwise, with the
	// profile's, and that the file's were used. homatest check prints it on standard
	// error. Empty otherwise.
	ProfileOverridden string `json:"profile_overridden,omitempty"`
	// Must and Should count the violations that count (not charged to a
	// tester); Expected the findings charged to a tester.
	Must     int `json:"must_violations"`
	Should   int `json:"should_violations"`
	Expected int `json:"expected_findings,omitempty"`
	// StallsFile names the file of measured stalls next to the capture
	// (homatest run and scenario run write one); StallExcused counts the
	// timing findings one of them explained, made inconclusive.
	StallsFile   string `json:"stalls_file,omitempty"`
	StallExcused int    `json:"stall_excused,omitempty"`
	// StallsHint, when timing violations remain, says the stalls that
	// could excuse them are not there: a run's capture whose .params
	// file is beside it but not its .stalls.json (a copy or rename
	// carries neither), or violations outside the span the stalls file
	// covers (frames retimed with editcap -t, or another run's file).
	StallsHint string `json:"stalls_hint,omitempty"`
	// Testers are the hosts whose frames carry a tester's mark: findings
	// charged to them are the tester's, not an implementation's.
	Testers []string `json:"testers,omitempty"`
	testers map[netip.Addr]bool
	// NotApplicable lists the rules --rules selected that do not apply to
	// the profile (none without --rules: the profile's own rule set is no
	// selection of the user's).
	NotApplicable []string     `json:"not_applicable,omitempty"`
	Report        *spec.Report `json:"report,omitempty"`
	// Hosts are the per-host results of a multi-port capture.
	Hosts []HostResult `json:"hosts,omitempty"`
	// Inferred are the parameters the capture implies (with
	// --infer-params, or when violations made check look).
	Inferred []InferredParam `json:"inferred_params,omitempty"`
	// WithInferred is the check rerun with every inferred value that
	// differs applied at once (when two or more differ and the check found
	// violations): the flags, and the violations left under them.
	WithInferred *InferredRun `json:"with_inferred,omitempty"`
	Stats        *pcap.Stats  `json:"capture,omitempty"`
	// CaptureComment is the capture's first pcapng section-header comment
	// (a failed spec's capture says why it failed, homatest's annotated
	// captures what wrote them); "" if none. CaptureComments are all of
	// them in file order (pcap.SectionComments: a file of several
	// sections, or a section with several comments, has more than one),
	// the first being CaptureComment.
	CaptureComment  string   `json:"capture_comment,omitempty"`
	CaptureComments []string `json:"capture_comments,omitempty"`
	// CaptureDropsFrom says where the drops of Report.CaptureDrops come
	// from: "interface statistics" (the pcapng declares them),
	// "--capture-drops", or "the capture's own evidence" (bytes a receiver
	// showed it held that no captured DATA carried:
	// Report.CaptureDropsShown); CaptureDropsHint is what they mean for the
	// report and what to do about them, one line ("" without drops).
	// When a finding was excused as perhaps their doing
	// (Report.CaptureDropExcused), the verdict is INCOMPLETE (exit 2)
	// unless a MUST violation makes it FAIL: it may be a violation.
	CaptureDropsFrom string `json:"capture_drops_from,omitempty"`
	CaptureDropsHint string `json:"capture_drops_hint,omitempty"`
	// SnapHint, when the snap length cut the Homa header of some frames
	// (pcap.Stats.SnapCut, SnapLen), says so in one line with how to
	// re-capture. Their packets are unseen, judged as packets the capture
	// dropped (Report.CaptureDrops counts them too: see CaptureDropsHint),
	// except by the rules that need only the common and IP headers, which
	// judge the frames that kept their common header (SnapPartial); ACKs
	// that lost only unused acks slots are judged whole (SnapComplete).
	// When the unseen frames outnumber the others, or a finding was
	// excused because an unseen one may explain it (snapShort), the
	// verdict is INCOMPLETE (exit 2) unless a MUST violation makes it
	// FAIL: the capture is not evidence enough to pass.
	SnapHint string `json:"snap_hint,omitempty"`
	// FrameHint, when the reader read damaged frames all the same
	// (pcap.Stats.FrameDamage: a Homa frame whose IP length exceeds the
	// frame the snap length did not cut, a frame captured longer than it
	// was), says so in one line, in decode's words; their packets are
	// judged as the frames hold them. The counts are in Stats.
	FrameHint string `json:"frame_hint,omitempty"`
	// MergedHint, when the checker found two module instances of a host
	// interleaved (spec.Report.Merged: two captures merged with
	// overlapping times), says so in one line with how to split them.
	// Every violation is then inconclusive (spec.CauseMerged), and the
	// verdict is INCOMPLETE (exit 2): only a check of each capture alone
	// can tell.
	MergedHint string `json:"merged_hint,omitempty"`
	// BothDirections is set when MergedHint's cause is not two captures
	// but the point given (sent, delivered, switch, host:ADDR) for a file
	// whose frames carry both directions in epb_flags: each packet
	// counted twice.
	BothDirections bool `json:"both_directions,omitempty"`
	// SameInstantHint, when a large share of the Homa frames repeat an
	// earlier frame byte for byte at the same timestamp and capture point
	// (pcap.Stats.SameInstant; sameInstantShare), says in one line that
	// the capture looks doubled and how to undo it (editcap -d, or a
	// capture of one interface). The capture is then judged without
	// those copies (sameInstantDoubled), as editcap -d leaves it, at every
	// capture point alike; the violations found only with them are
	// inconclusive, each with a hint (spec.Finding.Hint), for a host that
	// sent its packets twice at once would break the rules all the same.
	SameInstantHint string `json:"same_instant_hint,omitempty"`
	// DoubledExcused counts the violations found only with those copies,
	// made inconclusive (spec.CauseDoubled): the verdict is then
	// INCOMPLETE (exit 2) unless a MUST violation fails it.
	DoubledExcused int `json:"doubled_excused,omitempty"`
	// ReloadHint, when a host shows a fresh module's signs after a
	// silence too short to judge it afresh (spec.Report.Reloads), says
	// so in one line; each violation at or after it that concerns that
	// host (charged to it, its packet, its RPC) gets a hint naming the
	// reload as its likely cause. The violations stand.
	ReloadHint string `json:"reload_hint,omitempty"`
	// OneEndHint, when the capture was taken for one end of every host's
	// link by its shape (spec.Report.OneEnd) and that made violations
	// inconclusive (spec.CauseOneEnd), says so, how many, and what to
	// check instead, one line; the verdict is then INCOMPLETE (exit 2)
	// unless a MUST violation fails it.
	OneEndHint string `json:"one_end_hint,omitempty"`
	// NothingJudged, when no RPC of the capture was heard from both sides
	// (spec.Report.Answered is 0: a slice of a few frames, one direction
	// of a link), says so in one line: the rules then judged single
	// packets at most, so without a failure the verdict is INCOMPLETE
	// (exit 2), not PASS. When the capture shows one direction only
	// (spec.Report.OneDirection) it says so and how many violations that
	// rest on the other side's packets were made inconclusive
	// (spec.CauseOneDirection): only a packet's own fields can fail it.
	NothingJudged string `json:"nothing_judged,omitempty"`
	// WireMismatch says that packets were decoded in a wire format (the
	// profile's, or --wire's) whose IP protocol is not theirs: the
	// findings may be the decoder's misreading, not the hosts' faults.
	// Empty when every packet was read in its own protocol's format.
	WireMismatch string `json:"wire_mismatch,omitempty"`
	// TimeOrderHint, when some frames' timestamps lie before those of
	// frames ahead of them in the file (pcap.Stats.Backwards: tcpdump on
	// several CPUs, a mirror port, a merged file), says how many, the
	// first and how far back, and how they were judged: Reordered in
	// timestamp order when none lies more than pcap.MaxReorder back (a
	// second pass with pcap.ReaderOptions.Reorder; findings keep the
	// file's frame numbers), else in file order, where findings near them
	// may rest on the file's order.
	TimeOrderHint string `json:"time_order_hint,omitempty"`
	Reordered     bool   `json:"time_reordered,omitempty"`
	// TimeOrderExcused counts the violations found before a record whose
	// timestamp lies more than spec.TimeJump back, at a time after its
	// (where the file had not yet shown it), made inconclusive
	// (spec.CauseTimeOrder; the hint says so): the verdict is then
	// INCOMPLETE (exit 2) unless a MUST violation fails it.
	TimeOrderExcused int `json:"time_order_excused,omitempty"`
	// NoTimeHint, when every Homa frame carries one and the same
	// timestamp (pcap.Stats.TimeVaries unset: a writer or an editor
	// stamped them alike), says so: rules that judge time had nothing to
	// weigh, their violations are inconclusive (NoTimeExcused of them,
	// spec.CauseNoTime) and their passes say nothing, so the verdict is
	// INCOMPLETE (exit 2) unless a MUST violation fails it.
	NoTimeHint    string `json:"no_time_hint,omitempty"`
	NoTimeExcused int    `json:"no_time_excused,omitempty"`
	// Damaged is set when the file ends in a damaged or cut-off frame: the
	// report and verdict cover the frames before it (a capture cut there,
	// as if it had stopped), and the check still fails (exit 2), since
	// what came after is unknown.
	Damaged string `json:"damaged,omitempty"`
	// onePort is set for a capture of switch ports that holds one port
	// (explore's capture of the IUT's link): every packet in it once,
	// as sent or as delivered (HomaCount).
	onePort bool
}

// HomaCount says in words how many Homa frames the file held
// (Stats.Homa): "N Homa packets", or, for a capture of switch ports
// (CapturePoint "ports"), which holds a packet once on its sender's port
// as sent and once on its receiver's as delivered, "N Homa frames (a
// packet sent and delivered is two)"; a capture of one port holds each
// packet once (its other end has no port in it: explore's capture of the
// IUT's link), "N Homa packets". check's text and HTML reports both say
// it so.
func (fr *FileReport) HomaCount() string {
	n := 0
	if fr.Stats != nil {
		n = fr.Stats.Homa
	}
	if fr.CapturePoint == "ports" && !fr.onePort {
		return plural.Of(n, "Homa frame", "Homa frames") + " (a packet sent and delivered is two)"
	}
	return plural.Of(n, "Homa packet", "Homa packets")
}

// HostResult is one host's view of a multi-port capture: Violations are
// the violations charged to the host (those charged to a tester included,
// those a measured stall excused not), Excused the timing findings its
// view excused as reactions to the other side (spec.HostReport.Excused),
// StallExcused the findings charged to it that a stall the run measured
// made inconclusive (part of FileReport.StallExcused).
type HostResult struct {
	Host         string `json:"host"`
	Interface    string `json:"interface"`
	Violations   int    `json:"violations"`
	Excused      int    `json:"excused,omitempty"`
	StallExcused int    `json:"stall_excused,omitempty"`
}

// InferredRun is a check rerun with inferred parameters: Params the
// --param flags (NAME=VALUE), Must and Should the violations left.
type InferredRun struct {
	Params []string `json:"params"`
	Must   int      `json:"must_violations"`
	Should int      `json:"should_violations"`
}

// InferredParam is a parameter value the capture implies, next to the
// profile's.
type InferredParam struct {
	spec.Inferred
	Profile string `json:"profile_value"`
	Differs bool   `json:"differs"`
}

// profileOverridden is FileReport.ProfileOverridden of a capture whose
// parameters file sideName set side (NAME=VALUE lines) over profile's
// values prof, giving got: "" unless the file names another wire format
// than the profile's (the profile the user chose is then not the one
// judged with), else the wire format and the other values it changed,
// those --param (given) sets again left out. A file that keeps the
// profile's format only carries the run's own conditions (link rate,
// slack), which the report's "parameters: the run's" line says.
func profileOverridden(profile, sideName string, side []string, prof, got *spec.Params, given []string) string {
	base, now := paramMap(prof), paramMap(got)
	again := map[string]bool{}
	for _, kv := range given {
		name, _, _ := strings.Cut(kv, "=")
		again[strings.TrimSpace(name)] = true
	}
	if again["wire"] || base["wire"] == now["wire"] {
		return ""
	}
	diffs := []string{fmt.Sprintf("wire=%s (profile: %s)", now["wire"], base["wire"])}
	seen := map[string]bool{"wire": true}
	for _, kv := range side {
		name, _, _ := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if seen[name] || again[name] || base[name] == now[name] {
			continue
		}
		seen[name] = true
		diffs = append(diffs, fmt.Sprintf("%s=%s (profile: %s)", name, now[name], base[name]))
	}
	n := len(diffs)
	if n > 6 {
		diffs = append(diffs[:6], fmt.Sprintf("and %d more", n-6))
	}
	return fmt.Sprintf("--profile %s, but %s beside the capture names another wire format and sets %s otherwise, and the file's were used: %s; to judge with the profile's values, move the file away or give them with --param",
		profile, sideName, plural.Of(n, "value", "values"), strings.Join(diffs, ", "))
}

func paramMap(p *spec.Params) map[string]string {
	m := map[string]string{}
	for _, n := range spec.ParamNames() {
		m[n], _ = p.Get(n)
	}
	return m
}

// Files checks the captures on up to GOMAXPROCS cores at once (each
// file streams through its own checker) and returns their reports in the
// order of files.
func Files(o Options, files []string) []FileReport {
	reports := make([]FileReport, len(files))
	parallel(len(files), func(i int) { reports[i] = File(o, files[i]) })
	return reports
}

// parallel calls fn(0) .. fn(n-1) on up to GOMAXPROCS goroutines at once
// and returns when every call has.
func parallel(n int, fn func(int)) {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	g.Wait()
}

// File checks one capture; errors are returned in the report (Error,
// with Verdict "error").
func File(o Options, file string) FileReport {
	fr := checkFile(o, file)
	if fr.Error != "" {
		fr.Verdict = "error" // every entry has a verdict
	}
	return fr
}

// checkFile is File without the error's verdict.
func checkFile(o Options, file string) FileReport {
	lvl, forced := o.Level, o.Wire
	fr := FileReport{File: file}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	detected, shift, err := pcap.PrescanPath(ctx, file)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	fr.CaptureComments, _ = pcap.SectionCommentsPath(ctx, file) // PrescanPath opened it
	if len(fr.CaptureComments) > 0 {
		fr.CaptureComment = fr.CaptureComments[0]
	}
	// The plan needs the whole capture's layout, but one pass costs about
	// as much CPU as a seventh of the check: plan from the first frames,
	// and when that plan reads the capture as one view, let the check's
	// own pass count the layout and confirm the plan (re-checking in the
	// rare case the whole capture says otherwise).
	lay, whole, err := readLayout(ctx, file, layoutPrefix)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	plan, err := planCapture(o.CapturePoint, lay)
	// A capture point given by flag that the first frames allow is the
	// plan (its only check, that the host has packets, holds on more
	// frames); auto's one-view plan is a guess.
	auto := o.CapturePoint == "auto" || o.CapturePoint == ""
	settled := whole || err == nil && plan.mode == oneView && !auto
	guessed := !settled && err == nil && plan.mode == oneView
	if !settled && !guessed {
		if lay, _, err = readLayout(ctx, file, -1); err != nil {
			fr.Error = err.Error()
			return fr
		}
		plan, err = planCapture(o.CapturePoint, lay)
	}
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	profile := o.Profile
	if profile == "auto" {
		profile = detected
		if forced != wire.VersionAuto {
			profile = spec.ProfileForWire(forced)
		}
	}
	prof, _ := spec.LookupProfile(profile)
	params := prof.Params
	side, sideName, err := readParamsFile(file)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	// Every value first, then the set as a whole: one at a time, a
	// .params file's max_sched_prio=3 was checked against the profile's
	// num_priorities 1 before its num_priorities=8 came.
	for _, kv := range side {
		name, val, _ := strings.Cut(kv, "=")
		if err := params.Assign(name, val); err != nil {
			fr.Error = fmt.Sprintf("%s: %v", sideName, err)
			return fr
		}
	}
	if sideName != "" && len(side) > 0 {
		fr.ParamsFile = sideName
		if o.Profile != "auto" && o.Profile != "" {
			fr.ProfileOverridden = profileOverridden(profile, sideName, side, &prof.Params, &params, o.Params)
		}
	}
	for _, kv := range o.Params {
		name, val, _ := strings.Cut(kv, "=")
		if err := params.Assign(name, val); err != nil {
			fr.Error = "--param: " + err.Error()
			return fr
		}
	}
	if err := params.Validate(); err != nil {
		from := "--param"
		switch {
		case fr.ParamsFile != "" && len(o.Params) > 0:
			from = fr.ParamsFile + " and --param"
		case fr.ParamsFile != "":
			from = fr.ParamsFile
		case len(o.Params) == 0:
			from = "profile " + profile
		}
		fr.Error = fmt.Sprintf("%s: %v", from, err)
		return fr
	}
	all, _ := spec.Select(spec.Rules(), o.Rules, lvl, "")
	rules, _ := spec.Select(spec.Rules(), o.Rules, lvl, profile)
	if o.Rules != "" && len(rules) < len(all) { // a note on the user's selection, not on the defaults
		ok := map[string]bool{}
		for _, r := range rules {
			ok[r.ID] = true
		}
		for _, r := range all {
			if !ok[r.ID] {
				fr.NotApplicable = append(fr.NotApplicable, r.ID)
			}
		}
	}
	v := forced
	if v == wire.VersionAuto {
		v = params.Wire // decode as the profile's format: unmarked packets then break WIRE-004, not the decoder
	}
	ro := pcap.ReaderOptions{Version: v, IPv6HostShifts: shift, IPv6UnknownShift: params.IPv6PrioShift, ICMP: true, Progress: o.Progress, Context: ctx}
	spans, stallsName, err := readStallsFile(file)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	judge := spec.Judge{Profile: profile, Params: params, Rules: rules, CaptureDrops: o.CaptureDrops, OneDirection: true}
	// A finding a measured stall explains is the stall's, at whatever
	// point auto took the capture for (excuseStalls files it), as it is
	// with the point given: not one end's.
	if len(spans) > 0 {
		judge.OneEndSpare = func(f *spec.Finding) bool { return stallExplains(*f, spans) }
	}
	run, err := runGuessed(file, ro, &plan, guessed, o.CapturePoint, judge)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	ro.Progress = nil // the file's frames are counted once (Options.Progress)
	if st := run.st; st.Backwards > 0 && st.BackwardsMax <= pcap.MaxReorder {
		// Frames a little out of timestamp order (tcpdump on several
		// CPUs): judge them in the order they were captured, as the hosts
		// sent and got them.
		ro.Reorder = st.BackwardsMax
		whole := plan
		whole.count = nil
		if run, err = runRules(file, ro, whole, judge); err != nil {
			fr.Error = err.Error()
			return fr
		}
	}
	first := run.st
	var doubled []spec.Finding
	if sameInstantDoubled(first) {
		// The capture looks doubled: judge it as editcap -d would leave
		// it (every check below reads it so), and what only the copies
		// made is inconclusive, not a violation.
		ro.SkipSameInstant = true
		whole := plan
		whole.count = nil
		alt, err := runRules(file, ro, whole, judge)
		if err != nil {
			fr.Error = err.Error()
			return fr
		}
		doubled = goneWithout(run.rep, alt.rep)
		run = alt
	}
	if run.damaged != nil {
		fr.Damaged = run.damaged.Error() // the report covers the frames before it
	}
	rep, st, inf := run.rep, run.st, run.inf
	if err := mixedFormats(file, o, v, st); err != nil {
		fr.Error = err.Error()
		return fr
	}
	if o.Profile == "auto" && forced == wire.VersionAuto && v == wire.Version2024 {
		// The capture's own layout chose 2024 (pcap.DetectFormat): over IP
		// protocol 146 that is HomaModule main between f7e4717 and
		// be127d8, not a format forced on the wrong capture.
		st.VersionMismatch = 0
	}
	if n := st.VersionMismatch; n > 0 {
		fr.WireMismatch = fmt.Sprintf("%d of %d Homa packets carry IP protocol %d, not the %s wire format's %d (profile %s), which they were decoded as: their findings may be the decoder's misreading, not faults; --profile auto (and no --wire) reads a capture in its own format",
			n, st.Homa, otherProto(v), v, v.IPProtocol(), profile)
	}
	fr.Profile, fr.Params, fr.Report, fr.Stats, fr.Hosts = profile, paramMap(&params), rep, &st, run.hosts
	fr.testers = run.testers
	rep.TimeGaps = slices.DeleteFunc(rep.TimeGaps, func(g spec.TimeGap) bool { return testersOnly(g.Waiting(), run.testers) })
	for a := range run.testers {
		fr.Testers = append(fr.Testers, a.String())
	}
	sort.Strings(fr.Testers)
	fr.CapturePoint, fr.CapturePointWhy = plan.String(), plan.why
	fr.onePort = plan.mode == portViews && len(plan.ports) == 1
	fr.CaptureDropsFrom, fr.CaptureDropsHint = dropsHint(rep, st, o.CaptureDrops)
	fr.SnapHint = snapHint(st, unseenExcused(rep), "no rule could judge the capture")
	if notes := st.FrameDamage(); len(notes) > 0 {
		fr.FrameHint = "damaged frames, judged as they hold their packets: " + strings.Join(notes, "; ")
	}
	fr.TimeOrderHint, fr.Reordered = timeOrderHint(st, rep), ro.Reorder > 0
	fr.TimeOrderExcused = timeOrderExcused(rep)
	fr.NoTimeExcused, fr.NoTimeHint = excuseNoTime(rep, st)
	fr.StallsFile = stallsName
	excused := excuseStalls(rep, spans)
	fr.StallExcused = len(excused)
	fr.StallsHint = stallsHint(file, fr.ParamsFile, stallsName, rep, spans)
	// A host's line counts what the summary counts: the findings a stall
	// excused are no longer its violations.
	for i := range fr.Hosts {
		for _, f := range excused {
			if f.ChargedTo.String() == fr.Hosts[i].Host {
				fr.Hosts[i].Violations--
				fr.Hosts[i].StallExcused++
			}
		}
	}
	if o.InferParams || rep.Violated() {
		fr.Inferred = compareInferred(inf, params, o.Params)
		if rep.Violated() {
			fr.WithInferred = hintFindings(file, ro, plan, judge, rep, fr.Inferred)
		}
		if fr.ParamsFile == "" && len(fr.Inferred) > 0 {
			given := ""
			if len(o.Params) > 0 {
				given = " and the --param given"
			}
			fr.ParamsHint = fmt.Sprintf("no %s beside the capture, so it was judged with profile %s's values%s; a homatest run writes one beside each capture it judged (and a .stalls.json of the stalls it measured, which excuse timing findings), and a copy cut with editcap or renamed does not carry them: copy the run's .params and .stalls.json files to this name, or pass its values with --param",
				sideName, profile, given)
		}
	}
	gapParamsHint(rep, sideName, fr.ParamsFile != "", o.Params, params, func() []InferredParam {
		if fr.Inferred != nil {
			return fr.Inferred
		}
		return compareInferred(inf, params, o.Params)
	})
	fr.SameInstantHint, fr.DoubledExcused = sameInstantHint(first, doubled, lay.dirIn+lay.dirOut > 0), len(doubled)
	fr.ReloadHint = reloadHints(rep)
	for i := range rep.Violations {
		switch f := &rep.Violations[i]; {
		case fr.TesterCharged(f):
			fr.Expected++
		case f.Level == spec.Must:
			fr.Must++
		default:
			fr.Should++
		}
	}
	if m := rep.Merged; m != nil && plan.bothDirs {
		// Not two captures: the point given judges every packet twice,
		// once per port (see the capture point's WARNING).
		fr.BothDirections = true
		fr.MergedHint = fmt.Sprintf("what looks like two instances of a host merged is every packet counted twice: the frames carry both directions per interface (epb_flags) and --capture-point %s judged them as one view, each packet once on its sender's port and once on its receiver's (%s); every violation is inconclusive: judge it as the capture point's WARNING says", fr.CapturePoint, m.Why)
	} else if m != nil {
		fr.MergedHint = fmt.Sprintf("this capture looks like two captures merged with overlapping times (mergecap of captures whose times overlap, with or without -a, or two testbeds with the same addresses): %s; what a rule relates across packets may pair the two, so every violation is inconclusive: check the original captures apart, or split this one by time (editcap -A/-B) or by host", m.Why)
	}
	if rep.OneEndExcused > 0 {
		fr.OneEndHint = fmt.Sprintf("%s: every frame has one direction in epb_flags, so this is one end of every host's link (%s), each packet stamped at its sender's end or at its receiver's only; a run judges such a file with its other end, each host on its own link, and alone it cannot tell what a host had received when it sent: %s that rest on that are inconclusive (%s; a stall the run measured files its own); check the run's capture.pcapng (both ends of every port), or, if you know the file was taken there, give --capture-point %s: judged at the same point, these findings then count as violations, where auto, which took the point from the frames' directions only, counts them inconclusive",
			file, fr.CapturePoint, plural.Of(rep.OneEndExcused, "violation", "violations"), spec.CauseOneEnd, fr.CapturePoint)
	}
	if fr.CapturePoint == "none" {
		// A file of switch notes is judged by no rule, by design; nothing
		// judged is not a pass (a trial's switch-notes.pcapng said PASS).
		fr.NothingJudged = fr.File + ": no rule was judged: " + fr.CapturePointWhy
	} else if rep.Answered == 0 && fr.Damaged != "" {
		// A file cut short may end before the other side's first packet:
		// that says nothing of the direction it was captured in.
		fr.NothingJudged = fmt.Sprintf("%s heard from both sides, so no exchange was judged: the file ends early; check the whole capture",
			noRPCHeard(rep.RPCs, plural.Of(st.Homa, "Homa packet", "Homa packets")+" before the damage"))
	} else if rep.Answered == 0 {
		fr.NothingJudged = fmt.Sprintf("%s heard from both sides (a packet naming it, DATA or control, from its client and one from its server), so no exchange was judged: the capture is too short or shows one direction only; capture a longer stretch of both directions",
			noRPCHeard(rep.RPCs, plural.Of(st.Homa, "Homa packet", "Homa packets")))
		if n := st.SnapUnseen(); n > 0 && !rep.OneDirection {
			// The cut frames, not the capture's length or direction, may
			// hide every answer: say so, not "too short".
			fr.NothingJudged = fmt.Sprintf("%s heard from both sides (a packet naming it, DATA or control, from its client and one from its server), so no exchange was judged: the snap length cut %d of them to unseen packets (see the snap length WARNING), which may hold each RPC's other side; re-capture whole frames",
				noRPCHeard(rep.RPCs, plural.Of(st.Homa, "Homa packet", "Homa packets")), n)
		}
		if rep.OneDirection {
			// A snap cut may also hide the other direction's packets:
			// name it, as above.
			cut, fix := "", "capture both directions"
			if n := st.SnapUnseen(); n > 0 {
				cut, fix = fmt.Sprintf(", and the snap length cut %d of them to unseen packets (see the snap length WARNING), which may hold the other direction", n), "capture both directions, whole frames"
			}
			fr.NothingJudged = fmt.Sprintf("%s heard from both sides: the capture shows one direction only (no two hosts are seen both ways: tcpdump -Q out/in, or a filter on one address)%s, so no exchange was judged and %s that rest on the other side's packets are inconclusive (%s); only a packet's own fields were judged: %s",
				noRPCHeard(rep.RPCs, plural.Of(st.Homa, "Homa packet", "Homa packets")), cut, plural.Of(rep.OneDirectionExcused, "violation", "violations"), spec.CauseOneDirection, fix)
		}
	}
	fr.Verdict = "pass"
	switch {
	case fr.Must > 0 || o.Strict && fr.Should > 0:
		fr.Verdict = "fail"
	case fr.Damaged != "":
		// Nothing failed in the frames before the damage; what came after
		// is unknown.
		fr.Verdict = "incomplete"
	case snapShort(st, unseenExcused(rep)) != "":
		// Nothing failed in what the snap length left to judge, but
		// what it hid may hold more.
		fr.Verdict = "incomplete"
	case rep.Merged != nil:
		// Two instances interleaved: nothing could be judged as one.
		fr.Verdict = "incomplete"
	case fr.TimeOrderExcused > 0:
		// Violations found where a record moved back in the file was
		// missing: only the sorted file can tell.
		fr.Verdict = "incomplete"
	case fr.NoTimeHint != "":
		// No time in the capture: the rules that judge it judged nothing.
		fr.Verdict = "incomplete"
	case len(doubled) > 0:
		// Violations only the doubled frames made: the capture's doing
		// unless a host sent its packets twice at once.
		fr.Verdict = "incomplete"
	case fr.OneEndHint != "":
		// One end of each link: the other end may show a violation.
		fr.Verdict = "incomplete"
	case fr.NothingJudged != "":
		// Single packets at most: a pass would claim what was not seen.
		fr.Verdict = "incomplete"
	case rep.CaptureDropExcused > 0:
		// A finding was excused as perhaps the doing of a packet the
		// capture dropped: it may as well be a violation, and only a
		// capture without drops can tell (as with the snap length).
		fr.Verdict = "incomplete"
	case fr.Should > 0:
		fr.Verdict = "warn"
	}
	return fr
}

// sameInstantShare is the share of a capture's Homa frames, as 1 in
// sameInstantShare, that must repeat an earlier frame at the same
// instant (pcap.Stats.SameInstant) for the check to call the capture
// doubled: a capture doubled whole repeats half its frames, one doubled
// in one direction about a quarter; a host that sends a packet twice at
// once now and then (a fault) repeats far fewer.
const sameInstantShare = 5

// sameInstantDoubled reports whether a capture read with stats st looks
// doubled: at least 1 in sameInstantShare of its Homa frames, and two or
// more, repeat an earlier one at the same instant and capture point.
// Such a capture is judged without those copies
// (pcap.ReaderOptions.SkipSameInstant): one link carries one frame at a
// time, so a packet seen twice at one instant and point is the file's
// doing (mergecap of a file with itself, two captures of one interface
// merged), not a sender's, save one sent twice within a timestamp tick.
func sameInstantDoubled(st pcap.Stats) bool {
	n := st.SameInstant
	return n >= 2 && n*sameInstantShare >= st.Homa
}

// goneWithout returns the violations of rep, the check of a doubled
// capture, that alt, its check without the same-instant copies, does
// not find (same rule and frame), and files them in alt as inconclusive
// (spec.CauseDoubled), each with a hint saying why (after its --param
// hint, if any): the copied frame itself (a DATA "sent" twice), or a
// count or interval the copies made (a NEED_ACK repeat numbered twice as
// high).
func goneWithout(rep, alt *spec.Report) []spec.Finding {
	still := map[[2]any]bool{}
	for _, v := range alt.Violations {
		still[[2]any{v.Rule, v.Frame}] = true
	}
	var gone []spec.Finding
	for _, v := range rep.Violations {
		if still[[2]any{v.Rule, v.Frame}] {
			continue
		}
		h := "not a violation without the frames that repeat an earlier one at the same instant and capture point (the capture looks doubled): it stands only if a host sent them twice at once"
		if v.Hint != "" {
			h = v.Hint + "; also " + h
		}
		v.Hint = h
		gone = append(gone, v)
	}
	fileInconclusive(alt, spec.CauseDoubled, gone, true)
	return gone
}

// fileInconclusive files the findings fs in rep as inconclusive for
// cause, as the checker's own downgrades are: counted in rep.Rules
// (Inconclusive, and Checked when added is set: findings of another
// check of the capture, not moved from rep.Violations) and
// rep.Downgrades, and listed in rep.Inconclusive, at most
// spec.MaxFindings per rule, each with cause.
func fileInconclusive(rep *spec.Report, cause spec.Cause, fs []spec.Finding, added bool) {
	if len(fs) == 0 {
		return
	}
	rules := map[string]int{}
	for i := range rep.Rules {
		rules[rep.Rules[i].ID] = i
	}
	listed := map[string]int{}
	for _, f := range rep.Inconclusive {
		listed[f.Rule]++
	}
	downs := map[string]int{}
	for i, d := range rep.Downgrades {
		if d.Cause == cause {
			downs[d.Rule] = i
		}
	}
	for _, f := range fs {
		if i, ok := rules[f.Rule]; ok {
			r := &rep.Rules[i]
			r.Inconclusive++
			if added {
				r.Checked++
			} else {
				r.Violated--
			}
		}
		if i, ok := downs[f.Rule]; ok {
			d := &rep.Downgrades[i]
			d.Count++
			d.Frame = min(d.Frame, f.Frame)
		} else {
			downs[f.Rule] = len(rep.Downgrades)
			rep.Downgrades = append(rep.Downgrades, spec.DowngradeCount{Rule: f.Rule, Cause: cause, Count: 1, Frame: f.Frame})
		}
		if listed[f.Rule] < spec.MaxFindings {
			listed[f.Rule]++
			f.Cause = cause
			rep.Inconclusive = append(rep.Inconclusive, f)
		}
	}
	sort.Slice(rep.Downgrades, func(i, j int) bool {
		a, b := rep.Downgrades[i], rep.Downgrades[j]
		return a.Rule < b.Rule || a.Rule == b.Rule && a.Cause < b.Cause
	})
	sort.SliceStable(rep.Inconclusive, func(i, j int) bool { return rep.Inconclusive[i].Frame < rep.Inconclusive[j].Frame })
}

// sameInstantHint returns FileReport.SameInstantHint for a capture
// whose first read had stats st, checked without its same-instant
// copies when it looks doubled (sameInstantDoubled), which made the
// violations gone (goneWithout) inconclusive; "" when it does not look
// doubled. directed says the frames carry pcapng directions (switch
// ports): editcap -d, which compares frames' bytes only, would drop a
// packet's sighting at its second port as well.
func sameInstantHint(st pcap.Stats, gone []spec.Finding, directed bool) string {
	if !sameInstantDoubled(st) {
		return ""
	}
	what := "no finding rests on the copies"
	if len(gone) > 0 {
		what = fmt.Sprintf("%s only with them, inconclusive (%s, each with a hint): they stand only if a host really sent those packets twice at once", plural.Of(len(gone), "violation is found", "violations are found"), spec.CauseDoubled)
	}
	undo := "remove the copies with editcap -d IN OUT (or capture one interface) and check again"
	if directed {
		undo = "check the original capture instead (editcap -d, which compares bytes only, would also drop each packet's sighting at its second switch port)"
	}
	return fmt.Sprintf("%d of %d Homa frames repeat an earlier frame byte for byte at the same instant and capture point: the capture looks doubled (a file merged with itself or with another capture of the same interface, or a capture at two points it cannot tell apart: a classic pcap does not say where a frame was taken), so it was judged without them; %s; %s",
		st.SameInstant, st.Homa, what, undo)
}

// reloadHints returns FileReport.ReloadHint for rep ("" without
// spec.Report.Reloads) and gives each violation at or after a reload that
// concerns the reloaded host a hint naming it (after any other hint).
func reloadHints(rep *spec.Report) string {
	if len(rep.Reloads) == 0 {
		return ""
	}
	for i := range rep.Violations {
		v := &rep.Violations[i]
		for _, r := range rep.Reloads {
			a := r.Restarted
			if v.Frame < r.Frame || v.ChargedTo != a && v.Src != a && v.Dst != a && (v.RPC == nil || v.RPC.Client != a && v.RPC.Server != a) {
				continue
			}
			h := fmt.Sprintf("likely %v's reload at frame %d (see its WARNING): a module loaded afresh knows none of its old RPCs, ids or peers' cutoffs", a, r.Frame)
			if v.Hint != "" {
				h = v.Hint + "; also " + h
			}
			v.Hint = h
			break
		}
	}
	more := ""
	if n := len(rep.Reloads); n > 1 {
		more = fmt.Sprintf(" (and %s more: -o json lists them)", plural.Of(n-1, "reload", "reloads"))
	}
	return fmt.Sprintf("frame %d: %s%s", rep.Reloads[0].Frame, rep.Reloads[0].Why, more)
}

// testersOnly reports whether every host of hosts (spec.TimeGap.Waiting:
// the ends whose timers would have broken a silence) is a tester: a
// tester that holds back its GRANT or RESEND on purpose keeps the capture
// silent with no time lost, and its peer under test, a sender waiting for
// a grant, rightly says nothing. A gap with no tester known still warns.
func testersOnly(hosts []netip.Addr, testers map[netip.Addr]bool) bool {
	for _, h := range hosts {
		if !testers[h] {
			return false
		}
	}
	return len(hosts) > 0
}

// gapParamsHint adds to each forward time jump of rep (spec.TimeGap)
// that the parameters may be its cause, when the check timed the gaps
// with the profile's defaults: no parameters file (sideName, fromFile)
// and no --param (given) set timeout_ticks or tick. A run with a longer
// timeout (a lab's timeout_ticks=1000) keeps RPCs alive across
// silences the defaults call lost time, and the warnings are then a
// parameter mismatch; inferred (called only then) gives the value the
// capture implies, when it differs.
func gapParamsHint(rep *spec.Report, sideName string, fromFile bool, given []string, params spec.Params, inferred func() []InferredParam) {
	if len(rep.TimeGaps) == 0 || fromFile {
		return
	}
	for _, kv := range given {
		if n, _, _ := strings.Cut(kv, "="); n == "timeout_ticks" || n == "tick" {
			return
		}
	}
	flag := "--param timeout_ticks=N"
	for _, x := range inferred() {
		if x.Name == "timeout_ticks" && x.Differs {
			least := ""
			if x.AtLeast {
				least = " at least"
			}
			flag = fmt.Sprintf("--param timeout_ticks=N; the capture implies%s %s: %s", least, x.Value, x.Evidence)
		}
	}
	why := fmt.Sprintf("; or the parameters are the cause: with no %s beside the capture and no --param timeout_ticks or tick, the silences were timed with profile %s's default timeout_ticks %d (tick %v), and hosts run with a longer timeout keep their RPCs across such silences: pass the run's values (%s) or copy its .params file beside the capture",
		sideName, rep.Profile, params.TimeoutTicks, params.Tick, flag)
	for i := range rep.TimeGaps {
		rep.TimeGaps[i].Why += why
	}
}

// timeOrderHint is FileReport.TimeOrderHint for a capture read with
// stats st. Beyond pcap.MaxReorder the file's order is judged, not the
// timestamps': no capture tool holds a packet back that long, so either
// the records were moved (a file edited or merged: reordercap undoes it)
// or the timestamps are off (a pcapng's interfaces stamped by clocks
// that disagree, a clock stepped back), and the capture cannot tell
// which; the user can, and the hint says how to sort it.
func timeOrderHint(st pcap.Stats, rep *spec.Report) string {
	jumps := jumpHint(rep)
	if st.Backwards == 0 {
		return jumps
	}
	if jumps != "" {
		return backwardsHint(st) + "; " + jumps
	}
	return backwardsHint(st)
}

// excuseNoTime makes inconclusive (spec.CauseNoTime) the violations of
// rep that weigh time when the capture carries none (st holds two or
// more Homa frames, all at one timestamp) and returns how many, with
// FileReport.NoTimeHint; 0 and "" when its timestamps differ.
func excuseNoTime(rep *spec.Report, st pcap.Stats) (int, string) {
	if st.TimeVaries || st.Homa < 2 {
		return 0, ""
	}
	var moved []spec.Finding
	kept := rep.Violations[:0]
	for _, f := range rep.Violations {
		if f.Timing() || f.Early > 0 || f.Late > 0 || !f.Since.IsZero() {
			moved = append(moved, f)
			continue
		}
		kept = append(kept, f)
	}
	rep.Violations = kept
	fileInconclusive(rep, spec.CauseNoTime, moved, false)
	hint := fmt.Sprintf("all %d Homa frames carry the same timestamp, so the capture holds no time: rules that judge time (deadlines, intervals, silences) had nothing to weigh", st.Homa)
	if len(moved) > 0 {
		hint += fmt.Sprintf(" (%s inconclusive: %s)", plural.Of(len(moved), "violation", "violations"), spec.CauseNoTime)
	}
	return len(moved), hint + "; check the capture as it was taken, before any tool rewrote its timestamps"
}

// timeOrderExcused counts the findings of rep made inconclusive because
// a record lay back in the file (spec.CauseTimeOrder).
func timeOrderExcused(rep *spec.Report) int {
	n := 0
	for _, d := range rep.Downgrades {
		if d.Cause == spec.CauseTimeOrder {
			n += d.Count
		}
	}
	return n
}

// jumpHint is the part of FileReport.TimeOrderHint on the timestamp
// jumps back of more than spec.TimeJump that began sections of rep (""
// without): how many, the first and how far back, what was made of the
// findings before them, and, since the capture cannot tell a record
// moved back in the file from captures joined end to end or a clock
// stepped back, how to sort the records if they were moved.
func jumpHint(rep *spec.Report) string {
	var first spec.SectionStart
	var most time.Duration
	n := 0
	for _, s := range rep.Sections {
		if s.Restarted.IsValid() || s.Back <= 0 {
			continue
		}
		if n == 0 {
			first = s
		}
		n++
		most = max(most, s.Back)
	}
	if n == 0 {
		return ""
	}
	what := fmt.Sprintf("frame %d has a timestamp %v before that of the frame ahead of it in the file", first.Frame, first.Back.Round(time.Microsecond))
	if n > 1 {
		what = fmt.Sprintf("%d frames have a timestamp more than %v before that of the frame ahead of them in the file (first frame %d, at most %v back)", n, spec.TimeJump, first.Frame, most.Round(time.Microsecond))
	}
	what += fmt.Sprintf(": more than %v back, so what follows was judged as a section of its own (see sections)", spec.TimeJump)
	if x := timeOrderExcused(rep); x > 0 {
		what += fmt.Sprintf(", and %s found before it at a time after its, where the file had not yet shown it, inconclusive (%s)",
			plural.Of(x, "violation", "violations"), spec.CauseTimeOrder)
	}
	return what + "; if the records were written out of order (edited, moved by a script, merged or reordered by a tool) rather than joined from captures taken one after another or stamped by a clock stepped back, sort them with reordercap IN OUT and check again"
}

// backwardsHint is the part of FileReport.TimeOrderHint on the frames
// out of time order by at most spec.TimeJump (pcap.Stats.Backwards).
func backwardsHint(st pcap.Stats) string {
	what := fmt.Sprintf("%d frames have a timestamp before that of a frame ahead of them in the file (first frame %d, at most %v back)",
		st.Backwards, st.BackwardsFrame, st.BackwardsMax)
	if st.Backwards == 1 {
		what = fmt.Sprintf("frame %d has a timestamp %v before that of a frame ahead of it in the file", st.BackwardsFrame, st.BackwardsMax)
	}
	if st.BackwardsMax <= pcap.MaxReorder {
		return what + ": judged in timestamp order (frame numbers are the file's)"
	}
	return fmt.Sprintf("%s: more than %v back, so judged in file order; findings near them may rest on the file's order, not the hosts'; if the records were written out of order (edited, merged or reordered by a tool) rather than stamped by clocks that disagree, sort them with reordercap IN OUT and check again", what, pcap.MaxReorder)
}

// unseenExcused counts the findings of rep downgraded to inconclusive for
// a cause a packet the capture does not show can produce: a packet it
// dropped (CauseCaptureDrop) or, when it was an RPC's first, an RPC that
// seems begun before the capture (CauseCaptureStart).
func unseenExcused(rep *spec.Report) int {
	n := 0
	for _, d := range rep.Downgrades {
		if d.Cause == spec.CauseCaptureDrop || d.Cause == spec.CauseCaptureStart {
			n += d.Count
		}
	}
	return n
}

// snapShort says why a capture read with stats st, whose check excused
// excused findings as possibly resting on a packet it did not see
// (unseenExcused), is not evidence enough to pass
// because of its snap length, or "" when it is. It is not when the snap
// length cut the Homa header of more Homa frames than it left readable
// (pcap.Stats.SnapUnseen against the rest of Stats.Homa): the packets the
// capture cannot show could then explain more than those it can (a GRANT
// of a message whose DATA is cut, a RESEND of an RPC no whole packet
// shows), and finding nothing there shows nothing; a frame that kept only
// its common header counts as cut, since all but the rules of a packet's
// own common and IP header see it as unseen. Nor is it when the check
// excused a finding while the snap length hid packets: what looked like a
// violation may be one, and only a capture of whole headers can tell.
func snapShort(st pcap.Stats, excused int) string {
	n := st.SnapUnseen() + st.CutBeforeHoma()
	switch {
	case n == 0:
		return ""
	case n > st.Homa-st.SnapUnseen():
		return "more frames are cut than whole"
	case excused > 0:
		verb := "are"
		if excused == 1 {
			verb = "is"
		}
		return fmt.Sprintf("%s %s inconclusive as perhaps resting on a packet not seen (dropped, or an RPC's first)", plural.Of(excused, "finding", "findings"), verb)
	}
	return ""
}

// SnapHint is the snap-length hint check gives for a capture read
// with stats st ("" when the snap length cut no Homa header): what was
// cut and how to re-capture. homatest rpcs and plot give it as their
// warning, or as their error for a capture whose Homa headers are all
// unreadable (which then says no RPC can be shown, where check says no
// rule could judge it).
func SnapHint(st pcap.Stats) string { return snapHint(st, 0, "no RPC can be shown") }

// SnapIncomplete says why the snap length leaves a capture read with
// stats st incomplete, as check's verdict would be with no finding
// excused (snapShort), or "" when it does not: homatest rpcs exits 2 on
// it, as check does.
func SnapIncomplete(st pcap.Stats) string { return snapShort(st, 0) }

// snapHint is FileReport.SnapHint for a capture read with stats st
// whose check excused excused findings (see snapShort); unread says
// what a capture whose Homa headers are all unreadable denies the
// caller.
func snapHint(st pcap.Stats, excused int, unread string) string {
	// Frames cut before their IP header ended are unseen packets too
	// (pcap.Stats.Unseen): said after what the cut Homa headers mean.
	before := st.CutBeforeHomaHint()
	h := snapCutHint(st, excused, unread)
	switch {
	case before == "":
		return h
	case h != "":
		return strings.TrimSuffix(h, "; "+spec.SnapAdvice) + "; " + before
	}
	if short := snapShort(st, excused); short != "" {
		return strings.TrimSuffix(before, ": "+spec.SnapAdvice) + "; " + short + ", so the capture is not evidence enough to pass: " + spec.SnapAdvice
	}
	return before
}

// snapCutHint is snapHint on the Homa frames whose header the snap
// length cut (pcap.Stats.SnapCut), "" without any.
func snapCutHint(st pcap.Stats, excused int, unread string) string {
	if st.SnapCut == 0 {
		return ""
	}
	what := fmt.Sprintf("the snap length cut the Homa header of %d of %d Homa frames (at most %d bytes of each were captured)", st.SnapCut, st.Homa, st.SnapLen)
	// Every cut frame is counted once: unseen (SnapUnseen: the capture
	// drops the checker counts, some kept their common header), or an ACK
	// judged as whole (SnapComplete).
	const ackWhole = "that lost only acks slots past num_acks, judged as whole"
	unseen := st.SnapUnseen()
	if unseen == 0 {
		return what + ": none lost a field a receiver reads (" + plural.Word(st.SnapComplete, "it is an ACK ", "all are ACKs ") + ackWhole + ")"
	}
	if st.SnapCut == st.Homa && st.SnapPartial == 0 {
		return what + ": no Homa header could be read, so " + unread + "; " + spec.SnapAdvice
	}
	them := "their packets are unseen"
	if st.SnapComplete > 0 {
		them = plural.Of(unseen, "of them is an unseen packet", "of them are unseen packets")
	}
	what += ": " + them + ", and findings that may rest on one are inconclusive"
	if n := st.SnapPartial - st.SnapComplete; n > 0 {
		what += fmt.Sprintf(" (%d of those kept their common header, judged by the rules that read no more of a packet than that and its IP header)", n)
	}
	if n := st.SnapComplete; n > 0 {
		what += fmt.Sprintf("; the other %d %s %s", n, plural.Word(n, "is an ACK", "are ACKs"), ackWhole)
	}
	if short := snapShort(st, excused); short != "" {
		what += "; " + short + ", so the capture is not evidence enough to pass"
	}
	return what + "; " + spec.SnapAdvice
}

// layoutPrefix is how many frames File reads to guess the capture's plan
// before the check (readLayout); a variable for tests.
var layoutPrefix = 4096

// runGuessed is runRules for File: with guessed, *plan was made from the
// capture's first frames only, and the pass also counts the whole
// capture's layout; *plan becomes the plan of the whole capture (flag is
// --capture-point), and the capture is checked again under it when it
// differs from the guess.
func runGuessed(file string, ro pcap.ReaderOptions, plan *capturePlan, guessed bool, flag string, judge spec.Judge) (ruleRun, error) {
	if !guessed {
		return runRules(file, ro, *plan, judge)
	}
	guess := *plan
	guess.count = newLayout()
	run, err := runRules(file, ro, guess, judge)
	if err != nil {
		return run, err
	}
	// A plan that held on the first frames holds or changes, but does not
	// fail, on the whole capture (planCapture's errors only need fewer
	// packets or directions than a prefix shows).
	whole, err := planCapture(flag, guess.count)
	if err != nil {
		return run, err
	}
	*plan = whole
	if whole.mode == guess.mode && whole.cp == guess.cp {
		return run, nil
	}
	ro.Progress = nil // counted by the first pass (Options.Progress)
	return runRules(file, ro, whole, judge)
}

// ruleRun is what runRules found in one capture.
type ruleRun struct {
	rep   *spec.Report
	st    pcap.Stats
	inf   *spec.Inferrer
	hosts []HostResult
	// testers are the hosts that sent a frame a tester marked as its own
	// (homatest run's capture): not implementations under test.
	testers map[netip.Addr]bool
	// damaged is set when the file ended in damage after some Homa frames:
	// the report covers the frames before it.
	damaged *pcap.DamagedError
}

// runRules checks the capture at file with the plan's capture point and
// returns the report, the reader's stats, the parameters the capture
// implies and, for a multi-port capture, the per-host results.
func runRules(file string, ro pcap.ReaderOptions, plan capturePlan, judge spec.Judge) (ruleRun, error) {
	out := ruleRun{inf: spec.NewInferrer(judge.Params), testers: map[netip.Addr]bool{}}
	// A tester's findings do not use up the capture drops' budget: it is
	// the implementations' (out.testers grows as the frames are read, a
	// tester's before the rules judge its frame).
	judge.NotUnderTest = func(f *spec.Finding) bool { return testerCharged(f, out.testers) }
	// feed infers from what the hosts sent: a tester's packets say
	// nothing about an implementation's parameters.
	feed := func(e *spec.Event) {
		if strings.HasPrefix(e.Note, testerNotePrefix) {
			out.testers[e.Src] = true
			out.inf.Observe(e)
			return
		}
		out.inf.Feed(e)
	}
	if plan.mode == oneView || plan.mode == notesOnly {
		judge.OneEnd = plan.oneEnd
		c := judge.Stream(plan.cp)
		c.SetInferrer(out.inf) // one trace for rules and inference
		var frame func(*pcap.Reader, *pcap.Frame)
		if plan.count != nil {
			frame = plan.count.add
		}
		st, err := pcap.StreamPathFrames(file, ro, frame, func(e *spec.Event) {
			if strings.HasPrefix(e.Note, switchNotePrefix) || plan.mode == notesOnly {
				return
			}
			if strings.HasPrefix(e.Note, testerNotePrefix) {
				out.testers[e.Src] = true
				c.FeedObserved(e)
				return
			}
			c.Feed(e)
		})
		out.st = st
		if out.damaged, err = pcap.Damage(st, err); err != nil {
			return out, err
		}
		// A pcapng declares its drops in statistics blocks at its end.
		// So do frames whose Homa header the snap length cut: their
		// packets are unseen (pcap.Stats.SnapUnseen).
		c.SetCaptureDrops(max(judge.CaptureDrops, st.CaptureDrops) + uint64(st.Unseen()))
		c.SetCaptureDropsDeclared(st.IfaceDrops != nil)
		out.rep = c.Finish()
		if out.rep.Violations == nil {
			out.rep.Violations = []spec.Finding{}
		}
		return out, nil
	}
	views, st, err := plan.readViews(file, ro)
	out.st = st
	if out.damaged, err = pcap.Damage(st, err); err != nil {
		return out, err
	}
	var ifs []int
	for i := range plan.ports {
		ifs = append(ifs, i)
	}
	sort.Ints(ifs)
	// The views run at once below: every tester is known before.
	for _, v := range views {
		for j := range v {
			if strings.HasPrefix(v[j].Note, testerNotePrefix) {
				out.testers[v[j].Src] = true
			}
		}
	}
	// The ports' views are independent checks (each its own Checker;
	// the rules are shared and never modified): they run on up to
	// GOMAXPROCS cores at once, their reports kept in interface order.
	hrs := make([]spec.HostReport, len(ifs))
	// A request's first bytes seen at its client's port start the RPC in
	// the capture, though the server's port missed them (lost on the way).
	all := make([][]spec.Event, 0, len(views))
	for _, v := range views {
		all = append(all, v)
	}
	judge.Started = spec.StartedRPCs(all...)
	parallel(len(ifs), func(k int) {
		i := ifs[k]
		// A port's view misses what its interface dropped.
		jv := judge
		// (Frames whose Homa header the snap length cut are counted for
		// the whole capture, not per port: each port may miss them all.)
		jv.CaptureDrops = max(judge.CaptureDrops, st.IfaceDrops[i]) + uint64(st.Unseen())
		_, jv.CaptureDropsDeclared = st.IfaceDrops[i]
		hrs[k] = jv.Host(plan.ports[i], views[i])
	})
	// A record moved in the file, or captures joined end to end, jump
	// back in the file's order, which one port's view may not show (the
	// record is another port's): every view begins a section there, as
	// the whole capture's view does, and restarts are shared within the
	// stretches of time between the jumps.
	var jumps []spec.SectionStart
	if ro.Reorder == 0 { // (views sorted by time have no jumps)
		jumps = seenJumps(hrs, all)
	}
	shared := sharedRestarts(hrs, jumps)
	rejudge := func(k int, restarts []spec.SectionStart) {
		i := ifs[k]
		jv := judge
		jv.CaptureDrops = max(judge.CaptureDrops, st.IfaceDrops[i]) + uint64(st.Unseen())
		_, jv.CaptureDropsDeclared = st.IfaceDrops[i]
		jv.Restarts = restarts
		hrs[k] = jv.Host(plan.ports[i], views[i])
	}
	if len(jumps) > 0 {
		parallel(len(ifs), func(k int) { rejudge(k, shared) })
		shared = sharedRestarts(hrs, jumps) // (restarts the sections revealed)
	}
	if len(shared) > len(jumps) {
		// A host's restart shows on its own link and its peers': the
		// views that judged across it judge again from it, as the whole
		// capture's view does (a view per port agrees with it).
		parallel(len(ifs), func(k int) {
			missing := lacking(withFrom(hrs[k].Report.Sections, jumps), shared)
			if len(missing) == 0 {
				return
			}
			if len(jumps) > 0 {
				missing = shared // (the jumps too)
			}
			rejudge(k, missing)
		})
	}
	var sent []*spec.Event
	for k, i := range ifs {
		h, hr := plan.ports[i], hrs[k]
		out.hosts = append(out.hosts, HostResult{Host: h.String(), Interface: fmt.Sprint(i), Violations: len(hr.Violations), Excused: len(hr.Excused)})
		for j := range views[i] {
			if e := &views[i][j]; e.Src == h {
				sent = append(sent, e)
			}
		}
	}
	inferSections(sent, shared, feed, out.inf.NewSection)
	out.rep = mergeHostReports(hrs)
	out.rep.Sections = shared
	if len(jumps) > 0 {
		sort.SliceStable(out.rep.Sections, func(a, b int) bool { return out.rep.Sections[a].Frame < out.rep.Sections[b].Frame })
	}
	out.rep.TimeGaps = wholeGaps(out.rep.TimeGaps, views, judge.Params.LateTicks(judge.Params.TimeoutTicks))
	out.rep.CaptureDrops = max(out.rep.CaptureDrops, max(judge.CaptureDrops, st.CaptureDrops)+uint64(st.Unseen()))
	excuseMergedViews(out.rep, out.hosts)
	return out, nil
}

// inferSections feeds sent, what each host sent as it sent it, to feed
// in time order within each stretch of the file between the timestamp
// jumps of secs, the capture's sections (its jumps in file order, each
// followed by the restarts in its stretch), and calls newSection at each
// jump and at each restart's time: as the whole capture's view does, the
// inferrer judges sections apart (a copy of the capture joined to it, or
// a restarted host, sends the same RPC ids and offsets again).
func inferSections(sent []*spec.Event, secs []spec.SectionStart, feed func(*spec.Event), newSection func()) {
	var jumps []int // frames, in file order
	for _, s := range secs {
		if !s.Restarted.IsValid() {
			jumps = append(jumps, s.Frame)
		}
	}
	slices.Sort(jumps)
	type inStretch struct {
		e *spec.Event
		s int // jumps before e
	}
	all := make([]inStretch, len(sent))
	for i, e := range sent {
		all[i].e = e
		all[i].s, _ = slices.BinarySearch(jumps, e.Frame+1)
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].s != all[b].s {
			return all[a].s < all[b].s
		}
		return all[a].e.Time.Before(all[b].e.Time)
	})
	cur := -1
	var restarts []spec.SectionStart // the current stretch's, by time
	for _, x := range all {
		e := x.e
		if x.s != cur {
			if cur >= 0 {
				newSection()
			}
			cur, restarts = x.s, nil
			from := 0
			if x.s > 0 {
				from = jumps[x.s-1]
			}
			for _, r := range secs {
				if r.Restarted.IsValid() && r.From == from {
					restarts = append(restarts, r)
				}
			}
			sort.SliceStable(restarts, func(i, j int) bool { return restarts[i].At.Before(restarts[j].At) })
		}
		for len(restarts) > 0 && !e.Time.Before(restarts[0].At) {
			newSection()
			restarts = restarts[1:]
		}
		feed(e)
	}
}

// compareInferred puts the inferred parameters next to params' values;
// those given with --param are left out.
func compareInferred(inf *spec.Inferrer, params spec.Params, given []string) []InferredParam {
	set := map[string]bool{}
	for _, kv := range given {
		n, _, _ := strings.Cut(kv, "=")
		set[n] = true
	}
	var out []InferredParam
	for _, x := range inf.Result() {
		if set[x.Name] {
			continue
		}
		cur, _ := params.Get(x.Name)
		q := params
		out = append(out, InferredParam{Inferred: x, Profile: cur, Differs: x.Apply(&q)})
	}
	return out
}

// hintFindings re-checks the capture once per inferred parameter that
// differs from judge's parameters and gives each violation that disappears
// a hint naming the --param to pass. When two or more differ it re-checks
// once more with all of them: a violation that disappears only then (a
// timer finding that needs resend_ticks and timeout_ticks both) is hinted
// with the whole set, and the run is returned so that a user can pass
// every flag at once instead of following the hints one at a time.
func hintFindings(file string, ro pcap.ReaderOptions, plan capturePlan, judge spec.Judge, rep *spec.Report, inferred []InferredParam) *InferredRun {
	var hintWhere func(alt spec.Judge, why string, lossToo bool) *spec.Report
	hint := func(alt spec.Judge, why string) *spec.Report { return hintWhere(alt, why, false) }
	hintWhere = func(alt spec.Judge, why string, lossToo bool) *spec.Report {
		altRun, err := runRules(file, ro, plan, alt)
		if err != nil {
			return nil
		}
		still := map[[2]any]bool{}
		for _, v := range altRun.rep.Violations {
			still[[2]any{v.Rule, v.Frame}] = true
		}
		for i := range rep.Violations {
			v := &rep.Violations[i]
			if v.Hint == "" && !still[[2]any{v.Rule, v.Frame}] {
				v.Hint = why
				if lossToo && !v.MayRestOnMissing() {
					// No missing packet explains it: only the parameter.
					v.Hint, _, _ = strings.Cut(why, ", or if the capture lost")
					v.Hint += "; if they did not, it stands"
				}
			}
		}
		return altRun.rep
	}
	all := judge
	var flags, names []string
	for _, x := range inferred {
		if !x.Differs {
			continue
		}
		alt := judge
		if !x.Apply(&alt.Params) {
			continue
		}
		x.Apply(&all.Params)
		flags = append(flags, x.Name+"="+x.Value)
		names = append(names, "--param "+x.Name+"="+x.Value)
		why := fmt.Sprintf("not a violation if the hosts ran with --param %s=%s, which the capture implies (%s); if they did not, it stands", x.Name, x.Value, x.Evidence)
		if rep.CaptureDrops == 0 {
			why = fmt.Sprintf("not a violation if the hosts ran with --param %s=%s, which the capture implies (%s), or if the capture lost a packet this rests on (pass --capture-drops N if it lost N); if neither, it stands", x.Name, x.Value, x.Evidence)
		}
		hintWhere(alt, why, rep.CaptureDrops == 0)
	}
	if len(flags) < 2 {
		return nil
	}
	altRep := hint(all, fmt.Sprintf("not a violation if the hosts ran with %s together, which the capture implies; if they did not, it stands", strings.Join(names, " ")))
	if altRep == nil {
		return nil
	}
	run := &InferredRun{Params: flags}
	for _, v := range altRep.Violations {
		if v.Level == spec.Must {
			run.Must++
		} else {
			run.Should++
		}
	}
	return run
}

// noRPCHeard says that none of a capture's n RPCs (in packets, its Homa
// packets) was heard from both sides, up to those words: "no RPC (in
// ...) was" for none, "the capture's one RPC (in ...) was not", "no RPC
// of the capture's N (in ...) was".
func noRPCHeard(n int, packets string) string {
	switch n {
	case 0:
		return fmt.Sprintf("no RPC (in %s) was", packets)
	case 1:
		return fmt.Sprintf("the capture's one RPC (in %s) was not", packets)
	}
	return fmt.Sprintf("no RPC of the capture's %d (in %s) was", n, packets)
}

// unreadableAdvice returns what to do about drops a capture's interface
// statistics declare (buffer: the advice for a full buffer): frames the
// capture could not read (pcap.Stats.UnreadableDrops: recvmsg failed) are
// not cured by a larger buffer, and a homatest capture that does not say
// how many of its drops are such frames may hold them too.
func unreadableAdvice(st pcap.Stats, buffer string) string {
	const unread = "frames the capture's socket queued but could not read (recvmsg failed: EFAULT for some skbs HomaModule builds), which a larger buffer does not cure"
	switch u := st.UnreadableDrops; {
	case u >= st.CaptureDrops:
		return "they are " + unread + "; re-capture to judge them"
	case u > 0:
		return fmt.Sprintf("%s (%d of them are %s)", buffer, u, unread)
	case st.DropsCauseUnsaid:
		return "re-capture to judge them: homatest's capture declares there both what its full buffer dropped (re-capture with a larger buffer) and " + unread + ", without saying how many of each"
	}
	return buffer
}

// dropsHint returns where the capture drops of rep come from and the
// line that says what they did to it (FileReport.CaptureDropsFrom and
// CaptureDropsHint); "" for both without drops.
func dropsHint(rep *spec.Report, st pcap.Stats, flag uint64) (from, hint string) {
	if rep.CaptureDrops == 0 {
		return "", ""
	}
	cut, link := uint64(st.SnapUnseen()+st.CutBeforeHoma()), uint64(st.UnreadLink())
	from = "--capture-drops"
	recapture := "re-capture with a larger buffer (tcpdump -B KIB, dumpcap -B MIB) to judge them"
	switch {
	case rep.CaptureDrops == cut:
		from, recapture = "snap length", spec.SnapAdvice+" to judge them"
	case rep.CaptureDrops == cut+link:
		from, recapture = "unreadable link types", "capture on an Ethernet, cooked (SLL, SLL2), raw IP or loopback interface to judge them"
	case rep.CaptureDropsShown != "" && max(flag, st.CaptureDrops) < rep.CaptureDrops:
		from = "the capture's own evidence"
	case st.CaptureDrops >= flag:
		from = "interface statistics"
		recapture = unreadableAdvice(st, recapture)
	}
	cut += link // below, cut counts both kinds of unread frames
	dropped := "the capture dropped " + plural.Of64(rep.CaptureDrops-cut, "packet", "packets")
	if rep.CaptureDrops-cut == 1 {
		dropped = "the capture dropped 1 packet"
	}
	if from == "the capture's own evidence" {
		dropped = fmt.Sprintf("the capture shows it missed %s (%s)", plural.Of64(rep.CaptureDrops-cut, "packet", "packets"), rep.CaptureDropsShown)
	}
	if cut > 0 {
		snap := cut - link
		unread := plural.Of64(snap, "frame with its Homa header cut by the snap length is an unseen packet", "frames with their Homa header cut by the snap length are unseen packets")
		if snap == 1 {
			unread = "1 frame with its Homa header cut by the snap length is an unseen packet"
		}
		if n := st.SnapComplete; snap > 0 && n > 0 {
			// The snap hint counts every cut frame: say where the rest went.
			unread += fmt.Sprintf(" (of the %d it cut; the other %d %s that lost only acks slots past num_acks, judged as whole)", st.SnapCut, n, plural.Word(n, "is an ACK", "are ACKs"))
		}
		if link > 0 {
			l := plural.Of64(link, "frame on a link type homatest cannot read is an unseen packet", "frames on a link type homatest cannot read are unseen packets")
			if link == 1 {
				l = "1 frame on a link type homatest cannot read is an unseen packet"
			}
			if snap == 0 {
				unread = l
			} else {
				unread += " and " + l
			}
		}
		if rep.CaptureDrops == cut {
			dropped = unread
		} else {
			dropped += " and " + unread
		}
	}
	excused := plural.Of(rep.CaptureDropExcused, "finding that rests on a packet not seen may be its doing and is inconclusive", "findings that rest on a packet not seen may be its doing and are inconclusive")
	if rep.CaptureDropExcused == 1 {
		excused = "1 finding that rests on a packet not seen may be its doing and is inconclusive"
	}
	switch {
	case rep.CaptureDropTooMany && rep.CaptureDropExcused > 0:
		// A capture of switch ports judges each port's view with its
		// own drops.
		return from, fmt.Sprintf("%s: %s, but at some ports such findings are at more RPCs than that port's drops can touch and stay violations; %s",
			dropped, excused, recapture)
	case rep.CaptureDropTooMany && rep.Merged != nil:
		// A merged capture's violations are all inconclusive
		// (spec.CauseMerged): "stay violations" would contradict the
		// 0 charged that follows.
		return from, fmt.Sprintf("%s, which can touch at most %d RPCs, but the findings that rest on a packet not seen are at more, so they cannot all be the capture's doing; this capture looks merged (WARNING above), which leaves every violation inconclusive: judge the captures apart, then %s",
			dropped, rep.CaptureDropLimit, recapture)
	case rep.CaptureDropTooMany:
		return from, fmt.Sprintf("%s, which can touch at most %d RPCs, but the findings that rest on a packet not seen are at more: they cannot all be the capture's doing and stay violations; %s",
			dropped, rep.CaptureDropLimit, recapture)
	case rep.CaptureDropExcused == 0:
		return from, dropped + "; no violation rests on a packet it may have missed"
	}
	return from, fmt.Sprintf("%s: %s; %s", dropped, excused, recapture)
}

// otherProto is the Homa IP protocol that is not v's: 253 (HomaModule
// linux_6.1, the 2024 format) against 146 (HomaModule main).
func otherProto(v wire.Version) uint8 {
	if v.IPProtocol() == wire.IPProtoHoma2024 {
		return wire.IPProtoHoma
	}
	return wire.IPProtoHoma2024
}

// mixedFormats reports an error when a capture judged with profile auto
// (no --wire) holds Homa packets over both IP protocols (146 and 253,
// e.g. mergecap of a linux_6.1 and a main capture): one profile would
// judge one format's packets as misread others, so the capture must be
// split and each part checked in its own format. v is the format it was
// read in, st.VersionMismatch the packets over the other protocol. A
// capture all of whose packets mismatch is the 2024 format over 146
// (HomaModule main between f7e4717 and be127d8), which File excuses.
func mixedFormats(file string, o Options, v wire.Version, st pcap.Stats) error {
	if o.Profile != "auto" || o.Wire != wire.VersionAuto || st.VersionMismatch == 0 || st.VersionMismatch >= st.Homa {
		return nil
	}
	own, other := v.IPProtocol(), otherProto(v)
	return fmt.Errorf("%s mixes Homa wire formats: %d packets over IP protocol %d and %d over %d (146: HomaModule main, profile linux; 253: linux_6.1, profile linux-2024); one profile cannot judge both: split it, e.g. tshark -r %s -Y 'ip.proto == %d || ipv6.nxt == %d' -w %d.pcap (and again with %d), then check each part",
		file, st.Homa-st.VersionMismatch, own, st.VersionMismatch, other, file, own, own, own, other)
}
