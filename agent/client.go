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

	"github.com/homatest/homatest/internal/timescale"
)

// DefaultReplyTimeout is how long the Client waits for the reply to a
// request before it calls the agent silent, before scaling by
// HOMATEST_TIME_SCALE.
const DefaultReplyTimeout = 10 * time.Second

// MaxLineBytes bounds one protocol line in bytes; a longer line is a
// ProtocolError.
const MaxLineBytes = 1 << 20

// ClientOptions configure a Client. The zero value is usable.
type ClientOptions struct {
	// ReplyTimeout bounds the wait for the reply to each request (not for
	// done events); 0 means DefaultReplyTimeout × HOMATEST_TIME_SCALE.
	ReplyTimeout time.Duration
	// HelloTimeout bounds the wait for the answer to hello, which may take
	// an implementation longer than any other reply (a manifest's
	// timeouts.start); 0 means ReplyTimeout.
	HelloTimeout time.Duration
	// StderrTail, when set, returns the last lines of the agent's standard
	// error; they are added to ErrAgentExited and ErrAgentSilent errors.
	StderrTail func() string
	// Exit, when set, says how the agent's process ended ("agent ref on
	// h1 exited with status 2 (its log: …)"); it is added to the
	// ErrAgentExited error that ends a session whose agent closed its
	// standard output, and so to every call that session leaves unfinished.
	// It may wait briefly for the process to be reaped.
	Exit func() string
	// DoneTimeout, when positive, bounds the time from accepted to done:
	// a call without its done event by then completes with code "silent"
	// (a late done is then ignored). 0: wait as long as the agent lives.
	DoneTimeout time.Duration
	// Logger receives debug lines for every line sent and received and
	// warnings for ignored lines (nil: discard).
	Logger *slog.Logger
}

// Client is the harness's side of the agent protocol over a byte stream:
// r is the agent's standard output, w its standard input. Its methods may be
// called from several goroutines; many calls may be outstanding at once.
// Once the session ends (the agent exited, a protocol error, Close) every
// method returns the session's error (see Err), and every call still in
// flight is completed with a Completion whose code is "exited".
type Client struct {
	r       io.Reader
	w       io.WriteCloser
	opt     ClientOptions
	log     *slog.Logger
	seq     atomic.Uint64
	wmu     sync.Mutex // serialises writes to w
	mu      sync.Mutex // guards the fields below
	pending map[uint64]*waiter
	flight  map[uint64]*inFlight // calls accepted and not done, by id
	dead    error
	deadCh  chan struct{}
	queue   []Completion
	qclosed bool
	qnotify chan struct{}
	out     chan Completion
	closing sync.Once
	closed  chan struct{} // closed by Close
}

// waiter is a request waiting for its reply.
type waiter struct {
	op string
	id uint64
	ch chan Event
}

// NewClient starts a Client reading events from r and writing requests to w.
// It starts a goroutine that reads r until EOF or Close.
func NewClient(r io.Reader, w io.WriteCloser, opt ClientOptions) *Client {
	if opt.ReplyTimeout <= 0 {
		opt.ReplyTimeout = timescale.D(DefaultReplyTimeout)
	}
	if opt.HelloTimeout <= 0 {
		opt.HelloTimeout = opt.ReplyTimeout
	}
	c := &Client{
		r: r, w: w, opt: opt, log: opt.Logger,
		pending: map[uint64]*waiter{}, flight: map[uint64]*inFlight{},
		deadCh: make(chan struct{}), qnotify: make(chan struct{}, 1), out: make(chan Completion, 64),
		closed: make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	go c.readLoop()
	go c.pump()
	return c
}

// Hello sends hello (Protocol defaults to ProtocolVersion) and returns the
// agent's answer. An implementation that cannot run here answers with
// Hello.Unsupported set and a nil error. Errors: the agent speaks another
// protocol version, *AgentError (e.g. an unknown parameter, faults without
// the capability), ErrAgentExited, ErrAgentSilent, *ProtocolError, ctx's
// error.
func (c *Client) Hello(ctx context.Context, req HelloRequest) (Hello, error) {
	if req.Protocol == 0 {
		req.Protocol = ProtocolVersion
	}
	ev, err := c.request(ctx, Request{Op: OpHello, HelloRequest: req})
	if err != nil {
		return Hello{}, err
	}
	if ev.Hello.Protocol != req.Protocol {
		return ev.Hello, fmt.Errorf("agent %q speaks protocol version %d, the harness %d: update the agent", ev.Impl, ev.Hello.Protocol, req.Protocol)
	}
	return ev.Hello, nil
}

// Listen makes the agent a server on port: it answers every request with a
// response of the length in the request's payload header. Errors as Hello.
func (c *Client) Listen(ctx context.Context, port uint16) error {
	return c.ListenWith(ctx, port, ListenOptions{})
}

// ListenWith is Listen with options (the agent must list their
// capabilities: reply-delay for ReplyDelay, sent in whole milliseconds,
// rounded up; ipv6 for IPv6). Errors as Listen.
func (c *Client) ListenWith(ctx context.Context, port uint16, o ListenOptions) error {
	_, err := c.request(ctx, Request{Op: OpListen, Call: Call{Port: port}, ReplyDelayMs: Ms(o.ReplyDelay), IPv6: o.IPv6})
	return err
}

// Call starts one RPC and returns once the agent accepted it; its result
// arrives on Completions. Errors as Hello (an *AgentError for bad
// arguments: unknown address family, sizes out of 1..1,000,000).
func (c *Client) Call(ctx context.Context, call Call) error {
	_, err := c.request(ctx, Request{Op: OpCall, Call: call})
	return err
}

// Completions returns the channel of done events, in the order the agent
// sent them. It is never blocked by a slow reader (events are queued), and
// it is closed when the session ends, after the completions of calls left
// in flight (code "exited"). After Close, completions not yet received are
// dropped.
func (c *Client) Completions() <-chan Completion { return c.out }

// Stats returns the agent's counters. Errors as Hello.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	ev, err := c.request(ctx, Request{Op: OpStats})
	if err != nil {
		return Stats{}, err
	}
	if ev.Stats == nil {
		return Stats{}, &ProtocolError{Reason: "stats event without \"stats\"", Line: fmt.Sprintf("seq %d", ev.Seq)}
	}
	return *ev.Stats, nil
}

