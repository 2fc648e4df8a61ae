package conformance

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Areas of the suite (one label per spec).
var areas = map[string]bool{"wire": true, "grant": true, "priority": true, "resend": true,
	"ack": true, "cutoffs": true, "robustness": true, "workload": true, "ipv6": true,
	"run": true} // run: the pass's whole capture (judgeRunCapture), no Ginkgo spec

// Report entry names.
const (
	entryCapture = "capture"
	entrySlack   = "slack"
	entryRule    = "rule"
	// entryInconclusive is one timing finding on the IUT that the
	// evidence cannot charge: a measured stall explains it
	// (stall.Explaining), only the measured noise's slack let it pass, or
	// another cause its text names (InconclusiveCause): reported,
	// counted, not charged.
	entryInconclusive = "timing-inconclusive"
	// entryElsewhere is one timing finding on the IUT that a measured
	// stall explains, of a rule that does not bear on the spec's verdict
	// (bearsOnVerdict: the specs of its section judge it): reported,
	// counted, not charged, and not a reason to rerun the spec or leave it
	// unjudged.
	entryElsewhere = "timing-judged-elsewhere"
	// entryCounters is a failed spec's note of the IUT's counters that
	// rose during it (iutCountersSince): what the IUT says it did.
	entryCounters = "iut-counters"
)

// Marks in the text of a timing-inconclusive finding that say what
// excused it (InconclusiveCause): every entry that a measured stall
// explains names the stall after stallMark; one that only the measured
// noise's slack let pass (slackInconclusive) ends with slackMark's words.
const (
	stallMark = "(during a measured stall: "
	slackMark = "passed only by the slack "
)

// Causes of a timing-inconclusive finding (InconclusiveCause).
const (
	// CauseStall: a measured stall of this machine explains it.
	CauseStall = "stall"
	// CauseSlack: only the slack this machine's measured noise gave let
	// it pass (a quiet machine's slack would not).
	CauseSlack = "slack"
	// CauseOther: another cause its text names (packets the IUT's
	// transport refused, a tester too busy to keep a tick).
	CauseOther = "other"
)

// InconclusiveCause is the cause (CauseStall, CauseSlack or CauseOther)
// of timing-inconclusive finding f, one of a SpecResult's
// TimingInconclusive or TimingElsewhere lines, as its text names it.
func InconclusiveCause(f string) string {
	switch {
	case strings.Contains(f, stallMark):
		return CauseStall
	case strings.Contains(f, slackMark):
		return CauseSlack
	}
	return CauseOther
}

// specTimeout bounds one spec's body (its It node): a spec that hangs
// (an IUT that never answers a call, say) fails instead of holding the
// run. The longest passive spec in namespaces takes under a minute.
var specTimeout = timescale.D(5 * time.Minute)

// knownRules are the registry's rule IDs (spec.Rules).
var knownRules = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range spec.Rules() {
		m[r.ID] = true
	}
	return m
}()

// labelledSections are the rule sections ("GRANT", "RESEND") some spec of
// the suite is labelled with a rule of (filled by labels as the suite is
// built, before any spec runs): those whose rules specs made for them
// judge (bearsOnVerdict).
var labelledSections = map[string]bool{}

// labels builds a spec's decorations: its labels (area, level and rule
// IDs) and its node timeout (specTimeout; the body must take the spec's
// context: see body).
//
// The labels are checked as the suite is built (a spec's labels are
// evaluated when Ginkgo's tree is): an unknown area, a level other than
// MUST or SHOULD, or a rule ID the registry (spec.Rules) lacks stops the
// program with a message naming it, so a typo cannot leave a spec
// selecting nothing under --rules.
func labels(area, level string, rules ...string) []any {
	if !areas[area] {
		panic("conformance: unknown area " + area)
	}
	if level != "MUST" && level != "SHOULD" {
		panic("conformance: level " + level + ": want MUST or SHOULD")
	}
	for _, id := range rules {
		if !knownRules[id] {
			panic("conformance: label " + id + " names no rule of the registry (homatest spec list)")
		}
		labelledSections[ruleSection(id)] = true
	}
	return []any{append(Labels{area, level}, rules...), NodeTimeout(specTimeout)}
}

// needsPrefix begins the label of a capability a spec needs (needs).
const needsPrefix = "needs-"

// needs labels a spec with the capabilities the IUT's hello must declare
// for it to run ("needs-reply-delay"): body skips the spec as unsupported
// without them (need), and run --list shows them (List's Runs) before any
// IUT has said hello.
func needs(caps ...string) Labels {
	var l Labels
	for _, c := range caps {
		l = append(l, needsPrefix+c)
	}
	return l
}

// specNeeds returns the capabilities a spec's labels say it needs
// (needs).
func specNeeds(labels []string) []string {
	var caps []string
	for _, l := range labels {
		if c, ok := strings.CutPrefix(l, needsPrefix); ok {
			caps = append(caps, c)
		}
	}
	return caps
}

// body turns a spec's body into Ginkgo's interruptible form: Ginkgo
// cancels the spec's context on an interrupt (Ctrl-C, SIGTERM) and at
// the node timeout, and every wait of the spec (tester expectations, the
// IUT's calls, the simulation's steps) uses it through ctx(), so a hung
// wait ends at once and the suite's cleanups run after the body returned.
func body(f func()) func(SpecContext) {
	return func(sc SpecContext) {
		cur.ctx = sc
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stalledOut); !ok {
					panic(r) // Ginkgo's own (Fail, Skip) and real panics
				}
			}
		}()
		need(specNeeds(CurrentSpecReport().Labels())...)
		f()
	}
}

// stalledOut, panicked by ok and recovered by body, ends a spec early
// without a verdict: its exchange broke because this machine held the
// tester up, which a timing-inconclusive entry records (the spec is
// rerun, and not judged if every rerun is alike).
type stalledOut struct{}

// specState is the per-spec state: the peers it opened, the spec checker's
// findings charged to the IUT (comments of the capture a failed spec
// keeps) and the spec's context.
type specState struct {
	peers []*tester.Peer
	calls []*iutRPC // the IUT calls the spec began (iutCall)
	// timedOut: when each of those calls the spec took a timeout result of
	// ended, by client id (iutRPC.took).
	timedOut map[uint64]time.Time
	msgs     []msgSpec // the tester clients' RPCs (newRequest)
	findings []spec.Finding
	ctx      context.Context
	// counters are the IUT's counters when the spec began (Target.Stats;
	// nil if it could not say).
	counters map[string]uint64
	// v6 is set when the spec runs over IPv6 (overIPv6).
	v6 bool
	// port is the IUT's server port for the spec's requests (0:
	// ServerPort): over IPv6 one listened with ipv6 (overIPv6).
	port uint16
}

var cur *specState

// iutCountersSince returns how much each of the IUT's counters rose since
// the spec began (the nonzero ones; nil if the IUT cannot say).
func iutCountersSince() map[string]uint64 {
	if cur.counters == nil || env.IUT == nil {
		return nil
	}
	c, cancel := context.WithTimeout(context.Background(), timescale.D(10*time.Second))
	defer cancel()
	now, err := env.IUT.Stats(c)
	if err != nil {
		return nil
	}
	d := map[string]uint64{}
	for k, v := range now {
		if v > cur.counters[k] {
			d[k] = v - cur.counters[k]
		}
	}
	return d
}

var _ = BeforeEach(func() {
	cur = &specState{}
	if env.IUT != nil {
		c, cancel := context.WithTimeout(context.Background(), timescale.D(10*time.Second))
		cur.counters, _ = env.IUT.Stats(c)
		cancel()
	}
	for _, l := range CurrentSpecReport().Labels() {
		if strings.HasPrefix(l, "HOMA-") {
			AddReportEntry(entryRule, l)
		}
	}
	AddReportEntry(entrySlack, env.Slack.String())
})

var _ = AfterEach(func() {
	if len(cur.peers) == 0 {
		return
	}
	if CurrentSpecReport().Failed() {
		saveCapture()
		if d := iutCountersSince(); len(d) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(d)) {
				parts = append(parts, fmt.Sprintf("%s +%d", k, d[k]))
			}
			AddReportEntry(entryCounters, "the IUT's counters during the spec: "+strings.Join(parts, ", "))
		}
	}
	for _, r := range cur.calls {
		r.finish()
	}
	for _, m := range cur.msgs {
		m.finish()
	}
	noteRPCs()
	for _, p := range cur.peers {
		p.Close()
	}
})

