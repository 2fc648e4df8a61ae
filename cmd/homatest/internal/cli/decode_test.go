package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

const realDir = "../../../../pcap/testdata/real"

// run executes the root command with args and returns stdout, stderr-less
// error and exit code.
func run(t *testing.T, args ...string) (string, error, int) {
	t.Helper()
	cmd := New()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err, ExitCode(err)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", name, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: got %d lines, want %d", name, len(gl), len(wl))
	}
}

// TestDecodeGolden compares homatest decode on real HomaModule captures with
// checked-in output (text and JSON).
func TestDecodeGolden(t *testing.T) {
	for _, c := range []struct{ golden, file, format string }{
		{"decode-6.13-a-small-rpcs.txt", "linux-6.13-proto146/a-small-rpcs.pcap", "text"},
		{"decode-6.1-e2-server-forgets-request.txt", "linux-6.1-proto253/e2-server-forgets-request.pcap", "text"},
		{"decode-6.13-f4-hijack-tcp.jsonl", "linux-6.13-proto146/f4-hijack-tcp.pcap", "json"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			out, err, code := run(t, "decode", "-o", c.format, filepath.Join(realDir, c.file))
			if err != nil || code != 0 {
				t.Fatalf("exit %d: %v", code, err)
			}
			golden(t, c.golden, strings.ReplaceAll(out, realDir+"/", ""))
		})
	}
}

