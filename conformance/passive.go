package conformance

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/spec/wire"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec"
)

// workloadSpec is one passive run: clients call one server with sizes
// from a distribution.
type workloadSpec struct {
	hosts       int    // IUT hosts; the last is the server
	dist        string // request sizes (harness/workload: w1..w5 or a fixed size)
	maxLen      int    // caps every size drawn from dist (0: no cap on requests)
	resp        int    // fixed response size in bytes (0: drawn from dist, at most 100000)
	rpcs        int
	concurrency int
	imp         LinkImpairment
	seed        uint64
}

// bench builds the spec's bench or skips the spec when the environment
// cannot.
func bench(n int, imp LinkImpairment) *Bench {
	GinkgoHelper()
	if env.NewBench == nil {
		Skip("unsupported: " + errNoBench.Error())
	}
	b, err := env.NewBench(n, imp)
	ok(err, "building a bench of %d IUT hosts", n)
	DeferCleanup(b.Close)
	// Finish once: checkBench and the specs' own looks at the captures
	// read the same files.
	var once sync.Once
	var sent, delivered string
	finish := b.Finish
	b.Finish = func() (string, string, error) {
		once.Do(func() { sent, delivered, err = finish() })
		return sent, delivered, err
	}
	// The captures are kept for a failed spec only (its report names
	// them); a passing pass would otherwise leave about 10 MB per spec.
	DeferCleanup(func() {
		failed := CurrentSpecReport().Failed()
		if sent != "" && !failed {
			removeWithSidecars(sent)
			removeWithSidecars(delivered)
		}
		if !failed {
			return
		}
		// Failed before checkBench too (e.g. RPCs that never completed):
		// keep the packets for the report all the same.
		if _, _, err := b.Finish(); err != nil {
			return
		}
		s, d, err := keepCaptures(b)
		if err != nil {
			return
		}
		AddReportEntry(entryCapture, d)
		p := benchParams(b)
		writeBenchSidecars(s, p)
		writeBenchSidecars(d, p)
	})
	return b
}

// keptPath is the path the capture Finish gave at path has once
// keepCaptures kept it.
func keptPath(b *Bench, path string) string {
	if b.Keep == nil {
		return path
	}
	return keptName(path)
}

// keepCaptures makes the bench's finished captures a failed spec's own
// (Bench.Keep) and returns their paths.
func keepCaptures(b *Bench) (sent, delivered string, err error) {
	if b.Keep == nil {
		return b.Finish()
	}
	return b.Keep()
}