// saveCapture writes the spec's packets to the artifacts directory, the
// spec checker's findings as packet comments on their frames and the
// failure as the file's comment, and records the path.
func saveCapture() {
	dir := opts.Artifacts
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	rep := CurrentSpecReport()
	path := filepath.Join(dir, slug(rep.FullText())+".pcapng")
	var buf bytes.Buffer
	if err := tester.WritePcapng(&buf, cur.peers...); err != nil {
		return
	}
	if len(cur.findings) == 0 {
		// The spec failed before its own check of the exchange: check it
		// now, so the capture shows what the rules say about it.
		cur.findings, _, _ = iutFindings(cur.peers...)
		notePassFindings(cur.findings)
	}
	if _, err := annotate.Write(&buf, path, cur.findings, captureComment(rep)); err != nil {
		return
	}
	// homatest check on the file then judges it with the IUT's parameters.
	WriteCheckSidecars(path, iutParams(), env.Stalls, "The parameters homatest run judged this spec's exchange with (the IUT's hello's, slack and jitter from the measured noise).")
	AddReportEntry(entryCapture, path)
}

// captureComment is the file comment of the capture saveCapture writes
// for spec rep: why it failed, or that it was interrupted (a Ctrl-C stops
// a spec, which Ginkgo then counts among its failure states: its capture
// said "failed: Interrupted by User").
func captureComment(rep types.SpecReport) string {
	why, _, _ := strings.Cut(strings.TrimSpace(rep.FailureMessage()), "\n")
	if rep.State == types.SpecStateInterrupted {
		return fmt.Sprintf("homatest run: %s interrupted before it finished (%s)", rep.FullText(), why)
	}
	return fmt.Sprintf("homatest run: %s failed: %s", rep.FullText(), why)
}

var slugRE = regexp.MustCompile(`[^A-Za-z0-9]+`)