func TestDecodeJSONFields(t *testing.T) {
	out, err, _ := run(t, "decode", "-o", "json", filepath.Join(realDir, "linux-6.1-proto253/c-500k-loss3pct-server-side.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2144+1 {
		t.Fatalf("%d lines, want 2144 packets + 1 summary", len(lines))
	}
	var resend, busy int
	for _, l := range lines[:len(lines)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		h, _ := m["header"].(map[string]any)
		switch m["type"] {
		case "RESEND":
			resend++
			for _, k := range []string{"offset", "length", "priority", "common"} {
				if _, ok := h[k]; !ok {
					t.Fatalf("RESEND header lacks %q: %s", k, l)
				}
			}
		case "BUSY":
			busy++
		case "DATA":
			if _, ok := h["seg"].(map[string]any)["offset"]; !ok {
				t.Fatalf("DATA header lacks seg.offset: %s", l)
			}
		}
	}
	if resend != 73 || busy != 11 {
		t.Errorf("RESEND %d BUSY %d, want 73 11", resend, busy)
	}
	var sum struct {
		Summary struct {
			Frames int            `json:"frames"`
			Types  map[string]int `json:"types"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Summary.Frames != 2146 || sum.Summary.Types["GRANT"] != 246 || sum.Summary.Types["NEED_ACK"] != 30 {
		t.Errorf("summary %+v", sum.Summary)
	}
}

func TestDecodeErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pcap")
	os.WriteFile(bad, []byte("this is not a capture at all"), 0o644)
	good := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"decode", filepath.Join(dir, "nope.pcap")}, "no such file"},
		{"not a capture", []string{"decode", bad}, "not a pcap or pcapng file"},
		{"bad wire", []string{"decode", "--wire", "2026", good}, "want one of auto, current, 2024, upstream, 2025"},
		{"bad output", []string{"decode", "-o", "xml", good}, "want text or json"},
		{"no args", []string{"decode"}, "needs at least one capture file"},
		{"bad shift", []string{"decode", "--ipv6-prio-shift", "300", good}, "--ipv6-prio-shift 300: want 4 (HomaModule before 548056f) or 5 (since), or 0 to detect"},
		{"bad flag", []string{"decode", "--bogus", good}, "see homatest decode --help"},
		{"bad good mix", []string{"decode", good, bad}, "not a pcap or pcapng file"},
	}
	// A capture without a Homa packet (an ARP frame) is bad input, as in
	// rpcs and check: decode printed its summary and exited 0.
	noHoma := filepath.Join(dir, "nohoma.pcap")
	b, _ := os.ReadFile(good)
	os.WriteFile(noHoma, b[:24+16+42], 0o644)
	for _, cmd := range []string{"decode", "rpcs"} {
		out, err, code := run(t, cmd, noHoma)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no Homa packets found") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s of a capture without Homa: exit %d, error %v, want 2 and 'no Homa packets found'; output %q", cmd, code, err, out)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err, code := run(t, c.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if c.name != "bad good mix" && out != "" {
				t.Errorf("printed output: %q", out[:min(len(out), 80)])
			}
		})
	}
}

// TestDecodeEveryFile: unreadable files among several do not stop decode:
// each gets one error line where its summary would be, every readable file
// is decoded, and the exit is 2 with an error line naming each bad file.
func TestDecodeEveryFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.pcap")
	bad := filepath.Join(dir, "bad.pcap")
	os.WriteFile(bad, []byte("this is not a capture at all"), 0o644)
	a := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	b := filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap")
	for _, args := range [][]string{{"--summary-only"}, {}, {"-o", "json"}} {
		t.Run(strings.Join(append([]string{"decode"}, args...), " "), func(t *testing.T) {
			out, err, code := run(t, append(append([]string{"decode"}, args...), missing, a, bad, b)...)
			if code != ExitUsage || err == nil {
				t.Fatalf("exit %d (%v), want %d", code, err, ExitUsage)
			}
			for _, want := range []string{"cannot open capture " + missing + ": no such file", bad + ": not a pcap or pcapng file"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			var summaries, errs []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if len(args) > 0 && args[0] == "-o" {
					var j struct {
						Summary *struct {
							File, Error string
							Homa        int
						}
					}
					if json.Unmarshal([]byte(l), &j) != nil || j.Summary == nil {
						continue
					}
					if j.Summary.Error != "" {
						errs = append(errs, filepath.Base(j.Summary.File))
					} else if j.Summary.Homa > 0 {
						summaries = append(summaries, filepath.Base(j.Summary.File))
					}
					continue
				}
				name, rest, _ := strings.Cut(l, ": ")
				switch {
				case strings.HasPrefix(rest, "ERROR: "):
					errs = append(errs, filepath.Base(name))
				case strings.Contains(rest, " Homa: "):
					summaries = append(summaries, filepath.Base(name))
				}
			}
			if got := strings.Join(summaries, ","); got != "a-small-rpcs.pcap,b-500k-grants.pcap" {
				t.Errorf("summaries of %s, want a-small-rpcs.pcap,b-500k-grants.pcap:\n%s", got, out)
			}
			if got := strings.Join(errs, ","); got != "nope.pcap,bad.pcap" {
				t.Errorf("error lines for %s, want nope.pcap,bad.pcap:\n%s", got, out)
			}
		})
	}
}

func TestDecodeSummaryOnly(t *testing.T) {
	out, err, _ := run(t, "decode", "--summary-only", filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	want := "b-500k-grants.pcap: 1922 frames, 1919 Homa: DATA 1770 (retransmit 0), GRANT 145, RESEND 0, RPC_UNKNOWN 0, BUSY 0, CUTOFFS 2, FREEZE 0, NEED_ACK 1, ACK 1; 0 decode errors; 3 other (arp 2, icmpv6 1); 1755 Homa frames with only the payload cut by the snap length (headers whole)\n"
	if !strings.HasSuffix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("got %q, want suffix %q", out, want)
	}
}

// failWriter fails every write, like stdout redirected to /dev/full.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestDecodeCutCapture: a capture cut mid-frame is decoded up to the damage,
// its summary says where it stopped, later files are still decoded, and the
// exit code is 2.
func TestDecodeCutCapture(t *testing.T) {
	full, err := os.ReadFile(filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cut, full[:100000], 0o644)
	good := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	out, err, code := run(t, "decode", "--summary-only", cut, good)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "cut.pcap: capture damaged or cut short after frame 391 (read frame 392: unexpected EOF)") {
		t.Fatalf("exit %d err %v", code, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d summary lines, want 2:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], "391 frames") || !strings.Contains(lines[0], "STOPPED after frame 391") {
		t.Errorf("cut summary: %s", lines[0])
	}
	if !strings.Contains(lines[1], "a-small-rpcs.pcap: 46 frames, 44 Homa") {
		t.Errorf("second file: %s", lines[1])
	}
}

func TestDecodeVersionMismatchWarning(t *testing.T) {
	out, err, _ := run(t, "decode", "--summary-only", "--wire", "current", filepath.Join(realDir, "linux-6.1-proto253/a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "WARNING: 44 packets decoded with a --wire version whose IP protocol differs") {
		t.Errorf("no mismatch warning: %s", out)
	}
}

// TestDecodeSummaryAgrees: decode's summary is the same with and without
// --summary-only (text and JSON), on a capture of switch ports in both
// directions (each packet once, as sent) and on ordinary captures.
func TestDecodeSummaryAgrees(t *testing.T) {
	dir := t.TempDir()
	b := faultCaseByID(t, "BR-45").build(false)
	ports := filepath.Join(dir, "capture.pcapng")
	writePorts(t, b, ports, []netip.Addr{hostC, hostS})
	single := filepath.Join(dir, "single.pcapng")
	if _, err := b.write(single, "clean"); err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for _, f := range []string{ports, single, filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap")} {
		for _, format := range []string{"text", "json"} {
			all, err, _ := run(t, "decode", "-o", format, f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(all), "\n")
			only, err, _ := run(t, "decode", "--summary-only", "-o", format, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) < 2 || lines[len(lines)-1]+"\n" != only {
				t.Errorf("%s -o %s: decode's summary\n%s\nwant decode --summary-only's\n%s", filepath.Base(f), format, lines[len(lines)-1], only)
			}
			summary[filepath.Base(f)+" "+format] = only
		}
	}
	// The ports capture holds each packet twice and counts it once: as
	// the single capture of the same packets does.
	frames := regexp.MustCompile(`^\S+: \d+ frames, `)
	p := frames.ReplaceAllString(summary["capture.pcapng text"], "")
	s := frames.ReplaceAllString(summary["single.pcapng text"], "")
	if want := strings.TrimSuffix(s, "\n"); !strings.HasPrefix(p, strings.SplitN(want, ";", 2)[0]+";") {
		t.Errorf("ports capture counts %q, want the single capture's %q", p, want)
	}
}

// switchAny is tcpdump -i any in a scenario's switch namespace while a
// second tcpdump held the bridge promiscuous (helper-259's cut, 18
// frames): each of its 6 Homa packets at the ingress port, on the bridge
// and at the egress port; two clients (198.18.0.1 and .2) used RPC id
// 2980 with server 198.18.0.3.
const switchAny = "testdata/switch-any-bridge.pcap"

// TestSwitchAnyThreeSightings: check judges each packet of switchAny
// once and passes; before, the egress port's sighting was taken for a
// second send (FAIL: 2 HOMA-RESEND-010 MUST violations).
func TestSwitchAnyThreeSightings(t *testing.T) {
	out, err, code := run(t, "check", switchAny)
	if err != nil || code != 0 || !strings.Contains(out, "6 Homa packets, 2 RPCs") || !strings.Contains(out, "copies: 12 Homa frames") || !strings.Contains(out, "\nPASS: 0 MUST") {
		t.Errorf("check %s: exit %d, %v:\n%s", switchAny, code, err, out)
	}
}

// TestDecodeRPCSeveralClients: decode --rpc ID, when two clients used
// the id, prints both RPCs' packets and says so in its summary, naming
// the clients and ID@CLIENT as plot's refusal does; with @CLIENT, one.
func TestDecodeRPCSeveralClients(t *testing.T) {
	out, err, code := run(t, "decode", "--rpc", "2980", switchAny)
	if err != nil || code != 0 || !strings.Contains(out, "; 6 packets of RPC 2980 (2 RPCs have id 2980 (clients 198.18.0.1, 198.18.0.2): name one with --rpc 2980@CLIENT)") {
		t.Errorf("decode --rpc 2980: exit %d, %v:\n%s", code, err, out)
	}
	out, err, _ = run(t, "decode", "--rpc", "2980", "-o", "json", switchAny)
	if err != nil || !strings.Contains(out, `"rpc_clients":["198.18.0.1","198.18.0.2"]`) {
		t.Errorf("decode --rpc 2980 -o json: %v:\n%s", err, out)
	}
	out, err, _ = run(t, "decode", "--rpc", "2980@198.18.0.2", switchAny)
	if err != nil || !strings.Contains(out, "; 3 packets of RPC 2980@198.18.0.2\n") {
		t.Errorf("decode --rpc 2980@198.18.0.2: %v:\n%s", err, out)
	}
	if _, err, code := run(t, "plot", switchAny, "--rpc", "2980", "-o", filepath.Join(t.TempDir(), "p.png")); code != ExitUsage || !strings.Contains(err.Error(), "2 RPCs have id 2980 (clients 198.18.0.1, 198.18.0.2): name one with --rpc 2980@CLIENT") {
		t.Errorf("plot --rpc 2980: exit %d, %v", code, err)
	}
}
