package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// timeOrderReport is what check -o json says about a file's time order.
type timeOrderReport struct {
	Verdict   string `json:"verdict"`
	Must      int    `json:"must_violations"`
	Hint      string `json:"time_order_hint"`
	Reordered bool   `json:"time_reordered"`
	Capture   struct {
		Backwards      int           `json:"time_backwards"`
		BackwardsFrame int           `json:"time_backwards_first_frame"`
		BackwardsMax   time.Duration `json:"time_backwards_max_ns"`
	} `json:"capture"`
	Report struct {
		Violations []struct {
			Rule  string `json:"rule"`
			Frame int    `json:"frame"`
			Why   string `json:"why"`
		} `json:"violations"`
	} `json:"report"`
}

// TestCheckTimestampsBackwards: a real capture with two records swapped,
// timestamps and all, as tcpdump on two CPUs can write them: RPC 4's
// response (frame 8) and the next request, which carries the ack of RPC 4
// (frame 9). Within pcap.MaxReorder the check judges in timestamp order:
// the ack follows the response and the capture passes, and the report
// says which frame went back and by how much. Swapped with a request 18 ms
// later, the file order is judged and reported as such: the ack of RPC 4
// now precedes every byte of its response (HOMA-ACK-004), and the finding
// says so, and the hint says how to sort the records (reordercap), which
// the file order's hint did not.
func TestCheckTimestampsBackwards(t *testing.T) {
	const path = "../../../../pcap/testdata/real/linux-6.13-proto146/a-small-rpcs.pcap"
	frames := readCapFrames(t, path)
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		swap      int // frame swapped with frame 8 (1-based)
		backwards int // frames behind a timestamp before them: 9 up to swap
		back      time.Duration
		reordered bool
		must      int
	}{
		{name: "near", swap: 9, backwards: 1, back: 6716 * time.Microsecond, reordered: true},
		{name: "far", swap: 23, backwards: 15, back: 18373 * time.Microsecond, must: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := append([]capFrame(nil), frames...)
			fs[7], fs[tc.swap-1] = fs[tc.swap-1], fs[7]
			p := writeCapFrames(t, dir, tc.name+".pcapng", fs, nil)
			out, _, code := run(t, append(append([]string{"check", "-o", "json"}, scaledTimers...), p)...)
			var js struct {
				Files []timeOrderReport `json:"files"`
			}
			if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
				t.Fatalf("%v:\n%s", err, out)
			}
			f := js.Files[0]
			if c := f.Capture; c.Backwards != tc.backwards || c.BackwardsFrame != 9 || c.BackwardsMax != tc.back {
				t.Errorf("time_backwards %d first frame %d max %v, want %d 9 %v", c.Backwards, c.BackwardsFrame, c.BackwardsMax, tc.backwards, tc.back)
			}
			if f.Reordered != tc.reordered || f.Must != tc.must {
				t.Errorf("reordered %v, %d MUST violations (exit %d), want %v %d: %+v", f.Reordered, f.Must, code, tc.reordered, tc.must, f.Report.Violations)
			}
			if tc.reordered && (!strings.Contains(f.Hint, "judged in timestamp order") || strings.Contains(f.Hint, "reordercap")) ||
				!tc.reordered && (!strings.Contains(f.Hint, "judged in file order") || !strings.Contains(f.Hint, "sort them with reordercap IN OUT and check again")) {
				t.Errorf("time_order_hint %q: want the order judged and, in file order, how to sort the file", f.Hint)
			}
			if tc.must > 0 {
				v := f.Report.Violations[0]
				if v.Rule != "HOMA-ACK-004" || v.Frame != 9 || v.Why != "ack for RPC 4, but no byte of its response is in the capture yet" {
					t.Errorf("violation %+v", v)
				}
			}
			text, _, _ := run(t, append(append([]string{"check"}, scaledTimers...), p)...)
			if !strings.Contains(text, "timestamps: ") {
				t.Errorf("text report does not mention the timestamps:\n%s", text)
			}
		})
	}
}

// TestCheckJoinedAcrossRestart: two real captures joined end to end, as
// mergecap -a joins them, each taken after the Homa module was loaded
// (RPC ids from 2). In time order (b after a) the client's ids start
// again at 2 after seconds of silence: a restart, which starts a new
// section rather than charge id reuse (HOMA-ID-004) and the old RPCs'
// state (HOMA-WIRE-003, HOMA-CUTOFF-001 against the old incarnation's
// CUTOFFS). Joined the other way the timestamps jump seconds back, and
// what follows is judged as its own section. Both pass, and the text
// report names the sections.
func TestCheckJoinedAcrossRestart(t *testing.T) {
	const dir = "../../../../pcap/testdata/real/linux-6.13-proto146/"
	a, b := readCapFrames(t, dir+"a-small-rpcs.pcap"), readCapFrames(t, dir+"b-500k-grants.pcap")
	tmp := t.TempDir()
	for _, tc := range []struct {
		name   string
		frames []capFrame
		why    string
	}{
		{name: "restart", frames: append(append([]capFrame(nil), a...), b...), why: "10.0.0.11 restarted its Homa module (RPC ids start again at 2"},
		{name: "jump", frames: append(append([]capFrame(nil), b...), a...), why: "timestamps jump "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeCapFrames(t, tmp, tc.name+".pcapng", tc.frames, nil)
			args := append(append([]string{"check", "-o", "json", "--param", "window=10000"}, scaledTimers...), p)
			out, _, code := run(t, args...)
			var js struct {
				Files []struct {
					Must   int `json:"must_violations"`
					Report struct {
						Sections []struct {
							Frame int    `json:"frame"`
							Why   string `json:"why"`
						} `json:"sections"`
						Violations []struct {
							Rule  string `json:"rule"`
							Frame int    `json:"frame"`
						} `json:"violations"`
					} `json:"report"`
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
				t.Fatalf("%v:\n%s", err, out)
			}
			f := js.Files[0]
			if code != 0 || len(f.Report.Violations) != 0 {
				t.Errorf("exit %d, violations %+v, want 0 and none", code, f.Report.Violations)
			}
			first := len(a)
			if tc.name == "jump" {
				first = len(b)
			}
			// The section starts at the second capture's first Homa frame.
			if s := f.Report.Sections; len(s) != 1 || s[0].Frame <= first || !strings.HasPrefix(s[0].Why, tc.why) {
				t.Errorf("sections %+v, want one after frame %d: %q...", s, first, tc.why)
			}
			text, _, _ := run(t, append(append([]string{"check", "--param", "window=10000"}, scaledTimers...), p)...)
			if !strings.Contains(text, "sections: judged as 2 independent sections") {
				t.Errorf("text report does not name the sections:\n%s", text)
			}
		})
	}
}
