package traffic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/workload"
)

// Record is the outcome of one RPC.
type Record struct {
	// Seq numbers the RPCs from 0 in issue order; the agent call id is
	// Config.IDBase + Seq + 1.
	Seq int
	// Client and Server are host indexes into Config.Hosts.
	Client, Server int
	// Request and Response are the message lengths in bytes.
	Request, Response int
	// At is when the RPC was due, from the start of the run (open loop and
	// explicit lists: its arrival; closed loop: when its slot freed).
	At time.Duration
	// Lateness is how long after At the agent accepted the call (time
	// spent in Run, the pipe and the agent before the RPC started).
	Lateness time.Duration
	// Latency is the agent's latency_ns for a completed RPC: from sending
	// the request to receiving the whole response.
	Latency time.Duration
	// Ended is when the RPC's outcome (its done event, or the sweep's
	// silent verdict) reached the run, from the start of the run: with
	// At and Lateness it bounds the RPC's life in wall time, which a
	// timeout is judged against (a stall inside it explains a timeout).
	Ended time.Duration
	// Err is "" for success, else "<code>: <text>" (agent.Completion's
	// codes; "silent" also when no done event came within Config.Timeout).
	Err  string
	done bool
}

// Result is what a run did.
type Result struct {
	// Records has one entry per RPC issued, in Seq order.
	Records []Record
	// Start is the wall time the run started (Record.At, Ended count from
	// it); zero for a simulated run.
	Start time.Time
	// Elapsed is the time from the start to the last done event (or the
	// last timeout).
	Elapsed time.Duration
	// OfferedBps is the request bytes issued, counted with Homa's DATA
	// overhead (workload.HomaDataOverhead), in bit/s over the issuing
	// period, per server (comparable to Config.Load × LinkBps).
	OfferedBps float64
	// DeliveredBps is the request bytes of the completed RPCs, counted as
	// OfferedBps counts them, in bit/s over Elapsed, per server: about
	// OfferedBps when the hosts kept up, below it when RPCs ended slower
	// than they were issued.
	DeliveredBps float64
	// AchievedBps is the request and response bytes of the completed RPCs
	// in bit/s over Elapsed (payload only, all hosts together).
	AchievedBps float64
	// Stats are each host's agent counters at the end (zero for an agent
	// that could not answer: see Errors).
	Stats []agent.Stats
	// Errors lists problems outside single RPCs (a stats request that
	// failed), one line each.
	Errors []string
}

// Failed returns the number of records with an error.
func (r *Result) Failed() int {
	n := 0
	for _, rec := range r.Records {
		if rec.Err != "" {
			n++
		}
	}
	return n
}

// run is the state of one Run.
type run struct {
	cfg   *Config
	start time.Time
	mu    sync.Mutex
	recs  []Record
	issue []time.Time     // when each record's call was accepted (zero: not yet)
	wake  []chan struct{} // closed when the record is done (closed loop waits on it)
	done  int
	total int
	allIn bool          // no more records will be added
	fin   chan struct{} // closed when allIn and every record is done
}

// Run issues cfg's RPCs and waits for them. Servers get a listen op on
// cfg.Port first. It returns the result and an error for a bad config
// (nothing issued), a listen that failed, or ctx ending (the partial
// result then has the RPCs issued so far, those in flight with Err
// "aborted: …"). RPC failures are in the records, not the error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	seq, err := newSequence(&cfg, len(cfg.Hosts))
	if err != nil {
		return nil, err
	}
	for _, s := range cfg.Servers(len(cfg.Hosts)) {
		if err := cfg.Hosts[s].Client.Listen(ctx, cfg.Port); err != nil {
			return nil, fmt.Errorf("traffic: listen on %s port %d: %w", cfg.Hosts[s].Name, cfg.Port, err)
		}
	}
	r := &run{cfg: &cfg, total: seq.Expected(), fin: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var readers sync.WaitGroup
	for i := range cfg.Hosts {
		readers.Add(1)
		go func() { defer readers.Done(); r.read(rctx, i) }()
	}
	go r.sweep(rctx)
	r.start = time.Now()
	if cfg.Concurrency > 0 {
		r.closedLoop(rctx, seq)
	} else {
		r.openLoop(rctx, seq)
	}
	r.mu.Lock()
	r.allIn = true
	r.checkFinLocked()
	r.mu.Unlock()
	select {
	case <-r.fin:
	case <-ctx.Done():
		r.abortAll("aborted: " + ctx.Err().Error())
	}
	cancel()
	readers.Wait()
	res := r.result()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.Stats = make([]agent.Stats, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		st, err := h.Client.Stats(ctx)
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("stats of %s: %v", h.Name, err))
			continue
		}
		res.Stats[i] = st
	}
	return res, nil
}

// add appends a record for rpc and returns its index and its call.
func (r *run) add(rpc RPC) (int, agent.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := len(r.recs)
	r.recs = append(r.recs, Record{Seq: i, Client: rpc.Client, Server: rpc.Server, Request: rpc.Request,
		Response: rpc.Response, At: rpc.At})
	r.issue = append(r.issue, time.Time{})
	r.wake = append(r.wake, make(chan struct{}))
	return i, agent.Call{ID: r.cfg.IDBase + uint64(i) + 1, Dst: r.cfg.Hosts[rpc.Server].Addr, Port: r.cfg.Port,
		Request: rpc.Request, Response: rpc.Response}
}

