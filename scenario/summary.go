package scenario

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/latency"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/spec"
)

// Verdicts of Summary.Verdict.
const (
	VerdictPass = "pass" // every RPC completed (or timed out while measured stalls that lost its lateness overlapped it), no MUST rule was violated, and the run tested what it set out to
	VerdictFail = "fail" // failed RPCs or MUST violations
	// VerdictIncomplete: nothing failed, but the run did not test what
	// it set out to (a plan rule never fired, the offered load was not
	// carried, or the capture lost frames a finding may rest on;
	// Summary.Incomplete says which), so it cannot pass: the CLI exits 2,
	// as check does on a capture it could not judge.
	VerdictIncomplete = "incomplete"
)

// CarriedFraction is the least fraction of the offered load (at most
// the link's rate) that a run's completed RPCs must carry
// (Summary.DeliveredBps) for it to pass: below it the hosts, the switch
// or the capture fell behind and the run did not test the load it set
// out to. Measured here (2 vCPUs shared with other jobs, machine load
// about 5): runs that keep up carry 98 % (w4-half-load-100m in
// namespaces) to 99-100 % (w4-half-load-100m and w4-half-load in the
// simulator) of what they offer, w4-half-load-100m in namespaces at
// machine load 31 75 % (p99 1.9 s); w4-half-load at 1 Gbit/s in
// namespaces, which needs four times this machine's CPU, carried 55 %
// (every RPC completed, the last 4 s after the workload's 5 s), and 31 %
// in a new user's trial at machine load 20 (16 % of the link of a 51 %
// load). 0.7 is the bar TestW4HalfLoad100m sets on a quiet machine (the
// busiest link at 35 % of a 50 % load).
const CarriedFraction = 0.7

// MinLoadRPCs is the fewest RPCs whose rate a run's load is judged on:
// the offered rate of n Poisson arrivals is off by about 1/sqrt(n), a
// third for 10, too much for a 70 % bar (CarriedFraction). With fewer
// (workload.count 3 at load 0.5 read as offering and carrying 469 % of
// a 1 Gbit/s link) the load is reported as unmeasured, not judged.
const MinLoadRPCs = 20

