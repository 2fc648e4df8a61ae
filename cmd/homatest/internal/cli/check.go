package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

type checkOpts struct {
	profile      string
	params       []string
	rules        string
	level        string
	output       string
	wire         string
	capturePoint string
	strict       bool
	inferParams  bool
	// captureDrops is --capture-drops: packets the capture dropped
	// itself.
	captureDrops uint64
	// quiet is --quiet: no progress line.
	quiet bool
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
and reports every violation with its rule ID, level, frame number, RPC, the
host it is charged to and a one-line reason with the numbers involved, then a
table per rule: how often it was checked, passed, violated, or could not be
decided from the capture (inconclusive: e.g. the state it needs is not in the
capture, or the capture ended before a deadline). Each pcapng section-header
comment (e.g. why a failed spec's capture was written; a file of several
sections can have several) is printed as "capture comment: ...", on one
line, characters that do not print escaped (\x1b); JSON: capture_comments,
all in file order, and capture_comment, the first.

Several FILEs are separate captures: each is judged alone (its own
checker, parameters, capture point and verdict), all at once on every
core, and reported in the order given, which changes nothing else. The
parts of one capture (tcpdump -C or -G) are so judged each alone, RPCs
across their boundaries inconclusive; to judge them as one capture, join
them first: mergecap -w all.pcapng PART... (mergecap orders the frames by
timestamp whatever the order of the parts; -a would keep that order).

Levels: a MUST violation fails the check (exit 1); a SHOULD violation is a
warning (exit 0) unless --strict, which fails on warnings too (h2spec's
convention).

Capture point (--capture-point): where the capture was taken decides what a
finding can mean. A rule that judges what a host received or sent is
inconclusive, not violated, where loss, reordering or duplication between the
capture point and that host explains the trace and the capture shows that
effect (a receiver asking again for bytes the capture saw, a gap filled late,
an identical copy); the report counts these downgrades by rule and cause.
  auto        infer it, and say why (the default)
  switch      a tap between the hosts (a mirror or bridge port)
  host:ADDR   a tap on host ADDR's own link (its packets as it sent and got them):
              sent for what ADDR sent, delivered for what it received
  sent        every packet as its sender sent it (a run's sent.pcapng)
  delivered   every packet as it was delivered (a run's delivered.pcapng): the
              whole network lies before it, so a packet missing there, or
              later than ones its sender sent after it, may be the network's
  ports       one pcapng interface per switch port with both directions in
              epb_flags (a run's capture.pcapng): each host judged on its own
              link, so no packet counts twice
The point names where the frames were taken; it selects none: sent or
delivered given for a capture.pcapng judges both directions as one view, every
packet twice (extract one first: tshark -r capture.pcapng -Y
'frame.packet_flags_direction==1' -w sent.pcapng, or ==2 for delivered); one
port's interface (-Y 'frame.interface_id==N') is a tap on its host's link:
judge it at host:ADDR.
tcpdump on a HomaModule host is none of these: under its default gro_policy
the module's GRO handler passes GRANTs and single-packet messages straight to
its SoftIRQ handler, so such a capture lacks them (its DATA then look sent
past their grants); capture on a mirror port or a tap on the link instead.
A capture whose frames appear twice at the same instant where it cannot
say where each was taken (a classic Ethernet pcap merged with itself, two
captures of one interface merged): when at least a fifth of its Homa
frames so repeat an earlier one, a WARNING says so and how to remove them
(editcap -d), and each violation that disappears without them says so in
its hint. Those violations stand (a host that sends its packets twice at
once breaks the rules too); a capture that shows the capture points
(pcapng interfaces, Linux cooked headers: tcpdump -i any sees a packet on
both ends of a veth pair, or on a bridge and both its ports) has each
packet's sightings at different points counted once.
Findings at frames a tester marked as broken on purpose (pcapng comment
"homatest tester: deliberate ...") are charged to the tester and do not fail.

Parameters come from a profile (--profile: linux = HomaModule main,
linux-2024 = linux_6.1.38, linux-2025 = main 2024-12..2025-07 and
linux_6.10.6, upstream; auto picks by wire format) and can be overridden
one by one with --param NAME=VALUE (names are HomaModule's sysctl names:
unsched_bytes, resend_ticks, ...; see "homatest spec params"). IPv6
priorities: each host's shift is detected from its traffic classes; a host
that never sent a class only one shift writes is judged "level p or 2p"
unless --param ipv6_prio_shift=4 or 5 names its build. Timing
rules allow the slack parameter on top of their bounds and report the slack
they used. --infer-params prints the values the capture implies next to the
profile's; whenever a check finds violations it infers them too, and a
violation that disappears under an inferred value names the --param to pass.

Sidecar files: a capture homatest run or scenario run wrote has the
parameters the run judged with beside it, FILE.params (NAME=VALUE lines,
the wire format among them), and the stalls it measured, FILE.stalls.json
(scenario run: stalls.json in its folder). A FILE.params is applied over
the profile, --param over both; the report says "parameters: the run's,
from FILE.params" (JSON params_file). With --profile NAME (not auto)
and a FILE.params naming another wire format (wire=current beside
--profile upstream), a WARNING on standard error names the values the
file sets otherwise (JSON profile_overridden): the file's were used, so
move the file away, or give the profile's values with --param, to judge
with the profile alone. A copy cut with editcap or renamed carries no
sidecar: copy them to its name.

A capture that dropped packets itself (its buffer overflowed, or it could not
read frames) misses packets
the hosts did send and get: a GRANT it missed makes DATA look ungranted, a
RESEND a retransmission unrequested, a NEED_ACK an ACK unprompted. A pcapng
declares such drops in its interface statistics (isb_ifdrop, as dumpcap and
homatest's own captures write it); for a classic pcap give the count tcpdump
printed ("N packets dropped by kernel") with --capture-drops N (the larger of
the two counts is used; N applies to every FILE). With drops, every violation that rests on a packet not being
seen is inconclusive (cause "capture dropped packets"), as long as the
violations are at no more RPCs than the missing packets can touch (each
belongs to one RPC, an ACK to up to max_acks_per_pkt+1); past that they stay
violations. Findings about a packet's own fields always stand. The report
says how many findings the drops made inconclusive (JSON capture_drops,
capture_drop_excused, capture_drops_hint).

--annotate OUT writes the capture back as pcapng (an OUT named .pcap is
refused; a pcapng's sections are kept) with each violation as a packet comment on its frame ("RULE LEVEL: reason"; Wireshark shows them as
frame.comment, and the dissector of homatest wireshark dissector as Expert
Info).

Exit codes: 0 no MUST violation (and with --strict no SHOULD violation),
1 violations, 2 bad input (unreadable or cut capture, no Homa packets, bad
flags; a --rules and --level that select no rule, such as a SHOULD rule at
--level must), 130 interrupted (Ctrl-C, SIGINT or SIGTERM: the check stops within
a batch of frames, prints no verdict and writes no --annotate file). 2 wins: with several FILEs, one that cannot be checked makes the
exit 2 even when others have violations (their reports still print them,
and the error line names the files that failed their check). An
INCOMPLETE file's reason is said once in the text report (its WARNING
line); the exit line on standard error then names the file and the cause
in a few words (in full after -o json, junit or html). A capture cut
short or damaged part-way (tcpdump killed mid-write, a full disk) is judged
up to the damage, as if it had stopped there: its report says so (DAMAGED,
JSON "damaged"), its verdict is INCOMPLETE unless a MUST violation before the
damage fails it, and the exit is still 2, since what came after is unknown.
Frames whose Homa header the snap length cut are unseen packets (a
WARNING line says how many), except to the rules of a packet's own common
and IP header, which judge those that kept the 28-byte common header; when
the unseen frames outnumber the others, or a finding is inconclusive as
perhaps resting on a packet not seen, the verdict is INCOMPLETE (unless a
MUST violation fails it) and the exit 2: not evidence enough to pass. So
it is when no RPC was heard from both sides (a slice of a few frames:
nothing but single packets judged), and when the capture looks like two
captures merged with overlapping times (one host's RPC ids reused by two
module instances: a WARNING says what shows it and how to split it, and
every violation is inconclusive).`,
		Example: `  # check a capture with HomaModule main defaults
  homatest check capture.pcap

  # the captures in pcap/testdata/real ran with the timer sysctls scaled x10
  homatest check --param resend_ticks=50 --param resend_interval=50 \
      --param timeout_ticks=1000 --param request_ack_ticks=20 c.pcap

  # what the capture implies about the hosts' parameters
  homatest check --infer-params c.pcap

  # a homatest run's capture of every switch port, each host on its own link
  homatest check homatest-runs/20260101-120000-4242/pass-1/capture.pcapng

  # a tcpdump on host 10.0.0.1; fail on SHOULD warnings too
  homatest check --capture-point host:10.0.0.1 --strict server.pcap

  # tcpdump said "3 packets dropped by kernel" when it stopped
  homatest check --capture-drops 3 capture.pcap

  # the capture with every violation as a packet comment, for Wireshark
  homatest check --annotate findings.pcapng capture.pcap

  # only grant rules, MUST level, as JUnit for CI
  homatest check --rules 'HOMA-GRANT-*' --level must -o junit run.pcapng > junit.xml`,
		Args: captureArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(cmd, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "auto", "parameter profile: auto, linux, linux-2024, linux-2025 or upstream")
	f.StringArrayVar(&o.params, "param", nil, "override a parameter: NAME=VALUE (repeatable)")
	f.StringVar(&o.rules, "rules", "", "rule ID glob(s), comma-separated, e.g. 'HOMA-GRANT-*,HOMA-ACK-002'")
	f.StringVar(&o.level, "level", "should", "lowest level to check: must (MUST rules only) or should (all)")
	outputVar(f, &o.output, "junit is JUnit XML for CI, html a report page", "text", "json", "junit", "html")
	f.StringVar(&o.annotate, "annotate", "", "write the capture to this pcapng with each violation as a packet comment on its frame (Wireshark: frame.comment); one FILE only")
	f.StringVar(&o.wire, "wire", "", "wire format: auto, current, 2024, upstream or 2025 (default auto: the profile's; a format given with --profile auto also picks the profile)")
	f.StringVar(&o.capturePoint, "capture-point", "auto", "where the capture was taken: auto, switch (every packet of the hosts crosses the tap), host:ADDR, sent, delivered or ports; it selects no frames (extract one direction with tshark -Y 'frame.packet_flags_direction==1' (sent) or ==2 (delivered))")
	f.BoolVar(&o.strict, "strict", false, "fail (exit 1) on SHOULD violations too; by default they are warnings")
	f.BoolVar(&o.inferParams, "infer-params", false, "print the parameters the capture implies next to the profile's")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line on standard error (shown on a terminal, or in a log once a check has run "+checkQuiet.String()+")")
	f.Uint64Var(&o.captureDrops, "capture-drops", 0, "the capture dropped `N` packets itself (tcpdump's \"N packets dropped by kernel\"): findings that rest on a packet not seen become inconclusive; a pcapng's interface statistics declare it too (the larger count is used)")
	return cmd
}

func runCheck(cmd *cobra.Command, o *checkOpts, files []string) error {
	lvl, err := parseLevel(o.level)
	if err != nil {
		return usageErr(err)
	}
	forced := wire.VersionAuto
	if o.wire != "" {
		v, err := wire.ParseVersion(o.wire)
		if err != nil {
			return usageErr(fmt.Errorf("--wire: %w", err))
		}
		forced = v
	}
	co := check.Options{Profile: o.profile, Params: o.params, Rules: o.rules, Level: lvl, Wire: forced,
		CapturePoint: o.capturePoint, Strict: o.strict, InferParams: o.inferParams, CaptureDrops: o.captureDrops}
	if err := co.Validate(); err != nil {
		return usageErr(err)
	}
	if o.annotate != "" && len(files) != 1 {
		return usageErr(fmt.Errorf("--annotate writes one capture: give one FILE (got %d)", len(files)))
	}
	if o.annotate != "" && sameFile(o.annotate, files[0]) {
		return usageErr(fmt.Errorf("--annotate %s is the capture being checked: write the annotated copy to another file", o.annotate))
	}
	if ext := strings.ToLower(filepath.Ext(o.annotate)); ext == ".pcap" || ext == ".cap" {
		// The comments need pcapng: a .pcap name would make tools that
		// trust the name read it as classic pcap.
		return usageErr(fmt.Errorf("--annotate %s: the annotated copy is pcapng (classic pcap has no packet comments): name it %s.pcapng", o.annotate, strings.TrimSuffix(o.annotate, filepath.Ext(o.annotate))))
	}
	if err := checkOutputFile("--annotate", o.annotate); err != nil {
		return usageErr(err)
	}
	co.Context = cmd.Context()
	stop := o.progress(cmd.ErrOrStderr(), &co)
	reports := check.Files(co, files)
	stop()
	if err := interruptedRead(co.Context, nil); err != nil {
		return err
	}
	failed := 0
	for _, fr := range reports {
		if fr.Error != "" || incompleteWhy(fr) != "" {
			failed++
		}
	}
	out := cmd.OutOrStdout()
	var werr error
	switch o.output {
	case "json":
		werr = jsonout.Write(out, map[string]any{"verdict": checkVerdict(reports), "files": reports})
	case "junit":
		werr = writeJUnit(out, reports, o.strict)
	case "html":
		werr = writeCheckHTML(out, o, reports)
	default:
		werr = writeCheckText(out, reports)
	}
	if werr != nil {
		return usageErr(fmt.Errorf("write output: %w", werr))
	}
	for _, fr := range reports {
		if fr.ProfileOverridden != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "homatest: WARNING: %s: %s\n", fr.File, fr.ProfileOverridden)
		}
	}
	if o.annotate != "" && reports[0].Error == "" {
		if reports[0].Damaged != "" {
			// The copy is written frame by frame from the input: it would
			// stop at the damage with a write error that blames OUT.
			return usageErr(fmt.Errorf("--annotate %s: not written: %s", o.annotate, reports[0].Damaged))
		}
		if st := reports[0].Stats; st != nil && len(st.SectionCuts) > 0 {
			// A cut block cannot be written as it is, and written whole
			// the cut section would not read as the input's does (its
			// frames then read twice).
			c := st.SectionCuts[0]
			return usageErr(fmt.Errorf("--annotate %s: not written: section %d of the capture is cut short in mid-block after frame %d, another section following, which a pcapng copy cannot keep (the findings are in this report)", o.annotate, c.Section, c.AfterFrame))
		}
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
			why := incompleteWhy(r)
			if o.output == "text" {
				why = incompleteBrief(r)
			}
			if why != "" {
				msgs = append(msgs, why)
			}
		}
		// Exit 2 wins over 1; the line still says which files failed
		// their check, since the exit code cannot.
		if v := violatedFiles(reports); len(v) > 0 {
			msgs = append(msgs, "rule violations found in "+strings.Join(v, ", "))
		}
		return usageErr(errors.New(strings.Join(msgs, "; ")))
	}
	if len(violatedFiles(reports)) > 0 {
		return &ExitError{Code: ExitViolations, Err: errors.New("rule violations found")}
	}
	return nil
}

// checkQuiet is how long a check runs before its progress line shows in
// a log (stderr not a terminal): a short check prints nothing but its
// report.
const checkQuiet = 5 * time.Second

// progress shows the frames the check has read on w, about once a
// second (progressLine: on a terminal in place, erased at the end; in a
// log once the check has run checkQuiet, then every logEvery), counting
// through co.Progress; the function it returns stops it. Nothing with
// --quiet, nor when w is not a file (an in-process caller's buffer, such
// as the tests', which hold stdout and stderr together).
func (o *checkOpts) progress(w io.Writer, co *check.Options) (stop func()) {
	if _, ok := w.(*os.File); !ok || o.quiet {
		return func() {}
	}
	co.Progress = new(atomic.Int64)
	return startProgress(newProgressLine(w, "check", checkQuiet, true), co.Progress, time.Second)
}

// startProgress updates p every `every` with the frames frames counts and
// their rate until the function it returns is called, which ends p.
func startProgress(p *progressLine, frames *atomic.Int64, every time.Duration) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(every)
		defer t.Stop()
		last, readFor := int64(-1), time.Duration(0) // the count, and when it last grew
		show := func() {
			n, el := frames.Load(), p.now().Sub(p.start)
			if n != last {
				last, readFor = n, el
			}
			p.update(framesRead(n, el, readFor))
		}
		for {
			select {
			case <-done:
				show()
				p.end()
				return
			case <-t.C:
				show()
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// framesRead is check's progress at elapsed: n frames read, the last of
// them by readFor, and their rate over readFor. Once the count has stood
// still a second (the frames are read; the views are being judged, or
// the parameters the capture implies tried) it says so, instead of a
// rate that falls while nothing is read.
func framesRead(n int64, elapsed, readFor time.Duration) string {
	rate := 0.0
	if readFor > 0 {
		rate = float64(n) / readFor.Seconds()
	}
	s := fmt.Sprintf("%6.1fs  %d frames read  %.0f frames/s", elapsed.Seconds(), n, rate)
	if n > 0 && elapsed-readFor >= time.Second {
		s += fmt.Sprintf("; judging for %.0fs", (elapsed - readFor).Seconds())
	}
	return s
}

// violatedFiles returns the files whose verdict is fail, in order.
func violatedFiles(reports []check.FileReport) []string {
	var out []string
	for _, r := range reports {
		if r.Verdict == "fail" {
			out = append(out, r.File)
		}
	}
	return out
}

// sameFile reports whether paths a and b name the same existing file or
// directory (through symlinks, "..", or hard-linked names alike).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// parseLevel reads a --level flag: must or should, any case (check and
// explore).
func parseLevel(s string) (spec.Level, error) {
	var l spec.Level
	if l.UnmarshalText([]byte(s)) != nil {
		return 0, fmt.Errorf("--level %q: want must or should", s)
	}
	return l, nil
}

// checkVerdict is the verdict of a check of several files (their
// check.FileReport.Verdict), as its exit code reads them: error when a
// file could not be checked (exit 2), else fail when one failed (exit 1;
// 2 when another is incomplete, as the exit code's "2 wins"), else
// incomplete (exit 2), else warn or pass (exit 0).
func checkVerdict(reports []check.FileReport) string {
	seen := map[string]bool{}
	for _, r := range reports {
		seen[r.Verdict] = true
	}
	for _, v := range []string{"error", "fail", "incomplete", "warn"} {
		if seen[v] {
			return v
		}
	}
	return "pass"
}
