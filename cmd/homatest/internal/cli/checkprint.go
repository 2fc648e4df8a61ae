package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// rpcString renders k as " rpc ID (client CLIENT, server SERVER)"
// (spec.RPCKey.Label), or "" for nil.
func rpcString(k *spec.RPCKey) string {
	if k == nil {
		return ""
	}
	return " " + k.Label()
}

// writeCheckText writes check's text report: per file its capture point,
// sidecars, host views, inferred parameters, violations (those charged to
// a tester marked), the table per rule, the downgrades and the verdict.
func writeCheckText(w io.Writer, reports []check.FileReport) error {
	ew := &errWriter{w: w}
	for _, fr := range reports {
		if fr.Error != "" {
			// The error goes to standard error (runCheck's exit line);
			// among other files' reports a line keeps its place, as
			// decode does, and a lone file has nothing else to say.
			if len(reports) > 1 {
				fmt.Fprintf(ew, "== %s: ERROR: %s\n\n", fr.File, fr.Error)
			}
			continue
		}
		rep := fr.Report
		fmt.Fprintf(ew, "== %s (profile %s): %s, %s\n", fr.File, rep.Profile, fr.HomaCount(), plural.Of(rep.RPCs, "RPC", "RPCs"))
		for _, c := range fr.CaptureComments {
			fmt.Fprintf(ew, "capture comment: %s\n", printable(c))
		}
		fmt.Fprintf(ew, "capture point: %s (%s)\n", fr.CapturePoint, fr.CapturePointWhy)
		if fr.TimeOrderHint != "" {
			fmt.Fprintf(ew, "timestamps: %s\n", fr.TimeOrderHint)
		}
		if n := fr.Stats.Other[pcap.OtherCopy]; n > 0 {
			fmt.Fprintf(ew, "copies: %s a packet's further sightings at other points of this capture (other interfaces, or sent and received on one, as tcpdump -i any sees a veth pair, a bridge and both its ports, a vlan device, or lo): each packet judged once, at its first sighting\n", plural.Of(n, "Homa frame is", "Homa frames are"))
		}
		if h := fr.Stats.SectionsNote(); h != "" {
			fmt.Fprintf(ew, "pcapng sections: %s\n", h)
		}
		if n := len(rep.Sections); n > 0 {
			fmt.Fprintf(ew, "sections: judged as %d independent sections, nothing judged across their starts (an answer not yet due when a section ends is inconclusive):\n", n+1)
			for _, s := range rep.Sections {
				fmt.Fprintf(ew, "  from frame %d: %s\n", s.Frame, s.Why)
			}
		}
		if w := gapsWarning(rep.TimeGaps); w != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", w)
		}
		if fr.NoTimeHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.NoTimeHint)
		}
		if fr.MergedHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.MergedHint)
		}
		if fr.SameInstantHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.SameInstantHint)
		}
		if fr.ReloadHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.ReloadHint)
		}
		if fr.OneEndHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.OneEndHint)
		}
		if fr.NothingJudged != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.NothingJudged)
		}
		if fr.SnapHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.SnapHint)
		}
		if fr.FrameHint != "" {
			fmt.Fprintf(ew, "WARNING: %s\n", fr.FrameHint)
		}
		if fr.CaptureDropsHint != "" {
			fmt.Fprintf(ew, "capture drops (%s): %s\n", fr.CaptureDropsFrom, fr.CaptureDropsHint)
		}
		if fr.WireMismatch != "" {
			// A forced --profile or --wire of another format: every finding
			// may be the decoder's misreading, not the hosts' fault.
			fmt.Fprintf(ew, "WARNING: %s\n", fr.WireMismatch)
		}
		if fr.ParamsFile != "" {
			fmt.Fprintf(ew, "parameters: the run's, from %s (--param overrides them)\n", fr.ParamsFile)
		}
		if fr.ParamsHint != "" {
			fmt.Fprintf(ew, "parameters: %s\n", fr.ParamsHint)
		}
		if fr.StallExcused > 0 {
			verb := "fall"
			if fr.StallExcused == 1 {
				verb = "falls"
			}
			fmt.Fprintf(ew, "stalls: %s %s in a stall the run measured (%s): inconclusive, as the run judged them\n", plural.Of(fr.StallExcused, "timing finding", "timing findings"), verb, fr.StallsFile)
		}
		if fr.StallsHint != "" {
			fmt.Fprintf(ew, "stalls: %s\n", fr.StallsHint)
		}
		for _, h := range fr.Hosts {
			fmt.Fprintf(ew, "  host %s (interface %s): %s charged", h.Host, printable(h.Interface), plural.Of(h.Violations, "violation", "violations"))
			if h.Excused > 0 {
				fmt.Fprintf(ew, ", %s excused (reaction)", plural.Of(h.Excused, "timing finding", "timing findings"))
			}
			if h.StallExcused > 0 {
				fmt.Fprintf(ew, ", %d excused by measured stalls", h.StallExcused)
			}
			fmt.Fprintln(ew)
		}
		if len(fr.NotApplicable) > 0 {
			verb := "do not apply"
			if len(fr.NotApplicable) == 1 {
				verb = "does not apply"
			}
			fmt.Fprintf(ew, "note: %s selected by --rules %s to profile %s: %s\n", plural.Of(len(fr.NotApplicable), "rule", "rules"), verb, rep.Profile, strings.Join(fr.NotApplicable, ", "))
		}
		if len(fr.Inferred) > 0 {
			writeInferred(ew, fr.Inferred)
		}
		if x := fr.WithInferred; x != nil {
			fmt.Fprintf(ew, "if the hosts ran with all of them (--param %s): %d MUST and %d SHOULD violations; pass them only if that is how the hosts were set up: a value they were not set to is the implementation's fault\n", strings.Join(x.Params, " --param "), x.Must, x.Should)
		}
		// A tester's deliberate packets of one kind (the noise
		// measurement's twenty ACKs, say) are one line: the first, with
		// how many there are.
		type deliberateKind struct{ rule, why string }
		deliberates := map[deliberateKind]int{}
		for i := range rep.Violations {
			if why, ok := check.Deliberate(&rep.Violations[i]); ok && fr.TesterCharged(&rep.Violations[i]) {
				deliberates[deliberateKind{rep.Violations[i].Rule, why}]++
			}
		}
		for _, v := range rep.Violations {
			tol := ""
			if v.Slack > 0 {
				tol = fmt.Sprintf(" [tolerance %v]", v.Slack)
			}
			frames := ""
			if len(v.Frames) > 0 {
				frames = " (see " + v.SeeFrames() + ")"
			}
			kind := string(v.Level.String())
			if v.Level == spec.Should {
				kind = "SHOULD (warning)"
			}
			who := ""
			if v.ChargedTo.IsValid() {
				who = ", charged to " + v.ChargedTo.String()
			}
			why, deliberate := check.Deliberate(&v)
			switch {
			case fr.TesterCharged(&v) && deliberate:
				k := deliberateKind{v.Rule, why}
				n := deliberates[k]
				if n == 0 {
					continue // its kind's line is printed
				}
				delete(deliberates, k)
				kind += " (expected: the tester broke it on purpose: " + why + ")"
				if n > 1 {
					kind += fmt.Sprintf(", %d such packets, the first at", n)
				}
			case fr.TesterCharged(&v):
				kind += " (charged to the tester)"
			}
			fmt.Fprintf(ew, "%s %s frame %d%s%s: %s%s%s\n", v.Rule, kind, v.Frame, rpcString(v.RPC), who, v.Why, frames, tol)
			if v.Hint != "" {
				fmt.Fprintf(ew, "    hint: %s\n", v.Hint)
			}
		}
		if n := missingMayExplain(fr); n > 0 {
			fmt.Fprintf(ew, "note: %s could also be a packet this capture missed (a tap or tcpdump that dropped frames looks the same); if it lost packets, pass --capture-drops N and such findings become inconclusive\n", plural.Of(n, "MUST violation without a hint", "MUST violations without a hint"))
		}
		fmt.Fprintf(ew, "\n%-18s %-6s %8s %8s %8s %12s %10s\n", "RULE", "LEVEL", "CHECKED", "PASSED", "VIOLATED", "INCONCLUSIVE", "TOLERANCE")
		var inc, exercised int
		for _, rr := range rep.Rules {
			tol := "-"
			if rr.MaxSlack > 0 {
				tol = rr.MaxSlack.Round(time.Microsecond).String()
			}
			fmt.Fprintf(ew, "%-18s %-6s %8d %8d %8d %12d %10s\n", rr.ID, rr.Level, rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive, tol)
			inc += rr.Inconclusive
			if rr.Checked > 0 {
				exercised++
			}
		}
		if n := rep.Downgraded(); n > 0 {
			fmt.Fprintf(ew, "\n%s downgraded to inconclusive by what the capture shows between the capture point and a host:\n", plural.Of(n, "finding", "findings"))
			for _, d := range rep.Downgrades {
				fmt.Fprintf(ew, "  %-18s %-30s %5d (first at frame %d)\n", d.Rule, d.Cause, d.Count, d.Frame)
			}
		}
		writeInconclusiveFirsts(ew, rep)
		verdict := map[string]string{"pass": "PASS", "warn": "PASS with warnings", "fail": "FAIL", "incomplete": "INCOMPLETE"}[fr.Verdict]
		downgraded := fmt.Sprintf("%d downgraded", rep.Downgraded())
		if rep.OneDirection {
			downgraded += "; " + string(spec.CauseOneDirection)
		}
		expected := ""
		if fr.Expected > 0 {
			expected = fmt.Sprintf(", %d charged to the tester (at packets it sent)", fr.Expected)
		}
		upTo := ""
		if fr.Damaged != "" {
			fmt.Fprintf(ew, "DAMAGED: %s\n", fr.Damaged)
			upTo = " in the " + plural.Of(fr.Stats.Frames, "frame", "frames") + " before the damage"
		}
		unread := ""
		if n := fr.Stats.SnapUnseen(); n > 0 {
			unread = fmt.Sprintf("; %d of %d Homa frames unreadable (snap length)", n, fr.Stats.Homa)
		}
		if n := fr.Stats.VersionMismatch; n > 0 && fr.WireMismatch != "" {
			unread += fmt.Sprintf("; %d of %d Homa packets decoded in another wire format than their IP protocol's (see WARNING above)", n, fr.Stats.Homa)
		}
		fmt.Fprintf(ew, "%s: %d MUST and %d SHOULD violations%s%s, %d inconclusive (%s); %d rules, %d exercised by this capture%s\n\n",
			verdict, fr.Must, fr.Should, upTo, expected, inc, downgraded, len(rep.Rules), exercised, unread)
	}
	return ew.err
}