// Shutdown asks the agent to finish (calls in flight end with "aborted")
// and waits for bye; the agent then exits with status 0. Errors as Hello.
func (c *Client) Shutdown(ctx context.Context) error {
	_, err := c.request(ctx, Request{Op: OpShutdown})
	return err
}

// Close closes the agent's standard input (and r when it is an io.Closer)
// and ends the session: pending requests fail with ErrClosed. It returns
// the error of closing w.
func (c *Client) Close() error {
	var err error
	c.closing.Do(func() {
		close(c.closed)
		err = c.w.Close()
		if rc, ok := c.r.(io.Closer); ok {
			rc.Close()
		}
		c.fail(ErrClosed)
	})
	return err
}

// Err returns the error that ended the session (nil while it runs):
// ErrClosed, an error wrapping ErrAgentExited, or a *ProtocolError.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// request sends req with a new seq and waits for the event answering it
// (the one answers names for its op, or an error event).
func (c *Client) request(ctx context.Context, req Request) (Event, error) {
	req.Seq = c.seq.Add(1)
	w := &waiter{op: req.Op, id: req.ID, ch: make(chan Event, 1)}
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return Event{}, c.dead
	}
	c.pending[req.Seq] = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, req.Seq)
		c.mu.Unlock()
	}()
	line, err := json.Marshal(req)
	if err != nil {
		return Event{}, fmt.Errorf("agent: encode %s: %w", req.Op, err)
	}
	c.log.Debug("agent <-", "line", string(line))
	line = append(line, '\n')
	// The write runs apart so that an agent that stops reading its input
	// is reported silent instead of blocking the caller forever.
	wrote := make(chan error, 1)
	go func() {
		c.wmu.Lock()
		_, err := c.w.Write(line)
		c.wmu.Unlock()
		wrote <- err
	}()
	within := c.opt.ReplyTimeout
	if req.Op == OpHello {
		within = c.opt.HelloTimeout
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case err := <-wrote:
			if err != nil {
				if derr := c.Err(); derr != nil {
					return Event{}, derr
				}
				return Event{}, fmt.Errorf("%w: cannot write %s (seq %d): %v", ErrAgentExited, req.Op, req.Seq, c.tail(err.Error()))
			}
		case ev := <-w.ch:
			return answered(req, ev)
		case <-c.deadCh:
			select {
			case ev := <-w.ch: // the answer came before the end
				return answered(req, ev)
			default:
			}
			return Event{}, c.Err()
		case <-timer.C:
			return Event{}, fmt.Errorf("%w: no reply to %s (seq %d) within %v", ErrAgentSilent, req.Op, req.Seq, c.tail(within.String()))
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// answered returns the answer ev to req: an *AgentError for an error event.
func answered(req Request, ev Event) (Event, error) {
	if ev.Event == EventError {
		return ev, &AgentError{Op: req.Op, Seq: req.Seq, Message: ev.Error}
	}
	return ev, nil
}

// tail appends the agent's last stderr lines to msg.
func (c *Client) tail(msg string) string {
	if c.opt.StderrTail == nil {
		return msg
	}
	return withTail(msg, c.opt.StderrTail())
}

// readLoop reads events until EOF or a protocol error.
func (c *Client) readLoop() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			if perr := c.handle(line); perr != nil {
				c.fail(perr)
				return
			}
		}
		if err != nil {
			var perr *ProtocolError
			if errors.As(err, &perr) {
				c.fail(perr)
			} else {
				// Exit first: it waits for the process to be reaped, and
				// with it for the last of its standard error to be copied,
				// so the tail below holds what the agent wrote as it died.
				exit := ""
				if c.opt.Exit != nil {
					exit = c.opt.Exit() + ": "
				}
				msg := exit + fmt.Sprintf("its standard output closed (%v)", c.tail(err.Error()))
				c.fail(fmt.Errorf("%w: %s", ErrAgentExited, msg))
			}
			return
		}
	}
}

