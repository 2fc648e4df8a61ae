package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// stubBackend accepts everything and completes calls at once.
type stubBackend struct{}

func (stubBackend) hello(HelloRequest) (Hello, error)  { return Hello{Impl: "stub"}, nil }
func (stubBackend) listen(uint16, ListenOptions) error { return nil }
func (stubBackend) call(_ context.Context, c Call) (func() Completion, error) {
	return func() Completion { return Completion{Request: c.Request, Response: c.Response} }, nil
}
func (stubBackend) stats(*Stats) {}
func (stubBackend) close() error { return nil }

// runStub serves input with the stub backend and returns the output lines.
func runStub(t testing.TB, input string) []string {
	var out bytes.Buffer
	if err := serve(context.Background(), strings.NewReader(input), &out, stubBackend{}, &counters{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("serve: %v", err)
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

func TestServeAnswersEveryLine(t *testing.T) {
	lines := runStub(t, `{"op":"hello","seq":1,"protocol":1}
{"op":"call","seq":2,"id":4,"dst":"198.18.0.2","port":4000,"request":100,"response":10}
{"op":"call","seq":3,"id":5,"dst":"not-an-ip","port":4000,"request":100,"response":10}
{"op":"call","seq":4,"id":6,"port":4000,"request":100,"response":10}
{"op":"listen","seq":5}
{"op":"stats","seq":6}
{"seq":7}
[1,2]
{"op":"shutdown","seq":8}
{"op":"stats","seq":9}
`)
	var evs []Event
	for _, l := range lines {
		ev, err := DecodeEvent([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	// One answer per request up to shutdown, plus the done of call 4;
	// nothing after bye.
	bySeq := map[uint64]Event{}
	var done int
	for _, ev := range evs {
		if ev.Event == EventDone {
			done++
			continue
		}
		bySeq[ev.Seq] = ev
	}
	want := map[uint64]string{1: EventHello, 2: EventAccepted, 3: EventError, 4: EventError, 5: EventError, 6: EventStats, 7: EventError, 8: EventBye}
	for seq, name := range want {
		if bySeq[seq].Event != name {
			t.Errorf("seq %d answered %+v, want %s", seq, bySeq[seq], name)
		}
	}
	if done != 1 || len(evs) != 10 || evs[len(evs)-1].Event != EventBye {
		t.Errorf("events: %v", lines)
	}
	if !strings.Contains(bySeq[3].Error, "bad request line") || !strings.Contains(bySeq[7].Error, `unknown op ""`) {
		t.Errorf("errors: %q, %q", bySeq[3].Error, bySeq[7].Error)
	}
	if st := bySeq[6].Stats; st == nil || st.Calls != 1 {
		t.Errorf("stats: %+v", st)
	}
}

func FuzzServe(f *testing.F) {
	f.Add([]byte(`{"op":"hello","seq":1,"protocol":1}` + "\n" + `{"op":"call","seq":2,"id":4,"dst":"198.18.0.2","port":4000,"request":100,"response":10}`))
	f.Add([]byte(`{"op":"hello","seq":1,"protocol":1,"params":{"x":[1,"a",{}]},"faults":[""]}` + "\n{\n"))
	f.Add([]byte(`{"op":"call","seq":18446744073709551615,"id":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		serve(context.Background(), bytes.NewReader(data), &out, stubBackend{}, &counters{}, slog.New(slog.DiscardHandler))
		for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
			if len(l) > 0 {
				if _, err := DecodeEvent(l); err != nil {
					t.Fatalf("the agent wrote a line the client cannot read: %v", err)
				}
			}
		}
	})
}