// Summary is the short form of a run (summary.json and the CLI's output).
type Summary struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
	Dir  string `json:"dir"`
	// Env is where the run ran (EnvNS or EnvSim).
	Env string `json:"env"`
	// Backend is the link backend (BackendSwitch or BackendTC).
	Backend string `json:"backend"`
	// Verdict is VerdictPass, VerdictFail or VerdictIncomplete.
	Verdict string `json:"verdict"`
	// Incomplete says why a run that did not fail is not a pass, one
	// line each: a plan rule that never fired (the fault it injects was
	// not tested), the offered load not carried (LoadNotCarried), the
	// capture's lost frames that findings may rest on
	// (CaptureDropExcused).
	Incomplete []string `json:"incomplete,omitempty"`
	// RPCs issued, completed and failed; Errors the first failures and
	// problems outside single RPCs (at most 10).
	RPCs   int      `json:"rpcs"`
	OK     int      `json:"ok"`
	Failed int      `json:"failed"`
	Errors []string `json:"errors,omitempty"`
	// TimedOutInStall counts RPCs that timed out (agent codes timeout and
	// silent) while a measured stall of this machine overlapped their
	// life: a timeout is a timing outcome, and a host kept from running
	// looks dead to its peer, so these are inconclusive like timing
	// findings (not in Failed, not charged; StallTimeouts lists the
	// first 10 with the stall). Other failures are never excused.
	TimedOutInStall int      `json:"timed_out_in_stall,omitempty"`
	StallTimeouts   []string `json:"stall_timeouts,omitempty"`
	// Warnings are doubts about the run's record that do not change the
	// verdict (backend tc: a drop rule's counter that differs from the
	// drops the capture attributes to it).
	Warnings []string `json:"warnings,omitempty"`
	// Elapsed is the workload's time from start to the last completion.
	Elapsed time.Duration `json:"elapsed_ns"`
	// LinkBps is the link rate (0: unlimited); OfferedBps the request
	// load issued per server (traffic.Result.OfferedBps) and OfferedLoad
	// its fraction of LinkBps; GoodputBps the request and response
	// payload completed per second, all hosts together.
	LinkBps     float64 `json:"link_bps"`
	OfferedBps  float64 `json:"offered_bps"`
	OfferedLoad float64 `json:"offered_load,omitempty"`
	GoodputBps  float64 `json:"goodput_bps"`
	// DeliveredBps is the request load the completed RPCs carried per
	// server, counted as OfferedBps is (traffic.Result.DeliveredBps), over
	// Elapsed less the largest request's time on an idle link, but never
	// over less time than the busiest downlink needed for its bytes at the
	// link's rate, so it cannot exceed what the links carried
	// (deliveredBps); DeliveredLoad its fraction of LinkBps.
	// LoadNotCarried says that a workload with a rate (load) carried less
	// than CarriedFraction of what it offered (at most the link's rate)
	// while its busiest downlink ran below CarriedFraction of the link
	// (the network was not what held it back), without faults meant to
	// cut it: the run is then incomplete. LoadUnmeasured says the run
	// issued fewer than MinLoadRPCs RPCs, too few for a rate: its load is
	// not judged.
	DeliveredBps   float64 `json:"delivered_bps"`
	DeliveredLoad  float64 `json:"delivered_load,omitempty"`
	LoadNotCarried bool    `json:"load_not_carried,omitempty"`
	LoadUnmeasured bool    `json:"load_unmeasured,omitempty"`
	// BusiestDownlinkBps is the largest rate, over the switch ports, of
	// bytes the switch sent to one host over Elapsed (Ethernet frames;
	// backend tc: the Homa frames of the as-delivered capture), and BusiestDownlinkLoad its fraction of
	// LinkBps: the load the busiest link really carried.
	BusiestDownlinkBps  float64 `json:"busiest_downlink_bps"`
	BusiestDownlinkLoad float64 `json:"busiest_downlink_load,omitempty"`
	// Latency of the completed RPCs (the agents' latency_ns).
	P50 time.Duration `json:"latency_p50_ns"`
	P99 time.Duration `json:"latency_p99_ns"`
	Max time.Duration `json:"latency_max_ns"`
	// Drops counts the switch's drops by reason (netem.DropReason names;
	// the switch's own losses, which the scenario did not ask for, under
	// "ingress", "ring", "unreadable", "oversize" and "send", each also a
	// warning; backend tc: the frames sent and never delivered, "plan"
	// when a drop rule of the plan matches them, else ReasonTC); PlanHits the fault plan's firings per
	// rule (index order; backend tc: the rules' nftables counters summed
	// over the switch ports); SwitchReadLagP99 how late the switch read
	// frames (see netem.Stats).
	Drops            map[string]uint64 `json:"drops"`
	PlanHits         []PlanHits        `json:"plan_hits,omitempty"`
	SwitchReadLagP99 time.Duration     `json:"switch_read_lag_p99_ns"`
	// CaptureKernelDrops are frames the capture lost (non-zero: the
	// check saw an incomplete capture).
	CaptureKernelDrops uint64 `json:"capture_kernel_drops"`
	// CaptureDropExcused counts the findings the check did not charge
	// because a frame the capture lost may explain them
	// (spec.Report.CaptureDropExcused, summed over the hosts' views): a
	// run with any is incomplete, as homatest check is on such a capture.
	CaptureDropExcused int `json:"capture_drop_excused,omitempty"`
	// CaptureReadErrors and SwitchReadErrors are frames the capture and
	// the switch could not read from their sockets (counted and skipped:
	// the run goes on), each with the first error. The capture reads a
	// receive ring the kernel fills at the tap, so its count stays 0 but
	// for a corrupt ring block; the switch reads GSO super-frames from its
	// socket later, EFAULT when HomaModule took back their pages first
	// (netem.DropUnreadable).
	CaptureReadErrors uint64 `json:"capture_read_errors,omitempty"`
	SwitchReadErrors  uint64 `json:"switch_read_errors,omitempty"`
	// Rules are the check's counts per rule over every host's view;
	// Violations the findings charged to a host (at most 20).
	Rules      []RuleRow   `json:"rules"`
	Violated   int         `json:"violated"`
	Violations []Violation `json:"violations,omitempty"`
	// InconclusiveCauses are the commonest causes of the rules that were
	// most often inconclusive (at least a tenth of their checks; up to
	// three rules), for the text summary: check.json has every kept
	// finding.
	InconclusiveCauses []InconclusiveCause `json:"inconclusive_causes,omitempty"`
	// MustViolated and ShouldViolated split Violated by level: a SHOULD
	// violation is a warning that does not fail the run (unless
	// Options.Strict, the CLI's --strict).
	MustViolated   int `json:"must_violated"`
	ShouldViolated int `json:"should_violated"`
	// Excused counts timing findings not charged because the host's timer
	// acted within spec.Params.Reaction of a delivery for the same RPC.
	Excused int `json:"excused"`
	// Altered counts findings not charged because a packet of their RPC
	// reached the host altered on the way (a corrupting link: no as-sent
	// packet matches it), so the host reacted to what it got
	// (spec.HostReport.Altered).
	Altered int `json:"altered"`
	// TimingInconclusive counts timing findings not charged because a
	// measured stall explains them (Result.Inconclusive; the first 20 in
	// Inconclusive, each with its stall); Stalls counts the stalls
	// measured in the run.
	TimingInconclusive int            `json:"timing_inconclusive"`
	Inconclusive       []Inconclusive `json:"inconclusive,omitempty"`
	Stalls             int            `json:"stalls"`
}