// readLine returns the next line without its newline (and trimmed of
// spaces; it may point into br's buffer until the next read), or an error: io.EOF or another read error, or a *ProtocolError
// for a line longer than MaxLineBytes. A last line without a newline is
// returned with io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		frag, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, frag...)
			if len(long) > MaxLineBytes {
				return nil, newProtocolError(long, fmt.Sprintf("line longer than %d bytes", MaxLineBytes))
			}
			continue
		}
		if long != nil {
			frag = append(long, frag...)
		}
		frag = bytes.TrimSpace(frag)
		if len(frag) > MaxLineBytes {
			return nil, newProtocolError(frag, fmt.Sprintf("line longer than %d bytes", MaxLineBytes))
		}
		return frag, err
	}
}

// DecodeEvent decodes one protocol line from an agent. Errors are
// *ProtocolError values quoting the line: not a JSON object, no "event",
// a field of the wrong type. It never panics.
func DecodeEvent(line []byte) (Event, error) {
	var ev Event
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&ev); err != nil {
		return Event{}, newProtocolError(line, "not a JSON event ("+err.Error()+")")
	}
	if d.More() {
		return Event{}, newProtocolError(line, "more than one JSON value on the line")
	}
	if ev.Event == "" {
		return Event{}, newProtocolError(line, `no "event" field`)
	}
	return ev, nil
}

// answers maps each op to the event that answers it.
var answers = map[string]string{
	OpHello: EventHello, OpListen: EventListening, OpCall: EventAccepted, OpStats: EventStats, OpShutdown: EventBye,
}

// handle routes one line; a non-nil result ends the session.
func (c *Client) handle(line []byte) error {
	c.log.Debug("agent ->", "line", string(line))
	ev, err := DecodeEvent(line)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Event {
	case EventDone:
		f := c.flight[ev.ID]
		if f == nil {
			c.log.Warn("agent: done for a call not in flight ignored", "id", ev.ID)
			return nil
		}
		f.stop()
		delete(c.flight, ev.ID)
		c.enqueueLocked(ev.Completion)
		return nil
	case EventHello, EventListening, EventAccepted, EventStats, EventBye, EventError:
	default:
		c.log.Warn("agent: unknown event ignored", "line", string(line))
		return nil
	}
	w := c.pending[ev.Seq]
	if w == nil {
		// A late reply to a request that timed out, or a stray seq.
		c.log.Warn("agent: reply to no pending request ignored", "seq", ev.Seq, "event", ev.Event)
		return nil
	}
	if ev.Event != EventError && ev.Event != answers[w.op] {
		return newProtocolError(line, fmt.Sprintf("event %q answers op %q (seq %d), want %q", ev.Event, w.op, ev.Seq, answers[w.op]))
	}
	if ev.Event == EventAccepted {
		if ev.ID != w.id {
			return newProtocolError(line, fmt.Sprintf("accepted id %d for call id %d", ev.ID, w.id))
		}
		c.startFlightLocked(ev.ID)
	}
	delete(c.pending, ev.Seq)
	w.ch <- ev
	return nil
}

// inFlight is a call accepted and not done.
type inFlight struct {
	timer *time.Timer // DoneTimeout's guard, or nil
}

func (f *inFlight) stop() {
	if f.timer != nil {
		f.timer.Stop()
	}
}

// startFlightLocked records call id as in flight and arms DoneTimeout.
func (c *Client) startFlightLocked(id uint64) {
	f := &inFlight{}
	c.flight[id] = f
	if d := c.opt.DoneTimeout; d > 0 {
		f.timer = time.AfterFunc(d, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.flight[id] != f {
				return
			}
			delete(c.flight, id)
			c.enqueueLocked(Completion{ID: id, Error: fmt.Sprintf("%s: no done event within %v of accepted", CodeSilent, d)})
		})
	}
}

// InFlight returns the number of calls accepted and not done.
func (c *Client) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.flight)
}

// fail ends the session with err (first error wins).
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return
	}
	c.dead = err
	close(c.deadCh)
	for id, f := range c.flight {
		f.stop()
		c.enqueueLocked(Completion{ID: id, Error: CodeExited + ": the agent session ended before the call finished: " + err.Error()})
	}
	clear(c.flight)
	c.qclosed = true
	c.notifyLocked()
}

func (c *Client) enqueueLocked(comp Completion) {
	if c.qclosed {
		return
	}
	c.queue = append(c.queue, comp)
	c.notifyLocked()
}

func (c *Client) notifyLocked() {
	select {
	case c.qnotify <- struct{}{}:
	default:
	}
}

// pump moves queued completions to the out channel and closes it at the
// end of the session.
func (c *Client) pump() {
	for {
		<-c.qnotify
		c.mu.Lock()
		q, closed := c.queue, c.qclosed
		c.queue = nil
		c.mu.Unlock()
		for _, comp := range q {
			select {
			case c.out <- comp:
			case <-c.closed:
				close(c.out) // Close: nobody reads any more
				return
			}
		}
		if closed {
			close(c.out)
			return
		}
	}
}
