package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/internal/timescale"
)

// fakeAgent is a scripted agent: script gets each request and writes what
// it likes to w; returning false closes the agent's output (a crash).
func fakeAgent(t *testing.T, opt ClientOptions, script func(req Request, w io.Writer) bool) *Client {
	t.Helper()
	reqR, reqW := io.Pipe()
	evR, evW := io.Pipe()
	go func() {
		defer evW.Close()
		sc := bufio.NewScanner(reqR)
		for sc.Scan() {
			var req Request
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				t.Errorf("fake agent got a bad line %q: %v", sc.Text(), err)
				return
			}
			if !script(req, evW) {
				return
			}
		}
	}()
	c := NewClient(evR, reqW, opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// reply writes ev as one line.
func reply(w io.Writer, ev Event) {
	b, _ := json.Marshal(ev)
	w.Write(append(b, '\n'))
}

func okHello(req Request, w io.Writer) {
	reply(w, Event{Event: EventHello, Seq: req.Seq, Hello: Hello{Protocol: ProtocolVersion, Impl: "fake"}})
}

func TestClientCrashedAgent(t *testing.T) {
	tail := "panic: boom\ngoroutine 1 [running]"
	c := fakeAgent(t, ClientOptions{StderrTail: func() string { return tail }}, func(req Request, w io.Writer) bool {
		switch req.Op {
		case OpHello:
			okHello(req, w)
		case OpCall:
			reply(w, Event{Event: EventAccepted, Seq: req.Seq, Completion: Completion{ID: req.ID}})
			return false // crash with the call in flight
		}
		return true
	})
	ctx := t.Context()
	if _, err := c.Hello(ctx, HelloRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, Call{ID: 9, Dst: addrB, Port: 1, Request: 20, Response: 20}); err != nil {
		t.Fatal(err)
	}
	comp, ok := <-c.Completions()
	if !ok || comp.ID != 9 || comp.Code() != CodeExited || !strings.Contains(comp.Error, "panic: boom") {
		t.Errorf("completion of the call in flight = %+v, %v; want code exited with the stderr tail", comp, ok)
	}
	if _, ok := <-c.Completions(); ok {
		t.Errorf("completions not closed after the crash")
	}
	_, err := c.Stats(ctx)
	if !errors.Is(err, ErrAgentExited) || !strings.Contains(err.Error(), "panic: boom | goroutine 1 [running]") {
		t.Errorf("stats after the crash: %v; want ErrAgentExited with the stderr tail", err)
	}
}

func TestClientSilentAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeAgent(t, ClientOptions{StderrTail: func() string { return "still thinking" }}, func(Request, io.Writer) bool { return true })
		start := time.Now()
		_, err := c.Hello(t.Context(), HelloRequest{})
		elapsed := time.Since(start)
		if !errors.Is(err, ErrAgentSilent) || !strings.Contains(err.Error(), "still thinking") {
			t.Errorf("hello to a silent agent: %v; want ErrAgentSilent with the stderr tail", err)
		}
		if want := timescale.D(DefaultReplyTimeout); elapsed != want {
			t.Errorf("silent after %v, want the reply timeout %v", elapsed, want)
		}
	})
}

func TestClientAgentNotReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, reqW := io.Pipe() // nobody reads the agent's input
		evR, evW := io.Pipe()
		defer evW.Close()
		c := NewClient(evR, reqW, ClientOptions{ReplyTimeout: time.Second})
		defer c.Close()
		start := time.Now()
		_, err := c.Stats(t.Context())
		if !errors.Is(err, ErrAgentSilent) || time.Since(start) != time.Second {
			t.Errorf("stats to an agent that does not read: %v after %v; want ErrAgentSilent after 1s", err, time.Since(start))
		}
	})
}

func TestClientGarbageLine(t *testing.T) {
	c := fakeAgent(t, ClientOptions{}, func(req Request, w io.Writer) bool {
		io.WriteString(w, "listening on port 4000...\n")
		return true
	})
	_, err := c.Hello(t.Context(), HelloRequest{})
	var perr *ProtocolError
	if !errors.As(err, &perr) || perr.Line != "listening on port 4000..." {
		t.Fatalf("hello answered by a log line: %v; want a ProtocolError quoting it", err)
	}
	if !errors.As(c.Err(), &perr) {
		t.Errorf("session error = %v, want the ProtocolError", c.Err())
	}
}