// InconclusiveCause is a rule's commonest reason for being inconclusive:
// Why is the reason of its kept inconclusive findings (spec.Report
// Inconclusive, at most spec.MaxFindings per rule and view) that most
// share it, a host's address written "a host" (it reads as a sentence); Alike counts those
// findings, Kept all kept; Inconclusive and Checked are the rule's counts.
type InconclusiveCause struct {
	Rule         string `json:"rule"`
	Inconclusive int    `json:"inconclusive"`
	Checked      int    `json:"checked"`
	Why          string `json:"why"`
	Alike        int    `json:"alike"`
	Kept         int    `json:"kept"`
}

// inconclusiveCauses picks InconclusiveCauses from the rule rows and the
// hosts' reports.
func inconclusiveCauses(rows []RuleRow, hosts []spec.HostReport) []InconclusiveCause {
	var top []RuleRow
	for _, r := range rows {
		if r.Inconclusive > 0 && r.Inconclusive*10 >= r.Checked {
			top = append(top, r)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Inconclusive > top[j].Inconclusive })
	var out []InconclusiveCause
	for _, r := range top[:min(3, len(top))] {
		count := map[string]int{}
		kept := 0
		for _, hr := range hosts {
			if hr.Report == nil {
				continue
			}
			for _, f := range hr.Report.Inconclusive {
				if f.Rule == r.ID {
					count[hostless(f.Why)]++
					kept++
				}
			}
		}
		c := InconclusiveCause{Rule: r.ID, Inconclusive: r.Inconclusive, Checked: r.Checked, Kept: kept}
		for why, n := range count {
			if n > c.Alike || n == c.Alike && why < c.Why {
				c.Why, c.Alike = why, n
			}
		}
		if c.Why != "" {
			out = append(out, c)
		}
	}
	return out
}

// hostless writes each IP address in why as "a host", so that one cause
// at several hosts counts as one.
func hostless(why string) string {
	words := strings.Fields(why)
	for i, w := range words {
		trimmed := strings.TrimRight(w, ",:;)")
		if a, err := netip.ParseAddr(trimmed); err == nil && a.IsValid() {
			words[i] = "a host" + w[len(trimmed):]
		}
	}
	return strings.Join(words, " ")
}

// PlanHits counts one plan rule's firings.
type PlanHits struct {
	Rule int    `json:"rule"`
	Name string `json:"name,omitempty"`
	Hits int    `json:"hits"`
}

// RuleRow is one rule's counts summed over the hosts' views; Violated
// counts only findings charged to the host whose view it was.
type RuleRow struct {
	ID           string `json:"id"`
	Level        string `json:"level"`
	Checked      int    `json:"checked"`
	Passed       int    `json:"passed"`
	Violated     int    `json:"violated"`
	Inconclusive int    `json:"inconclusive"`
}

// Violation is a finding charged to Host; Frame is the frame in
// sent.pcapng (Delivered false) or delivered.pcapng. The frame numbers in
// Finding.Why name their capture ("sent.pcapng frame 21"); Finding.Frame
// and Frames are positions in the host's view.
type Violation struct {
	Host      string       `json:"host"`
	Delivered bool         `json:"delivered"`
	Frame     int          `json:"frame"`
	Finding   spec.Finding `json:"finding"`
}

