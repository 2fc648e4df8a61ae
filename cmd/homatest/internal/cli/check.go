package cli

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

type checkOpts struct {
	profile string
	params  []string
	rules   string
	level   string
	output  string
	wire    string
	// annotate is the pcapng to write the checked capture to, each
	// violation a comment on its frame (--annotate).
	annotate string
}

func newCheckCmd() *cobra.Command {
	o := &checkOpts{}
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Check captures against the Homa spec rules",
		Long: `Check streams each capture through the spec's rules (see "homatest spec list")
and reports every violation with its rule ID, level, frame number, RPC and a
one-line reason with the numbers involved, then a table per rule: how often it
was checked, passed, violated, or could not be decided from the capture
(inconclusive: e.g. the state it needs is not in the capture, or the capture
ended before a deadline).

Parameters come from a profile (--profile: linux = HomaModule main,
linux-2024 = linux_6.1.38, upstream; auto picks by wire format) and can be
overridden one by one with --param NAME=VALUE (names are HomaModule's sysctl
names: unsched_bytes, resend_ticks, ...; see "homatest spec params"). Timing
rules allow the slack parameter on top of their bounds and report the slack
they used.

Capture point matters: take captures on the path between hosts (a switch
port, or the host side of a veth before GRO). Host taps on a receiver miss
GRO-batched packets. Each file is checked on its own.

--annotate OUT writes the capture back as pcapng with each violation as a
packet comment on its frame ("RULE LEVEL: reason"; Wireshark shows them as
frame.comment, and the dissector of homatest wireshark dissector as Expert
Info).

Exit codes: 0 no violation, 1 violations, 2 bad input (unreadable capture,
no Homa packets, bad flags).`,
		Example: `  # check a capture with HomaModule main defaults
  homatest check capture.pcap

  # the captures in pcap/testdata/real ran with the timer sysctls scaled x10
  homatest check --param resend_ticks=50 --param resend_interval=50 \
      --param timeout_ticks=1000 --param request_ack_ticks=20 c.pcap

  # the capture with every violation as a packet comment, for Wireshark
  homatest check --annotate findings.pcapng capture.pcap

  # only grant rules, MUST level, as JUnit for CI
  homatest check --rules 'HOMA-GRANT-*' --level must -o junit run.pcapng > junit.xml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("check needs at least one capture file (see homatest check --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(cmd, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "auto", "parameter profile: auto, linux, linux-2024 or upstream")
	f.StringArrayVar(&o.params, "param", nil, "override a parameter: NAME=VALUE (repeatable)")
	f.StringVar(&o.rules, "rules", "", "rule ID glob(s), comma-separated, e.g. 'HOMA-GRANT-*,HOMA-ACK-002'")
	f.StringVar(&o.level, "level", "should", "lowest level to check: must (MUST rules only) or should (all)")
	outputVar(f, &o.output, "junit is JUnit XML for CI, html a report page", "text", "json", "junit", "html")
	f.StringVar(&o.annotate, "annotate", "", "write the capture to this pcapng with each violation as a packet comment on its frame (Wireshark: frame.comment); one FILE only")
	f.StringVar(&o.wire, "wire", "", "wire format: current, 2024 or upstream (default: the profile's; with --profile auto it also picks the profile)")
	return cmd
}

// fileReport is the result of checking one file (Error set if it could
// not be checked).
type fileReport struct {
	File    string            `json:"file"`
	Error   string            `json:"error,omitempty"`
	Profile string            `json:"profile,omitempty"`
	Params  map[string]string `json:"params,omitempty"`
	// NotApplicable lists selected rules that do not apply to the profile.
	NotApplicable []string     `json:"not_applicable,omitempty"`
	Report        *spec.Report `json:"report,omitempty"`
	Stats         *pcap.Stats  `json:"capture,omitempty"`
}

func paramMap(p *spec.Params) map[string]string {
	m := map[string]string{}
	for _, n := range spec.ParamNames() {
		m[n], _ = p.Get(n)
	}
	return m
}

func runCheck(cmd *cobra.Command, o *checkOpts, files []string) error {
	var lvl spec.Level
	switch strings.ToLower(o.level) {
	case "must":
		lvl = spec.Must
	case "should":
		lvl = spec.Should
	default:
		return usageErr(fmt.Errorf("--level %q: want must or should", o.level))
	}
	forced := wire.VersionAuto
	if o.wire != "" {
		v, err := wire.ParseVersion(o.wire)
		if err != nil {
			return usageErr(fmt.Errorf("--wire: %w", err))
		}
		forced = v
	}
	if o.profile != "auto" {
		if _, err := spec.LookupProfile(o.profile); err != nil {
			return usageErr(fmt.Errorf("--profile: %w", err))
		}
	}
	// Validate --param and --rules once, against the linux profile, so a
	// typo fails before any file is read.
	probe := spec.Profiles()[0].Params
	for _, kv := range o.params {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return usageErr(fmt.Errorf("--param %q: want NAME=VALUE", kv))
		}
		if err := probe.Set(name, val); err != nil {
			return usageErr(fmt.Errorf("--param: %w", err))
		}
	}
	if _, err := spec.Select(spec.Rules(), o.rules, lvl, ""); err != nil {
		return usageErr(fmt.Errorf("--rules: %w", err))
	}
	if o.annotate != "" && len(files) != 1 {
		return usageErr(fmt.Errorf("--annotate writes one capture: give one FILE (got %d)", len(files)))
	}
	var reports []fileReport
	failed := 0
	for _, file := range files {
		fr := checkFile(o, file, lvl, forced)
		if fr.Error != "" {
			failed++
		}
		reports = append(reports, fr)
	}
	out := cmd.OutOrStdout()
	var werr error
	switch o.output {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		werr = enc.Encode(map[string]any{"files": reports})
	case "junit":
		werr = writeJUnit(out, reports)
	case "html":
		werr = writeCheckHTML(out, o, reports)
	default:
		werr = writeCheckText(out, reports)
	}
	if werr != nil {
		return usageErr(fmt.Errorf("write output: %w", werr))
	}
	if o.annotate != "" && reports[0].Error == "" {
		if err := writeAnnotated(cmd.ErrOrStderr(), o.annotate, files[0], reports[0].Report); err != nil {
			return usageErr(err)
		}
	}
	if failed > 0 {
		var msgs []string
		for _, r := range reports {
			if r.Error != "" {
				msgs = append(msgs, r.Error)
			}
		}
		return usageErr(errors.New(strings.Join(msgs, "; ")))
	}
	for _, r := range reports {
		if r.Report.Violated() {
			return &ExitError{Code: ExitViolations, Err: errors.New("rule violations found")}
		}
	}
	return nil
}

// checkFile checks one capture; errors are returned in the report.
func checkFile(o *checkOpts, file string, lvl spec.Level, forced wire.Version) fileReport {
	fr := fileReport{File: file}
	detected, shift, err := prescan(file)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	profile := o.profile
	if profile == "auto" {
		profile = detected
		if forced != wire.VersionAuto {
			profile = profileForWire(forced)
		}
	}
	prof, _ := spec.LookupProfile(profile)
	params := prof.Params
	for _, kv := range o.params {
		name, val, _ := strings.Cut(kv, "=")
		if err := params.Set(name, val); err != nil {
			fr.Error = "--param: " + err.Error()
			return fr
		}
	}
	all, _ := spec.Select(spec.Rules(), o.rules, lvl, "")
	rules, _ := spec.Select(spec.Rules(), o.rules, lvl, profile)
	if len(rules) < len(all) {
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
	c := spec.NewChecker(profile, params, rules)
	st, err := streamEvents(file, pcap.ReaderOptions{Version: v, IPv6PriorityShift: shift}, c.Feed)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	fr.Profile, fr.Params, fr.Report, fr.Stats = profile, paramMap(&params), c.Finish(), &st
	if fr.Report.Violations == nil {
		fr.Report.Violations = []spec.Finding{}
	}
	return fr
}

func rpcString(k *spec.RPCKey) string {
	if k == nil {
		return ""
	}
	return fmt.Sprintf(" rpc %d (%v > %v)", k.ClientID, k.Client, k.Server)
}

func writeCheckText(w io.Writer, reports []fileReport) error {
	ew := &errWriter{w: w}
	for _, fr := range reports {
		if fr.Error != "" {
			fmt.Fprintf(ew, "== %s: ERROR: %s\n\n", fr.File, fr.Error)
			continue
		}
		rep := fr.Report
		fmt.Fprintf(ew, "== %s (profile %s): %d Homa packets, %d RPCs\n", fr.File, rep.Profile, fr.Stats.Homa, rep.RPCs)
		if len(fr.NotApplicable) > 0 {
			fmt.Fprintf(ew, "note: %d selected rules do not apply to profile %s: %s\n", len(fr.NotApplicable), rep.Profile, strings.Join(fr.NotApplicable, ", "))
		}
		for _, v := range rep.Violations {
			tol := ""
			if v.Slack > 0 {
				tol = fmt.Sprintf(" [tolerance %v]", v.Slack)
			}
			frames := ""
			if len(v.Frames) > 0 {
				frames = fmt.Sprintf(" (see frames %s)", intsString(v.Frames))
			}
			fmt.Fprintf(ew, "%s %s frame %d%s: %s%s%s\n", v.Rule, v.Level, v.Frame, rpcString(v.RPC), v.Why, frames, tol)
		}
		fmt.Fprintf(ew, "\n%-18s %-6s %8s %8s %8s %12s %10s\n", "RULE", "LEVEL", "CHECKED", "PASSED", "VIOLATED", "INCONCLUSIVE", "TOLERANCE")
		var must, should, inc, exercised int
		for _, rr := range rep.Rules {
			tol := "-"
			if rr.MaxSlack > 0 {
				tol = rr.MaxSlack.Round(time.Microsecond).String()
			}
			fmt.Fprintf(ew, "%-18s %-6s %8d %8d %8d %12d %10s\n", rr.ID, rr.Level, rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive, tol)
			if rr.Level == spec.Must {
				must += rr.Violated
			} else {
				should += rr.Violated
			}
			inc += rr.Inconclusive
			if rr.Checked > 0 {
				exercised++
			}
		}
		verdict := "PASS"
		if must+should > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(ew, "%s: %d MUST and %d SHOULD violations, %d inconclusive; %d rules, %d exercised by this capture\n\n",
			verdict, must, should, inc, len(rep.Rules), exercised)
	}
	return ew.err
}

func intsString(a []int) string {
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// JUnit XML, as read by CI systems: one test suite per file, one test case
// per rule; a violated rule is a failure listing its violations.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func writeJUnit(w io.Writer, reports []fileReport) error {
	var js junitSuites
	for _, fr := range reports {
		s := junitSuite{Name: "homatest check " + fr.File}
		if fr.Error != "" {
			s.Tests, s.Failures = 1, 1
			s.Cases = []junitCase{{Name: "capture", Classname: "homa.capture",
				Failure: &junitFailure{Message: fr.Error, Type: "error", Text: fr.Error}}}
			js.Suites = append(js.Suites, s)
			continue
		}
		byRule := map[string][]string{}
		for _, v := range fr.Report.Violations {
			byRule[v.Rule] = append(byRule[v.Rule], fmt.Sprintf("frame %d%s: %s", v.Frame, rpcString(v.RPC), v.Why))
		}
		for _, rr := range fr.Report.Rules {
			c := junitCase{Name: rr.ID, Classname: "homa." + strings.ToLower(strings.Split(rr.ID, "-")[1]),
				SystemOut: fmt.Sprintf("checked %d, passed %d, violated %d, inconclusive %d", rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive)}
			switch {
			case rr.Violated > 0:
				c.Failure = &junitFailure{Message: fmt.Sprintf("%d violations of %s rule %s", rr.Violated, rr.Level, rr.ID),
					Type: rr.Level.String(), Text: strings.Join(byRule[rr.ID], "\n")}
				s.Failures++
			case rr.Checked == 0:
				c.Skipped = &junitSkipped{Message: "not exercised by this capture"}
				s.Skipped++
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		js.Suites = append(js.Suites, s)
	}
	return writeJUnitSuites(w, js)
}

// writeJUnitSuites writes js as an indented XML document.
func writeJUnitSuites(w io.Writer, js junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(js); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