// writeInconclusiveFirsts prints, for each rule with inconclusive
// findings, how many and the first one kept: why the capture could not
// decide (-o json lists them all, up to the report's cap).
func writeInconclusiveFirsts(w io.Writer, rep *spec.Report) {
	first := map[string]*spec.Finding{}
	for i := range rep.Inconclusive {
		f := &rep.Inconclusive[i]
		if first[f.Rule] == nil {
			first[f.Rule] = f
		}
	}
	head := false
	for _, rr := range rep.Rules {
		f := first[rr.ID]
		if rr.Inconclusive == 0 || f == nil {
			continue
		}
		if !head {
			fmt.Fprintf(w, "\ninconclusive, the first of each rule (-o json lists them):\n")
			head = true
		}
		fmt.Fprintf(w, "  %s (%d) frame %d%s: %s\n", rr.ID, rr.Inconclusive, f.Frame, rpcString(f.RPC), f.Why)
	}
}

// writeInferred prints the inferred parameters next to the profile's.
// missingMayExplain counts fr's MUST violations charged to a host that a
// packet missing from the capture might explain (spec.Finding
// MayRestOnMissing) and that no hint already covers, when the capture
// claims no drops: a silent capture loss and such a fault look alike.
func missingMayExplain(fr check.FileReport) int {
	if fr.Report.CaptureDrops > 0 {
		return 0
	}
	n := 0
	for i := range fr.Report.Violations {
		v := &fr.Report.Violations[i]
		if v.Level == spec.Must && v.Hint == "" && v.MayRestOnMissing() && !fr.TesterCharged(v) {
			n++
		}
	}
	return n
}