func TestClientWrongEventAndErrorEvent(t *testing.T) {
	c := fakeAgent(t, ClientOptions{}, func(req Request, w io.Writer) bool {
		switch req.Op {
		case OpHello:
			reply(w, Event{Event: EventError, Seq: req.Seq, Op: req.Op, Completion: Completion{Error: "no such parameter"}})
		case OpStats:
			reply(w, Event{Event: EventBye, Seq: req.Seq})
		}
		return true
	})
	_, err := c.Hello(t.Context(), HelloRequest{})
	var aerr *AgentError
	if !errors.As(err, &aerr) || aerr.Op != OpHello || aerr.Message != "no such parameter" {
		t.Errorf("hello: %v; want an AgentError", err)
	}
	_, err = c.Stats(t.Context())
	var perr *ProtocolError
	if !errors.As(err, &perr) || !strings.Contains(perr.Reason, `event "bye" answers op "stats"`) {
		t.Errorf("stats answered by bye: %v; want a ProtocolError", err)
	}
}

func TestClientLongLine(t *testing.T) {
	c := fakeAgent(t, ClientOptions{}, func(req Request, w io.Writer) bool {
		io.WriteString(w, strings.Repeat("x", MaxLineBytes+10)+"\n")
		return true
	})
	_, err := c.Hello(t.Context(), HelloRequest{})
	var perr *ProtocolError
	if !errors.As(err, &perr) || len(perr.Line) > maxQuote+len("…") || !strings.Contains(perr.Reason, "longer than") {
		t.Errorf("long line: %v; want a ProtocolError with the line cut", err)
	}
}

func TestDecodeEvent(t *testing.T) {
	for _, tc := range []struct{ line, err string }{
		{`{"event":"done","id":3,"latency_ns":12,"request":5,"response":5}`, ""},
		{`{"event":"hello","seq":1,"params":{"unsched_cutoffs":[0,0,0,0,1000000,15000,2800,200],"mtu":1500}}`, ""},
		{`not json`, "not a JSON event"},
		{`{"seq":1}`, `no "event" field`},
		{`{"event":"done","id":"x"}`, "not a JSON event"},
		{`{"event":"done"} {"event":"done"}`, "more than one JSON value"},
	} {
		ev, err := DecodeEvent([]byte(tc.line))
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.line, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %+v, %v; want error %q", tc.line, ev, err, tc.err)
		}
	}
	ev, _ := DecodeEvent([]byte(`{"event":"hello","seq":1,"params":{"unsched_cutoffs":[0,0,0,0,1000000,15000,2800,200],"mtu":1500}}`))
	if v, ok := ev.Params.Int("mtu"); !ok || v != 1500 {
		t.Errorf("mtu = %v %v", v, ok)
	}
	if cut, ok := ev.Params.Ints("unsched_cutoffs"); !ok || cut[7] != 200 {
		t.Errorf("unsched_cutoffs = %v %v", cut, ok)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"event":"done","id":3,"latency_ns":12,"request":5,"response":5}`,
		`{"event":"hello","seq":1,"protocol":1,"capabilities":["ipv4"],"params":{"unsched_cutoffs":[0,1]}}`,
		`{"event":"stats","seq":4,"stats":{"calls":1,"extra":{"x":2}}}`,
		"garbage", "", "{", `{"event":"error","seq":18446744073709551615,"error":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeEvent(data)
		if err == nil && ev.Event == "" {
			t.Fatalf("accepted an event without a name: %q", data)
		}
		ev.Params.Int("mtu")
		ev.Params.Ints("unsched_cutoffs")
		// The whole client on the same bytes as an agent's output.
		c := NewClient(strings.NewReader(string(data)), nopWriteCloser{}, ClientOptions{ReplyTimeout: time.Millisecond})
		for range c.Completions() {
		}
		if c.Err() == nil {
			t.Fatalf("session did not end at EOF")
		}
	})
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

func TestClientDoneTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeAgent(t, ClientOptions{DoneTimeout: 3 * time.Second}, func(req Request, w io.Writer) bool {
			reply(w, Event{Event: EventAccepted, Seq: req.Seq, Completion: Completion{ID: req.ID}})
			if req.ID == 2 {
				reply(w, Event{Event: EventDone, Completion: Completion{ID: 2, Request: 20, Response: 20}})
			}
			return true
		})
		start := time.Now()
		for id := uint64(1); id <= 2; id++ {
			if err := c.Call(t.Context(), Call{ID: id, Dst: addrB, Port: 1, Request: 20, Response: 20}); err != nil {
				t.Fatal(err)
			}
		}
		if comp := <-c.Completions(); comp.ID != 2 || comp.Error != "" {
			t.Errorf("first completion %+v, want call 2 done", comp)
		}
		comp := <-c.Completions()
		if comp.ID != 1 || comp.Code() != CodeSilent || time.Since(start) != 3*time.Second {
			t.Errorf("call without done: %+v after %v; want silent after 3s", comp, time.Since(start))
		}
		if c.InFlight() != 0 {
			t.Errorf("in flight %d, want 0", c.InFlight())
		}
	})
}
