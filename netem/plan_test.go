package netem

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePlan(t *testing.T) {
	src := `
rules:
  - name: second grant of first rpc
    match: {type: GRANT, rpc: 1, nth: 2}
    action: drop
  - match: {type: DATA, message: request, offset: [0, 10000], retransmit: false}
    action: {delay: 5ms}
  - match: {from: 198.18.0.1, nth: 3, count: 2}
    action: {hold: 4}
  - match: {type: RESEND, direction: to-client}
    action: {priority: 0}
  - match: {type: DATA}
    action: duplicate
`
	p, err := ParsePlan([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 5 {
		t.Fatalf("got %d rules, want 5", len(p.Rules))
	}
	if r := p.Rules[0]; r.Match.Type != "GRANT" || r.Match.RPC != 1 || r.Match.Nth != 2 || !r.Action.Drop || r.line != 3 {
		t.Errorf("rule 0 = %+v", r)
	}
	if r := p.Rules[1]; r.Action.Delay != 5*time.Millisecond || !reflect.DeepEqual(r.Match.Offset, []uint32{0, 10000}) || r.Match.Retransmit == nil || *r.Match.Retransmit {
		t.Errorf("rule 1 = %+v", r)
	}
	if r := p.Rules[4]; r.Action.Duplicate != 1 {
		t.Errorf("rule 4 = %+v", r)
	}
	if got := p.Rules[3].Action.String(); got != "priority 0" {
		t.Errorf("action string = %q", got)
	}
}

func TestParsePlanErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"rules:\n  - match: {type: GRNT}\n    action: drop\n", `rule 0 at line 2: match.type "GRNT"`},
		{"rules:\n  - match: {type: DATA}\n    action: explode\n", `line 3: action "explode"`},
		{"rules:\n  - match: {typo: DATA}\n    action: drop\n", `line 2: unknown field "typo" in match`},
		{"rules:\n  - name: x\n    match: {offset: [5, 1]}\n    action: drop\n", "rule 0 (x) at line 2: match.offset"},
		{"rules:\n  - match: {from: host1}\n    action: drop\n", `match.from "host1"`},
		{"rules:\n  - match: {type: DATA}\n    action: {}\n", "action is empty"},
		{"rules:\n  - match: {type: DATA}\n    action: {drop: true, delay: 1ms}\n", "cannot be combined"},
		{"rules:\n  - match: {type: DATA}\n    action: {priority: 9}\n", "action.priority 9"},
		{"rules:\n  - match: {id: 3}\n    action: drop\n", "match.id 3"},
		{"rules:\n  - match: {message: reply}\n    action: drop\n", `match.message "reply"`},
		{"rules:\n  - match: {type: DATA, rpc: 0}\n    action: drop\n", "line 2: rpc 0: rpc and nth count from 1"},
		{"rules:\n  - match:\n      nth: 0\n    action: drop\n", "line 3: nth 0: rpc and nth count from 1"},
	} {
		_, err := ParsePlan([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParsePlan(%q) = %v, want one line containing %q", tc.src, err, tc.want)
		}
	}
}

