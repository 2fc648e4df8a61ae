package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/spec"
)

// scaledTimers are the timer sysctls the shared captures and those in
// pcap/testdata/real ran with (x10 the defaults).
var scaledTimers = []string{"--param", "resend_ticks=50", "--param", "resend_interval=50",
	"--param", "timeout_ticks=1000", "--param", "request_ack_ticks=20"}

// doubledFrame matches two frame references in a row.
var doubledFrame = regexp.MustCompile(`\(frame \d+\) \(frame \d+\)`)

// TestCheckRealCapturesNoMust: the real HomaModule captures give no MUST
// and no SHOULD violation (exit 0 even with --strict) with the timer
// sysctls their READMEs list, with and without their window sysctl, and
// judged as the server's link, where they were taken. The lab scenarios'
// captures (pcapng, every switch port both ways, complete: the capture
// read every frame) are judged each host on its own link, with the
// parameters and measured stalls of their runs beside them (.params,
// .stalls.json), and pass too.

func TestCheckRealCapturesNoMust(t *testing.T) {
	pcaps, _ := filepath.Glob(filepath.Join(realDir, "*", "*.pcap"))
	ngs, _ := filepath.Glob(filepath.Join(realDir, "*", "*.pcapng"))
	if len(pcaps) != 9 || len(ngs) != 2 {
		t.Fatalf("found %d pcap and %d pcapng captures, want 9 and 2", len(pcaps), len(ngs))
	}
	for _, f := range append(pcaps, ngs...) {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			// Taken on the bridge side of the server's link: judged as
			// that link too, where queueing and loss excuse least.
			views := [][]string{nil, {"--param", "window=10000"}}
			wantCode, verdict := ExitOK, "PASS: 0 MUST and 0 SHOULD violations"
			switch {
			case strings.HasSuffix(f, ".pcapng"): // each host on its own link
			case strings.Contains(f, "ipv6"):
				views = append(views, []string{"--capture-point", "host:fd00::1"})
			default:
				views = append(views, []string{"--capture-point", "host:10.0.0.1"})
			}
			for _, extra := range views {
				args := append(append([]string{"check", "--strict", f}, scaledTimers...), extra...)
				out, err, code := run(t, args...)
				if code != wantCode {
					t.Fatalf("%v: exit %d (%v), want %d:\n%s", extra, code, err, wantCode, out)
				}
				if !strings.Contains(out, verdict) {
					t.Errorf("no %q line:\n%s", verdict, out)
				}
				// A finding names a frame once (an excuse's text and the
				// closing packet's frame said it twice).
				for _, m := range doubledFrame.FindAllString(out, -1) {
					if a := strings.Fields(m); a[1] == a[3] {
						t.Errorf("%v: a frame named twice in a row, %q:\n%s", extra, m, out)
					}
				}
			}
		})
	}
}

