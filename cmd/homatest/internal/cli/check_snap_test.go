package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// snapCut returns frames with each cut to its first keep bytes, as
// editcap -s keep (or tcpdump -s keep) leaves them: the captured length
// shrinks, the frame's length on the wire stays.
func snapCut(frames []capFrame, keep int) []capFrame {
	return snapCutEvery(frames, keep, 1)
}

// snapCutEvery is snapCut for every n-th frame only (the n-th, the
// 2n-th, ...); n < 0 cuts the last -n frames only.
func snapCutEvery(frames []capFrame, keep, n int) []capFrame {
	out := make([]capFrame, len(frames))
	for i, f := range frames {
		out[i] = f
		if len(f.data) > keep && (n > 0 && (i+1)%n == 0 || n < 0 && i >= len(frames)+n) {
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
		Homa         int `json:"homa"`
		SnapCut      int `json:"snap_cut"`
		SnapLen      int `json:"snap_len"`
		SnapPartial  int `json:"snap_partial"`
		SnapComplete int `json:"snap_complete"`
	} `json:"capture"`
}

// TestCheckSnapCut: a real capture re-written with a short snap length.
// At 54 bytes (Ethernet, IPv4 and 20 bytes of each Homa header) no Homa
// header can be read: the check says so, with the count, the bytes kept
// and how to re-capture, and is INCOMPLETE (exit 2), not a vacuous PASS.
// At 62 and 80 bytes most frames keep their common header only (the
// rules of a packet's own common and IP header judge them, and find
// nothing here) and the rest of the rules see them as unseen packets:
// more frames are cut than whole, so the capture is INCOMPLETE too. At 96
// bytes only the ACK is cut, and only in acks slots it does not use: it
// is judged whole, and the capture passes. With one frame in ten cut at
// 62 bytes findings become inconclusive as perhaps resting on an unseen
// packet: INCOMPLETE again, since only whole headers can tell. With the
// last response DATA and ACK cut (nothing rests on them) the report warns
// of the unseen packets, and passes.
func TestCheckSnapCut(t *testing.T) {
	const path = "../../../../pcap/testdata/real/linux-6.13-proto146/c-500k-loss3pct-server-side.pcap"
	frames := readCapFrames(t, path)
	dir := t.TempDir()
	whole := checkDropsJSON(t, writeCapFrames(t, dir, "whole.pcapng", frames, nil), scaledTimers...)
	if whole.code != 0 {
		t.Fatalf("whole capture: exit %d, want 0", whole.code)
	}
	for _, tc := range []struct {
		keep      int
		every     int
		code      int
		verdict   string
		allCut    bool
		partial   bool
		textMarks []string
	}{
		{keep: 54, code: 2, verdict: "incomplete", allCut: true, textMarks: []string{"no Homa header could be read", "INCOMPLETE:", "-s 0"}},
		{keep: 62, code: 2, verdict: "incomplete", partial: true, textMarks: []string{"not evidence enough to pass", "kept their common header", "INCOMPLETE:", "-s 0"}},
		{keep: 80, code: 2, verdict: "incomplete", partial: true, textMarks: []string{"not evidence enough to pass", "INCOMPLETE:"}},
		{keep: 96, code: 0, verdict: "pass", partial: true, textMarks: []string{"WARNING: the snap length cut the Homa header of 1 of", "none lost a field a receiver reads", "judged as whole"}},
		{keep: 62, every: 10, code: 2, verdict: "incomplete", partial: true, textMarks: []string{"perhaps resting on a packet not seen", "unreadable (snap length)", "-s 0"}},
		{keep: 62, every: -6, code: 0, verdict: "pass", partial: true, textMarks: []string{"WARNING: the snap length cut the Homa header of 2 of", "unreadable (snap length)", "-s 0"}},
	} {
		every := tc.every
		if every == 0 {
			every = 1
		}
		cut := writeCapFrames(t, dir, "cut.pcapng", snapCutEvery(frames, tc.keep, every), nil)
		out, _, code := run(t, append(append([]string{"check", "-o", "json"}, scaledTimers...), cut)...)
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
		if f.Capture.SnapLen != tc.keep || f.Capture.SnapCut == 0 || (f.Capture.SnapCut == f.Capture.Homa) != tc.allCut || (f.Capture.SnapPartial > 0) != tc.partial {
			t.Errorf("-s %d: snap_cut %d (partial %d) of %d Homa frames, snap_len %d", tc.keep, f.Capture.SnapCut, f.Capture.SnapPartial, f.Capture.Homa, f.Capture.SnapLen)
		}
		if !strings.Contains(f.SnapHint, "-s 0") && f.Capture.SnapCut > f.Capture.SnapComplete {
			t.Errorf("-s %d: snap_hint %q does not say how to re-capture", tc.keep, f.SnapHint)
		}
		text, _, _ := run(t, append(append([]string{"check"}, scaledTimers...), cut)...)
		for _, m := range tc.textMarks {
			if !strings.Contains(text, m) {
				t.Errorf("-s %d: text report lacks %q:\n%s", tc.keep, m, text)
			}
		}
		// One advice (spec.SnapAdvice): a fixed snap length cuts a GSO
		// frame's later headers (a finding said -s 256 beside -s 0).
		if strings.Contains(out+text, "-s 256") {
			t.Errorf("-s %d: the report advises -s 256 as well as -s 0:\n%s", tc.keep, text)
		}
	}
}

// TestRPCsSnapCut: rpcs on a capture whose snap length left no Homa
// header readable (editcap -s 54) fails as on one without Homa packets
// (exit 2), with check's snap-length hint, rather than printing an empty
// table; at 62 bytes (most frames keep their common header only, too few
// whole for check to pass) it lists what it can read, gives check's
// WARNING and exits 2 as incomplete (it exited 0 in silence); at 96 bytes
// (only an ACK's unused acks slots cut) it lists them and exits 0.
func TestRPCsSnapCut(t *testing.T) {
	frames := readCapFrames(t, realDir+"/linux-6.13-proto146/c-500k-loss3pct-server-side.pcap")
	dir := t.TempDir()
	cut := writeCapFrames(t, dir, "cut54.pcapng", snapCut(frames, 54), nil)
	out, err, code := run(t, "rpcs", cut)
	if code != 2 || err == nil || !strings.Contains(err.Error(), "no Homa header could be read") || !strings.Contains(err.Error(), "-s 0") || strings.Contains(err.Error(), "\n") {
		t.Errorf("rpcs -s 54: exit %d, %v, want 2 with the snap hint on one line; output:\n%s", code, err, out)
	}
	cut62 := writeCapFrames(t, dir, "cut62.pcapng", snapCut(frames, 62), nil)
	out, err, code = run(t, "rpcs", cut62)
	if code != 2 || err == nil || !strings.Contains(err.Error(), "incomplete: the snap length cut Homa headers") || !strings.Contains(out, "WARNING: the snap length cut the Homa header of") || !strings.HasPrefix(out, "ID ") {
		t.Errorf("rpcs -s 62: exit %d, %v, want 2, the lines, and the snap WARNING; output:\n%s", code, err, out)
	}
	ok := writeCapFrames(t, dir, "cut96.pcapng", snapCut(frames, 96), nil)
	if out, err, code := run(t, "rpcs", ok); code != 0 || strings.Count(out, "\n") < 2 {
		t.Errorf("rpcs -s 96: exit %d, %v:\n%s", code, err, out)
	}
}

// TestCheckSnapCutCountsAgree: the snap hint and the capture-drops line
// account for every cut frame alike (a new user, after editcap -s 70 on
// the 6.13 netem-incast capture, read 1464 frames cut with "their
// packets are unseen" and 1431 unseen packets: 33 apart, unsaid): the
// snap hint says how many are unseen and that the other 33 are ACKs
// judged as whole, and the drops line says of how many cut.
func TestCheckSnapCutCountsAgree(t *testing.T) {
	frames := readCapFrames(t, realDir+"/lab-scenarios/linux-6.13-netem-incast.pcapng")
	cut := writeCapFrames(t, t.TempDir(), "cut70.pcapng", snapCut(frames, 70), nil)
	out, _, _ := run(t, "check", "-o", "json", cut)
	var js struct {
		Files []struct {
			snapReport
			Report struct {
				CaptureDrops int `json:"capture_drops"`
			} `json:"report"`
			DropsHint     string `json:"capture_drops_hint"`
			NothingJudged string `json:"nothing_judged"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%v:\n%.2000s", err, out)
	}
	f := js.Files[0]
	c := f.Capture
	if c.SnapCut != 1464 || c.SnapComplete != 33 || f.Report.CaptureDrops != c.SnapCut-c.SnapComplete {
		t.Fatalf("snap_cut %d, snap_complete %d, capture_drops %d; want 1464, 33 and their difference", c.SnapCut, c.SnapComplete, f.Report.CaptureDrops)
	}
	for _, want := range []string{
		"cut the Homa header of 1464 of 1639 Homa frames (at most 70 bytes of each were captured): 1431 of them are unseen packets,",
		"; the other 33 are ACKs that lost only acks slots past num_acks, judged as whole;",
	} {
		if !strings.Contains(f.SnapHint, want) {
			t.Errorf("snap_hint lacks %q:\n%s", want, f.SnapHint)
		}
	}
	if want := "1431 frames with their Homa header cut by the snap length are unseen packets (of the 1464 it cut; the other 33 are ACKs"; !strings.Contains(f.DropsHint, want) {
		t.Errorf("capture_drops_hint lacks %q:\n%s", want, f.DropsHint)
	}
	// One RPC's control packets (whole under 70 bytes: a NEED_ACK, an
	// RPC_UNKNOWN) came from both its sides, so an exchange was heard
	// (before, only DATA, GRANT and BUSY counted, and nothing_judged
	// blamed the cut); the cut still leaves the verdict INCOMPLETE, and
	// nothing calls the capture too short or one-way.
	if f.NothingJudged != "" || f.Verdict != "incomplete" {
		t.Errorf("verdict %q nothing_judged %q: want incomplete and no nothing_judged", f.Verdict, f.NothingJudged)
	}
}

// TestCheckSnapCutOneDirection: a capture of one direction (the frames
// 198.18.0.4 sent in the linux_6.13.9 netem run) whose snap length cut
// every second frame: 'no RPC heard from both sides' names the cut
// beside the one direction, as the two-direction form does, and asks for
// whole frames.
func TestCheckSnapCutOneDirection(t *testing.T) {
	var oneWay []capFrame
	for _, f := range readCapFrames(t, realDir+"/lab-scenarios/linux-6.13-netem-incast.pcapng") {
		// Ethernet, then IPv4: the source address at bytes 26-29.
		if len(f.data) >= 30 && string(f.data[26:30]) == "\xc6\x12\x00\x04" {
			oneWay = append(oneWay, f)
		}
	}
	cut := writeCapFrames(t, t.TempDir(), "oneway.pcapng", snapCutEvery(oneWay, 70, 2), nil)
	out, _, _ := run(t, "check", "-o", "json", cut)
	var js struct {
		Files []struct {
			NothingJudged string `json:"nothing_judged"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%v:\n%s", err, out)
	}
	f := js.Files[0]
	for _, want := range []string{"the capture shows one direction only", "and the snap length cut ", "to unseen packets (see the snap length WARNING), which may hold the other direction", "capture both directions, whole frames"} {
		if !strings.Contains(f.NothingJudged, want) {
			t.Errorf("nothing_judged lacks %q:\n%s", want, f.NothingJudged)
		}
	}
}

// TestSnapCutBeforeHomaEveryCommand: check, rpcs, plot and decode say the
// same of a capture whose snap length cut its frames before their Homa
// header (editcap -s 20: not even the IP header whole): no Homa header
// could be read, the frames were cut before it, and how to re-capture
// (they said "no Homa packets found", as of a capture without Homa). At
// -s 40 (IP header whole, Homa header cut) rpcs and plot say no RPC can
// be shown (they said no rule could judge the capture, which is check's
// business; check still says that).
func TestSnapCutBeforeHomaEveryCommand(t *testing.T) {
	frames := readCapFrames(t, realDir+"/linux-6.13-proto146/c-500k-loss3pct-server-side.pcap")
	dir := t.TempDir()
	cut20 := writeCapFrames(t, dir, "cut20.pcapng", snapCut(frames, 20), nil)
	const hint = "no Homa header could be read: the snap length cut 2076 frames before their Homa header (at most 20 bytes of each were captured), so any Homa packet among them is unseen: re-capture whole frames (tcpdump -s 0, dumpcap -s 0)"
	for _, args := range [][]string{{"check", cut20}, {"rpcs", cut20}, {"plot", cut20, "--rpc", "slowest", "-o", filepath.Join(dir, "p.svg")}} {
		out, err, code := run(t, args...)
		if code != 2 || err == nil || err.Error() != cut20+": "+hint {
			t.Errorf("%s -s 20: exit %d, %v; want 2 and %q\n%s", args[0], code, err, hint, out)
		}
	}
	// decode prints the summary, then exits 2 as the others do (it
	// exited 0 on a capture without a Homa packet read).
	out, err, code := run(t, "decode", "--summary-only", cut20)
	if code != 2 || err == nil || err.Error() != cut20+": "+hint || !strings.Contains(out, "(cut before the Homa header 2076); the snap length cut 2076 frames before their Homa header") {
		t.Errorf("decode -s 20: exit %d, %v, want the frames counted and the hint:\n%s", code, err, out)
	}
	cut40 := writeCapFrames(t, dir, "cut40.pcapng", snapCut(frames, 40), nil)
	for _, args := range [][]string{{"rpcs", cut40}, {"plot", cut40, "--rpc", "slowest", "-o", filepath.Join(dir, "p.svg")}} {
		_, err, code := run(t, args...)
		if code != 2 || err == nil || !strings.Contains(err.Error(), "no Homa header could be read, so no RPC can be shown; re-capture whole frames") {
			t.Errorf("%s -s 40: exit %d, %v; want 2 saying no RPC can be shown", args[0], code, err)
		}
	}
	if out, _, _ := run(t, "check", cut40); !strings.Contains(out, "no Homa header could be read, so no rule could judge the capture") {
		t.Errorf("check -s 40:\n%s\nwant the snap WARNING saying no rule could judge the capture", out)
	}
}