func summarize(res *Result, cst harness.CaptureStats) Summary {
	s := res.Scenario
	tr := res.Traffic
	sum := Summary{Name: s.Name, Seed: s.Seed, Dir: res.Dir, Env: s.Env, Backend: s.Link.Backend, RPCs: len(tr.Records), Elapsed: tr.Elapsed,
		LinkBps: float64(s.Link.Rate), OfferedBps: tr.OfferedBps, GoodputBps: tr.AchievedBps,
		Drops: map[string]uint64{}, SwitchReadLagP99: res.Switch.ReadLagP99, CaptureKernelDrops: cst.KernelDrops,
		CaptureReadErrors: cst.ReadErrors}
	for _, p := range cst.Ports {
		if p.ReadErrors > 0 {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("capture of %s: %d frames could not be read (first: %s)", p.Port, p.ReadErrors, p.FirstReadError))
		}
	}
	for _, p := range res.Switch.Ports {
		sum.SwitchReadErrors += p.Drops.Unreadable
		if p.Drops.Unreadable > 0 {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("switch port %s: %d frames could not be read (first: %s)", p.Name, p.Drops.Unreadable, p.FirstRxError))
		}
		if d := p.Drops; d.Unrequested() > d.Unreadable {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("switch port %s lost %d frames the scenario did not ask for (kernel drops on the port %d, receive ring full %d, too large to segment %d, refused on send %d): the emulation was not faithful there",
				p.Name, d.Unrequested()-d.Unreadable, d.Ingress, d.Ring, d.Oversize, d.Send))
		}
	}
	h := latency.New()
	for _, rec := range tr.Records {
		if rec.Err == "" {
			sum.OK++
			h.Record(int64(rec.Latency))
		}
	}
	if h.Count() > 0 {
		sum.P50, sum.P99, sum.Max = time.Duration(h.Quantile(0.5)), time.Duration(h.Quantile(0.99)), time.Duration(h.Max())
	}
	for _, rec := range tr.Records {
		if rec.Err == "" {
			continue
		}
		// A timed-out RPC is late by its life less what an RPC of the
		// run took (the median latency): the measured stalls must have
		// lost that much to explain it (stall.TimedOut). tr.Start is
		// zero in sim, where nothing stalls.
		from, to := tr.Start.Add(rec.At+rec.Lateness), tr.Start.Add(rec.Ended)
		late := max(0, to.Sub(from)-sum.P50)
		if sp := stall.TimedOut(rec.Err, from, to, late, res.Stalls); !tr.Start.IsZero() && len(sp) > 0 {
			sum.TimedOutInStall++
			if len(sum.StallTimeouts) < 10 {
				sum.StallTimeouts = append(sum.StallTimeouts, fmt.Sprintf("RPC %d (%s→%s, %d→%d bytes): %s, %v late (during: %s; %v lost in all)", rpcNumber(rec), hostName(rec.Client), hostName(rec.Server), rec.Request, rec.Response, rec.Err, late.Round(time.Millisecond), sp[0], stall.Lost(sp).Round(time.Millisecond)))
			}
			continue
		}
		sum.Failed++
		if len(sum.Errors) < 10 {
			sum.Errors = append(sum.Errors, fmt.Sprintf("RPC %d (%s→%s, %d→%d bytes): %s", rpcNumber(rec), hostName(rec.Client), hostName(rec.Server), rec.Request, rec.Response, rec.Err))
		}
	}
	for _, e := range tr.Errors {
		if len(sum.Errors) < 10 {
			sum.Errors = append(sum.Errors, e)
		}
	}
	if sum.Elapsed > 0 {
		for _, p := range res.Switch.Ports {
			sum.BusiestDownlinkBps = max(sum.BusiestDownlinkBps, float64(p.TxBytes)*8/sum.Elapsed.Seconds())
		}
		for _, n := range res.DeliveredBytes {
			sum.BusiestDownlinkBps = max(sum.BusiestDownlinkBps, float64(n)*8/sum.Elapsed.Seconds())
		}
	}
	sum.DeliveredBps = deliveredBps(tr, sum.LinkBps, sum.BusiestDownlinkBps)
	if sum.LinkBps > 0 {
		sum.OfferedLoad = sum.OfferedBps / sum.LinkBps
		sum.BusiestDownlinkLoad = sum.BusiestDownlinkBps / sum.LinkBps
		sum.DeliveredLoad = sum.DeliveredBps / sum.LinkBps
	}
	if s.Link.Backend == BackendTC {
		summarizeTC(&sum, res)
	} else {
		sum.Drops = res.Switch.Drops.ByReason()
		if s.Plan != nil {
			for i, r := range s.Plan.Rules {
				sum.PlanHits = append(sum.PlanHits, PlanHits{Rule: i, Name: r.Name})
			}
			for _, hit := range res.Switch.Hits {
				if hit.Rule >= 0 && hit.Rule < len(sum.PlanHits) {
					sum.PlanHits[hit.Rule].Hits++
				}
			}
		}
	}
	rows := map[string]*RuleRow{}
	var order []string
	for i, hr := range res.Hosts {
		// The columns add up: a violation the host's view found but
		// charged to another host (judged in that host's view) or excused
		// counts in none of them (HostReport.ChargedRules).
		for _, rr := range hr.ChargedRules() {
			row := rows[rr.ID]
			if row == nil {
				row = &RuleRow{ID: rr.ID, Level: rr.Level.String()}
				rows[rr.ID] = row
				order = append(order, rr.ID)
			}
			row.Checked += rr.Checked
			row.Passed += rr.Passed
			row.Violated += rr.Violated
			row.Inconclusive += rr.Inconclusive
		}
		sum.Excused += len(hr.Excused)
		sum.Altered += len(hr.Altered)
		if hr.Report != nil {
			sum.CaptureDropExcused += hr.Report.CaptureDropExcused
		}
		for _, v := range hr.Violations {
			sum.Violated++
			if v.Level == spec.Should {
				sum.ShouldViolated++
			} else {
				sum.MustViolated++
			}
			if len(sum.Violations) < 20 {
				// The view's frame numbers name no file: the reason's
				// name theirs (a line may cite frames of both captures).
				src, _ := hr.Source(v.Frame)
				f := v
				f.Why = hr.LocateText(v.Why, "sent.pcapng", "delivered.pcapng")
				sum.Violations = append(sum.Violations, Violation{Host: hostName(i), Delivered: src.Delivered, Frame: src.Frame, Finding: f})
			}
		}
	}
	sum.TimingInconclusive, sum.Stalls = len(res.Inconclusive), len(res.Stalls)
	sum.Inconclusive = res.Inconclusive[:min(20, len(res.Inconclusive))]
	sort.Strings(order)
	for _, id := range order {
		sum.Rules = append(sum.Rules, *rows[id])
	}
	sum.InconclusiveCauses = inconclusiveCauses(sum.Rules, res.Hosts)
	sum.LoadUnmeasured = s.Workload.Load > 0 && sum.RPCs < MinLoadRPCs
	sum.LoadNotCarried = s.Workload.Load > 0 && !sum.LoadUnmeasured && !faultsCutLoad(s, sum) && sum.loadShort()
	sum.judge(len(tr.Errors) > 0, res.strict)
	return sum
}

