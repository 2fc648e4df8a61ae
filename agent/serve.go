package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// backend is one implementation behind the agent protocol (ref, linux).
// serve calls hello once before anything else, and close once at the end.
type backend interface {
	// hello opens the endpoint and returns the answer (Protocol is set by
	// serve).
	hello(req HelloRequest) (Hello, error)
	// listen becomes a server on port that answers each request
	// o.ReplyDelay after it arrived (0: at once), IPv6 clients too when
	// o.IPv6; served requests are counted in the counters given to the
	// backend.
	listen(port uint16, o ListenOptions) error
	// call validates c and returns the function that runs the RPC and
	// reports its outcome; serve writes accepted before starting it.
	call(ctx context.Context, c Call) (func() Completion, error)
	// stats fills the implementation's packet counters into s.
	stats(s *Stats)
	// close aborts everything and releases the endpoint.
	close() error
}

// counters are the protocol-level counters every backend shares.
type counters struct {
	calls, completed, failed, served, servedDup, payloadErrors atomic.Uint64
	mu                                                         sync.Mutex
	seen                                                       map[servedKey]bool
}

// servedKey identifies one call at a server: the client's address and port
// and the call id from the payload header.
type servedKey struct {
	client string
	id     uint64
}

// noteServed counts one request executed for (client, id) and whether it
// was executed before (a breach of at-most-once).
func (c *counters) noteServed(client string, id uint64, hasID bool) {
	c.served.Add(1)
	if !hasID {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[servedKey]bool{}
	}
	k := servedKey{client, id}
	if c.seen[k] {
		c.servedDup.Add(1)
	}
	c.seen[k] = true
}

// snapshot returns the counters as Stats.
func (c *counters) snapshot() Stats {
	return Stats{
		Calls: c.calls.Load(), Completed: c.completed.Load(), Failed: c.failed.Load(),
		Served: c.served.Load(), ServedDuplicates: c.servedDup.Load(), PayloadErrors: c.payloadErrors.Load(),
	}
}