func writeInferred(w io.Writer, inf []check.InferredParam) {
	fmt.Fprintf(w, "parameters the capture implies (the --param to pass where they differ):\n")
	for _, x := range inf {
		v := x.Value
		if x.AtLeast {
			v = "≥ " + v
		}
		mark := " "
		if x.Differs {
			mark = "*"
		}
		fmt.Fprintf(w, " %s %-18s %-34s profile %-30s %s\n", mark, x.Name, v, x.Profile, x.Evidence)
	}
}

// writeJUnit writes the reports as JUnit XML (conformance.WriteJUnit), as
// read by CI systems: one test suite per file, one test case per rule; a
// violated rule is a failure listing its violations.
func writeJUnit(w io.Writer, reports []check.FileReport, strict bool) error {
	var js conformance.JUnitSuites
	for _, fr := range reports {
		s := conformance.JUnitSuite{Name: "homatest check " + fr.File}
		if fr.Error != "" {
			// Bad input is an error, not a failure of the capture (exit 2).
			s.Tests, s.Errors = 1, 1
			c := conformance.ErrorCase("capture", "error", fr.Error)
			c.Classname = "homa.capture"
			s.TestCases = []conformance.JUnitCase{*c}
			js.TestSuites = append(js.TestSuites, s)
			continue
		}
		byRule := map[string][]string{}
		counted := map[string]int{}
		for _, v := range fr.Report.Violations {
			line := fmt.Sprintf("frame %d%s: %s", v.Frame, rpcString(v.RPC), v.Why)
			if fr.TesterCharged(&v) {
				line += " (charged to the tester"
				if v.Note != "" {
					line += ": " + v.Note
				}
				line += ")"
			} else {
				counted[v.Rule]++
			}
			byRule[v.Rule] = append(byRule[v.Rule], line)
		}
		for _, rr := range fr.Report.Rules {
			c := conformance.JUnitCase{Name: rr.ID, Status: "passed", Classname: "homa." + strings.ToLower(strings.Split(rr.ID, "-")[1]),
				SystemOut: fmt.Sprintf("checked %d, passed %d, violated %d, inconclusive %d", rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive)}
			warn := rr.Level == spec.Should && !strict
			switch {
			case counted[rr.ID] > 0 && warn:
				// A SHOULD violation is a warning: reported, not failed.
				c.SystemOut += "\nWARNING: " + fmt.Sprintf("%s of SHOULD rule %s", plural.Of(rr.Violated, "violation", "violations"), rr.ID) + "\n" + strings.Join(byRule[rr.ID], "\n")
			case counted[rr.ID] > 0:
				c.Failure = &conformance.JUnitFailure{Message: fmt.Sprintf("%s of %s rule %s", plural.Of(rr.Violated, "violation", "violations"), rr.Level, rr.ID),
					Type: rr.Level.String(), Description: strings.Join(byRule[rr.ID], "\n")}
				c.Status = "failed"
				s.Failures++
			case len(byRule[rr.ID]) > 0:
				c.SystemOut += "\n" + strings.Join(byRule[rr.ID], "\n")
			case rr.Checked == 0:
				c.Skipped = &conformance.JUnitSkipped{Message: "not exercised by this capture"}
				c.Status = "skipped"
				s.Skipped++
			}
			s.TestCases = append(s.TestCases, c)
			s.Tests++
		}
		if msg := incompleteWhy(fr); msg != "" {
			s.TestCases = append(s.TestCases, conformance.JUnitCase{Name: "capture", Classname: "homa.capture", Status: "failed",
				Failure: &conformance.JUnitFailure{Message: msg, Type: "error", Description: msg}})
			s.Tests++
			s.Failures++
		}
		js.TestSuites = append(js.TestSuites, s)
	}
	return conformance.WriteJUnit(w, js)
}