// judge sets Verdict and Incomplete from the counts: a failure (failed
// RPCs, errors outside single RPCs, MUST violations, with strict also
// SHOULD ones) fails the run whatever else; otherwise it is incomplete
// when it did not test what it set out to: a plan rule never fired (its
// match found no packet of the workload: a type, rpc or nth it never
// reached, or a real-time run too loaded to reach it, so the fault it
// injects went untested), the offered load was not carried
// (LoadNotCarried), or the capture lost frames a finding may rest on
// (CaptureDropExcused: it may as well be a violation).
func (sum *Summary) judge(errors, strict bool) {
	sum.Incomplete = nil
	for _, p := range sum.PlanHits {
		if p.Hits == 0 {
			sum.Incomplete = append(sum.Incomplete, fmt.Sprintf("plan rule %d %q never fired: no packet matched it, so the run did not test what it injects (check its match against the workload: type, rpc, nth, offsets)", p.Rule, p.Name))
		}
	}
	if sum.LoadNotCarried {
		sum.Incomplete = append(sum.Incomplete, sum.loadNotCarriedText())
	}
	if sum.captureLostJudged() {
		sum.Incomplete = append(sum.Incomplete, fmt.Sprintf("the capture lost %s, and %s may rest on them (not charged, not passed: only a capture without drops can tell); capture less (fewer hosts, a lower workload.load) or run on an idle machine",
			plural.Of64(sum.captureLost(), "frame", "frames"), plural.Of(sum.CaptureDropExcused, "finding", "findings")))
	}
	switch {
	case sum.Failed > 0 || sum.MustViolated > 0 || errors || strict && sum.ShouldViolated > 0:
		sum.Verdict = VerdictFail
	case len(sum.Incomplete) > 0:
		sum.Verdict = VerdictIncomplete
	default:
		sum.Verdict = VerdictPass
	}
}

// loadNotCarriedText is the Incomplete line of LoadNotCarried: what the
// completed RPCs carried, as a share of what the run could carry (what
// it offered, or the link's rate when it offered more), and what the
// busiest downlink ran at. In the simulator the machine plays no part,
// so it names the implementation, not the machine.
func (sum *Summary) loadNotCarriedText() string {
	var of string
	if sum.LinkBps > 0 && sum.OfferedBps > sum.LinkBps {
		of = fmt.Sprintf("%.0f%% of the link's %.1f Mbit/s (the %.1f Mbit/s offered is %.0f%% of the link; %.0f%% of it carried)",
			100*sum.DeliveredLoad, sum.LinkBps/1e6, sum.OfferedBps/1e6, 100*sum.OfferedLoad, 100*sum.DeliveredBps/sum.OfferedBps)
	} else {
		of = fmt.Sprintf("%.0f%% of the %.1f Mbit/s offered", 100*sum.DeliveredBps/sum.carriable(), sum.OfferedBps/1e6)
		if sum.LinkBps > 0 {
			of += fmt.Sprintf(" (%.0f%% of the link's %.1f Mbit/s)", 100*sum.OfferedLoad, sum.LinkBps/1e6)
		}
	}
	busiest := ""
	if sum.LinkBps > 0 {
		busiest = fmt.Sprintf(", and the busiest downlink ran at %.0f%% of the link", 100*sum.BusiestDownlinkLoad)
	}
	why := "the hosts, the switch or the capture fell behind; lower workload.load, use fewer hosts, or run on an idle machine"
	if sum.Env == EnvSim {
		why = "in the simulator the machine plays no part: the implementation did not keep up with the load; lower workload.load or use fewer hosts"
	}
	return fmt.Sprintf("offered load not carried: the completed RPCs carried %.1f Mbit/s per server, %s%s (a run must carry %.0f%% of what it offers, at most the link, or fill its busiest downlink to %.0f%%, to test its load): %s",
		sum.DeliveredBps/1e6, of, busiest, 100*CarriedFraction, 100*CarriedFraction, why)
}