// TestCheckDetectsViolation: forcing unsched_bytes below what the capture's
// sender used makes HOMA-UNSCHED-001 and HOMA-WIRE-007 fire at known frames,
// and the exit code is 1.
func TestCheckDetectsViolation(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	out, err, code := run(t, "check", "--rules", "HOMA-UNSCHED-001,HOMA-WIRE-007", "--param", "unsched_bytes=50", f)
	if code != ExitViolations || err == nil {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	// Frame 3 is the first 100-byte request: bytes [0,100) with U = 50.
	if !strings.Contains(out, "HOMA-UNSCHED-001 MUST frame 3 rpc 2 (client 10.0.0.11, server 10.0.0.1), charged to 10.0.0.11: bytes [0, 100) sent before any GRANT, beyond U = 50") {
		t.Errorf("missing UNSCHED-001 at frame 3:\n%s", out)
	}
	if !strings.Contains(out, "HOMA-WIRE-007 MUST frame 3 ") {
		t.Errorf("missing WIRE-007 at frame 3:\n%s", out)
	}
}

// TestCheckJSONAndJUnit: the lossy capture passes: the one RESEND whose
// answer the capture lacks (frame 1249) is downgraded, because the capture
// shows loss toward the client after the capture point (frame 201: the
// client RESENDs while its request stops short of the GRANT in frame 200,
// which it therefore never got); JSON and JUnit say so.
func TestCheckJSONAndJUnit(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.13-proto146/c-500k-loss3pct-server-side.pcap")
	out, _, code := run(t, append([]string{"check", "-o", "json", f}, scaledTimers...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	var js struct {
		Files []struct {
			Verdict      string `json:"verdict"`
			CapturePoint string `json:"capture_point"`
			Report       struct {
				Profile    string `json:"profile"`
				Violations []struct {
					Rule  string `json:"rule"`
					Frame int    `json:"frame"`
				} `json:"violations"`
				Inconclusive []struct {
					Rule  string `json:"rule"`
					Frame int    `json:"frame"`
					Cause string `json:"cause"`
				} `json:"inconclusive"`
				Downgrades []struct {
					Rule  string `json:"rule"`
					Cause string `json:"cause"`
					Count int    `json:"count"`
				} `json:"downgrades"`
			} `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Files) != 1 || js.Files[0].Report.Profile != "linux" || js.Files[0].Verdict != "pass" || js.Files[0].CapturePoint != "switch" {
		t.Fatalf("json: %+v", js)
	}
	rep := js.Files[0].Report
	if len(rep.Violations) != 0 {
		t.Errorf("violations %+v, want none", rep.Violations)
	}
	found := false
	for _, f := range rep.Inconclusive {
		if f.Rule == "HOMA-RESEND-002" && f.Frame == 1249 && f.Cause == "loss after the capture point" {
			found = true
		}
	}
	if !found {
		t.Errorf("HOMA-RESEND-002 at frame 1249 not downgraded for loss after the capture point: %+v", rep.Inconclusive)
	}
	n := 0
	for _, d := range rep.Downgrades {
		n += d.Count
	}
	if n == 0 {
		t.Errorf("no downgrades counted")
	}
	out, _, _ = run(t, append([]string{"check", "-o", "junit", f}, scaledTimers...)...)
	var ju conformance.JUnitSuites
	if err := xml.Unmarshal([]byte(out), &ju); err != nil {
		t.Fatalf("junit: %v\n%s", err, out)
	}
	if len(ju.TestSuites) != 1 || ju.TestSuites[0].Failures != 0 || ju.TestSuites[0].Tests < 60 {
		t.Errorf("junit suite %+v", ju.TestSuites)
	}
}

func TestCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	noHoma := filepath.Join(dir, "nohoma.pcap")
	// The first 24+16+42 bytes of a-small: the pcap header and frame 1, an ARP.
	b, _ := os.ReadFile(good)
	os.WriteFile(noHoma, b[:24+16+42], 0o644)
	cut := filepath.Join(dir, "cut.pcap")
	os.WriteFile(cut, b[:len(b)-50], 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no homa", []string{"check", noHoma}, "no Homa packets found"},
		{"cut", []string{"check", cut}, "capture damaged or cut short"},
		{"bad profile", []string{"check", "--profile", "bsd", good}, "unknown profile"},
		{"bad param", []string{"check", "--param", "nope=1", good}, "unknown parameter"},
		{"negative tick", []string{"check", "--param", "tick=-1ms", good}, `parameter tick: "-1ms": the tick must be positive, e.g. 10ms`},
		{"negative duration", []string{"check", "--param", "slack=-1ms", good}, `parameter slack: "-1ms" is negative: it must be 0 or positive, e.g. 1ms`},
		// What to give instead, with the profile's value as an example.
		{"bad param value", []string{"check", "--param", "resend_ticks=x", good}, `parameter resend_ticks: "x" is not a whole number ≥ 0: give one such as resend_ticks=`},
		{"negative param", []string{"check", "--param", "resend_ticks=-1", good}, `parameter resend_ticks: "-1" is not a whole number ≥ 0: give one such as resend_ticks=`},
		{"bad ipv6 shift", []string{"check", "--param", "ipv6_prio_shift=3", good}, "parameter ipv6_prio_shift: 3: want 4 (HomaModule before 548056f), 5 (since) or 0"},
		{"param twice", []string{"check", "--param", "resend_ticks=1", "--param", "resend_ticks=2", good}, "resend_ticks is given twice"},
		// tick_ns (the agents' name) is an alias of tick; a near miss gets the close name.
		{"near tick name", []string{"check", "--param", "tick_ms=5", good}, `unknown parameter "tick_ms" (did you mean tick or tick_ns?)`},
		// An alias and its name both given: the old code took the last.
		{"alias twice", []string{"check", "--param", "tick_ns=1", "--param", "tick=5ms", good}, "tick is given twice"},
		{"link alias twice", []string{"check", "--param", "link_mbps=1000", "--param", "link_bps=2000000000", good}, "link_mbps is given twice"},
		// A tick of hours times timeout_ticks overflowed into negative deadlines.
		{"huge tick", []string{"check", "--param", "tick=50000h", good}, "parameter tick: 50000h0m0s is above 1h0m0s"},
		{"typo in case", []string{"check", "--param", "Tick=5ms", good}, `unknown parameter "Tick" (did you mean tick?)`},
		{"bad rules", []string{"check", "--rules", "HOMA-NOPE-*", good}, "matches no rule"},
		// A SHOULD rule at level must selects nothing: it passed, "PASS 0 rules".
		{"empty selection", []string{"check", "--level", "must", "--rules", "HOMA-ACK-011", good}, `--rules: rule pattern "HOMA-ACK-011" matches only SHOULD rules (HOMA-ACK-011), none at level must, so nothing would be judged: use level should`},
		{"bad level", []string{"check", "--level", "may", good}, "want must or should"},
		{"no args", []string{"check"}, "needs at least one capture"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err, code := run(t, c.args...)
			if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("exit %d err %v, want 2 and %q; output %q", code, err, c.want, out)
			}
		})
	}
}

// TestCheckErrorOnce: a lone FILE check cannot read (random bytes, a
// capture without Homa) gets its error once, on standard error (the exit
// line), and nothing on standard output, as decode does; a trial saw it
// printed on both.
func TestCheckErrorOnce(t *testing.T) {
	dir := t.TempDir()
	rnd := filepath.Join(dir, "random.bin")
	os.WriteFile(rnd, []byte("\xea\x34\x83\xc0 random bytes, not a capture header at all"), 0o644)
	b, _ := os.ReadFile(filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	noHoma := filepath.Join(dir, "nohoma.pcap")
	os.WriteFile(noHoma, b[:24+16+42], 0o644)
	for _, c := range []struct{ file, want string }{{rnd, "not a pcap or pcapng file"}, {noHoma, "no Homa packets found"}} {
		out, err, code := run(t, "check", c.file)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: exit %d err %v, want 2 and %q", c.file, code, err, c.want)
		}
		if out != "" {
			t.Errorf("%s: standard output %q, want nothing (the error is on standard error)", c.file, out)
		}
	}
}

// TestSpecDocCurrent: docs/SPEC.md is what "homatest spec doc" prints.
func TestSpecDocCurrent(t *testing.T) {
	var b bytes.Buffer
	WriteSpecDoc(&b)
	path := "../../../../docs/SPEC.md"
	if *update {
		os.WriteFile(path, b.Bytes(), 0o644)
	}
	cur, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(cur, b.Bytes()) {
		t.Fatalf("docs/SPEC.md is stale (%v): run go run ./cmd/homatest spec doc > docs/SPEC.md", err)
	}
}

func TestSpecList(t *testing.T) {
	out, err, _ := run(t, "spec", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rules []struct {
		ID, Level, Statement, Source string
	}
	if err := json.Unmarshal([]byte(out), &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules) < 30 || rules[0].ID != "HOMA-ACK-001" || rules[0].Level != "MUST" || rules[0].Source == "" {
		t.Errorf("got %d rules, first %+v", len(rules), rules[0])
	}
}

func TestRPCs(t *testing.T) {
	out, err, _ := run(t, "rpcs", filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	want := "ID  CLIENT           SERVER         REQUEST  RESPONSE  START     DURATION   LATENCY    FRAME  RETX    GRANTS  PRIO REQ/RESP/GRANT  OUTCOME  PACKETS\n" +
		"2   10.0.0.11:32769  10.0.0.1:4000  20000    100       0.000000  1.137221s  1.105588s  1      20000B  1       0,4,6/6/0            acked    DATA=33 GRANT=1 RESEND=17 RPC_UNKNOWN=1 BUSY=16 CUTOFFS=3 NEED_ACK=1 ACK=1\n"
	if out != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
}

// TestCheckGoodAndBadFiles: a bad file among good ones is reported in its
// place, the good ones are still checked, and the exit code is 2, also
// when another file has violations (which the error line then names).
func TestCheckGoodAndBadFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "notcap.txt")
	os.WriteFile(bad, []byte("not a capture"), 0o644)
	good := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	out, err, code := run(t, append([]string{"check", good, bad}, scaledTimers...)...)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "notcap.txt") {
		t.Fatalf("exit %d err %v", code, err)
	}
	if !strings.Contains(out, "a-small-rpcs.pcap (profile linux): 44 Homa packets, 20 RPCs") ||
		!strings.Contains(out, "notcap.txt: ERROR: ") || !strings.Contains(out, "PASS: 0 MUST and 0 SHOULD") {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(err.Error(), "rule violations") {
		t.Errorf("no file has violations, yet the error says %q", err)
	}
	// A file with MUST violations beside a missing one: still exit 2
	// (bad input wins), and the one-line error names the violated file.
	faults, _ := filepath.Glob(filepath.Join(faultsDir, "*.pcapng"))
	violated := ""
	for _, f := range faults {
		if _, _, code := run(t, "check", f); code == ExitViolations {
			violated = f
			break
		}
	}
	if violated == "" {
		t.Fatal("no fault capture fails its check")
	}
	missing := filepath.Join(t.TempDir(), "missing.pcap")
	_, err, code = run(t, "check", violated, missing)
	if code != ExitUsage || err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "missing.pcap") || !strings.HasSuffix(err.Error(), "rule violations found in "+violated) {
		t.Errorf("violations beside a missing file: exit %d, %v", code, err)
	}
}

// TestCheckFilesInParallelInOrder: several captures, checked on all cores
// at once, give in their command-line order exactly the reports each gives
// alone.
func TestCheckFilesInParallelInOrder(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "faults", "*.pcapng"))
	if err != nil || len(files) < 6 {
		t.Fatalf("fault captures: %v, %d", err, len(files))
	}
	files = files[:6]
	out, _, _ := run(t, "check", "-o", "json", files[5], files[0], files[3], files[1], files[4], files[2])
	var all struct{ Files []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all.Files) != 6 {
		t.Fatalf("%v, %d reports:\n%s", err, len(all.Files), out)
	}
	for i, k := range []int{5, 0, 3, 1, 4, 2} {
		one, _, _ := run(t, "check", "-o", "json", files[k])
		var alone struct{ Files []json.RawMessage }
		if err := json.Unmarshal([]byte(one), &alone); err != nil || len(alone.Files) != 1 {
			t.Fatalf("%s alone: %v", files[k], err)
		}
		if !bytes.Equal(compactJSON(t, all.Files[i]), compactJSON(t, alone.Files[0])) {
			t.Errorf("report %d (%s) differs from checking it alone", i, files[k])
		}
	}
}

// compactJSON returns b without insignificant white space.
func compactJSON(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCheckWirePicksProfile: --wire 2024 with --profile auto checks with
// the linux-2024 profile; forcing it on a current capture misdecodes DATA
// acks and is reported, not silently accepted.
func TestCheckWirePicksProfile(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.1-proto253/a-small-rpcs.pcap")
	out, _, code := run(t, "check", "--wire", "2024", f)
	if code != 0 || !strings.Contains(out, "(profile linux-2024)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestCheckNotApplicableNote: a rule --rules selected that does not apply
// to the profile is named in a note; without --rules (the profile's own
// rules) there is no note, in the text or the JSON.
func TestCheckNotApplicableNote(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.1-proto253/a-small-rpcs.pcap")
	out, _, _ := run(t, "check", "--rules", "HOMA-RESEND-015,HOMA-WIRE-001", f)
	if !strings.Contains(out, "note: 1 rule selected by --rules does not apply to profile linux-2024: HOMA-RESEND-015") {
		t.Errorf("no note:\n%s", out)
	}
	out, _, _ = run(t, "check", "--profile", "upstream", "--rules", "HOMA-GRANT-00*", filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	if !strings.Contains(out, "rules selected by --rules do not apply to profile upstream: HOMA-GRANT-001, ") {
		t.Errorf("no note for several rules:\n%s", out)
	}
	for _, g := range []string{f, filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")} {
		out, _, _ = run(t, "check", g)
		if strings.Contains(out, "note:") || strings.Contains(out, "do not apply") || strings.Contains(out, "does not apply") {
			t.Errorf("check %s without --rules prints a note:\n%s", g, out)
		}
		out, _, _ = run(t, "check", "-o", "json", g)
		if strings.Contains(out, "not_applicable") {
			t.Errorf("check -o json %s without --rules lists not_applicable rules", g)
		}
	}
}

// TestCheckSeeFrame: a violation with one other frame says "see frame N",
// with several "see frames N,M".
func TestCheckSeeFrame(t *testing.T) {
	out, _, _ := run(t, "check", filepath.Join(faultsDir, "BR-06-grant-after-complete.pcapng"))
	if !regexp.MustCompile(`\(see frame [0-9]+\)`).MatchString(out) || regexp.MustCompile(`\(see frames [0-9]+\)`).MatchString(out) {
		t.Errorf("one other frame:\n%s", out)
	}
}

// TestNoArgsCommand: a command that takes no arguments says so on one
// line (exit 2), not "unknown command".
func TestNoArgsCommand(t *testing.T) {
	_, err, code := run(t, "faults", "extra")
	want := `faults takes no arguments, got "extra": homatest faults --help shows its flags`
	if code != ExitUsage || err == nil || err.Error() != want {
		t.Errorf("faults extra: exit %d, %v; want 2 and %q", code, err, want)
	}
}

func TestFaultsList(t *testing.T) {
	out, err, _ := run(t, "faults", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	// reproduces is a list of IDs, as caught_by is (it was one
	// comma-joined string).
	var fs []struct {
		Name       string   `json:"name"`
		Doc        string   `json:"doc"`
		Reproduces []string `json:"reproduces"`
		CaughtBy   []string `json:"caught_by"`
	}
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatal(err)
	}
	if len(fs) < 12 || fs[0].Name == "" || fs[0].Doc == "" {
		t.Errorf("got %d knobs: %+v", len(fs), fs)
	}
	for _, f := range fs {
		if len(f.Reproduces) == 0 || len(f.CaughtBy) == 0 {
			t.Errorf("%s: reproduces %q, caught by %q: want both", f.Name, f.Reproduces, f.CaughtBy)
		}
		for _, id := range f.Reproduces {
			if strings.ContainsAny(id, ", ") {
				t.Errorf("%s: reproduces %q: want one ID per entry", f.Name, f.Reproduces)
			}
		}
	}
}

// TestSpecNamedRules: spec list and spec doc take rule IDs (the HOMA-
// prefix optional) and patterns; a name matching no rule is a usage error.
func TestSpecNamedRules(t *testing.T) {
	out, err, _ := run(t, "spec", "list", "resend-014", "HOMA-ACK-01*")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		ids = append(ids, strings.Fields(l)[0])
	}
	if got := strings.Join(ids, " "); got != "HOMA-ACK-010 HOMA-ACK-011 HOMA-ACK-012 HOMA-ACK-013 HOMA-RESEND-014" {
		t.Errorf("spec list: %s", got)
	}
	out, err, _ = run(t, "spec", "doc", "RESEND-014")
	if err != nil || !strings.HasPrefix(out, "### HOMA-RESEND-014 (MUST)\n") || strings.Contains(out, "HOMA-RESEND-015") || !strings.Contains(out, "- Capture: ") {
		t.Errorf("spec doc RESEND-014: %v\n%s", err, out)
	}
	_, err, code := run(t, "spec", "doc", "NOPE-1")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), `"NOPE-1" matches no rule`) {
		t.Errorf("spec doc NOPE-1: exit %d, %v", code, err)
	}
	// Patterns that start with a wildcard are taken as they are.
	for _, pat := range []string{"*", "*-014", "*-01?"} {
		want := 0
		for _, r := range spec.Rules() {
			if ok, _ := path.Match(pat, r.ID); ok {
				want++
			}
		}
		out, err, _ = run(t, "spec", "list", pat)
		if n := strings.Count(out, "\n"); err != nil || n != want || want < 2 {
			t.Errorf("spec list %q: %v, %d rules, want %d\n%s", pat, err, n, want, out)
		}
	}
	// A family's name names its rules.
	out, err, _ = run(t, "spec", "list", "cutoff")
	if n := strings.Count(out, "\nHOMA-CUTOFF-"); err != nil || !strings.HasPrefix(out, "HOMA-CUTOFF-001 ") || n != 5 || strings.Contains(out, "HOMA-ACK") {
		t.Errorf("spec list cutoff: %v, %d more\n%s", err, n, out)
	}
}

// TestCheckTextInconclusiveReasons: the text report says why the capture
// could not decide, the first inconclusive finding of each rule (the
// server's link shows not every packet the client received).
func TestCheckTextInconclusiveReasons(t *testing.T) {
	path := filepath.Join(realDir, "linux-6.13-proto146/f4-hijack-tcp.pcap")
	out, err, _ := run(t, append([]string{"check", "--capture-point", "host:10.0.0.1", path}, scaledTimers...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\ninconclusive, the first of each rule (-o json lists them):\n  HOMA-GRANT-012 (4) frame 247 rpc 18 (client 10.0.0.11, server 10.0.0.1): the capture does not hold every packet 10.0.0.11 received\n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRealCapturesTick: the real captures' READMEs say what check infers
// from them. Their hosts ran request_ack_ticks=20, but a Homa tick in the
// emulated guest took about 1.2 ms: linux-6.1's loss capture repeats
// NEED_ACK every 1.214 ms (check infers tick 1.214ms); counted in the
// profile's 1-ms ticks the first NEED_ACK's delay reads as
// request_ack_ticks 24 or 25, and in the guest's ticks as 20. Before, the
// READMEs said a tick was "about 1 ms", and a user who saw check infer
// 25 could not tell which was true.
func TestRealCapturesTick(t *testing.T) {
	inferred := func(path string, extra ...string) map[string]string {
		t.Helper()
		out, _, _ := run(t, append([]string{"check", "-o", "json", "--infer-params", path}, extra...)...)
		var js struct {
			Files []struct {
				Inferred []struct{ Name, Value string } `json:"inferred_params"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
			t.Fatalf("%s: %v", path, err)
		}
		m := map[string]string{}
		for _, x := range js.Files[0].Inferred {
			m[x.Name] = x.Value
		}
		return m
	}
	if got := inferred(filepath.Join(realDir, "linux-6.1-proto253/c-500k-loss3pct-server-side.pcap")); got["tick"] != "1.214ms" || got["request_ack_ticks"] != "20" {
		t.Errorf("linux-6.1 c: inferred tick %q request_ack_ticks %q, want 1.214ms and 20", got["tick"], got["request_ack_ticks"])
	}
	for _, f := range []string{"a-small-rpcs.pcap", "b-500k-grants.pcap", "c-500k-loss3pct-server-side.pcap"} {
		path := filepath.Join(realDir, "linux-6.13-proto146", f)
		if got := inferred(path)["request_ack_ticks"]; got != "24" && got != "25" {
			t.Errorf("linux-6.13 %s: request_ack_ticks %q in 1-ms ticks, want 24 or 25", f, got)
		}
		if got := inferred(path, "--param", "tick=1.214ms")["request_ack_ticks"]; got != "20" {
			t.Errorf("linux-6.13 %s: request_ack_ticks %q in the guest's 1.214-ms ticks, want 20 (the sysctl)", f, got)
		}
	}
	for _, readme := range []string{"README.md", "linux-6.1-proto253/README.md", "linux-6.13-proto146/README.md"} {
		b, err := os.ReadFile(filepath.Join(realDir, readme))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "tick is about 1 ms") || !strings.Contains(s, "1.2 ms") {
			t.Errorf("%s: says a tick is about 1 ms, or not that the guest's took about 1.2 ms", readme)
		}
	}
}

// TestCheckFilesInAnyOrder: several FILEs are separate captures, each
// judged alone, so giving a capture's parts in reversed time order (b
// before a, as tcpdump -C names sort wrongly) changes the order of the
// reports and nothing else: every file's report, and the exit code, are
// the same byte for byte. (A trial read a FAIL as caused by the order;
// the help now says each file is judged alone, and to join a capture's
// parts with mergecap to judge them as one.)
func TestCheckFilesInAnyOrder(t *testing.T) {
	frames := readCapFrames(t, realDir+"/linux-6.13-proto146/c-500k-loss3pct-server-side.pcap")
	dir := t.TempDir()
	a := writeCapFrames(t, dir, "a.pcapng", frames[:1000], nil)
	b := writeCapFrames(t, dir, "b.pcapng", frames[1000:], nil)
	reports := func(files ...string) (map[string]string, int) {
		out, _, code := run(t, append(append([]string{"check"}, scaledTimers...), files...)...)
		m := map[string]string{}
		for _, part := range strings.Split("\n"+out, "\n== ")[1:] {
			name, _, _ := strings.Cut(part, " ")
			m[name] = strings.TrimSpace(part) // the last one keeps its newline
		}
		if len(m) != len(files) {
			t.Fatalf("check %v: %d reports, want %d:\n%s", files, len(m), len(files), out)
		}
		return m, code
	}
	fwd, fc := reports(a, b)
	rev, rc := reports(b, a)
	if fc != rc {
		t.Errorf("exit %d in time order, %d reversed", fc, rc)
	}
	for name, r := range fwd {
		if rev[name] != r {
			t.Errorf("%s's report differs with the files reversed:\n%s\n---\n%s", name, r, rev[name])
		}
	}
	if help := newCheckCmd().Long; !strings.Contains(help, "each is judged alone") || !strings.Contains(help, "mergecap") {
		t.Errorf("check --help does not say that each FILE is judged alone and how to join a capture's parts")
	}
}