// run drives the workload and checks every RPC: completed, right payload
// (the agents check it), each request executed exactly once.
func (w workloadSpec) run() *Bench {
	GinkgoHelper()
	b := bench(w.hosts, w.imp)
	o := workload.DefaultOptions
	if w.maxLen > 0 {
		o.MaxLength = w.maxLen
	}
	d, err := workload.ParseOptions(w.dist, o)
	ok(err, "workload %s", w.dist)
	if b.Simulate != nil {
		w.simulate(b, d)
		return b
	}
	server := b.IUTs[len(b.IUTs)-1]
	dst := netip.AddrPortFrom(b.Addrs[len(b.Addrs)-1], ServerPort)
	ok(server.Listen(ctx(), ServerPort, agent.ListenOptions{}), "server listen")
	rng := rand.New(rand.NewPCG(w.seed, 1))
	sizes := make([][2]int, w.rpcs)
	for i := range sizes {
		sizes[i] = [2]int{d.Sample(rng), min(d.Sample(rng), 100000)}
		if w.resp > 0 {
			sizes[i][1] = w.resp
		}
		if sizes[i][0] < agent.PayloadHeaderLen {
			sizes[i][1] = sizes[i][0] // no room for a response length: the response echoes the size (docs/agent-protocol.md)
		}
	}
	var mu sync.Mutex
	// failures fail the spec; stalled are RPCs that timed out while a
	// measured stall overlapped them (inconclusive: a host kept from
	// running looks dead to its peer).
	var failures, stalled []string
	sem := make(chan struct{}, w.concurrency)
	var wg sync.WaitGroup
	// The workload is abandoned when no RPC has completed for 3 s, or
	// after 30 s in all: a stalled IUT (one that never grants, say) fails
	// the spec in bounded time instead of waiting out every RPC. A working
	// one completes RPCs every few ms, and its worst stall (RESENDs after
	// lost packets, a few timer ticks; 1 s at most before an RPC times out) is far below 3 s.
	idle, total := timescale.D(3*time.Second), timescale.D(30*time.Second)
	abort := make(chan struct{})
	var why string
	progress := make(chan struct{}, 1)
	watchdog := make(chan struct{})
	go func() {
		defer close(abort)
		end := time.After(total)
		for {
			select {
			case <-progress:
				continue
			case <-watchdog:
				return
			case <-end:
				why = "after 30 s in all"
			case <-time.After(idle):
				why = "after 3 s without a completion"
			}
			return
		}
	}()
	for i, sz := range sizes {
		client := b.IUTs[i%(len(b.IUTs)-1)]
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-abort:
		}
		if !acquired || isClosed(abort) {
			if acquired {
				<-sem
			}
			mu.Lock()
			failures = append(failures, fmt.Sprintf("workload abandoned %s with %d of %d RPCs started", why, i, len(sizes)))
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			began := time.Now()
			done, err := client.Call(ctx(), dst, sz[0], sz[1], 0)
			var msg string
			if err != nil {
				msg = err.Error()
			} else {
				select {
				case r := <-done:
					if r.Err != "" {
						msg = r.Err
					} else if r.Response != sz[1] {
						msg = fmt.Sprintf("response %d bytes, want %d", r.Response, sz[1])
					}
					select {
					case progress <- struct{}{}:
					default:
					}
				case <-abort:
					msg = "no completion: workload abandoned " + why
				}
			}
			if msg != "" {
				// The workload's call number, not a Homa RPC id (the agent
				// protocol does not carry it): the sizes find the RPC in
				// the capture (homatest rpcs).
				line := fmt.Sprintf("workload call %d (%d→%d bytes): %s", i, sz[0], sz[1], msg)
				// A workload call ends in milliseconds: one that timed
				// out is late by its whole life, which the stalls must
				// have lost to explain it.
				var sp []stall.Span
				if env.Stalls != nil {
					now := time.Now()
					sp = stall.TimedOut(msg, began, now, now.Sub(began), env.Stalls.Spans())
				}
				mu.Lock()
				if len(sp) > 0 {
					stalled = append(stalled, fmt.Sprintf("%s %s%s)", line, stallMark, sp[0]))
				} else {
					failures = append(failures, line)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(watchdog)
	<-abort
	for _, s := range stalled {
		AddReportEntry(entryInconclusive, "timed out: "+s)
	}
	none(failures, "RPCs that did not complete with the right payload (%s)", b.Describe)
	st, err := server.Stats(ctx())
	ok(err, "server stats")
	if len(stalled) == 0 {
		Expect(st["served"]).To(Equal(uint64(w.rpcs)), "requests executed by the server (at most once each)")
	} else {
		// A request whose RPC timed out may or may not have reached the
		// server before its client gave up.
		Expect(st["served"]).To(BeNumerically(">=", uint64(w.rpcs-len(stalled))), "requests executed by the server")
		Expect(st["served"]).To(BeNumerically("<=", uint64(w.rpcs)), "requests executed by the server (at most once each)")
	}
	Expect(st["served_duplicates"]).To(BeZero(), "requests executed twice")
	Expect(st["payload_errors"]).To(BeZero(), "payload errors at the server")
	return b
}

// maxResponse caps the responses of a workload whose response sizes come
// from its distribution.
const maxResponse = 100000

// simulate runs the workload on a simulated bench, as harness/traffic
// issues one: w.rpcs RPCs from the clients to the last host, each client
// keeping its share of w.concurrency outstanding (a closed loop), request
// sizes from d, responses w.resp bytes or drawn from w.dist up to
// maxResponse. The checks are run's.
func (w workloadSpec) simulate(b *Bench, d workload.Dist) {
	GinkgoHelper()
	cfg := traffic.Config{Pattern: traffic.ManyToOne, Port: ServerPort, Requests: d, ResponseBytes: w.resp,
		Concurrency: max(1, w.concurrency/(w.hosts-1)), Count: w.rpcs, Seed: w.seed}
	if w.resp == 0 {
		if n, err := strconv.Atoi(w.dist); err == nil {
			cfg.ResponseBytes = min(n, maxResponse)
		} else {
			o := workload.DefaultOptions
			o.MaxLength = maxResponse
			cfg.Responses, err = workload.ParseOptions(w.dist, o)
			ok(err, "response sizes %s", w.dist)
		}
	}
	res, err := b.Simulate(cfg)
	ok(err, "simulating the workload")
	var failures []string
	for _, r := range res.Records {
		if r.Err != "" {
			failures = append(failures, fmt.Sprintf("workload call %d (%d→%d bytes, from h%d): %s", r.Seq, r.Request, r.Response, r.Client+1, r.Err))
		}
	}
	Expect(len(res.Records)).To(Equal(w.rpcs), "RPCs issued (%s)", b.Describe)
	none(failures, "RPCs that did not complete with the right payload (%s)", b.Describe)
	st := res.Stats[len(res.Stats)-1]
	Expect(st.Served).To(Equal(uint64(w.rpcs)), "requests executed by the server (at most once each)")
	Expect(st.ServedDuplicates).To(BeZero(), "requests executed twice")
	Expect(st.PayloadErrors).To(BeZero(), "payload errors at the server")
}

// isClosed reports whether ch is closed (ch is only ever closed, never sent on).
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkBench checks the bench's captures with every rule at level min or
// above, host by host: for each IUT host it merges the packets that host
// sent (as it sent them) with the packets delivered to it (as they arrived)
// — what a capture on that host's own link would show — and keeps the
// violations at packets that host sent. Every rule then sees a host's
// triggers when the host got them and its actions when it took them, so
// queueing between the hosts cannot fake a violation.
func checkBench(b *Bench, min spec.Level) {
	GinkgoHelper()
	sentPath, deliveredPath, err := b.Finish()
	ok(err, "writing the bench captures")
	// The names the captures have once the failed spec keeps them.
	sentName, deliveredName := keptPath(b, sentPath), keptPath(b, deliveredPath)
	p := benchParams(b)
	judge, err := spec.NewJudge(env.Profile, p, "HOMA-*", min)
	ok(err, "selecting rules")
	judge.FromStart = true // the bench's captures begin before its first RPC
	// homatest check on either file then judges it as this spec does.
	for _, f := range []string{sentPath, deliveredPath} {
		ok(writeBenchSidecars(f, p), "writing the bench captures' sidecars")
	}
	sent := readEvents(sentPath, p.Wire)
	delivered := readEvents(deliveredPath, p.Wire)
	var bad []string
	var sentFindings, deliveredFindings []spec.Finding
	excused, stalled, altered := 0, 0, 0
	for _, hr := range judge.Hosts(sent, delivered, b.Addrs) {
		excused += len(hr.Excused)
		altered += len(hr.Altered)
		kept := hr
		kept.Violations = nil
		for _, v := range hr.Violations {
			if b.Simulate == nil && inconclusive(v, hr.View) {
				stalled++
				continue
			}
			kept.Violations = append(kept.Violations, v)
			if len(bad) == 10 {
				bad = append(bad, "…")
				break
			}
			// Frame numbers of the view name no file: point at the
			// frame in the capture the packet came from.
			where := "as sent"
			src := hr.Sources[v.Frame-1]
			if src.Delivered {
				where = "as delivered"
			}
			f := v
			f.Why = hr.LocateText(v.Why, filepath.Base(sentName), filepath.Base(deliveredName))
			bad = append(bad, fmt.Sprintf("host %s view (view frame %d = frame %d of the %s capture): %s", hr.Host, v.Frame, src.Frame, where, f))
		}
		s, d := annotate.HostView(kept, filepath.Base(sentName), filepath.Base(deliveredName))
		sentFindings, deliveredFindings = append(sentFindings, s...), append(deliveredFindings, d...)
	}
	if len(bad) > 0 {
		// The failed spec keeps both captures: put each finding on its
		// frame as a packet comment.
		annotateInPlace(sentPath, sentFindings, "homatest run: "+b.Describe+": as sent")
		annotateInPlace(deliveredPath, deliveredFindings, "homatest run: "+b.Describe+": as delivered")
	}
	var also []string
	if stalled > 0 {
		also = append(also, plural.Of(stalled, "more timing finding was", "more timing findings were")+" inconclusive: a measured stall explains "+plural.Word(stalled, "it", "them"))
	}
	if excused > 0 {
		also = append(also, fmt.Sprintf("%d raced a delivery", excused))
	}
	if altered > 0 {
		also = append(also, fmt.Sprintf("%d concern RPCs a packet of which reached its host altered on the way", altered))
	}
	also = append(also, "as sent: "+sentName, "as delivered: "+deliveredName)
	none(bad, "spec checker findings (%s)", strings.Join(also, "; "))
}

// annotateInPlace rewrites the capture at path with findings as packet
// comments (best effort: the spec fails anyway, and the capture without
// comments stays if this cannot be done).
func annotateInPlace(path string, findings []spec.Finding, section string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	annotate.Write(f, path, findings, section)
}

// readEvents reads every spec event of the capture at path, each with its
// own copy of the packet bytes.
func readEvents(path string, v wire.Version) []spec.Event {
	GinkgoHelper()
	out, err := pcap.ReadEvents(path, pcap.ReaderOptions{Version: v})
	ok(err, "reading %s", path)
	return out
}

// expectHits waits up to within (times HOMATEST_TIME_SCALE) until rule i
// of the bench's fault plan has fired at least n times, and fails the
// spec otherwise: a plan that never hit the packets it names tests
// nothing. It returns the rule's hits. A simulated bench's counts are
// final when its workload has run: they are checked at once.
func expectHits(b *Bench, i, n int, within time.Duration) int {
	GinkgoHelper()
	count := func() int {
		c := 0
		for _, h := range b.Switch().Hits {
			if h.Rule == i {
				c++
			}
		}
		return c
	}
	if b.Simulate != nil {
		Expect(count()).To(BeNumerically(">=", n), "hits of fault-plan rule %d (%s)", i, b.Describe)
		return count()
	}
	Eventually(count).WithTimeout(timescale.D(within)).WithPolling(10*time.Millisecond).Should(BeNumerically(">=", n),
		"hits of fault-plan rule %d (%s)", i, b.Describe)
	return count()
}

// quiet waits until the bench's fault plan has not fired for d (within
// 5 s times HOMATEST_TIME_SCALE). A simulated bench has run to its end
// (its workload and the drain after it): nothing is left to fire.
func quiet(b *Bench, d time.Duration) {
	GinkgoHelper()
	if b.Simulate != nil {
		return
	}
	last, since := -1, time.Now()
	Eventually(func() bool {
		if n := len(b.Switch().Hits); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	}).WithTimeout(timescale.D(5*time.Second)).WithPolling(10*time.Millisecond).Should(BeTrue(),
		"the fault plan still firing after 5 s (%s)", b.Describe)
}

// countSent counts the packets of type t that hosts chosen by from sent
// (the as-sent capture, before the switch).
func countSent(b *Bench, from func(netip.Addr) bool, t wire.PacketType) int {
	GinkgoHelper()
	sentPath, _, err := b.Finish()
	ok(err, "writing the bench captures")
	n := 0
	for _, e := range readEvents(sentPath, b.Params.Wire) {
		if e.Err == nil && e.Packet.Type() == t && from(e.Src) {
			n++
		}
	}
	return n
}

// server and clients choose a workload bench's hosts by address (the last
// host serves).
func (b *Bench) server(a netip.Addr) bool  { return a == b.Addrs[len(b.Addrs)-1] }
func (b *Bench) clients(a netip.Addr) bool { return !b.server(a) && slices.Contains(b.Addrs, a) }

// benchParams are the parameters a bench's captures are judged with: its
// hosts' (the suite's defaults without a hello) with the tolerances its
// environment needs.
func benchParams(b *Bench) spec.Params {
	p := b.Params
	if p.Tick == 0 {
		p = params()
	}
	// Host views of real-time hosts (agents in namespaces) are taken
	// where packets enter and leave the hosts, not where the hosts' timers
	// run: scheduling delays of the user-space hosts (several share this
	// machine's CPUs) separate the two, so "too late" bounds get three of
	// the bench's ticks and "too early" bounds two (an early RESEND after
	// one silent tick instead of five is still caught, and the active
	// specs time it exactly). A timing finding that a stall measured by
	// the environment (Env.Stalls: this process, the IUT's agents)
	// explains is timing-inconclusive (a report entry, counted in the
	// result), and one at a host's timer action less than timerRace after
	// a packet of the same RPC was delivered to it is excused: the hosts
	// stood still in the one, and may not have seen the packet in the
	// other. A simulated bench has neither.
	p.Slack = max(p.Slack, env.Slack, 3*p.Tick)
	p.Jitter = max(p.Jitter, env.Slack, 2*p.Tick)
	p.Reaction = timerRace
	if b.Simulate != nil {
		// A simulated bench's views are its hosts' protocol inputs and
		// outputs on exact virtual time: no slack beyond the captures'
		// stamp spacing, and nothing stalls.
		p.Slack, p.Jitter, p.Reaction = sim.ViewTolerance, sim.ViewTolerance, 0
	}
	return p
}

// writeBenchSidecars writes the sidecars of a bench capture
// (WriteCheckSidecars): homatest check on the file then judges it as the
// spec did.
func writeBenchSidecars(path string, p spec.Params) error {
	return WriteCheckSidecars(path, p, env.Stalls, "The parameters the workload spec judged its bench with (its hosts' hellos, with the slack and jitter of its environment).")
}