// agentDefaults returns log, or a logger that discards when it is nil,
// and sets *version to "dev" when it is empty: the defaults every built-in
// agent's options share.
func agentDefaults(log *slog.Logger, version *string) *slog.Logger {
	if *version == "" {
		*version = "dev"
	}
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// session is one agent's side of the protocol.
type session struct {
	be     backend
	cnt    *counters
	log    *slog.Logger
	wmu    sync.Mutex
	w      *bufio.Writer
	werr   error
	helloD bool
	calls  sync.WaitGroup
	ids    map[uint64]bool // call ids in flight
	idsMu  sync.Mutex
}

// serve runs the protocol on r and w with be until shutdown, EOF on r
// (the harness went away) or ctx's end. It returns nil after shutdown or
// EOF, and an error when w cannot be written.
func serve(ctx context.Context, r io.Reader, w io.Writer, be backend, cnt *counters, log *slog.Logger) error {
	s := &session{be: be, cnt: cnt, log: log, w: bufio.NewWriter(w), ids: map[uint64]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(line) > 0 {
				select {
				case lines <- bytes.Clone(line): // line points into br's buffer
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	finish := func() error {
		cancel() // calls in flight end with "aborted"
		s.calls.Wait()
		err := be.close()
		if err != nil {
			log.Warn("close", "err", err)
		}
		return nil
	}
	for {
		select {
		case line := <-lines:
			if s.handle(ctx, line, finish) {
				return s.writeErr()
			}
			if err := s.writeErr(); err != nil {
				finish()
				return err
			}
		case err := <-readErr:
			var perr *ProtocolError
			if errors.As(err, &perr) {
				s.send(Event{Event: EventError, Completion: Completion{Error: perr.Error()}})
			} else if err != io.EOF {
				log.Warn("read", "err", err)
			}
			log.Info("input closed: finishing")
			finish()
			return s.writeErr()
		case <-ctx.Done():
			finish()
			return s.writeErr()
		}
	}
}

// handle carries out one request line; it returns true after shutdown.
func (s *session) handle(ctx context.Context, line []byte, finish func() error) bool {
	var req Request
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		// Recover op and seq if they are readable, so the harness can
		// match the error to its request.
		var head struct {
			Op  string `json:"op"`
			Seq uint64 `json:"seq"`
		}
		json.Unmarshal(line, &head)
		s.fail(head.Seq, head.Op, fmt.Sprintf("bad request line (%v): %s", err, quote(line)))
		return false
	}
	if req.Op != OpHello && req.Op != OpShutdown && !s.helloD {
		s.fail(req.Seq, req.Op, "send hello first")
		return false
	}
	switch req.Op {
	case OpHello:
		s.hello(req)
	case OpListen:
		if req.Port == 0 {
			s.fail(req.Seq, req.Op, `"port" must be 1..65535`)
		} else if req.ReplyDelayMs < 0 || req.ReplyDelayMs > MaxReplyDelayMs {
			s.fail(req.Seq, req.Op, fmt.Sprintf(`"reply_delay_ms" %d must be 0..%d`, req.ReplyDelayMs, MaxReplyDelayMs))
		} else if err := s.be.listen(req.Port, ListenOptions{ReplyDelay: time.Duration(req.ReplyDelayMs) * time.Millisecond, IPv6: req.IPv6}); err != nil {
			s.fail(req.Seq, req.Op, err.Error())
		} else {
			s.send(Event{Event: EventListening, Seq: req.Seq, Port: req.Port})
		}
	case OpCall:
		s.call(ctx, req)
	case OpStats:
		st := s.cnt.snapshot()
		s.be.stats(&st)
		s.send(Event{Event: EventStats, Seq: req.Seq, Stats: &st})
	case OpShutdown:
		finish()
		s.send(Event{Event: EventBye, Seq: req.Seq})
		return true
	default:
		s.fail(req.Seq, req.Op, fmt.Sprintf("unknown op %q (this agent speaks protocol %d: hello, listen, call, stats, shutdown)", req.Op, ProtocolVersion))
	}
	return false
}

func (s *session) hello(req Request) {
	switch {
	case s.helloD:
		s.fail(req.Seq, req.Op, "hello was already done")
		return
	case req.Protocol != ProtocolVersion:
		s.fail(req.Seq, req.Op, fmt.Sprintf("protocol version %d not supported: this agent speaks %d", req.Protocol, ProtocolVersion))
		return
	}
	h, err := s.be.hello(req.HelloRequest)
	if err != nil {
		s.fail(req.Seq, req.Op, err.Error())
		return
	}
	s.helloD = true
	h.Protocol = ProtocolVersion
	s.send(Event{Event: EventHello, Seq: req.Seq, Hello: h})
}

func (s *session) call(ctx context.Context, req Request) {
	c := req.Call
	if err := c.Check(); err != nil {
		s.fail(req.Seq, req.Op, err.Error())
		return
	}
	s.idsMu.Lock()
	dup := s.ids[c.ID]
	if !dup {
		s.ids[c.ID] = true
	}
	s.idsMu.Unlock()
	if dup {
		s.fail(req.Seq, req.Op, fmt.Sprintf("call id %d is already in flight", c.ID))
		return
	}
	run, err := s.be.call(ctx, c)
	if err != nil {
		s.forget(c.ID)
		s.fail(req.Seq, req.Op, err.Error())
		return
	}
	s.cnt.calls.Add(1)
	s.send(Event{Event: EventAccepted, Seq: req.Seq, Completion: Completion{ID: c.ID}})
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		comp := run()
		comp.ID = c.ID
		if comp.Error == "" {
			s.cnt.completed.Add(1)
		} else {
			s.cnt.failed.Add(1)
		}
		s.forget(c.ID)
		s.send(Event{Event: EventDone, Completion: comp})
	}()
}

func (s *session) forget(id uint64) {
	s.idsMu.Lock()
	delete(s.ids, id)
	s.idsMu.Unlock()
}

// fail sends an error event.
func (s *session) fail(seq uint64, op, msg string) {
	s.log.Warn("error", "op", op, "seq", seq, "err", msg)
	s.send(Event{Event: EventError, Seq: seq, Op: op, Completion: Completion{Error: msg}})
}

// send writes one event line and flushes it.
func (s *session) send(ev Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		line = fmt.Appendf(nil, `{"event":"error","seq":%d,"error":"agent: cannot encode event %s"}`, ev.Seq, ev.Event)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return
	}
	s.w.Write(line)
	s.w.WriteByte('\n')
	s.werr = s.w.Flush()
}

func (s *session) writeErr() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return fmt.Errorf("agent: write event: %w", s.werr)
	}
	return nil
}