// deliveredBps is tr.DeliveredBps over the time the run took to carry
// what it issued: to the last completion (Elapsed) less the time its
// largest request takes on an idle link of linkBps (0: none), as a run
// that kept up ends about one message after its last issue, but never
// less than the issuing period (tr.OfferedBps's) nor than the time the
// busiest downlink (busiestBps over Elapsed) needed for its bytes at
// linkBps, and never above linkBps: no link carries faster than its
// rate (the ports count frames without the preamble, FCS and gap that
// tr's wire bytes include, hence the cap), so the result cannot exceed
// what the links carried (w4 count 3 at load 0.5 on 1 Gbit/s read as
// carrying 469 % of the link while its busiest port ran at 95 %). Over
// Elapsed alone a run of a few RPCs whose last was 1 MB would read as
// carrying a part of what it offered.
func deliveredBps(tr *traffic.Result, linkBps, busiestBps float64) float64 {
	var last time.Duration
	most := 0
	for _, rec := range tr.Records {
		last, most = max(last, rec.At), max(most, rec.Request)
	}
	span := tr.Elapsed
	var busy time.Duration
	if linkBps > 0 {
		span -= time.Duration(float64(workload.HomaDataOverhead{}.WireBytes(most)) * 8 / linkBps * float64(time.Second))
		busy = time.Duration(float64(tr.Elapsed) * min(1, busiestBps/linkBps))
	}
	d := tr.DeliveredBps
	if span = max(span, last, busy); span > 0 {
		d *= tr.Elapsed.Seconds() / span.Seconds()
	}
	if linkBps > 0 {
		d = min(d, linkBps)
	}
	return d
}

// carriable is the load per server the run could carry: what it offered,
// at most the link's rate (an overload carries the link at best).
func (sum *Summary) carriable() float64 {
	if sum.LinkBps > 0 {
		return min(sum.OfferedBps, sum.LinkBps)
	}
	return sum.OfferedBps
}

// loadShort reports whether the completed RPCs carried less than
// CarriedFraction of what the run could carry while the busiest downlink
// ran below CarriedFraction of the link. A downlink that busy means the
// network, not the hosts, set the pace: a server's downlink carries its
// requests, its clients' responses, grants and headers, so an overload
// fills it with requests at well under its rate (two hosts sending each
// other W3 at 3.5 times 100 Mbit/s links: requests 66 % of the link,
// the busiest downlink 99.8 %), and that run carried all it could.
func (sum *Summary) loadShort() bool {
	c := sum.carriable()
	if c <= 0 || sum.DeliveredBps >= CarriedFraction*c {
		return false
	}
	return sum.LinkBps <= 0 || sum.BusiestDownlinkBps < CarriedFraction*sum.LinkBps
}

// faultsCutLoad reports whether scenario s injects faults meant to cut
// the load it carries: a lossy or corrupting link, or a plan whose rules
// fired on more than one RPC in a hundred (a rule or two that drop one
// packet each cut nothing measurable).
func faultsCutLoad(s *Scenario, sum Summary) bool {
	if s.Link.Loss != (netem.LossConfig{}) || s.Link.Corrupt > 0 {
		return true
	}
	hits := 0
	for _, p := range sum.PlanHits {
		hits += p.Hits
	}
	return hits*100 > sum.RPCs
}

// IncompleteHeadline says in a few words why an incomplete run is not a
// pass ("1 plan rule never fired; offered load not carried"), for the
// verdict line of the text and the report page.
func (s *Summary) IncompleteHeadline() string {
	var parts []string
	if n := s.neverFired(); n > 0 {
		parts = append(parts, plural.Of(n, "plan rule", "plan rules")+" never fired, so the run did not test "+plural.Word(n, "its fault", "their faults"))
	}
	if s.LoadNotCarried {
		if s.LinkBps > 0 && s.OfferedBps > s.LinkBps {
			parts = append(parts, fmt.Sprintf("offered load not carried (%.0f%% of the link it overloads)", 100*s.DeliveredLoad))
		} else {
			parts = append(parts, fmt.Sprintf("offered load not carried (%.0f%% of it)", 100*s.DeliveredBps/s.carriable()))
		}
	}
	if s.captureLostJudged() {
		parts = append(parts, "the capture lost "+plural.Of64(s.captureLost(), "frame", "frames"))
	}
	return strings.Join(parts, "; ")
}