// slug turns a spec name into a file name.
func slug(s string) string {
	s = strings.Trim(slugRE.ReplaceAllString(s, "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	return strings.ToLower(s)
}

// peer opens a tester peer on tester host i for the current spec.
func peer(i int) *tester.Peer {
	GinkgoHelper()
	Expect(i).To(BeNumerically("<", len(env.Testers)), "the environment has %d tester hosts", len(env.Testers))
	p, err := env.openPeer(i, cur.v6)
	ok(err, "opening tester host %d", i)
	cur.peers = append(cur.peers, p)
	return p
}

// overIPv6 makes the current spec run over IPv6, before it opens a peer:
// its peers are the tester hosts' IPv6 side, iut() is the IUT's IPv6
// address and maxSegData() leaves room for the 40-byte IPv6 header. It
// skips the spec as unsupported when the IUT declares no ipv6 or has no
// IPv6 address, or the environment gives its testers none.
func overIPv6() {
	GinkgoHelper()
	need(agent.CapIPv6)
	switch {
	case !env.IUT.Info().Addr6.IsValid():
		Skip("unsupported: the IUT declares ipv6 but its hello gave no IPv6 address")
	case len(env.Testers6) == 0:
		Skip(fmt.Sprintf("unsupported: this environment (%s) gives its testers no IPv6 address", env.Describe))
	}
	// The requests go to a port listened with ipv6: the linux agent's
	// ServerPort is AF_INET on a dual-stack host, and HomaModule's
	// AF_INET socket answers no IPv6 client (agent.ListenOptions.IPv6).
	port, err := env.listenPort(ctx(), agent.ListenOptions{IPv6: true})
	ok(err, "a server port for IPv6 clients")
	cur.v6, cur.port = true, port
}

// serverPort is the IUT's server port the spec's requests go to:
// ServerPort, or over IPv6 the one overIPv6 listened on.
func serverPort() uint16 {
	if cur != nil && cur.port != 0 {
		return cur.port
	}
	return ServerPort
}

// iut is the IUT's address the spec talks to: IPv4, or IPv6 for a spec
// over IPv6 (overIPv6).
func iut() netip.Addr {
	if cur != nil && cur.v6 {
		return env.IUT.Info().Addr6
	}
	return env.IUT.Info().Addr
}

// params are the IUT's parameters.
func params() spec.Params { return env.Params() }

// need skips the spec as unsupported unless the IUT declares every
// capability.
func need(caps ...string) {
	for _, c := range caps {
		if !env.IUT.Info().Has(c) {
			Skip(fmt.Sprintf("unsupported: "+lacksCapability+"%q", c))
		}
	}
}

// needResends skips the spec as unsupported when the IUT's timer never
// sends a RESEND: with resend_ticks at or above timeout_ticks the pass
// that would send the first one aborts the RPC instead (the timeout is
// tested first: homa_timer_check_rpc).
func needResends() {
	if pr := params(); pr.ResendTicks >= pr.TimeoutTicks {
		Skip(fmt.Sprintf("unsupported: resend_ticks %d is not below timeout_ticks %d, so the IUT times an RPC out before it would RESEND", pr.ResendTicks, pr.TimeoutTicks))
	}
}

// window is a timing window: d plus the environment's slack. It bounds
// ExpectNone (how long nothing may happen), so it stays tight.
func window(d time.Duration) time.Duration { return d + env.Slack }

// wait bounds an Expect: the protocol's time d plus slack, in real time at
// least one second (times HOMATEST_TIME_SCALE). An Expect returns as soon
// as the packet arrives, so a generous bound costs nothing when the IUT is
// right and keeps a loaded machine from failing it; upper time bounds that
// are protocol rules are judged by the spec checker over the exchange
// (checkExchange). In virtual time nothing is late: the bound is exact.
func wait(d time.Duration) time.Duration {
	if env.Virtual {
		return window(d)
	}
	return max(window(d), timescale.D(time.Second))
}

// ctx is the spec's context (see body): Ginkgo cancels it on an
// interrupt and at the spec's node timeout.
func ctx() context.Context {
	if cur != nil && cur.ctx != nil {
		return cur.ctx
	}
	return context.Background()
}

// pause waits on the environment's clock until t (in the simulator the
// wait steps it), failing with what if the spec is interrupted.
func pause(t time.Time, what string, args ...any) {
	GinkgoHelper()
	_, err := env.Clock.Wait(ctx(), t, func() bool { return false })
	ok(err, what, args...)
}

// deadline is the time d from now on the environment's clock.
func deadline(d time.Duration) time.Time { return env.Clock.Now().Add(d) }

// maxSegData is the data bytes per full DATA packet on the IUT's link:
// the MTU less the IP header (20 bytes, 40 for a spec over IPv6) and the
// DATA header (HomaModule homa_message_out_fill, from ip_header_length).
func maxSegData() int {
	mtu := env.IUT.Info().MTU
	if mtu == 0 {
		mtu = 1500
	}
	ip := 20
	if cur != nil && cur.v6 {
		ip = 40
	}
	return mtu - ip - wire.DataHeaderLen
}

// needFIFOGrants marks the spec unsupported where the IUT makes no FIFO
// GRANTs (fifo_grant_increment, grant_fifo_fraction or link_mbps 0:
// HomaModule homa_grant_update_sysctl_deps, homa_grant_check_fifo) or
// where they share a level with SRPT GRANTs, which cannot then be told
// apart.
func needFIFOGrants() {
	GinkgoHelper()
	pr := params()
	prof, _ := spec.LookupProfile(env.Profile)
	switch why, inert := prof.Inert["fifo_grant_increment"]; {
	case inert:
		Skip(fmt.Sprintf("unsupported: HomaModule of profile %s %s", env.Profile, why))
	case pr.FIFOGrantInterval() == 0:
		Skip(fmt.Sprintf("unsupported: fifo_grant_increment %d, grant_fifo_fraction %d and link_mbps %d make no FIFO GRANTs (the defaults, 50000, 50 and 25000, run it)", pr.FIFOGrantIncrement, pr.GrantFIFOFraction, pr.LinkMbps))
	case pr.HighPriority() <= pr.MaxSchedPrio:
		Skip(fmt.Sprintf("unsupported: FIFO GRANTs (level %d) cannot be told from SRPT GRANTs (levels 0-%d) with num_priorities %d (num_priorities=8 runs it)", pr.HighPriority(), pr.MaxSchedPrio, pr.NumPriorities))
	}
}

// unsched is U = min(msgLen, unsched_bytes), within max_message_length
// (an unsched_bytes above it makes every message unscheduled).
func unsched(msgLen int) int {
	return min(msgLen, int(params().UnschedBytes), int(params().MaxMessageLength))
}

// maxHoldTicks bounds how many of the IUT's ticks a spec holds an
// exchange for (1.5x timeout_ticks 1000): a spec drives its exchange
// tick by tick, and a larger timeout_ticks only makes it longer.
const maxHoldTicks = 1500

// holdTicks is how long, in the IUT's ticks, a spec holds an RPC alive
// to show the IUT does not time it out: half as long again as
// timeout_ticks. An IUT whose timeout_ticks makes that more than
// maxHoldTicks is unsupported.
func holdTicks() int {
	GinkgoHelper()
	pr := params()
	hold := pr.TimeoutTicks + pr.TimeoutTicks/2
	if hold > maxHoldTicks {
		Skip(fmt.Sprintf("unsupported: timeout_ticks %d: holding the exchange for 1.5x timeout_ticks (%d ticks) is beyond the suite's bound of %d", pr.TimeoutTicks, hold, maxHoldTicks))
	}
	return hold
}

// waitsTimeout skips a spec that waits out the IUT's timeout_ticks (its
// RESEND rounds up to the abort, or its NEED_ACKs past it) as unsupported
// when that is beyond maxHoldTicks, the suite's bound on how many ticks a
// spec holds an exchange for.
func waitsTimeout() {
	if pr := params(); pr.TimeoutTicks > maxHoldTicks {
		Skip(fmt.Sprintf("unsupported: timeout_ticks %d: waiting out the timeout is beyond the suite's bound of %d ticks", pr.TimeoutTicks, maxHoldTicks))
	}
}

// quietFits skips a spec as unsupported when it keeps the IUT's RPC
// without DATA, GRANT or BUSY from the tester for up to d, which the IUT's
// timer would end: an RPC may time out after timeout_ticks-2 ticks of such
// silence (RTX-10's tolerance; a RESEND resets no silent_ticks,
// homa_dispatch_pkts).
func quietFits(d time.Duration) {
	if pr := params(); d >= pr.Ticks(pr.TimeoutTicks-2) {
		Skip(fmt.Sprintf("unsupported: timeout_ticks %d (tick %v): the spec leaves the IUT's RPC up to %v without DATA, GRANT or BUSY, which may time it out (timeout_ticks %d or more runs it)", pr.TimeoutTicks, pr.Tick, d, int(d/pr.Tick)+3))
	}
}

// widerWindow says how to give the IUT a grant window of at least n bytes
// (Params.GrantWindow: window, or half of max_incoming when window is 0),
// for an unsupported reason.
func widerWindow(n int) string {
	return fmt.Sprintf("a window of %d bytes or more runs it, or max_incoming %d or more with window 0", n, 2*n)
}

// pastU is the length of a message extra bytes longer than
// unsched_bytes. An IUT whose max_message_length cannot hold it is
// unsupported.
func pastU(extra int) int {
	GinkgoHelper()
	pr := params()
	n := int(pr.UnschedBytes) + extra
	if n > int(pr.MaxMessageLength) {
		Skip(fmt.Sprintf("unsupported: a message %d bytes past unsched_bytes %d is longer than max_message_length %d", extra, pr.UnschedBytes, pr.MaxMessageLength))
	}
	return n
}

// longLen is the length of a message that needs GRANTs: 200000 bytes, or
// 160000 past unsched_bytes when that is larger, within
// max_message_length. An IUT whose unsched_bytes leaves no such message
// is unsupported.
func longLen() int {
	GinkgoHelper()
	pr := params()
	n := min(max(200000, int(pr.UnschedBytes)+160000), int(pr.MaxMessageLength))
	if n <= int(pr.UnschedBytes) {
		Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves no message within max_message_length %d that needs a GRANT", pr.UnschedBytes, pr.MaxMessageLength))
	}
	return n
}

// requestPayload returns a request body of msgLen bytes for id that asks
// for respLen bytes back, in the agent protocol's payload format
// (agent.FillPayload: response length, id, then a pattern the server checks).
func requestPayload(id uint64, msgLen, respLen int) []byte {
	b := make([]byte, msgLen)
	agent.FillPayload(b, id, uint32(respLen))
	return b
}

// The tester's packets are built the way HomaModule builds them, so that
// the capture charges nothing to the tester but what a spec breaks on
// purpose (Peer.SendDeliberate). Every DATA a tester sends is built by
// wire.NewData, at the level ctrlLevel, unschedLevel or a GRANT gives.

// ctrlLevel is the IP priority of every control packet: num_priorities-1
// (HomaModule __homa_xmit_control; HOMA-PRIO-001).
func ctrlLevel(p spec.Params) uint8 { return uint8(max(0, p.NumPriorities-1)) }

// unschedLevel is the IP priority of the unscheduled DATA of a msgLen-byte
// message a tester sends the IUT: the level the IUT's cutoffs give it (a
// tester's DATA carries the IUT's cutoff_version, as after the IUT's
// CUTOFFS; HomaModule homa_unsched_priority; HOMA-PRIO-002).
func unschedLevel(p spec.Params, msgLen int) uint8 {
	return spec.UnschedPriority(p.UnschedCutoffs, p.NumPriorities, uint32(msgLen))
}

// msgSpec is a request a tester sends as a client.
type msgSpec struct {
	id            uint64
	sport         uint16
	msgLen        int
	respLen       int
	cutoffVersion uint16
	payload       []byte
	// deliberate, when set, says why the request's DATA break the
	// protocol (a cutoff_version the IUT never sent, say): they go out
	// through Peer.SendDeliberate.
	deliberate string
	// incoming, when set, is the sender's own unscheduled bytes, fewer
	// than the IUT's U: the incoming of every first transmission, and
	// where its scheduled bytes begin (0: U, unsched).
	incoming int
	// port is the IUT's server port the request goes to (0: serverPort).
	port uint16
}

// unschedEnd is where the request's unscheduled bytes end: its
// incoming, or U.
func (m msgSpec) unschedEnd() int {
	if m.incoming > 0 {
		return m.incoming
	}
	return unsched(m.msgLen)
}

// control returns the common header of a packet the tester (as m's
// client) sends to the IUT's server.
func (m msgSpec) control() wire.CommonFields {
	port := m.port
	if port == 0 {
		port = serverPort()
	}
	return wire.CommonFields{Sport: m.sport, Dport: port, SenderID: m.id}
}

// unschedPrio is the level of the request's unscheduled DATA.
func (m msgSpec) unschedPrio() uint8 { return unschedLevel(params(), m.msgLen) }

// sendData sends the first transmission of the request's bytes [from,
// to), each with incoming U (m.unschedEnd): DATA below U at the level
// the IUT's cutoffs give the message, scheduled DATA at schedPrio, the
// priority of the latest GRANT the tester got for it (HomaModule
// homa_xmit_data; HOMA-GRANT-008). Packets are cut at max_seg_data
// boundaries counted from offset 0 and at to (so the unscheduled part
// ends exactly at U, as HomaModule does).
func (m msgSpec) sendData(p *tester.Peer, from, to int, schedPrio uint8) {
	GinkgoHelper()
	u := m.unschedEnd()
	m.send(p, from, to, func(off int) uint8 {
		if off < u {
			return m.unschedPrio()
		}
		// A GRANT that came while these packets went out (the IUT
		// answers each at once) sets the rest's priority, as
		// homa_grant_pkt updates sched_priority for homa_xmit_data's
		// next packet (HOMA-GRANT-008 judges the tester so too).
		if g := p.Latest(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}); g != nil {
			return g.Pkt.Grant().Priority()
		}
		return schedPrio
	}, u, false)
}

// sendUnsched sends the first transmission of the request's unscheduled
// bytes [from, to), to ≤ U: what a sender may send before any GRANT.
func (m msgSpec) sendUnsched(p *tester.Peer, from, to int) {
	GinkgoHelper()
	if to > m.unschedEnd() {
		// A spec sizes its messages for a usual unsched_bytes; an IUT
		// with a smaller one cannot be driven this way (not a fault).
		Skip(fmt.Sprintf("unsupported: unsched_bytes %d is below the %d unscheduled bytes this spec sends", params().UnschedBytes, to))
	}
	m.sendData(p, from, to, 0) // no scheduled byte: no GRANT priority needed
}

// resendData retransmits the request's bytes [from, to) at prio, the
// priority of the RESEND that asked for them, with retransmit 1 and
// incoming = to, the end of the bytes asked for that were sent (facts
// RTX-06; HomaModule homa_resend_data).
func (m msgSpec) resendData(p *tester.Peer, from, to int, prio uint8) {
	GinkgoHelper()
	m.send(p, from, to, func(int) uint8 { return prio }, to, true)
}

// send sends DATA [from, to) of the request, each packet at prio(offset).
func (m msgSpec) send(p *tester.Peer, from, to int, prio func(off int) uint8, incoming int, retransmit bool) {
	GinkgoHelper()
	seg := maxSegData()
	c := m.control()
	to = min(to, m.msgLen) // a GRANT past the message's end (HOMA-GRANT-002) grants no more
	n := 0
	for off := from; off < to; off += n {
		n = min((off/seg+1)*seg, to, m.msgLen) - off
		f := wire.NewData(c, uint32(m.msgLen), uint32(incoming), m.cutoffVersion, uint32(off), m.payload[off:off+n], retransmit)
		ok(p.SendDeliberate(iut(), prio(off), f, m.deliberate), "sending DATA [%d, %d) of request %d", off, off+n, m.id)
	}
}

// sendSegments sends the first transmission of only the listed segment
// indexes of the request (all below U): a sender whose other segments
// were lost on the way.
func (m msgSpec) sendSegments(p *tester.Peer, segs ...int) {
	GinkgoHelper()
	seg := maxSegData()
	for _, s := range segs {
		m.sendUnsched(p, s*seg, min((s+1)*seg, m.msgLen))
	}
}

// partLen is the length of a request that sendPart can send n segments
// of and hold the rest back: half of unsched_bytes, or all of it when half
// is n segments or fewer (large segments at a jumbo MTU, or a small
// unsched_bytes); where even all of it is n segments or fewer, three
// segments past it, of which sendPart sends the unscheduled bytes and
// holds back what the IUT grants (an IUT without GRANTs is unsupported
// then: it could not complete the request).
func partLen(n int) int {
	GinkgoHelper()
	u := unsched(1 << 30)
	switch seg := maxSegData(); {
	case u <= n*seg:
		need("grants")
		return pastU(3 * seg)
	case u/2 <= n*seg:
		return u
	}
	return u / 2
}

// sendPart sends the first n segments of a partLen(n) request, or its
// unscheduled bytes when it is longer than unsched_bytes, and leaves the
// rest unsent: a client still sending it. It returns how many bytes it
// sent (finishPart sends the rest).
func (m msgSpec) sendPart(p *tester.Peer, n int) int {
	GinkgoHelper()
	if u := unsched(m.msgLen); u < m.msgLen {
		m.sendUnsched(p, 0, u)
		return u
	}
	segs := make([]int, n)
	for i := range segs {
		segs[i] = i
	}
	m.sendSegments(p, segs...)
	return min(n*maxSegData(), m.msgLen)
}

// finishPart sends the rest of a request sendPart sent sent bytes of (as
// the IUT's GRANTs allow, past unsched_bytes), waits for the response
// and acknowledges it.
func (m msgSpec) finishPart(p *tester.Peer, sent int) {
	GinkgoHelper()
	if u := unsched(m.msgLen); u < m.msgLen {
		driveRequests([]*tester.Peer{p}, []msgSpec{m}, []int{sent})
		return
	}
	m.sendUnsched(p, sent, m.msgLen)
	_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
	ok(err, "the response")
	m.ack(p)
}

// laterSegment is the segment a spec loses by default (lostSegment): the
// fourth, so that segments before and after it arrive.
const laterSegment = 3

// lostSegment picks the segment of a msgLen-byte message that a spec
// loses: segment want (laterSegment, or 0 for the first), or the last
// when the message has fewer. It returns the segment's index and byte
// range; the receiver's RESEND asks for exactly [from, to) (one RESEND
// per gap, or for the tail up to the message's end: homa_request_retrans;
// a lost first segment too, once a later one arrived: only a receiver
// that got nothing asks {0, -1}, facts RTX-03).
func lostSegment(msgLen, want int) (k, from, to int) {
	GinkgoHelper()
	seg := maxSegData()
	nseg := (msgLen + seg - 1) / seg
	if nseg < 2 {
		Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves the spec an unscheduled message of %d bytes, less than two %d-byte segments: no segment to lose with another arriving", params().UnschedBytes, msgLen, seg))
	}
	k = min(want, nseg-1)
	return k, k * seg, min(msgLen, (k+1)*seg)
}

// gapRequest sends a request (the response 100 bytes) with one segment
// lost, segment want of lostSegment, and returns it and the lost range
// [from, to), which the IUT's RESEND asks for: a request of half the
// unscheduled bytes without that segment (all of them when the first is
// lost and half holds only one), or, where those hold no segment after
// the first, a request three segments past unsched_bytes whose first
// whole scheduled segment is lost (lostScheduled): the tester sends every
// other byte as the IUT's GRANTs allow, as a HomaModule sender whose
// packet was dropped does. A first segment cannot be lost that way (no
// other byte may go before it): unsupported then.
func gapRequest(p *tester.Peer, want int) (m msgSpec, from, to int) {
	GinkgoHelper()
	seg := maxSegData()
	n := unsched(1<<30) / 2
	if want == 0 && n <= seg {
		n = unsched(1 << 30)
	}
	if n > seg || want == 0 {
		m = newRequest(n, 100)
		k, from, to := lostSegment(m.msgLen, want)
		m.sendSegments(p, m.segmentsBut(k)...)
		return m, from, to
	}
	from, to = lostScheduled()
	m = newRequest(pastU(3*seg), 100)
	u := unsched(m.msgLen)
	m.sendUnsched(p, 0, u)
	sendGrantedBut(p, m.id, u, m.msgLen, from, to, func(a, b int, prio uint8) { m.sendData(p, a, b, prio) })
	return m, from, to
}

// lostScheduled is the segment a spec loses of a message three segments
// past unsched_bytes, for an IUT whose unsched_bytes leave no segment to
// lose before the GRANTs: the first whole segment past U, which the IUT
// grants (a receiver's grant horizon counts the bytes it got, so it
// grants past the gap to the end). An IUT without GRANTs, or whose grant
// window cannot reach past a missing segment, is unsupported.
func lostScheduled() (from, to int) {
	GinkgoHelper()
	need("grants")
	pr := params()
	seg := maxSegData()
	if w := int(pr.GrantWindow()); w <= seg {
		Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves no segment to lose before the GRANTs, and a grant window of %d bytes cannot reach past a missing %d-byte segment (%s)", pr.UnschedBytes, w, seg, widerWindow(seg+1)))
	}
	from = (unsched(pastU(3*seg))/seg + 1) * seg
	return from, from + seg
}

// sendGrantedBut sends bytes [u, msgLen) of a message the IUT receives in
// RPC id as its GRANTs allow, but the lost range [from, to): each GRANT's
// new bytes at its priority (send(a, b, prio) sends [a, b)). It fails
// when no GRANT lets the message on within response_timeout.
func sendGrantedBut(p *tester.Peer, id uint64, u, msgLen, from, to int, send func(a, b int, prio uint8)) {
	GinkgoHelper()
	pr := params()
	grant := tester.Match{Type: wire.TypeGrant, From: iut(), RPC: id}
	for sent := u; sent < msgLen; {
		g, err := p.Expect(ctx(), grant, wait(pr.ResponseTimeout+pr.Tick))
		ok(err, "a GRANT past byte %d of a %d-byte message (whose bytes [%d, %d) the tester loses)", sent, msgLen, from, to)
		horizon := sent
		for ; g != nil; g, _ = p.Expect(ctx(), grant, 0) {
			horizon = max(horizon, grantedEnd(int(g.Pkt.Grant().Offset()), msgLen))
			sendBut(sent, horizon, from, to, func(a, b int) { send(a, b, g.Pkt.Grant().Priority()) })
			sent = horizon
		}
	}
}

// sendBut calls send for the parts of [a, b) outside the lost range
// [from, to).
func sendBut(a, b, from, to int, send func(a, b int)) {
	if a < min(b, from) {
		send(a, min(b, from))
	}
	if max(a, to) < b {
		send(max(a, to), b)
	}
}

// fillGap answers the IUT's RESEND r for the lost range [from, to) of a
// gapRequest as a sender does (retransmit=1 at the priority it asks for),
// waits for the response and acknowledges it.
func (m msgSpec) fillGap(p *tester.Peer, r *tester.Packet, from, to int) {
	GinkgoHelper()
	m.resendData(p, from, to, r.Pkt.Resend().Priority())
	_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
	ok(err, "the response once the gap is filled")
	m.ack(p)
}

// segmentsBut returns the segment indexes of the request but skip (for
// sendSegments: a request with one segment lost).
func (m msgSpec) segmentsBut(skip int) []int {
	var segs []int
	for s := 0; s < (m.msgLen+maxSegData()-1)/maxSegData(); s++ {
		if s != skip {
			segs = append(segs, s)
		}
	}
	return segs
}

// newRequest returns a request spec with a fresh RPC id and client port.
func newRequest(msgLen, respLen int) msgSpec {
	id := env.NewRPCID()
	m := msgSpec{id: id, sport: uint16(40000 + id%20000), msgLen: msgLen, respLen: respLen,
		cutoffVersion: params().CutoffVersion, payload: requestPayload(id, msgLen, respLen)}
	cur.msgs = append(cur.msgs, m)
	return m
}

// checkExchange judges the exchange the peers sent and received with every
// rule of the registry and fails the spec on findings charged to the IUT
// (spec.Finding.ChargedTo; findings charged to a tester host, such as those
// at its deliberate packets, are the tester's): a finding of one of the
// spec's own rules (its labels, at any level, and the wire, id and
// control-priority MUST rules: ownRules) fails it, as does a MUST finding
// of any other rule (an
// IUT that breaks a rule no spec focuses on still fails the suite); a
// SHOULD finding of another rule is a warning (SpecResult.OtherShould),
// which fails the pass under --strict.
func checkExchange(peers ...*tester.Peer) {
	GinkgoHelper()
	checkRules(specRuleGlobs(), peers...)
}

// specRuleGlobs are the rule IDs among the current spec's labels.
func specRuleGlobs() string {
	var ids []string
	for _, l := range CurrentSpecReport().Labels() {
		if strings.HasPrefix(l, "HOMA-") {
			ids = append(ids, l)
		}
	}
	return strings.Join(ids, ",")
}

// focusRules are the rules every active spec judges as its own, besides
// its labels: the wire, id and control-priority rules, their MUST ones
// only (ownRules): a SHOULD rule (HOMA-WIRE-016's segment sizes) is a
// spec's own only where the spec is labelled with it, so that elsewhere
// its finding is a warning, as for any other rule's SHOULD finding.
const focusRules = "HOMA-WIRE-*,HOMA-ID-*,HOMA-PRIO-001"

// Report entries and failure text of the findings of rules outside a
// spec's own (see checkExchange).
const (
	// entryOtherShould is one SHOULD finding of another rule: a warning.
	entryOtherShould = "other-rule-should"
	// otherMustFailure starts the failure of a spec failed by a MUST
	// finding of another rule: such a spec fails the pass whatever its
	// level (SpecResult.Fails, and so its JUnit case: ApplyResult).
	otherMustFailure = "MUST violations of rules outside this spec's own"
)

// maxOtherShould bounds the SHOULD findings of other rules a spec lists
// (one broken timer can give one per packet); a last line counts the rest.
const maxOtherShould = 10

// ownRules returns the IDs of a spec's own rules under profile: those
// own (comma-separated rule-ID globs: its labels) names at any level, and
// focusRules' MUST rules.
func ownRules(own, profile string) (map[string]bool, error) {
	isOwn := map[string]bool{}
	focus, err := spec.Select(spec.Rules(), focusRules, spec.Must, profile)
	if err != nil {
		return nil, err
	}
	if own != "" {
		labelled, err := spec.Select(spec.Rules(), own, spec.Should, profile)
		if err != nil {
			return nil, err
		}
		focus = append(focus, labelled...)
	}
	for _, r := range focus {
		isOwn[r.ID] = true
	}
	return isOwn, nil
}

// checkRules is checkExchange with own, comma-separated rule-ID globs, as
// the spec's own rules instead of its labels: a spec whose exchange
// cannot judge some of its labels' rules (a capture at the senders
// overstates what a receiver has received) names the ones it can.
func checkRules(own string, peers ...*tester.Peer) {
	GinkgoHelper()
	found, pkts, err := iutFindings(peers...)
	ok(err, "checking the exchange")
	isOwn, err := ownRules(own, env.Profile)
	ok(err, "selecting the spec's rules")
	view := make([]spec.Event, len(pkts))
	for i, pk := range pkts {
		view[i].Time = pk.At
	}
	var bad, otherMust, otherShould []string
	refused := uint64(0)
	for _, v := range found {
		if v.Timing() {
			// The IUT's own count of packets its transport refused (the
			// reference implementation's tx_refused): a RESEND or NEED_ACK
			// the kernel dropped on its way out leaves its timer's next
			// one late, and no capture shows the loss.
			refused = iutCountersSince()["tx_refused"]
			break
		}
	}
	for _, v := range found {
		if inconclusiveAs(stalledEntry(v.Rule, isOwn), v, view) {
			continue
		}
		if refused > 0 && v.Timing() {
			AddReportEntry(stalledEntry(v.Rule, isOwn), fmt.Sprintf("%s: %s (the IUT's transport refused %d packets during the exchange: lost before the wire, where no capture shows them)", v.Rule, v.Why, refused))
			continue
		}
		line := fmt.Sprintf("%s frame %d: %s (%s)", v.Rule, v.Frame, v.Why, pkts[v.Frame-1])
		switch {
		case isOwn[v.Rule]:
			bad = append(bad, line)
		case v.Level == spec.Must:
			otherMust = append(otherMust, line)
		default:
			otherShould = append(otherShould, line)
		}
	}
	for _, line := range capShould(otherShould) {
		AddReportEntry(entryOtherShould, line)
	}
	// A timing check passed only by the slack this machine's noise
	// demanded is no pass: judged with a quiet machine's slack it is a
	// finding, and the evidence cannot tell it from a violation.
	for _, q := range slackOnly(found, peers...) {
		if isOwn[q.Rule] || q.Level == spec.Must {
			slackInconclusive(stalledEntry(q.Rule, isOwn), q, view)
		}
	}
	cur.findings = append(cur.findings, found...)
	notePassFindings(found)
	none(bad, "spec checker findings on packets the IUT sent")
	none(otherMust, otherMustFailure+", on packets the IUT sent")
}

// stalledEntry is the report entry of a stall-explained timing finding
// of rule in the current spec, whose own rules are isOwn: one that bears
// on the spec's verdict (bearsOnVerdict) is timing-inconclusive (the spec
// is rerun, and not judged if every rerun has one); any other is only
// not judged here (entryElsewhere).
//
// Excusing a finding hides no other: each is of one rule, at its own
// packets, and a finding without a tolerance (a wrong field, a GRANT out
// of order) is never excused. What a stall-explained finding of rule R
// leaves unknown is whether R held, so it leaves the spec unjudged only
// if R is part of what the spec judges. A RESEND or NEED_ACK timer rule
// in a spec about grant order is not: on a quiet machine that exchange
// has no RESEND at all (the tester sends every granted byte at once), so
// its RESENDs come only from the stall that then excuses their timing,
// while the RESEND and ACK specs, made to time those timers, judge them
// and are rerun until they are judged.
func stalledEntry(rule string, isOwn map[string]bool) string {
	if bearsOnVerdict(rule, isOwn, labelledSections, CurrentSpecReport().Labels()) {
		return entryInconclusive
	}
	return entryElsewhere
}

// bearsOnVerdict reports whether a stall-explained finding of rule leaves
// unjudged the verdict of a spec whose own rules are isOwn and whose
// labels are labels, in a suite whose specs are labelled with rules of
// the sections labelled: rule is one of its own; or of the section of
// one of its labels (a grant spec's HOMA-GRANT-*: HOMA-GRANT-010, a first
// GRANT within response_timeout unless max_overcommit others hold GRANTs,
// and HOMA-GRANT-020, SRPT order, are what an SRPT spec exercises, though
// it is not labelled with them); or of a section no spec is labelled in,
// whose rules no exchange is made to judge, so every spec's judgement
// must stand.
func bearsOnVerdict(rule string, isOwn, labelled map[string]bool, labels []string) bool {
	if isOwn[rule] || !labelled[ruleSection(rule)] {
		return true
	}
	for _, l := range labels {
		if strings.HasPrefix(l, "HOMA-") && ruleSection(l) == ruleSection(rule) {
			return true
		}
	}
	return false
}

// ruleSection is the section of rule ID id: "GRANT" of "HOMA-GRANT-010".
func ruleSection(id string) string {
	s := strings.TrimPrefix(id, "HOMA-")
	if i := strings.LastIndex(s, "-"); i >= 0 {
		return s[:i]
	}
	return s
}

// iutFindings runs the spec checker with every rule at level SHOULD or
// above over what the peers sent and received, and returns the violations
// charged to the IUT, with the packets in frame order.
func iutFindings(peers ...*tester.Peer) ([]spec.Finding, []*tester.Packet, error) {
	return iutFindingsWith(iutParams(), peers...)
}

// quietParams are the IUT's parameters with the slack and jitter a quiet
// machine gives (Env.QuietSlack, the floor of Env.Slack): what the
// exchange's timing is judged against before measured noise widens it.
func quietParams() spec.Params {
	p := env.Params()
	p.Slack = max(p.Slack, min(env.Slack, env.QuietSlack))
	p.Jitter = max(p.Jitter, min(env.Slack, env.QuietSlack))
	env.setReaction(&p)
	return p
}

// slackOnly returns the timing findings (with a tolerance) of the
// exchange judged with quietParams that judged has no finding of (the
// same rule at the same RPC, or at the same frame for one without an RPC):
// those the measured noise's wider slack alone let pass. None when the
// environment's slack is a quiet machine's.
func slackOnly(judged []spec.Finding, peers ...*tester.Peer) []spec.Finding {
	if env.Slack <= env.QuietSlack {
		return nil
	}
	quiet, _, err := iutFindingsWith(quietParams(), peers...)
	if err != nil {
		return nil
	}
	key := func(f spec.Finding) string {
		if f.RPC != nil {
			return fmt.Sprintf("%s %v", f.Rule, *f.RPC)
		}
		return fmt.Sprintf("%s frame %d", f.Rule, f.Frame)
	}
	seen := map[string]bool{}
	for _, f := range judged {
		seen[key(f)] = true
	}
	var out []spec.Finding
	for _, q := range quiet {
		if q.Timing() && !seen[key(q)] {
			seen[key(q)] = true
			out = append(out, q)
		}
	}
	return out
}

// iutFindingsWith is iutFindings with the rules' parameters p.
func iutFindingsWith(p spec.Params, peers ...*tester.Peer) ([]spec.Finding, []*tester.Packet, error) {
	judge, err := spec.NewJudge(env.Profile, p, "", spec.Should)
	if err != nil {
		return nil, nil, err
	}
	judge.FromStart = true // the tester's trace holds every RPC from its start
	rep, pkts, err := tester.Verify(judge, peers...)
	if err != nil {
		return nil, nil, err
	}
	// The IUT's findings only (spec.Judge charges each to the host that
	// owed the behaviour); the tester's side is not judged.
	info := env.IUT.Info()
	late := stragglers(pkts)
	here := map[spec.RPCKey]bool{}
	for i, x := range pkts {
		if k, ok := specKeyOf(x); ok && !late[i] {
			here[k] = true
		}
	}
	var found []spec.Finding
	for _, v := range spec.Charged(rep.Violations, info.Addr, info.Addr6) {
		if v.Frame < 1 || v.Frame > len(pkts) || late[v.Frame-1] {
			continue
		}
		if earlier := func(k *spec.RPCKey) bool { return k != nil && !here[*k] && earlierKeys[*k] }; earlier(v.RPC) || earlier(v.Also) {
			// About an RPC of an earlier spec this exchange holds no
			// packet of but stragglers, only a mention (an ack of it
			// riding on DATA of this one's): the pass's whole capture
			// judges it, with its response.
			continue
		}
		found = append(found, v)
	}
	return found, pkts, nil
}

// specKeyOf returns the checker's key (spec.RPCKey) of the RPC packet x
// belongs to: the client is the host whose sender_id is even.
func specKeyOf(x *tester.Packet) (spec.RPCKey, bool) {
	if x.Err != nil {
		return spec.RPCKey{}, false
	}
	id := x.Pkt.SenderID()
	if id&1 == 0 {
		return spec.RPCKey{Client: x.Src, Server: x.Dst, ClientID: id}, true
	}
	return spec.RPCKey{Client: x.Dst, Server: x.Src, ClientID: id &^ 1}, true
}

// rpcKey names an RPC between a tester and the IUT across specs: the
// tester's address and port, the IUT's port, and the client's id.
type rpcKey struct {
	tester     netip.Addr
	tport, iut uint16
	id         uint64
}

// keyOf returns the RPC key of packet x, false for one that did not
// decode.
func keyOf(x *tester.Packet) (rpcKey, bool) {
	if x.Err != nil {
		return rpcKey{}, false
	}
	c := x.Pkt.Common()
	if x.Sent {
		return rpcKey{x.Src, c.Sport(), c.Dport(), x.Pkt.SenderID() &^ 1}, true
	}
	return rpcKey{x.Dst, c.Dport(), c.Sport(), x.Pkt.SenderID() &^ 1}, true
}

// earlierRPCs and earlierKeys are the RPCs the specs before the current
// one exchanged packets of (noteRPCs), by ports and as the checker keys
// them.
var (
	earlierRPCs = map[rpcKey]bool{}
	earlierKeys = map[spec.RPCKey]bool{}
)

// noteRPCs adds the RPCs of the current spec's packets to earlierRPCs and
// earlierKeys.
func noteRPCs() {
	for _, p := range cur.peers {
		for _, x := range p.Log() {
			if k, ok := keyOf(x); ok {
				earlierRPCs[k] = true
			}
			if k, ok := specKeyOf(x); ok {
				earlierKeys[k] = true
			}
		}
	}
}

// stragglers marks the packets of pkts (an exchange in frame order) that
// belong to an RPC an earlier spec began and that reached this exchange
// from the IUT first: its answer to that spec's last packets (a RESEND a
// held-up tester sent just before the spec ended), which this exchange's
// checker, holding its RPCs from their start (Judge.FromStart), would take
// for packets nothing asked for. Their findings are not this spec's (the
// pass's whole capture judges them, with what prompted them). Only RPCs
// that earlier specs' own logs hold: a packet for an RPC nobody began (a
// wrong port or id) is judged here.
func stragglers(pkts []*tester.Packet) []bool {
	late := make([]bool, len(pkts))
	first := map[rpcKey]bool{}
	for i, x := range pkts {
		k, ok := keyOf(x)
		if !ok {
			continue
		}
		if s, seen := first[k]; seen {
			late[i] = s
			continue
		}
		first[k] = !x.Sent && earlierRPCs[k]
		late[i] = first[k]
	}
	return late
}

// iutParams are the parameters an active spec's exchange is judged with:
// the IUT's, with timing tolerances that follow this environment's
// measured noise (capture timestamps here are taken at the tester, after
// queueing and scheduling delays the IUT does not control).
func iutParams() spec.Params { return env.judgedParams() }

// judgedParams are e's IUT parameters with slack and jitter at least the
// noise e measured: what the suite judges the IUT's packets with, and what
// its captures' .params sidecars say. On virtual time they are the noise
// itself (Env.Slack: the simulator's view tolerance, or the slack its
// configuration asks for), not the profile's: a profile's slack (2 ms for
// linux) is a real machine's scheduling noise, which the simulator has
// none of, and with it a server that ignored piggy-backed acks passed
// HOMA-ACK-003 in check of a run's capture (NEED_ACKs up to 2 ms after
// the ack). The testers keep to that slack too: they mark the NEED_ACK a
// spec repeats after the client's ACK as deliberate, grant no complete
// message, and stamp what they send as it enters the simulation.
func (e *Env) judgedParams() spec.Params {
	p := e.Params()
	if e.Virtual {
		p.Slack, p.Jitter = e.Slack, e.Slack
	} else {
		p.Slack = max(p.Slack, e.Slack)
		p.Jitter = max(p.Jitter, e.Slack)
	}
	e.setReaction(&p)
	return p
}

// setReaction sets p's Reaction to the worst round trip measured in real
// time (Env.Delivery; the profile's 200 µs at least): the tester stamps
// its own packets as it sends them, so within that the capture cannot
// order the IUT's timer pass and a tester packet still on its way to the
// IUT's protocol code (a RESEND that crossed a GRANT: 315 µs apart in
// namespaces beside a compile, the worst round trip then 3.3 ms). Not the
// slack (5 ms at least): an IUT whose timer ignored the peer's packets
// would pass a spec whose packets came a tick apart (helper-160). On
// virtual time the capture's order is the IUT's own: 0, whatever the
// profile says; and there the simulated IUT's timer passes come exactly on
// its ticks, so no timer_drift stretches them either (it let an abort
// after 130 of 100 timeout_ticks pass: helper-162).
func (e *Env) setReaction(p *spec.Params) {
	if e.Virtual {
		p.Reaction, p.TimerDrift = 0, 0
		return
	}
	p.Reaction = max(p.Reaction, e.Delivery)
}

// ok fails the spec with "what: err" when err is set (a one-line failure
// instead of Gomega's dump of the error value). Outside a spec (cur nil:
// the suite's setup, measureNoise) no stall excuses it: the excuse ends a
// spec (stalledOut), and there is none to end. A missed noise round trip
// in BeforeSuite panicked on the nil cur (rpcGaveUpDuringStall) instead.
func ok(err error, what string, args ...any) {
	GinkgoHelper()
	if err != nil {
		msg := fmt.Sprintf(what, args...) + ": " + err.Error()
		if cur != nil && (rpcGaveUpDuringStall(msg, failingRPCs(err), false) || missedDuringStall(msg, err)) {
			panic(stalledOut{})
		}
		Fail(msg)
	}
}

// failingRPCs are the RPCs (client ids) err says a packet of is missing:
// a tester.MissingError's awaited RPC (Match.RPC). None for a wait for
// any RPC's packet or any other error: no one RPC's held-up silence
// explains those, and another RPC's silence, one the spec kept on
// purpose, must not (rpcGaveUpDuringStall).
func failingRPCs(err error) []uint64 {
	var m *tester.MissingError
	if errors.As(err, &m) && m.RPC() != 0 {
		return []uint64{m.RPC() &^ 1}
	}
	return nil
}

// missedDuringStall reports whether err is a tester expectation that saw
// nothing match in its window (tester.MissingError) while stalls this
// machine measured lost at least a quarter of that window, in it or in as
// long again before it: the IUT kept from running sends late what it
// owes, and, once it runs again, takes its backlog at once (a CUTOFFS
// for an earlier spec's stale DATA then used up the jiffy's one for this
// peer); a tester kept from running records late what came. A stall
// excuses lateness, not absence: the packet must come within the window
// plus what the measured stalls lost (lateWithinStalls), else the miss
// stands, however loaded the machine (an IUT that never grants was "not
// judged" in its pass and every rerun beside stress-ng). If excused it
// records msg as timing-inconclusive (the spec is rerun; a faulty IUT
// fails a rerun no stall explains).
func missedDuringStall(msg string, err error) bool {
	var m *tester.MissingError
	if !errors.As(err, &m) {
		return false
	}
	w := m.To.Sub(m.From)
	return env.Stalls != nil && stalledFor(m.From.Add(-w), m.To, w/4) &&
		lateWithinStalls(m.From, m.To, func(by time.Time) (bool, error) { return m.ArrivedBy(ctx(), by) }) &&
		stalledLongest(msg, m.From.Add(-w), m.To, w/4)
}

// stallCreditMost bounds lateWithinStalls's wait, in windows beyond the
// awaited event's own: a machine whose measured stalls lost more than
// that is too loaded to tell a late event from an absent one.
const stallCreditMost = 4

// lateWithinStalls is how every wait the suite would excuse by a measured
// stall tells a late event from an absent one. After an event awaited
// over [from, to] (window w) did not come, it waits until the window plus
// the time the stalls measured in it, or in as long again before it,
// lost there (stall.MostLostByOne of stall.Within: a long freeze that
// only touches that time is credited with the part it covers, a delay
// it could have caused), again for the stalls of each extension, asking
// cameBy (which waits until by at most, keeping on whatever the wait did:
// looking for the packet, polling the call, driving the exchange), and
// reports whether the event came by then (late: the stall may excuse it)
// or the stalls lost more than stallCreditMost windows (nothing can be
// judged). False: the event was still missing after every measured stall
// plus the whole window, which no stall excuses. Callers then ask their
// stall test, which records the excuse.
func lateWithinStalls(from, to time.Time, cameBy func(by time.Time) (bool, error)) bool {
	return lateWithin(func(stall.Span) bool { return true }, from, to, cameBy)
}

// lateWithin is lateWithinStalls crediting only the stalls keep selects:
// those that could have held the awaited event back.
func lateWithin(keep func(stall.Span) bool, from, to time.Time, cameBy func(by time.Time) (bool, error)) bool {
	if env.Stalls == nil {
		return false
	}
	w, end := to.Sub(from), to
	for {
		env.Stalls.Settle(ctx(), time.Now())
		lost := stall.MostLostByOne(slices.DeleteFunc(stall.Within(env.Stalls.Spans(), from.Add(-w), end), func(s stall.Span) bool { return !keep(s) }))
		if lost > stallCreditMost*w {
			return true
		}
		next := from.Add(w + lost)
		if !next.After(end) {
			return false
		}
		if came, err := cameBy(next); came || err != nil {
			return true
		}
		end = next
	}
}

// stalledFor reports whether one stall measured over [from, to] lost at
// least lost (stalledLongest without recording a finding).
func stalledFor(from, to time.Time, lost time.Duration) bool {
	env.Stalls.Settle(ctx(), time.Now())
	for _, s := range stall.Overlaps(env.Stalls.Spans(), from, to) {
		if s.Lost > 0 && s.Lost >= lost {
			return true
		}
	}
	return false
}

// stalledLongest is stalledAtLeast asking one stall, not all of them
// together, to have lost at least lost: for a packet awaited in vain over
// a long window, which many short stalls of the machine's processes
// together, each of which delayed it by little, do not explain (beside
// other test processes, a faulty IUT's missing GRANT, awaited for 1 s,
// came out inconclusive in every rerun on 290-420 ms of such stalls
// summed).
func stalledLongest(msg string, from, to time.Time, lost time.Duration) bool {
	if env.Stalls == nil {
		return false
	}
	env.Stalls.Settle(ctx(), time.Now())
	var top stall.Span
	for _, s := range stall.Overlaps(env.Stalls.Spans(), from, to) {
		if s.Lost > top.Lost {
			top = s
		}
	}
	if top.Lost == 0 || top.Lost < lost {
		return false
	}
	AddReportEntry(entryInconclusive, fmt.Sprintf("%s %s%s)", msg, stallMark, top))
	return true
}

// rpcGaveUpDuringStall reports whether the IUT ended one of the RPCs
// (client ids) in ids, those whose failure msg says, by its timer after
// the tester had left it silent (timerEnded), or may have ended it
// without a word (testerSilences: those the tester ended, and with
// running the one still running now), while stalls this machine
// measured held things up for at least half that silence: the tester was
// kept from acting in time, so what the spec then waited for in vain
// (msg) says nothing of the IUT. If so it records msg as
// timing-inconclusive. A stall excuses a late tester, not a silence the
// spec kept (holding GRANTs on purpose, or waiting for what the IUT
// owed): the silence must have ended within timeout_ticks-2 ticks plus
// what the testers' stalls lost (heldUp). Only the failing RPCs' own
// silences count: another RPC's, one the spec kept on purpose (a call it
// lets time out beside), explains nothing of theirs (ok and callOK
// passed every RPC of the spec before). No ids: false. A silence still
// running counts only with running: for a wait due after the tester's
// next act (a RESEND the server would send once its silence ended), not
// for a packet the IUT owed at once (a GRANT for bytes already sent,
// which a tester held up meanwhile finds when it runs again: ok).
// Only without a verdict yet: it reads the results of the spec's IUT
// calls (none outside a spec: false).
func rpcGaveUpDuringStall(msg string, ids []uint64, running bool) bool {
	if env.Stalls == nil || len(ids) == 0 || cur == nil {
		return false
	}
	pr := params()
	for _, r := range cur.calls {
		var res CallResult
		if !r.ended && r.poll(&res) {
			r.took(res)
		}
	}
	var logs [][]*tester.Packet
	for _, p := range cur.peers {
		logs = append(logs, p.Log())
	}
	quiet := pr.Ticks(max(1, pr.TimeoutTicks-2))
	var until time.Time
	if running {
		until = env.Clock.Now()
	}
	ended, silent := heldUpSilences(logs, cur.timedOut, quiet, ids, until)
	for _, g := range ended {
		if stalledAtLeast(fmt.Sprintf("%s; the IUT had ended RPC %d after %v in which the tester sent it no DATA, GRANT or BUSY (timeout_ticks %d of %v)", msg, g.id, g.at.Sub(g.from).Round(time.Millisecond), pr.TimeoutTicks, pr.Tick), g.from, g.at, g.at.Sub(g.from)/2) {
			return true
		}
	}
	for _, g := range silent {
		if stalledAtLeast(fmt.Sprintf("%s; the tester had sent RPC %d no DATA, GRANT or BUSY for %v (timeout_ticks %d of %v), after which the IUT may have ended it without a word (a server drops an RPC whose client went silent: homa_timer_check_rpc)", msg, g.id, g.at.Sub(g.from).Round(time.Millisecond), pr.TimeoutTicks, pr.Tick), g.from, g.at, g.at.Sub(g.from)/2) {
			return true
		}
	}
	return false
}

// heldUpSilences are the silences of at least quiet of the RPCs in ids
// (client ids) that the testers' stalls made (heldUp), in the peers'
// logs: those after which the IUT ended the RPC (timerEnded; timedOut:
// the calls that timed out, client id → when) and those the tester
// ended, and unless until is zero the one still running then
// (testerSilences).
func heldUpSilences(logs [][]*tester.Packet, timedOut map[uint64]time.Time, quiet time.Duration, ids []uint64, until time.Time) (ended, silent []silentEnd) {
	mine := func(g silentEnd) bool { return slices.Contains(ids, g.id) && heldUp(g, quiet) }
	for _, g := range timerEnded(logs, timedOut, quiet) {
		if mine(g) {
			ended = append(ended, g)
		}
	}
	for _, g := range testerSilences(logs, quiet, until) {
		if mine(g) {
			silent = append(silent, g)
		}
	}
	return ended, silent
}

// heldUp reports whether silence g was the stalls': it ended (the
// tester's next packet, or the IUT's end of the RPC) within quiet plus
// what stalls of the testers lost (lateWithin, stall.Harness), so that
// testers not held up would have spoken in time. Stalls of the IUT do not
// count: they silence no tester, and an IUT kept from running counts
// fewer silent ticks, not more. A silence still longer was the spec's
// own (holding GRANTs on purpose, or waiting for what the IUT owed): the
// IUT's end of the RPC after it is the protocol's answer, and what the
// spec then awaited in vain no stall explains.
func heldUp(g silentEnd, quiet time.Duration) bool {
	return lateWithin(ofTesters, g.from, g.from.Add(quiet),
		func(by time.Time) (bool, error) { return !g.at.After(by), nil })
}

// ofTesters selects the stalls of the testers (stall.Harness): those
// that keep them from sending, or from taking what came, in time.
func ofTesters(s stall.Span) bool { return strings.HasPrefix(s.Who, stall.Harness) }

// testerSilences returns the silences of at least quiet in which the
// tester sent an RPC it is the client of no DATA, GRANT or BUSY (the
// packets that reset a server's silent_ticks), ended by the tester's
// next such packet: an IUT server may have ended the RPC meanwhile
// without a word, and what the spec awaited after it never comes. Not
// once the IUT has sent response DATA for the RPC: a server counts
// silent ticks only while it lacks request bytes it granted, and one
// that answers has the whole request (homa_timer_check_rpc; the ref's
// serverReceiving), so it never ends the RPC for the client's silence
// (a spec holding its GRANTs past timeout_ticks relies on that: a
// response then missing is the IUT's). With until set, also the silence
// still running then, to until: a tester held up at the end of what it
// did for the RPC left it silent up to the wait that now finds nothing
// (RESEND-busy-alive-server, whose held-up last BUSY let the server drop
// the RPC before the RESEND it awaits). In order of client id, then time.
func testerSilences(logs [][]*tester.Packet, quiet time.Duration, until time.Time) []silentEnd {
	last := map[uint64]time.Time{}
	answered := map[uint64]bool{}
	var out []silentEnd
	for _, log := range logs {
		for _, x := range log {
			if !x.Sent && x.Err == nil && x.Pkt.Type() == wire.TypeData && x.Pkt.SenderID()&1 != 0 {
				answered[x.Pkt.SenderID()&^1] = true // the IUT's response to a tester's request
			}
			if !x.Sent || x.Err != nil || x.Pkt.SenderID()&1 != 0 {
				continue // the tester's packets as client only
			}
			if t := x.Pkt.Type(); t != wire.TypeData && t != wire.TypeGrant && t != wire.TypeBusy {
				continue
			}
			id := x.Pkt.SenderID()
			if from, seen := last[id]; seen && x.At.Sub(from) >= quiet && !answered[id] {
				out = append(out, silentEnd{id, from, x.At})
			}
			last[id] = x.At
		}
	}
	for id, from := range last {
		if !until.IsZero() && until.Sub(from) >= quiet && !answered[id] {
			out = append(out, silentEnd{id, from, until})
		}
	}
	slices.SortStableFunc(out, func(a, b silentEnd) int {
		if a.id != b.id {
			return cmp.Compare(a.id, b.id)
		}
		return a.from.Compare(b.from)
	})
	return out
}

// silentEnd is an RPC (client id) the IUT ended at, after a silence of
// the tester's from from.
type silentEnd struct {
	id       uint64
	from, at time.Time
}

// timerEnded returns the RPCs the IUT ended (its RPC_UNKNOWN for one in
// the tester peers' logs, or an IUT call that failed with a timeout:
// timedOut, client id → when) after at least quiet in which the tester
// sent the RPC no DATA, GRANT or BUSY, which the protocol allows
// (homa_timer_check_rpc counts the silent ticks those reset). The
// silence runs from the latest such packet of the tester's, or DATA of
// the IUT's (a client counts once its request is out), before the end;
// in order of client id.
func timerEnded(logs [][]*tester.Packet, timedOut map[uint64]time.Time, quiet time.Duration) []silentEnd {
	ended := maps.Clone(timedOut)
	if ended == nil {
		ended = map[uint64]time.Time{}
	}
	for _, log := range logs {
		for _, x := range log {
			if !x.Sent && x.Err == nil && x.Pkt.Type() == wire.TypeRPCUnknown {
				if at, seen := ended[x.Pkt.SenderID()&^1]; !seen || x.At.Before(at) {
					ended[x.Pkt.SenderID()&^1] = x.At
				}
			}
		}
	}
	var out []silentEnd
	for _, id := range slices.Sorted(maps.Keys(ended)) {
		at := ended[id]
		var from time.Time
		for _, log := range logs {
			for _, x := range log {
				t := x.Pkt.Type()
				if x.Err != nil || x.Pkt.SenderID()&^1 != id || !x.At.Before(at) || x.At.Before(from) {
					continue
				}
				if x.Sent && (t == wire.TypeData || t == wire.TypeGrant || t == wire.TypeBusy) || !x.Sent && t == wire.TypeData {
					from = x.At
				}
			}
		}
		if !from.IsZero() && at.Sub(from) >= quiet {
			out = append(out, silentEnd{id, from, at})
		}
	}
	return out
}

// none fails the spec when bad holds any line: "what: line", or "what:"
// and each line on its own, each once (Gomega's BeEmpty would print the
// list again as a Go value, cut at its length limit).
func none(bad []string, what string, args ...any) {
	GinkgoHelper()
	switch msg := fmt.Sprintf(what, args...); len(bad) {
	case 0:
	case 1:
		Fail(msg + ": " + bad[0])
	default:
		Fail(msg + ":\n" + strings.Join(bad, "\n"))
	}
}

// inconclusive reports whether timing finding v, judged over view, is
// explained by a stall the environment measured (Env.Stalls); if so it
// records it as a timing-inconclusive report entry naming the stall. A
// finding without a tolerance never is. It first waits for the monitor to
// have recorded every stall up to now (stall.Monitor.Settle): the
// exchange just ended, and a stall in its last moments is recorded up to
// the monitor's window later (without the wait such a finding failed the
// spec while homatest check on the run's capture, judged after the run,
// found the stall that explains it).
func inconclusive(v spec.Finding, view []spec.Event) bool {
	return inconclusiveAs(entryInconclusive, v, view)
}

// inconclusiveAs is inconclusive recording the finding as report entry
// entry (entryInconclusive or entryElsewhere).
func inconclusiveAs(entry string, v spec.Finding, view []spec.Event) bool {
	if env.Stalls == nil || !v.Timing() {
		return false
	}
	env.Stalls.Settle(ctx(), time.Now())
	spans := stall.Explaining(suiteLate(v), view, env.Stalls.Spans())
	if len(spans) == 0 {
		return false
	}
	AddReportEntry(entry, fmt.Sprintf("%s: %s %s%s; %v lost in all)", v.Rule, v.Why, stallMark, spans[0], stall.Lost(spans).Round(time.Microsecond)))
	return true
}

// suiteLate is timing finding v as the suite weighs it against measured
// stalls: a stall that lost at least half of how late v's event came
// (spec.Finding.Late) may explain it, where homatest check asks for all
// of it. The measured loss understates the delay it caused: it is one
// thread's run-queue wait, while the IUT's timer and receive work hop
// between threads, and waits below the monitor's Min are not recorded
// (in namespaces beside three other suites, a first RESEND round 170 ms
// late came during a measured IUT stall of 145 ms). Leniency here costs
// no verdict: an inconclusive spec is rerun, and one that stays
// inconclusive is not judged, never passed; a faulty IUT fails the rerun
// that no stall explains. check has no rerun, so it stays strict.
func suiteLate(v spec.Finding) spec.Finding {
	v.Late /= 2
	return v
}

// stalledAtLeast reports whether the stalls the environment measured
// overlapping [from, to] lost at least lost between them; if so it
// records timing finding msg (a spec's own timing expectation) as
// timing-inconclusive, naming the stall, as inconclusive does for the
// checker's findings. lost is what the expectation's breach needs: a
// timer event late by l needs l lost (offSchedule), a client timing out
// while its peer kept answering most of timeout_ticks. Never any
// overlapping stall: one that lost less than the lateness does not
// explain it (stalledDuring, which asked no loss, is gone).
func stalledAtLeast(msg string, from, to time.Time, lost time.Duration) bool {
	return stalledAtLeastOf(msg, from, to, lost, nil)
}

// stalledAtLeastOf is stalledAtLeast weighing only the stalls keep
// selects (all when nil): those that could have caused what msg says.
func stalledAtLeastOf(msg string, from, to time.Time, lost time.Duration, keep func(stall.Span) bool) bool {
	spans, sum, lostThat := stallsLost(from, to, lost, keep)
	if !lostThat {
		return false
	}
	AddReportEntry(entryInconclusive, fmt.Sprintf("%s %s%s; %v lost in all)", msg, stallMark, spans[0], sum))
	return true
}

// stallsLost returns the stalls measured overlapping [from, to] that keep
// selects (all when nil), what they lost between them, and whether that
// is at least lost (stalledAtLeastOf without recording a finding).
func stallsLost(from, to time.Time, lost time.Duration, keep func(stall.Span) bool) ([]stall.Span, time.Duration, bool) {
	if env.Stalls == nil {
		return nil, 0, false
	}
	env.Stalls.Settle(ctx(), time.Now())
	spans := stall.Overlaps(env.Stalls.Spans(), from, to)
	if keep != nil {
		spans = slices.DeleteFunc(spans, func(s stall.Span) bool { return !keep(s) })
	}
	return spans, stall.Lost(spans), stall.AtLeast(spans, lost) != nil
}

// slackInconclusive records timing finding q, which only the measured
// noise's slack (Env.Slack) let pass (slackOnly), as timing-inconclusive:
// the evidence cannot tell it from a violation, so the spec is rerun
// and, if every rerun is alike, not judged. The stall that accounts for
// it is named when one does (inconclusive).
func slackInconclusive(entry string, q spec.Finding, view []spec.Event) {
	if inconclusiveAs(entry, q, view) {
		return
	}
	AddReportEntry(entry, fmt.Sprintf("%s: %s (with a quiet machine's slack %v; %s%v this machine's measured noise gave)",
		q.Rule, q.Why, quietParams().Slack, slackMark, env.Slack))
}

// onMain reports whether the IUT speaks HomaModule main's protocol (the
// linux profile), whose RESEND handling the other profiles lack: since
// be5081e homa_resend_pkt raises granted to a RESEND's end and answers
// BUSY exactly when the RESEND's offset is at or past what the sender
// transmitted (linux_6.1.38 and linux_6.10.6 do neither).
func onMain() bool { return env.Profile == "linux" }