// runPlan feeds frames through a plan and returns the frame numbers of the
// frames each rule fired on.
func runPlan(t *testing.T, src string, frames [][]byte) []Hit {
	t.Helper()
	p, err := ParsePlan([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newPlanRunner(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		fi := classify(f)
		pr.apply(uint64(i+1), &fi, "in", "out")
	}
	return pr.hits
}

func hitFrames(h []Hit) []uint64 {
	var f []uint64
	for _, x := range h {
		f = append(f, x.Frame)
	}
	return f
}

func TestPlanMatching(t *testing.T) {
	// RPC 2 (first seen, ordinal 1) and RPC 4 (ordinal 2) interleaved.
	frames := [][]byte{
		dataFrame(t, true, 2, 0, 1000, false),                       // 1: rpc1 request DATA
		dataFrame(t, true, 4, 0, 1000, false),                       // 2: rpc2 request DATA
		grantFrame(t, false, 2, 20000),                              // 3: rpc1 GRANT from server (request)
		grantFrame(t, false, 4, 20000),                              // 4: rpc2 GRANT
		grantFrame(t, false, 2, 30000),                              // 5: rpc1 GRANT #2
		dataFrame(t, true, 2, 10000, 1000, true),                    // 6: rpc1 retransmitted DATA
		dataFrame(t, false, 2, 0, 500, false),                       // 7: rpc1 response DATA
		grantFrame(t, true, 2, 10000),                               // 8: rpc1 GRANT from client (response)
		ipv4Frame(macA, macB, addrA, addrB, 0, 17, make([]byte, 8)), // 9: UDP
		grantFrame(t, false, 2, 40000),                              // 10: rpc1 GRANT #3 from server
	}
	for _, tc := range []struct {
		name, match string
		want        []uint64
	}{
		{"2nd GRANT of first RPC", "{type: GRANT, rpc: 1, nth: 2}", []uint64{5}},
		{"GRANTs of rpc 1 to-client", "{type: GRANT, rpc: 1, direction: to-client}", []uint64{3, 5, 10}},
		{"explicit id", "{id: 4}", []uint64{2, 4}},
		{"request message", "{rpc: 1, message: request}", []uint64{1, 3, 5, 6, 10}},
		{"response message", "{message: response}", []uint64{7, 8}},
		{"retransmit", "{retransmit: true}", []uint64{6}},
		{"not retransmit", "{retransmit: false, rpc: 1}", []uint64{1, 7}},
		{"offset range", "{type: GRANT, offset: [20000, 40000]}", []uint64{3, 4, 5}},
		{"data offset", "{type: DATA, offset: [1, 20000]}", []uint64{6}},
		{"nth+count", "{type: GRANT, nth: 2, count: 3}", []uint64{4, 5, 8}},
		{"count only", "{type: DATA, count: 2}", []uint64{1, 2}},
		{"from address matches any IP", "{from: 198.18.0.1}", []uint64{1, 2, 6, 8, 9}},
		{"to address", "{to: 198.18.0.1, type: DATA}", []uint64{7}},
		{"in port", "{in_port: in, nth: 9}", []uint64{9}},
		{"other port", "{out_port: x}", nil},
		{"homa ports", "{src_port: 99}", []uint64{3, 4, 5, 7, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := runPlan(t, "rules:\n  - match: "+tc.match+"\n    action: drop\n", frames)
			if got := hitFrames(hits); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hits on frames %v, want %v", got, tc.want)
			}
		})
	}
	// Determinism: the same sequence gives the same hits.
	src := "rules:\n  - match: {type: GRANT}\n    action: {delay: 1ms}\n  - match: {rpc: 1, nth: 2}\n    action: drop\n"
	a, b := runPlan(t, src, frames), runPlan(t, src, frames)
	if !reflect.DeepEqual(a, b) || len(a) != 6 {
		t.Errorf("hits differ between runs or wrong count: %v vs %v", a, b)
	}
	if a[1] != (Hit{Rule: 1, Frame: 3, Action: "drop"}) {
		t.Errorf("hit[1] = %+v, want rule 1 frame 3 drop", a[1])
	}
}

// FuzzParsePlan: the plan parser never panics; what it accepts validates.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte("rules:\n  - match: {type: GRANT, rpc: 1, nth: 2}\n    action: drop\n"))
	f.Add([]byte("rules:\n  - match: {offset: [0, 10]}\n    action: {hold: 2, delay: 1ms}\n"))
	f.Add([]byte("rules: [{match: {}, action: duplicate}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePlan(b)
		if err == nil {
			if err := p.Validate(); err != nil {
				t.Errorf("accepted plan fails Validate: %v", err)
			}
		}
	})
}