// captureLost is the frames the capture lost: dropped by the kernel or
// unreadable (what the check was told it lost, Judge.CaptureDrops).
func (s *Summary) captureLost() uint64 { return s.CaptureKernelDrops + s.CaptureReadErrors }

// captureLostJudged reports whether frames the capture lost left the
// check unable to judge findings (CaptureDropExcused): the run is then
// incomplete.
func (s *Summary) captureLostJudged() bool { return s.captureLost() > 0 && s.CaptureDropExcused > 0 }

// neverFired counts the plan rules with no hit.
func (s *Summary) neverFired() int {
	n := 0
	for _, p := range s.PlanHits {
		if p.Hits == 0 {
			n++
		}
	}
	return n
}

// WriteText prints the summary for people: RPCs, throughput, latency,
// drops by reason, plan hits, the rule table and the violations.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	env := ""
	if s.Env == EnvSim {
		env = ", simulated"
	}
	stalled := ""
	if s.TimedOutInStall > 0 {
		stalled = fmt.Sprintf(", %d timed out during measured stalls (inconclusive)", s.TimedOutInStall)
	}
	fmt.Fprintf(&b, "scenario %s (seed %d%s): %s, %d ok, %d failed%s in %.2fs\n", s.Name, s.Seed, env, plural.Of(s.RPCs, "RPC", "RPCs"), s.OK, s.Failed, stalled, s.Elapsed.Seconds())
	for _, e := range s.StallTimeouts {
		fmt.Fprintf(&b, "  INCONCLUSIVE %s\n", e)
	}
	if s.LoadUnmeasured {
		fmt.Fprintf(&b, "  load: %s, too few to measure a rate (%d needed): not judged\n", plural.Of(s.RPCs, "RPC", "RPCs"), MinLoadRPCs)
	}
	if s.LinkBps > 0 {
		fmt.Fprintf(&b, "  load: offered %.1f Mbit/s per server (%.0f%% of %.0f Mbit/s); completed RPCs carried %.1f Mbit/s (%.0f%%); busiest downlink carried %.1f Mbit/s (%.0f%%); goodput %.1f Mbit/s\n",
			s.OfferedBps/1e6, 100*s.OfferedLoad, s.LinkBps/1e6, s.DeliveredBps/1e6, 100*s.DeliveredLoad, s.BusiestDownlinkBps/1e6, 100*s.BusiestDownlinkLoad, s.GoodputBps/1e6)
	} else {
		fmt.Fprintf(&b, "  load: offered %.1f Mbit/s per server; completed RPCs carried %.1f Mbit/s; busiest downlink carried %.1f Mbit/s; goodput %.1f Mbit/s\n",
			s.OfferedBps/1e6, s.DeliveredBps/1e6, s.BusiestDownlinkBps/1e6, s.GoodputBps/1e6)
	}
	fmt.Fprintf(&b, "  latency: p50 %v, p99 %v, max %v\n", s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.Max.Round(time.Microsecond))
	if s.Backend == BackendTC {
		fmt.Fprintf(&b, "  tc drops (sent, never delivered): plan %d, buffer or loss %d\n", s.Drops["plan"], s.Drops[ReasonTC])
	} else {
		fmt.Fprintf(&b, "  switch drops: plan %d, loss %d, buffer %d, corrupt %d, mtu %d; unasked: ingress %d, ring %d, unreadable %d, oversize %d, send %d; read lag p99 %v\n",
			s.Drops["plan"], s.Drops["loss"], s.Drops["buffer"], s.Drops["corrupt"], s.Drops["mtu"],
			s.Drops["ingress"], s.Drops["ring"], s.Drops["unreadable"], s.Drops["oversize"], s.Drops["send"], s.SwitchReadLagP99)
	}
	for _, p := range s.PlanHits {
		hits := "hits"
		if p.Hits == 1 {
			hits = "hit"
		}
		fmt.Fprintf(&b, "  plan rule %d %q: %d %s\n", p.Rule, p.Name, p.Hits, hits)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "  WARNING %s\n", w)
	}
	for _, w := range s.Incomplete {
		// A failed run is judged by its failures; what it left untested
		// is then a warning, as before the verdict counted it.
		kind := "INCOMPLETE"
		if s.Verdict != VerdictIncomplete {
			kind = "WARNING"
		}
		fmt.Fprintf(&b, "  %s %s\n", kind, w)
	}
	if s.CaptureKernelDrops > 0 && !s.captureLostJudged() {
		fmt.Fprintf(&b, "  WARNING: the capture lost %s (the check saw an incomplete capture)\n", plural.Of64(uint64(s.CaptureKernelDrops), "frame", "frames"))
	}
	if s.Altered > 0 {
		fmt.Fprintf(&b, "  %s not charged: a packet of the RPC reached the host altered on the way (link corrupt), and the host reacted to what it got\n", plural.Of(s.Altered, "finding", "findings"))
	}
	if s.Excused > 0 {
		fmt.Fprintf(&b, "  %s excused: a host's timer acted right after a packet of the same RPC was delivered to it (spec param reaction)\n", plural.Of(s.Excused, "timing finding", "timing findings"))
	}
	if s.TimingInconclusive > 0 {
		fmt.Fprintf(&b, "  %d timing findings inconclusive: a measured stall of this machine explains each (%d stalls measured; not charged, rerun on a quieter machine to judge them)\n", s.TimingInconclusive, s.Stalls)
		for _, in := range s.Inconclusive {
			fmt.Fprintf(&b, "  INCONCLUSIVE %s view: %s %s (during: %s)\n", in.Host, in.Finding.Rule, in.Finding.Why, in.Stall)
		}
	}
	fmt.Fprintf(&b, "  %-18s %-6s %9s %9s %8s %12s\n", "rule", "level", "checked", "passed", "violated", "inconclusive")
	for _, r := range s.Rules {
		if r.Checked == 0 && r.Violated == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %-18s %-6s %9d %9d %8d %12d\n", r.ID, r.Level, r.Checked, r.Passed, r.Violated, r.Inconclusive)
	}
	for _, c := range s.InconclusiveCauses {
		fmt.Fprintf(&b, "  inconclusive %s (%d of %d checked): %s (%d of %d kept in check.json)\n", c.Rule, c.Inconclusive, c.Checked, c.Why, c.Alike, c.Kept)
	}
	for _, v := range s.Violations {
		file := "sent.pcapng"
		if v.Delivered {
			file = "delivered.pcapng"
		}
		kind := "VIOLATION"
		if v.Finding.Level == spec.Should {
			kind = "WARNING (SHOULD)"
		}
		rpc := ""
		if v.Finding.RPC != nil {
			rpc = " " + v.Finding.RPC.Label()
		}
		fmt.Fprintf(&b, "  %s %s view, %s frame %d%s: %s %s\n", kind, v.Host, file, v.Frame, rpc, v.Finding.Rule, v.Finding.Why)
	}
	if s.Violated > len(s.Violations) {
		fmt.Fprintf(&b, "  … %s in check.json\n", plural.Of(s.Violated-len(s.Violations), "more violation", "more violations"))
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "  FAILED %s\n", e)
	}
	verdict := strings.ToUpper(s.Verdict)
	if s.Verdict == VerdictIncomplete {
		verdict += ": " + s.IncompleteHeadline()
	}
	fmt.Fprintf(&b, "%s; artifacts in %s\n", verdict, s.Dir)
	_, err := io.WriteString(w, b.String())
	return err
}