// quote returns line cut to maxQuote bytes, quoted.
func quote(line []byte) string {
	if len(line) > maxQuote {
		return fmt.Sprintf("%q…", line[:maxQuote])
	}
	return fmt.Sprintf("%q", line)
}

// errUnreachable marks an rpc error that makes the call's code
// "unreachable" (its text starts with the code).
var errUnreachable = errors.New(CodeUnreachable)

// runCall runs one RPC through rpc (which sends request and returns the
// response) and checks the response: the shared body of the ref and linux
// agents' calls. timeoutErr reports whether err is the IUT's own timeout.
func runCall(ctx context.Context, c Call, cnt *counters, rpc func(ctx context.Context, req []byte) ([]byte, error), timeoutErr func(error) bool) Completion {
	req := make([]byte, c.Request)
	FillPayload(req, c.ID, uint32(c.Response))
	if c.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(c.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	start := time.Now()
	resp, err := rpc(ctx, req)
	lat := time.Since(start)
	comp := Completion{LatencyNs: lat.Nanoseconds(), Request: c.Request}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		comp.Error = fmt.Sprintf("%s: no response within timeout_ms %d", CodeTimeout, c.TimeoutMs)
		return comp
	case errors.Is(err, context.Canceled):
		comp.Error = CodeAborted + ": the agent is shutting down"
		return comp
	case timeoutErr(err):
		comp.Error = fmt.Sprintf("%s: %v", CodeTimeout, err)
		return comp
	case errors.Is(err, errUnreachable):
		comp.Error = err.Error()
		return comp
	default:
		comp.Error = fmt.Sprintf("%s: %v", CodeError, err)
		return comp
	}
	comp.Response = len(resp)
	if perr := CheckResponse(resp, c); perr != nil {
		cnt.payloadErrors.Add(1)
		comp.Error = perr.Error()
	}
	return comp
}

// CheckResponse checks the response of call c: its length, the length in
// its header and its payload pattern (docs/agent-protocol.md). Errors start
// with CodePayload or name the first wrong byte.
func CheckResponse(resp []byte, c Call) error {
	if len(resp) != c.Response {
		return fmt.Errorf("%s: response has %d bytes, want %d", CodePayload, len(resp), c.Response)
	}
	if n, _, ok := PayloadHeader(resp); ok && int(n) != len(resp) {
		return fmt.Errorf("%s: response header says %d bytes, the response has %d", CodePayload, n, len(resp))
	}
	return CheckPayload(resp, c.ID)
}

// serveRequest checks one request received by a server and returns the
// response to send; ok is false when the request is unusable (too short a
// header or a response length out of range), which is counted.
func serveRequest(req []byte, client string, cnt *counters, log *slog.Logger) (resp []byte, ok bool) {
	n, id, hasID := PayloadHeader(req)
	cnt.noteServed(client, id, hasID)
	if err := CheckPayload(req, id); err != nil {
		cnt.payloadErrors.Add(1)
		log.Warn("bad request payload", "client", client, "err", err)
	}
	if n < 1 || n > MaxMessage {
		cnt.payloadErrors.Add(1)
		log.Warn("request asks for a response length out of range", "client", client, "len", n)
		return nil, false
	}
	resp = make([]byte, n)
	FillPayload(resp, id, n)
	return resp, true
}
