package explore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
)

// Config configures a session (Explore).
type Config struct {
	// Env is where cases run.
	Env Env
	// Budget bounds the session's wall time (searching; shrinking a
	// failure has its own bound, ShrinkRuns).
	Budget time.Duration
	// MaxCases bounds the number of cases (0: none); a session ends at
	// whichever of Budget and MaxCases comes first.
	MaxCases int
	// Seed seeds every random choice: in the simulator the same seed
	// gives the same cases.
	Seed uint64
	// Rules are the rules judged (nil: every rule of the environment's
	// profile); Level the strictest level that fails a case (spec.Should:
	// MUST and SHOULD rules; spec.Must: MUST only).
	Rules []*spec.Rule
	Level spec.Level
	// ShrinkRuns bounds the reruns spent shrinking one failure (0: 400;
	// negative: no shrinking).
	ShrinkRuns int
	// KeepGoing searches on after a failure (each new rule's failure is
	// shrunk once); otherwise the session ends at the first failure.
	KeepGoing bool
	// StopAt ends a KeepGoing session once a failure of one of these
	// rules is found.
	StopAt []string
	// Progress, when set, is called about once a second and at the end.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called (0: one second).
	ProgressEvery time.Duration
	// ReplayCommand, when set, is the command that replays the n-th
	// failure's script (rule its rule), for the script's "# Replay:"
	// line; nil: "homatest explore --replay FILE".
	ReplayCommand func(n int, rule string) string
}

// Progress is a session's state, for the progress line.
type Progress struct {
	Elapsed      time.Duration `json:"elapsed_ns"`
	Cases        int           `json:"cases"`
	Events       int           `json:"events"`
	EventsPerSec float64       `json:"events_per_sec"`
	// MustExercised of MustRules MUST rules were evaluated at packets
	// the IUT sent (MustRules leaves out those the explorer's events
	// cannot exercise: see judgeable).
	MustExercised int `json:"must_exercised"`
	MustRules     int `json:"must_rules"`
	Features      int `json:"features"`
	Failures      int `json:"failures"`
	// Shrinking names the rule of a failure being shrunk ("" otherwise).
	Shrinking string `json:"shrinking,omitempty"`
}

