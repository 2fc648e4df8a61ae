package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCheckShortReload: two real captures, each taken after the Homa
// module was loaded (RPC ids from 2), joined so that the second begins
// 112 ms after the first ends: 10.0.0.11 begins RPC 2 again with
// cutoff_version 0 to the server whose version it carried, a fresh
// module's two signs, but after a silence shorter than its peers'
// timeout, so no new section (its peers may still hold its RPCs). Check
// charged it HOMA-ID-004 and CUTOFF-001 with no word on a reload, and its
// closing note suggested --capture-drops. The violations stand (a reload
// mid-RPC breaks its peers' RPCs), but a WARNING now names the likely
// reload, and each violation about the host from there on says so; the
// note on missed packets counts none of them. Joined after 2 s the
// capture is judged as two sections and passes, as before.
func TestCheckShortReload(t *testing.T) {
	const dir = "../../../../pcap/testdata/real/linux-6.13-proto146/"
	a, b := readCapFrames(t, dir+"a-small-rpcs.pcap"), readCapFrames(t, dir+"b-500k-grants.pcap")
	// from11 says whether an IPv4 Ethernet frame is 10.0.0.11's.
	from11 := func(f capFrame) bool {
		return len(f.data) > 30 && f.data[12] == 8 && f.data[13] == 0 && string(f.data[26:30]) == "\x0a\x00\x00\x0b"
	}
	joined := func(gap time.Duration) []capFrame {
		var last, first time.Time
		for _, f := range a {
			if from11(f) {
				last = f.ci.Timestamp
			}
		}
		for _, f := range b {
			if from11(f) {
				first = f.ci.Timestamp
				break
			}
		}
		return mergeOverlapping(t, a, b, last.Add(gap).Sub(first)+firstHoma(t, b).Sub(firstHoma(t, a)))
	}
	tmp := t.TempDir()
	type result struct {
		Must   int    `json:"must_violations"`
		Hint   string `json:"reload_hint"`
		Report struct {
			Reloads []struct {
				Frame     int    `json:"frame"`
				Restarted string `json:"restarted"`
			} `json:"reloads"`
			Sections []struct {
				Frame int `json:"frame"`
			} `json:"sections"`
			Violations []struct {
				Rule  string `json:"rule"`
				Frame int    `json:"frame"`
				Level string `json:"level"`
				Hint  string `json:"hint"`
			} `json:"violations"`
		} `json:"report"`
	}
	check := func(gap time.Duration) (result, int, string) {
		p := writeCapFrames(t, tmp, gap.String()+".pcapng", joined(gap), nil)
		args := append(append([]string{"check", "--param", "window=10000"}, scaledTimers...), p)
		out, _, code := run(t, append([]string{"check", "-o", "json"}, args[1:]...)...)
		var js struct {
			Files []result `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%v:\n%s", err, out)
		}
		text, _, _ := run(t, args...)
		return js.Files[0], code, text
	}

	f, code, text := check(112 * time.Millisecond)
	const want = "frame 50: 10.0.0.11 looks reloaded (its Homa module loaded afresh: RPC ids start again at 2, and cutoff_version 0 to 10.0.0.1, whose version 1 it carried before) after only 112ms silent"
	if code != ExitViolations || f.Must == 0 || !strings.HasPrefix(f.Hint, want) || len(f.Report.Reloads) != 1 || f.Report.Reloads[0].Frame != 50 || f.Report.Reloads[0].Restarted != "10.0.0.11" || len(f.Report.Sections) != 0 {
		t.Errorf("reloaded after 112 ms: exit %d, %d MUST, hint %q, reloads %+v, sections %+v; want 1, some, %q..., frame 50 of 10.0.0.11, none", code, f.Must, f.Hint, f.Report.Reloads, f.Report.Sections, want)
	}
	rules := map[string]bool{}
	for _, v := range f.Report.Violations {
		rules[v.Rule] = true
		if !strings.Contains(v.Hint, "likely 10.0.0.11's reload at frame 50") {
			t.Errorf("%s at frame %d without the reload's hint: %q", v.Rule, v.Frame, v.Hint)
		}
	}
	if !rules["HOMA-ID-004"] || !rules["HOMA-CUTOFF-001"] {
		t.Errorf("violations of %v, want HOMA-ID-004 and HOMA-CUTOFF-001 (the violations stand)", rules)
	}
	if !strings.Contains(text, "WARNING: "+want) || strings.Contains(text, "could also be a packet this capture missed") {
		t.Errorf("text: want the reload WARNING and no note on missed packets:\n%s", text)
	}

	// After a silence its peers time out in: a new section, no hint.
	if f, code, _ := check(2 * time.Second); code != ExitOK || f.Hint != "" || len(f.Report.Reloads) != 0 || len(f.Report.Sections) != 1 {
		t.Errorf("reloaded after 2 s: exit %d, hint %q, reloads %+v, sections %+v; want 0, none, none, one", code, f.Hint, f.Report.Reloads, f.Report.Sections)
	}
}