// summarizeTC fills in the tc backend's drops and plan hits, and warns
// when the frames the drop rules' nftables counters dropped are not as
// many as the lost frames the capture attributes to drop rules (tcDrops:
// the port's buffer or random loss dropped frames a drop rule matches, or
// the capture lost frames). The check is over all drop rules together:
// a frame two overlapping rules match is attributed to both.
func summarizeTC(sum *Summary, res *Result) {
	var attributed uint64
	sum.Drops["plan"], sum.Drops[ReasonTC] = 0, 0
	for _, d := range res.Drops {
		sum.Drops[d.Reason]++
		if len(d.Rules) > 0 {
			attributed++
		}
	}
	p := res.Scenario.Plan
	if p == nil {
		return
	}
	var dropHits uint64
	for i, r := range p.Rules {
		ph := PlanHits{Rule: i, Name: r.Name}
		if i < len(res.PlanHits) {
			ph.Hits = int(res.PlanHits[i])
		}
		sum.PlanHits = append(sum.PlanHits, ph)
		if r.Action.Drop {
			dropHits += uint64(ph.Hits)
		}
	}
	if dropHits != attributed {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("the plan's drop rules dropped %d frames (nftables counters), but %d frames sent and never delivered match a drop rule (the port's buffer or random loss dropped frames a drop rule matches, rules overlap, or the capture lost frames): drops.json may misattribute", dropHits, attributed))
	}
}