// String renders the progress line.
func (p Progress) String() string {
	s := fmt.Sprintf("%6.1fs  %d cases  %.0f events/s  MUST rules exercised %d/%d (%.0f%%)  features %d  failures %d",
		p.Elapsed.Seconds(), p.Cases, p.EventsPerSec, p.MustExercised, p.MustRules, pct(p.MustExercised, p.MustRules), p.Features, p.Failures)
	if p.Shrinking != "" {
		s += "  (shrinking " + p.Shrinking + ")"
	}
	return s
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// Result is a session's outcome.
type Result struct {
	Impl    string        `json:"impl"`
	Version string        `json:"version"`
	Env     string        `json:"env"`
	Seed    uint64        `json:"seed"`
	Budget  time.Duration `json:"budget_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Cases   int           `json:"cases"`
	// Events are the explorer's events (packets sent and received, IUT
	// calls and completions) over the session's wall time.
	Events       int     `json:"events"`
	EventsPerSec float64 `json:"events_per_sec"`
	// Sent counts the packets tester hosts delivered to the IUT.
	Sent int `json:"sent"`
	// Stale counts the IUT's packets of an earlier case's RPCs (one IUT
	// for the session, namespaces): left out of the case's view. Each
	// case is wound down before the next (run.drain), so few come.
	Stale int `json:"stale"`
	// Inconclusive counts findings on the IUT not charged (real time): a
	// measured stall or the IUT's timer racing a packet explains a timing
	// finding, or the IUT's packet counters show the namespace network
	// lost packets the view took as delivered; InconclusiveFindings are
	// the first of them (at most 20), each with its reason.
	Inconclusive         int      `json:"inconclusive"`
	InconclusiveFindings []string `json:"inconclusive_findings,omitempty"`
	Coverage             Coverage `json:"coverage"`
	Failures             []*Found `json:"failures"`
	// Params are the parameters the session judged the IUT with (its
	// hello's, with the environment's slack and jitter) and Stalls what
	// the environment measured (nil in the simulator): homatest explore
	// writes them beside each failure's capture
	// (conformance.WriteCheckSidecars), so that homatest check judges it
	// as the session did.
	Params spec.Params    `json:"-"`
	Stalls *stall.Monitor `json:"-"`
	// iutAddr and hostAddrs are the IUT's and the tester hosts' addresses.
	iutAddr   netip.Addr
	hostAddrs []netip.Addr
}

// Coverage is what a session exercised.
type Coverage struct {
	// MustRules MUST rules applied, less those the explorer's events
	// cannot exercise (judgeable); MustExercised of them were evaluated
	// at packets the IUT sent.
	MustRules     int `json:"must_rules"`
	MustExercised int `json:"must_exercised"`
	// Rules lists every rule judged and whether it was exercised.
	Rules []RuleCoverage `json:"rules"`
	// Pairs are the distinct (packet given to the IUT, its answer) type
	// pairs per IUT side; States the distinct (IUT side and state,
	// packet given) triples.
	Pairs  int `json:"pairs"`
	States int `json:"states"`
}

// RuleCoverage says whether one rule was exercised.
type RuleCoverage struct {
	ID        string     `json:"id"`
	Level     spec.Level `json:"level"`
	Exercised bool       `json:"exercised"`
	Violated  bool       `json:"violated"`
	// NeedsCapture: the rule judges what only a capture holds (the IP
	// header, spec.NeedsIPHeader), so the explorer cannot exercise it
	// and Coverage's MUST counts leave it out.
	NeedsCapture bool `json:"needs_capture,omitempty"`
}

// Found is one failure the session found, shrunk.
type Found struct {
	Failure
	// Case is the session's case number that found it; After the wall
	// time into the session.
	Case  int           `json:"case"`
	After time.Duration `json:"after_ns"`
	// Original is the failing case as found, Shrunk the smallest case
	// that still fails with the same rule.
	Original *Case `json:"original"`
	Shrunk   *Case `json:"shrunk"`
	// Packets and OriginalPackets count the packets the tester hosts
	// delivered to the IUT in the shrunk and the original case (up to the
	// failure); ShrinkRuns the reruns shrinking took.
	Packets         int `json:"packets"`
	OriginalPackets int `json:"original_packets"`
	ShrinkRuns      int `json:"shrink_runs"`
	// ShrinkOff says shrinking was off (Config.ShrinkRuns negative,
	// --shrink-runs 0): the case is as found, and "shrunk in 0 runs"
	// would say otherwise.
	ShrinkOff bool `json:"-"`
	// Reruns and Refailed count the reruns of the case as found before
	// shrinking (real time only: stableReruns) and those that failed
	// again with the rule.
	Reruns   int `json:"reruns,omitempty"`
	Refailed int `json:"refailed,omitempty"`
	// Unstable says the failure depends on timing (real time only): a
	// rerun of the case as found did not fail again with the rule, or
	// the last run of the shrunk case did not. The script and capture are
	// then of the last failing run, and the shrunk case, if any, is not
	// shown minimal (UnstableWhy says which).
	Unstable bool `json:"unstable,omitempty"`
	// Script is the replay script of the shrunk case (see Replay).
	Script string `json:"-"`
	// Capture is the shrunk case's IUT view as pcapng, with the finding
	// as a packet comment on its frame.
	Capture []byte `json:"-"`
	// ScriptFile, ReplayCommand and CaptureFile are where a driver wrote
	// Script and Capture and the command that replays the script ("":
	// not written; homatest explore fills them in its run folder).
	ScriptFile    string `json:"script,omitempty"`
	ReplayCommand string `json:"replay,omitempty"`
	CaptureFile   string `json:"capture,omitempty"`
}

// session is one Explore call.
type session struct {
	ctx     context.Context
	cfg     Config
	rcfg    runConfig
	rng     *rand.Rand
	shared  *world
	info    worldInfo
	feats   map[string]bool
	rules   map[string]bool // exercised rules (by ID)
	corpus  []*entry
	reward  [numKinds]float64
	res     *Result
	start   time.Time
	lastRep time.Time
	found   map[string]bool
	faults  []string
}

// worldInfo is what the session knows of the environment (from the first
// world built).
type worldInfo struct {
	// params are the IUT's as its hello gave them (scripts); judged the
	// checker's (world.params).
	params  spec.Params
	judged  spec.Params
	hosts   int
	profile string
	impl    string
	version string
	mtu     uint32
	// virtual: the world runs in virtual time (the simulator), where a
	// case's run is the same every time.
	virtual bool
}

// entry is a corpus case: one that found coverage no earlier case had.
type entry struct {
	c    *Case
	prob [numKinds]float64
	hits int
}

// newSession builds a session's first world and what the session knows
// of it (parameters, rules kept, tester addresses); release closes a
// world the session keeps for all its cases (namespaces).
func newSession(ctx context.Context, cfg Config) (*session, func(), error) {
	s := &session{ctx: ctx, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		feats: map[string]bool{}, rules: map[string]bool{}, found: map[string]bool{}, faults: cfg.Env.Faults}
	if s.cfg.Level == 0 {
		s.cfg.Level = spec.Should
	}
	if s.cfg.ShrinkRuns == 0 {
		s.cfg.ShrinkRuns = 400
	}
	for k := range s.reward {
		s.reward[k] = 1
	}
	s.start = time.Now()
	w, err := newWorld(ctx, cfg.Env)
	if err != nil {
		return nil, nil, err
	}
	s.info = worldInfo{params: w.info.Params, judged: w.params, hosts: len(w.hosts), profile: w.ce.Profile, impl: w.info.Impl,
		version: w.info.Version, mtu: maxSegData(w.info), virtual: w.virtual}
	rules := cfg.Rules
	if rules == nil {
		rules = spec.Rules()
	}
	var kept []*spec.Rule
	for _, r := range rules {
		if r.AppliesTo(s.info.profile) && r.Level <= s.cfg.Level {
			kept = append(kept, r)
		}
	}
	s.rcfg = runConfig{rules: kept, level: s.cfg.Level}
	release := func() {}
	if cfg.Env.Fresh {
		w.close()
	} else {
		s.shared = w
		release = func() { w.close() }
	}
	// Failures starts empty, not nil: -o json and result.json say [] when
	// the session found none.
	s.res = &Result{Impl: s.info.impl, Version: s.info.version, Env: cfg.Env.Name, Seed: cfg.Seed, Budget: cfg.Budget, Params: s.info.judged, Stalls: w.ce.Stalls,
		Failures: []*Found{}, iutAddr: w.info.Addr}
	for _, h := range w.hosts {
		s.res.hostAddrs = append(s.res.hostAddrs, h.addr)
	}
	return s, release, nil
}

// Explore runs a session: cases until the budget is spent (or the first
// failure, unless KeepGoing), each failure shrunk. Errors: the
// environment cannot be built (the first one), ctx ended.
func Explore(ctx context.Context, cfg Config) (*Result, error) {
	s, release, err := newSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	var runErr error
	for {
		if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		if time.Since(s.start) >= cfg.Budget || cfg.MaxCases > 0 && s.res.Cases >= cfg.MaxCases {
			break
		}
		c, prob := s.next()
		out, err := s.play(c, prob, s.rng.Uint64(), false)
		if err != nil {
			runErr = err
			break
		}
		if out.interrupted != nil {
			runErr = out.interrupted
			break
		}
		s.res.Cases++
		s.absorb(c, prob, out)
		if out.fail != nil && !s.found[out.fail.Rule] {
			s.found[out.fail.Rule] = true
			ran := c.clone()
			ran.Choices = out.choices
			f, err := s.shrink(ran, out)
			if err != nil {
				// Interrupted while shrinking: keep the failure as found
				// (no script: writing one takes another run).
				s.res.Failures = append(s.res.Failures, &Found{Failure: *out.fail, Case: s.res.Cases, After: time.Since(s.start),
					Original: ran, OriginalPackets: out.sent, Packets: out.sent})
				runErr = err
				break
			}
			s.res.Failures = append(s.res.Failures, f)
			if !cfg.KeepGoing || slices.Contains(cfg.StopAt, f.Rule) {
				break
			}
		}
		s.report(false, "")
	}
	s.finishResult()
	s.report(true, "")
	if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
		return s.res, runErr
	}
	return s.res, runErr
}

// world returns the world to run a case in (a fresh one in the
// simulator), and a function to release it.
func (s *session) world() (*world, func(), error) {
	if s.shared != nil {
		return s.shared, func() {}, nil
	}
	w, err := newWorld(s.ctx, s.cfg.Env)
	if err != nil {
		return nil, nil, err
	}
	return w, func() { w.close() }, nil
}

// play runs case c once.
func (s *session) play(c *Case, prob [numKinds]float64, seed uint64, keepLog bool) (*outcome, error) {
	w, release, err := s.world()
	if err != nil {
		return nil, err
	}
	defer release()
	var rng *rand.Rand
	if prob != ([numKinds]float64{}) {
		rng = rand.New(rand.NewPCG(seed, seed+1))
	}
	cfg := s.rcfg
	// In real time a failing run may not fail again: keep every run's log
	// so that a failure's script and capture are those of the run that
	// failed (their marks on the finding's frame).
	cfg.keepLog = keepLog || !w.virtual
	cfg.drain = s.shared != nil
	out := play(s.ctx, w, &cfg, c, newDecider(c.Choices, rng, prob))
	s.res.Events += out.events
	s.res.Sent += out.sent
	s.res.Stale += out.stale
	s.res.Inconclusive += len(out.inconclusive)
	for _, f := range out.inconclusive {
		if len(s.res.InconclusiveFindings) < 20 {
			s.res.InconclusiveFindings = append(s.res.InconclusiveFindings, f)
		}
	}
	return out, nil
}

// absorb takes a case's coverage: new features put it in the corpus and
// reward the kinds of decisions it made.
func (s *session) absorb(c *Case, prob [numKinds]float64, out *outcome) {
	fresh := 0
	for _, f := range out.features {
		if !s.feats[f] {
			s.feats[f] = true
			fresh++
		}
	}
	for id := range out.exercised {
		if !s.rules[id] {
			s.rules[id] = true
			fresh += 5 // a rule is worth more than a feature
		}
	}
	total := 0
	for _, u := range out.used {
		total += u
	}
	for k := range s.reward {
		s.reward[k] *= 0.995 // forget slowly
		if fresh > 0 && total > 0 {
			s.reward[k] += float64(fresh) * float64(out.used[k]) / float64(total)
		}
		s.reward[k] = max(s.reward[k], 0.2)
	}
	if fresh > 0 {
		ran := c.clone()
		ran.Choices = out.choices
		s.corpus = append(s.corpus, &entry{c: ran, prob: prob})
	}
}

// report calls the progress callback about once a ProgressEvery.
func (s *session) report(final bool, shrinking string) {
	if s.cfg.Progress == nil {
		return
	}
	every := s.cfg.ProgressEvery
	if every == 0 {
		every = time.Second
	}
	if !final && time.Since(s.lastRep) < every {
		return
	}
	s.lastRep = time.Now()
	s.cfg.Progress(s.progress(shrinking))
}

func (s *session) progress(shrinking string) Progress {
	el := time.Since(s.start)
	p := Progress{Elapsed: el, Cases: s.res.Cases, Events: s.res.Events, Features: len(s.feats),
		Failures: len(s.res.Failures), Shrinking: shrinking}
	if el > 0 {
		p.EventsPerSec = float64(s.res.Events) / el.Seconds()
	}
	for _, r := range s.rcfg.rules {
		if r.Level == spec.Must && judgeable(r) {
			p.MustRules++
			if s.rules[r.ID] {
				p.MustExercised++
			}
		}
	}
	return p
}

// judgeable reports whether the explorer's events can exercise rule r:
// they are built without an IP header, so a rule that needs one
// (spec.NeedsIPHeader: it judges the header a capture reader parsed) is
// left out of the MUST coverage counts.
func judgeable(r *spec.Rule) bool {
	e, ok := r.Property.(spec.Each)
	return !ok || e.Needs&spec.NeedsIPHeader == 0
}

// finishResult fills the result's totals and coverage.
func (s *session) finishResult() {
	s.res.Elapsed = time.Since(s.start)
	if s.res.Elapsed > 0 {
		s.res.EventsPerSec = float64(s.res.Events) / s.res.Elapsed.Seconds()
	}
	cov := Coverage{}
	violated := map[string]bool{}
	for _, f := range s.res.Failures {
		violated[f.Rule] = true
	}
	for _, r := range s.rcfg.rules {
		ex := s.rules[r.ID]
		cov.Rules = append(cov.Rules, RuleCoverage{ID: r.ID, Level: r.Level, Exercised: ex, Violated: violated[r.ID], NeedsCapture: !judgeable(r)})
		if r.Level == spec.Must && judgeable(r) {
			cov.MustRules++
			if ex {
				cov.MustExercised++
			}
		}
	}
	for f := range s.feats {
		switch {
		case len(f) > 5 && f[:5] == "pair:":
			cov.Pairs++
		case len(f) > 6 && f[:6] == "state:":
			cov.States++
		}
	}
	s.res.Coverage = cov
}

// next returns the next case to run and the decision probabilities for
// the points its choices do not fix: a mutation of a corpus case (half
// the time once the corpus has some), or a fresh case.
func (s *session) next() (*Case, [numKinds]float64) {
	if len(s.corpus) > 0 && s.rng.Float64() < 0.5 {
		e := s.corpus[s.rng.IntN(len(s.corpus))]
		e.hits++
		c := e.c.clone()
		s.mutate(c)
		prob := e.prob
		for k := range prob {
			prob[k] *= 0.5
		}
		return c, prob
	}
	return s.fresh(), s.probs()
}

// probs draws the decision probabilities of a fresh case: each kind is
// on with a chance that grows with its reward, at an intensity between
// 1% and 30% (log-uniform: most cases perturb little).
func (s *session) probs() [numKinds]float64 {
	var p [numKinds]float64
	mean := 0.0
	for k := Kind(1); k < numKinds; k++ {
		mean += s.reward[k]
	}
	mean /= float64(numKinds - 1)
	for k := Kind(1); k < numKinds; k++ {
		on := 0.35 * s.reward[k] / mean
		if s.rng.Float64() < min(0.9, on) {
			p[k] = math.Exp(math.Log(0.01) + s.rng.Float64()*(math.Log(0.3)-math.Log(0.01)))
		}
	}
	return p
}

// fresh generates a new case: a few RPCs (sometimes more than
// max_overcommit), each side of the IUT, sizes weighted toward the
// protocol's boundaries, starts together or spread over ticks, and now
// and then a cutoff change.
func (s *session) fresh() *Case {
	p := &s.info.params
	c := &Case{}
	n := 1
	switch x := s.rng.Float64(); {
	case x < 0.3:
		n = 1
	case x < 0.55:
		n = 2
	case x < 0.7:
		n = 3
	case x < 0.9:
		n = 4 + s.rng.IntN(3)
	default:
		n = max(1, p.MaxOvercommit) + 1 + s.rng.IntN(2)
	}
	manyLong := n > p.MaxOvercommit
	iutClient := s.rng.Float64() < 0.5 // all RPCs one way in a many-RPC case
	for i := 0; i < n; i++ {
		r := RPC{Host: s.rng.IntN(s.info.hosts)}
		if manyLong {
			r.IUTClient = iutClient
		} else {
			r.IUTClient = s.rng.Float64() < 0.5
		}
		r.Request, r.Response = s.size(), s.size()
		if manyLong {
			// Overcommitment needs messages that need grants, and
			// more than one: a message granted to its end at once leaves
			// the active set (HOMA-GRANT-006), so lengths reach past
			// unsched_bytes plus twice the grant window (dynamic:
			// max_incoming shared by the active messages and one more).
			w := int(p.Window)
			if w == 0 {
				w = int(p.MaxIncoming) / (max(1, p.MaxOvercommit) + 1)
			}
			long := int(p.UnschedBytes) + 1 + s.rng.IntN(int(p.UnschedBytes)+2*w+1)
			if r.IUTClient {
				r.Response = long
			} else {
				r.Request = long
			}
		}
		if r.Request < 12 {
			r.Response = r.Request
		}
		r.Start = s.start0(i)
		c.RPCs = append(c.RPCs, r)
	}
	sort.SliceStable(c.RPCs, func(i, j int) bool { return c.RPCs[i].Start < c.RPCs[j].Start })
	if s.rng.Float64() < 0.2 {
		c.Cutoffs = append(c.Cutoffs, s.cutoffChange())
	}
	if s.rng.Float64() < 0.1 {
		c.Tail = p.Ticks(p.TimeoutTicks + p.ResendTicks)
	}
	return c
}

// start0 draws RPC i's start: at once, within a tick, or on an IUT tick
// boundary give or take a microsecond.
func (s *session) start0(i int) time.Duration {
	tick := s.info.params.Tick
	switch x := s.rng.Float64(); {
	case x < 0.4 || i == 0 && x < 0.6:
		return 0
	case x < 0.7:
		return time.Duration(s.rng.Int64N(int64(2 * tick)))
	default:
		k := time.Duration(1+s.rng.IntN(8)) * tick
		return k + time.Duration(s.rng.IntN(3)-1)*time.Microsecond
	}
}

// size draws a message length: half the time a protocol boundary (the
// payload header, segment edges, the cutoffs, unsched_bytes, the grant
// window) give or take one, otherwise log-uniform up to a few times
// unsched_bytes.
func (s *session) size() int {
	p := &s.info.params
	seg := int(s.info.mtu)
	u := int(p.UnschedBytes)
	if s.rng.Float64() < 0.5 {
		base := []int{1, 12, seg, 2 * seg, u, u + seg, 2 * u}
		for _, c := range p.UnschedCutoffs {
			if c > 0 && int(c) < 5*u {
				base = append(base, int(c))
			}
		}
		if w := int(p.MaxIncoming) / 2; w > 0 && w < 300000 {
			base = append(base, u+w, w)
		}
		b := base[s.rng.IntN(len(base))] + s.rng.IntN(3) - 1
		return min(max(b, 1), 1000000)
	}
	hi := math.Log(float64(3 * max(u, seg)))
	return max(1, int(math.Exp(s.rng.Float64()*hi)))
}

// cutoffChange draws a new table of unscheduled cutoffs: the same lowest
// unscheduled level (max_sched_prio+1, whose entry is the largest message),
// with non-increasing limits above it (CUT-04).
func (s *session) cutoffChange() CutoffChange {
	p := &s.info.params
	cc := CutoffChange{Host: s.rng.IntN(s.info.hosts), At: time.Duration(s.rng.Int64N(int64(3 * p.Tick)))}
	low := p.MaxSchedPrio + 1
	if low >= p.NumPriorities {
		cc.Cutoffs = p.UnschedCutoffs
		return cc
	}
	cc.Cutoffs[low] = 1000000
	lim := 1000000
	for i := low + 1; i < p.NumPriorities && i < len(cc.Cutoffs); i++ {
		lim = 1 + s.rng.IntN(lim)
		cc.Cutoffs[i] = uint32(lim)
	}
	return cc
}

// mutate changes a corpus case a little: a decision removed or changed,
// an RPC resized, moved, added or removed, a cutoff change added or
// removed.
func (s *session) mutate(c *Case) {
	for range 1 + s.rng.IntN(3) {
		switch op := s.rng.IntN(8); {
		case op <= 1 && len(c.Choices) > 0:
			i := s.rng.IntN(len(c.Choices))
			c.Choices = slices.Delete(c.Choices, i, i+1)
		case op == 2 && len(c.Choices) > 0:
			i := s.rng.IntN(len(c.Choices))
			k := c.Choices[i].Key.Kind
			if n := k.options(); n > 1 {
				c.Choices[i].Value = 1 + s.rng.IntN(n-1)
			}
		case op == 3 && len(c.RPCs) > 0:
			i := s.rng.IntN(len(c.RPCs))
			if s.rng.Float64() < 0.5 {
				c.RPCs[i].Request = s.size()
			} else {
				c.RPCs[i].Response = s.size()
			}
			if c.RPCs[i].Request < 12 {
				c.RPCs[i].Response = c.RPCs[i].Request
			}
		case op == 4 && len(c.RPCs) > 0:
			c.RPCs[s.rng.IntN(len(c.RPCs))].Start = s.start0(1)
		case op == 5 && len(c.RPCs) < 12:
			r := RPC{Host: s.rng.IntN(s.info.hosts), IUTClient: s.rng.Float64() < 0.5, Request: s.size(), Response: s.size(), Start: s.start0(1)}
			if r.Request < 12 {
				r.Response = r.Request
			}
			c.RPCs = append(c.RPCs, r)
		case op == 6 && len(c.RPCs) > 1:
			*c = *removeRPC(c, s.rng.IntN(len(c.RPCs)))
		default:
			if len(c.Cutoffs) > 0 && s.rng.Float64() < 0.5 {
				c.Cutoffs = c.Cutoffs[:0]
			} else {
				c.Cutoffs = append(c.Cutoffs, s.cutoffChange())
			}
		}
	}
	c.sortChoices()
}

// removeRPC returns c without RPC i (0-based): its decisions go, and the
// later RPCs' decisions are renumbered.
func removeRPC(c *Case, i int) *Case {
	d := c.clone()
	d.RPCs = slices.Delete(d.RPCs, i, i+1)
	n := i + 1
	d.Choices = d.Choices[:0]
	for _, ch := range c.Choices {
		switch {
		case ch.Key.RPC == n:
			continue
		case ch.Key.RPC > n:
			ch.Key.RPC--
		}
		d.Choices = append(d.Choices, ch)
	}
	return d
}

// PlayCase runs case c once in cfg.Env, every decision not in c.Choices
// taking the model's default (in the simulator, exactly as the session
// that found it ran it: a result.json's "shrunk" case), and returns the
// failure (nil: none) with the run's replay script. Unlike a script's
// Replay, the tester hosts play the legal-peer model again, so a case
// also pins down the model's own behaviour. Errors: the environment
// cannot be built, ctx ended.
func PlayCase(ctx context.Context, cfg Config, c *Case) (*Found, error) {
	s, release, err := newSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	c = c.clone()
	c.sortChoices()
	out, err := s.play(c, [numKinds]float64{}, 0, true)
	if err != nil {
		return nil, err
	}
	if out.interrupted != nil {
		return nil, out.interrupted
	}
	if out.fail == nil {
		return nil, nil
	}
	f := &Found{Failure: *out.fail, Original: c, Shrunk: c, Packets: out.sent, OriginalPackets: out.sent}
	f.Script = writeScript(s, f, out)
	return f, nil
}