// incompleteWhy says why fr could not be judged whole ("" when it
// could): the damage that cut the file short, the snap length that hid
// Homa headers, or the packets the capture dropped.
func incompleteWhy(fr check.FileReport) string {
	switch {
	case fr.Damaged != "":
		return fr.Damaged
	case fr.Verdict != "incomplete":
	case fr.SnapHint != "":
		// The snap length hid headers: the root of "one direction" or
		// "nothing judged" in such a capture.
		return fr.SnapHint
	case fr.MergedHint != "":
		return fr.MergedHint
	case fr.TimeOrderExcused > 0:
		return fr.TimeOrderHint
	case fr.NoTimeHint != "":
		return fr.NoTimeHint
	case fr.DoubledExcused > 0:
		return fr.SameInstantHint
	case fr.OneEndHint != "":
		return fr.OneEndHint
	case fr.NothingJudged != "":
		return fr.NothingJudged
	case fr.CaptureDropsHint != "":
		return fr.CaptureDropsHint
	default:
		// Every incomplete verdict exits 2, with or without a line of
		// its own saying why.
		return fr.File + ": incomplete: findings are inconclusive for what the capture did not show"
	}
	return ""
}

// incompleteBrief is incompleteWhy for the exit line on standard error
// after a text report, which already printed the reason in full (a
// WARNING or capture drops line): the file and the reason's name, so a
// terminal showing both does not read it twice. Other
// outputs (JSON, JUnit, HTML) are for programs and pages; there the exit
// line keeps incompleteWhy's whole text.
func incompleteBrief(fr check.FileReport) string {
	var what string
	switch {
	case fr.Damaged != "":
		// One line that names the file, as decode, rpcs and plot give
		// it for the same file: the error line of a damaged input.
		return fr.Damaged
	case fr.Verdict != "incomplete":
		return ""
	case fr.SnapHint != "":
		what = "the snap length cut Homa headers (see its WARNING)"
	case fr.MergedHint != "" && fr.BothDirections:
		what = "every packet counted twice: its frames carry both directions and --capture-point " + fr.CapturePoint + " judges them as one view (see its WARNING)"
	case fr.MergedHint != "":
		what = "looks like two captures merged (its WARNING says what shows it and how to split it)"
	case fr.TimeOrderExcused > 0:
		what = "a record lies far back in the file: violations where it was missing are inconclusive (see its timestamps line)"
	case fr.DoubledExcused > 0:
		what = "looks doubled: violations only its repeated frames make (see its WARNING)"
	case fr.OneEndHint != "":
		what = "one end of every host's link (see its WARNING)"
	case fr.NothingJudged != "":
		what = "no exchange judged (see its WARNING)"
	case fr.CaptureDropsHint != "":
		what = "findings rest on packets the capture dropped (see its capture drops line)"
	default:
		return incompleteWhy(fr)
	}
	return fr.File + ": incomplete: " + what
}

