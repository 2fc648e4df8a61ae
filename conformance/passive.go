package conformance

import (
	"errors"
	"fmt"
	"github.com/homatest/homatest/agent"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// workloadSpec is one passive run: clients call one server with sizes
// from a distribution.
type workloadSpec struct {
	hosts       int // IUT hosts; the last is the server
	dist        string
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
	return b
}

// run drives the workload and checks every RPC: completed, right payload
// (the agents check it), each request executed exactly once.
func (w workloadSpec) run() *Bench {
	GinkgoHelper()
	b := bench(w.hosts, w.imp)
	d, err := workload.Parse(w.dist)
	ok(err, "workload %s", w.dist)
	server := b.IUTs[len(b.IUTs)-1]
	dst := netip.AddrPortFrom(b.Addrs[len(b.Addrs)-1], ServerPort)
	ok(server.Listen(ctx(), ServerPort), "server listen")
	rng := rand.New(rand.NewPCG(w.seed, 1))
	sizes := make([][2]int, w.rpcs)
	for i := range sizes {
		sizes[i] = [2]int{d.Sample(rng), min(d.Sample(rng), 100000)}
		if sizes[i][0] < agent.PayloadHeaderLen {
			sizes[i][1] = sizes[i][0] // no room for a response length: the response echoes the size (docs/agent-protocol.md)
		}
	}
	var mu sync.Mutex
	var failures []string
	sem := make(chan struct{}, w.concurrency)
	var wg sync.WaitGroup
	deadline := timescale.D(time.Duration(params().TimeoutTicks)*params().Tick*20 + 30*time.Second)
	for i, sz := range sizes {
		client := b.IUTs[i%(len(b.IUTs)-1)]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			done, err := client.Call(ctx(), dst, sz[0], sz[1])
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
				case <-time.After(deadline):
					msg = "no completion"
				}
			}
			if msg != "" {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("RPC %d (%d→%d bytes): %s", i, sz[0], sz[1], msg))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	Expect(failures).To(BeEmpty(), "RPCs that did not complete with the right payload (%s)", b.Describe)
	st, err := server.Stats(ctx())
	ok(err, "server stats")
	Expect(st["served"]).To(Equal(uint64(w.rpcs)), "requests executed by the server (at most once each)")
	Expect(st["served_duplicates"]).To(BeZero(), "requests executed twice")
	Expect(st["payload_errors"]).To(BeZero(), "payload errors at the server")
	return b
}

// sentViewRules judge a host by what it had itself sent before (NEED_ACK
// only after the whole response went out, its timing, retransmission
// order): on the delivered view a lost packet would look unsent. They are
// checked on the as-sent capture; every other rule is checked on the
// delivered capture, where each host's triggers are what it received.
var sentViewRules = map[string]bool{"HOMA-ACK-001": true, "HOMA-ACK-005": true, "HOMA-RESEND-011": true}

// hostViewRules need a capture on the judged host's own link: HOMA-GRANT-008
// compares when a GRANT reached the sender with when its DATA left it, and
// queueing at the switch shifts either view by more than any slack on a
// loaded machine. Passive specs leave them out; active specs judge them
// (REQUEST-unscheduled), where the tester is the host's only peer.
var hostViewRules = map[string]bool{"HOMA-GRANT-008": true}

// checkBench checks the bench's captures with every rule at level min or
// above (sentViewRules on the as-sent capture, the others on the delivered
// capture) and fails on violations.
func checkBench(b *Bench, min spec.Level) {
	GinkgoHelper()
	sent, delivered, err := b.Finish()
	ok(err, "writing the bench captures")
	AddReportEntry(entryCapture, delivered)
	all, err := spec.Select(spec.Rules(), "HOMA-*", min, env.Profile)
	ok(err, "selecting rules")
	var onSent, onDelivered []*spec.Rule
	for _, r := range all {
		if hostViewRules[r.ID] {
			continue
		}
		if sentViewRules[r.ID] {
			onSent = append(onSent, r)
		} else {
			onDelivered = append(onDelivered, r)
		}
	}
	bad := checkFile(delivered, onDelivered)
	bad = append(bad, checkFile(sent, onSent)...)
	Expect(bad).To(BeEmpty(), "spec checker findings (as sent: %s; as delivered: %s):\n%s", sent, delivered, strings.Join(bad, "\n"))
}

// checkFile runs rules over the capture at path with the environment's
// slack and returns up to 10 violations as text.
func checkFile(path string, rules []*spec.Rule) []string {
	GinkgoHelper()
	p := params()
	p.Slack = max(p.Slack, env.Slack)
	p.Jitter = max(p.Jitter, env.Slack)
	c := spec.NewChecker(env.Profile, p, rules)
	r, err := pcap.Open(path, pcap.ReaderOptions{Version: p.Wire})
	ok(err, "reading %s", path)
	defer r.Close()
	var evs []spec.Event
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		ok(err, "reading %s", path)
		evs = f.Events(evs[:0])
		for i := range evs {
			c.Feed(&evs[i])
		}
	}
	rep := c.Finish()
	var bad []string
	for i, v := range rep.Violations {
		if i == 10 {
			bad = append(bad, fmt.Sprintf("… %d more in %s", len(rep.Violations)-10, path))
			break
		}
		bad = append(bad, v.String())
	}
	return bad
}
