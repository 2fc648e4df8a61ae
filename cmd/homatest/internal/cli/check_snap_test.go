package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// snapCut returns frames with each cut to its first keep bytes, as
// editcap -s keep (or tcpdump -s keep) leaves them: the captured length
// shrinks, the frame's length on the wire stays.
func snapCut(frames []capFrame, keep int) []capFrame {
	out := make([]capFrame, len(frames))
	for i, f := range frames {
		out[i] = f
		if len(f.data) > keep {
			out[i].data = f.data[:keep]
			out[i].ci.CaptureLength = keep
		}
	}
	return out
}

// snapReport is what check -o json says about the snap length.
type snapReport struct {
	Verdict  string `json:"verdict"`
	Must     int    `json:"must_violations"`
	SnapHint string `json:"snap_hint"`
	Capture  struct {
		Homa    int `json:"homa"`
		SnapCut int `json:"snap_cut"`
		SnapLen int `json:"snap_len"`
	} `json:"capture"`
}

// TestCheckSnapCut: a real capture re-written with a short snap length.
// At 54 bytes (Ethernet, IPv4 and 20 bytes of each Homa header) no Homa
// header can be read: the check says so, with the count, the bytes kept
// and how to re-capture, and is INCOMPLETE (exit 2), not a vacuous PASS.
// At 64 bytes the few short control headers survive and the rest are
// unseen packets: the report warns, and the BUSYs whose RESENDs the snap
// length hid are not violations of HOMA-RESEND-005 (an unseen RESEND may
// have asked for them), as they are not in the whole capture.
func TestCheckSnapCut(t *testing.T) {
	const path = "../../../../pcap/testdata/real/linux-6.13-proto146/c-500k-loss3pct-server-side.pcap"
	frames := readCapFrames(t, path)
	dir := t.TempDir()
	whole := checkDropsJSON(t, writeCapFrames(t, dir, "whole.pcapng", frames, nil), realTimers...)
	if whole.code != 0 {
		t.Fatalf("whole capture: exit %d, want 0", whole.code)
	}
	for _, tc := range []struct {
		keep      int
		code      int
		verdict   string
		allCut    bool
		textMarks []string
	}{
		{keep: 54, code: 2, verdict: "incomplete", allCut: true, textMarks: []string{"no Homa header could be read", "INCOMPLETE:", "-s 0"}},
		{keep: 64, code: 0, verdict: "pass", textMarks: []string{"WARNING: the snap length cut the Homa header of", "unreadable (snap length)", "-s 0"}},
	} {
		cut := writeCapFrames(t, dir, "cut.pcapng", snapCut(frames, tc.keep), nil)
		out, _, code := run(t, append(append([]string{"check", "-o", "json"}, realTimers...), cut)...)
		var js struct {
			Files []snapReport `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("-s %d: %v:\n%s", tc.keep, err, out)
		}
		f := js.Files[0]
		if code != tc.code || f.Verdict != tc.verdict || f.Must != 0 {
			t.Errorf("-s %d: exit %d verdict %q must %d, want %d %q 0", tc.keep, code, f.Verdict, f.Must, tc.code, tc.verdict)
		}
		if f.Capture.SnapLen != tc.keep || f.Capture.SnapCut == 0 || (f.Capture.SnapCut == f.Capture.Homa) != tc.allCut {
			t.Errorf("-s %d: snap_cut %d of %d Homa frames, snap_len %d", tc.keep, f.Capture.SnapCut, f.Capture.Homa, f.Capture.SnapLen)
		}
		if !strings.Contains(f.SnapHint, "-s 0") {
			t.Errorf("-s %d: snap_hint %q does not say how to re-capture", tc.keep, f.SnapHint)
		}
		text, _, _ := run(t, append(append([]string{"check"}, realTimers...), cut)...)
		for _, m := range tc.textMarks {
			if !strings.Contains(text, m) {
				t.Errorf("-s %d: text report lacks %q:\n%s", tc.keep, m, text)
			}
		}
	}
}