// printable is text from a capture (a section or frame comment, an
// interface name) made safe for a terminal, on one line: runs of white
// space, line breaks included, become single spaces (a capture comment
// may span lines); other characters that do not print (control
// characters such as ESC, which would start a terminal escape sequence,
// bidi overrides) are written as escapes (\x1b, \u202e), as are bytes
// that are not UTF-8 (\xff).
func printable(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && n == 1
		i += n
		if !bad && unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		switch {
		case bad:
			fmt.Fprintf(&b, `\x%02x`, s[i-1])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// gapsListed bounds the silences gapsWarning lists by frame.
const gapsListed = 8

// gapsWarning says the silences RPCs went on across (spec.TimeGap) in
// one paragraph: the first in full, the others by frame and length, with
// their count (their explanations are the first's). A capture away from
// its .params printed a near-identical paragraph for each (ten for the
// lab's incast capture). "" for none; JSON keeps every one.
func gapsWarning(gaps []spec.TimeGap) string {
	switch len(gaps) {
	case 0:
		return ""
	case 1:
		return gaps[0].Why
	}
	var at []string
	for _, g := range gaps[:min(len(gaps), gapsListed)] {
		at = append(at, fmt.Sprintf("%d (%v)", g.Frame, g.Gap.Round(time.Millisecond)))
	}
	if len(gaps) > gapsListed {
		at = append(at, fmt.Sprintf("%d more", len(gaps)-gapsListed))
	}
	return fmt.Sprintf("%d silences that RPCs went on across as if no time had passed (capture time jumps forward at frames %s); the first: %s",
		len(gaps), strings.Join(at, ", "), gaps[0].Why)
}