// call issues record i's call from its client and records the outcome of
// a call op that failed.
func (r *run) call(ctx context.Context, i int, c agent.Call) {
	r.mu.Lock()
	client := r.cfg.Hosts[r.recs[i].Client].Client
	r.mu.Unlock()
	err := client.Call(ctx, c)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issue[i] = now
	r.recs[i].Lateness = now.Sub(r.start) - r.recs[i].At
	if err != nil {
		r.finishLocked(i, 0, "error: call op: "+err.Error())
	}
}

// finishLocked completes record i (once).
func (r *run) finishLocked(i int, latency time.Duration, errText string) {
	rec := &r.recs[i]
	if rec.done {
		return
	}
	rec.done, rec.Latency, rec.Err = true, latency, errText
	rec.Ended = time.Since(r.start)
	close(r.wake[i])
	r.done++
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, max(r.total, len(r.recs)))
	}
	r.checkFinLocked()
}

func (r *run) checkFinLocked() {
	if r.allIn && r.done == len(r.recs) {
		select {
		case <-r.fin:
		default:
			close(r.fin)
		}
	}
}

// read consumes host h's done events until ctx ends or the session does.
func (r *run) read(ctx context.Context, h int) {
	ch := r.cfg.Hosts[h].Client.Completions()
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-ch:
			if !ok {
				return
			}
			i := int(c.ID - r.cfg.IDBase - 1)
			r.mu.Lock()
			if c.ID > r.cfg.IDBase && i < len(r.recs) && r.recs[i].Client == h {
				lat := c.Latency()
				if c.Error == "" && c.Response != r.recs[i].Response {
					c.Error = fmt.Sprintf("%s: response of %d bytes, want %d", agent.CodePayload, c.Response, r.recs[i].Response)
				}
				r.finishLocked(i, lat, c.Error)
			}
			r.mu.Unlock()
		}
	}
}

// sweep marks calls without a done event Timeout after they were
// accepted as silent.
func (r *run) sweep(ctx context.Context) {
	t := time.NewTicker(max(r.cfg.Timeout/20, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.mu.Lock()
			for i := range r.recs {
				if !r.recs[i].done && !r.issue[i].IsZero() && now.Sub(r.issue[i]) > r.cfg.Timeout {
					r.finishLocked(i, 0, fmt.Sprintf("%s: no done event within %v", agent.CodeSilent, r.cfg.Timeout))
				}
			}
			r.mu.Unlock()
		}
	}
}

// abortAll completes every record still open with errText.
func (r *run) abortAll(errText string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.recs {
		r.finishLocked(i, 0, errText)
	}
}

// openLoop issues each RPC at its time: one goroutine keeps the schedule
// and hands calls to one issuer per client, so an agent slow to accept
// delays only its own calls.
func (r *run) openLoop(ctx context.Context, seq *Sequence) {
	type job struct {
		i int
		c agent.Call
	}
	queues := make([]chan job, len(r.cfg.Hosts))
	var wg sync.WaitGroup
	for h := range queues {
		queues[h] = make(chan job, 4096)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queues[h] {
				r.call(ctx, j.i, j.c)
			}
		}()
	}
	timer := time.NewTimer(0)
	<-timer.C
	for ctx.Err() == nil {
		rpc, more := seq.Next(-1)
		if !more {
			break
		}
		if d := time.Until(r.start.Add(rpc.At)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		i, c := r.add(rpc)
		queues[rpc.Client] <- job{i, c}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
}

// closedLoop runs Concurrency workers per client, each issuing its next
// RPC when the previous one is done.
func (r *run) closedLoop(ctx context.Context, seq *Sequence) {
	var smu sync.Mutex
	var wg sync.WaitGroup
	clients := r.cfg.Hosts
	if r.cfg.Pattern == ManyToOne {
		clients = clients[:len(clients)-1]
	}
	for h := range clients {
		for range r.cfg.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					at := time.Since(r.start)
					if r.cfg.Duration > 0 && at >= r.cfg.Duration {
						return
					}
					smu.Lock()
					rpc, more := seq.Next(h)
					smu.Unlock()
					if !more {
						return
					}
					rpc.At = at
					i, c := r.add(rpc)
					r.call(ctx, i, c)
					r.mu.Lock()
					w := r.wake[i]
					r.mu.Unlock()
					select {
					case <-w:
					case <-ctx.Done():
					}
				}
			}()
		}
	}
	wg.Wait()
}

// result builds the Result from the records.
func (r *run) result() *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := NewResult(r.recs, time.Since(r.start), len(r.cfg.Servers(len(r.cfg.Hosts))))
	res.Start = r.start
	return res
}

// NewResult returns the Result of records (copied, in Seq order) that
// ran for elapsed with servers serving hosts: OfferedBps, DeliveredBps
// and AchievedBps as Result documents them (Stats and Errors empty).
func NewResult(recs []Record, elapsed time.Duration, servers int) *Result {
	res := &Result{Records: append([]Record(nil), recs...), Elapsed: elapsed}
	var offered, delivered, achieved float64
	var last time.Duration
	o := workload.HomaDataOverhead{}
	for _, rec := range res.Records {
		w := float64(o.WireBytes(rec.Request)) * 8
		offered += w
		if rec.Err == "" {
			delivered += w
			achieved += float64(rec.Request+rec.Response) * 8
		}
		last = max(last, rec.At)
	}
	if last > 0 {
		res.OfferedBps = offered / last.Seconds() / float64(servers)
	}
	if res.Elapsed > 0 {
		res.AchievedBps = achieved / res.Elapsed.Seconds()
		res.DeliveredBps = delivered / res.Elapsed.Seconds() / float64(servers)
	}
	return res
}
