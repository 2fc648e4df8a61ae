package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// lossyArgs check the lossy 6.13 capture without the timer sysctls it ran
// with (x10): HomaModule's defaults make its RESENDs late, a finding of
// HOMA-RESEND-014 at each round, one per frame (with the sysctls it
// passes, see README).
var lossyArgs = []string{"--rules", "HOMA-RESEND-014", filepath.Join(realDir, "linux-6.13-proto146", "c-500k-loss3pct-server-side.pcap")}

// checkedFindings runs check -o json on args and returns "FRAME RULE LEVEL: why"
// for every violation it reports.
func checkedFindings(t *testing.T, args ...string) []string {
	t.Helper()
	out, err, code := run(t, append([]string{"check", "-o", "json"}, args...)...)
	if code == ExitUsage {
		t.Fatalf("check %v: %v", args, err)
	}
	var rep struct {
		Files []struct {
			Report struct {
				Violations []struct {
					Rule, Level, Why string
					Frame            int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); err != nil {
		t.Fatalf("check %v: %v", args, err)
	}
	var fs []string
	for _, v := range rep.Files[0].Report.Violations {
		fs = append(fs, fmt.Sprintf("%d %s %s: %s", v.Frame, v.Rule, v.Level, v.Why))
	}
	sort.Strings(fs)
	return fs
}

// homaComments returns "FRAME COMMENT" for every packet comment of the
// pcapng at path that names a rule.
func homaComments(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ng, err := pcapgo.NewNgReader(f, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n := 1; ; n++ {
		_, _, opts, err := ng.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range opts.Comments {
			if strings.HasPrefix(c, "HOMA-") {
				out = append(out, fmt.Sprintf("%d %s", n, c))
			}
		}
	}
	sort.Strings(out)
	return out
}

// sameFindings reports whether the comments are the findings (each
// comment is its finding's line, extended by the RPC, frames and
// tolerance).
func sameFindings(findings, comments []string) bool {
	if len(findings) != len(comments) {
		return false
	}
	for i := range findings {
		if !strings.HasPrefix(comments[i], findings[i]) {
			return false
		}
	}
	return true
}

// TestCheckAnnotate: check --annotate writes the capture with exactly the
// violations check reports as comments on their frames, for the real lossy
// capture and every capture of the fault catalogue.
func TestCheckAnnotate(t *testing.T) {
	faults, _ := filepath.Glob(filepath.Join(faultsDir, "*.pcapng"))
	cases := [][]string{lossyArgs}
	for _, f := range faults {
		cases = append(cases, []string{f})
	}
	dir := t.TempDir()
	total := 0
	for i, args := range cases {
		out := filepath.Join(dir, fmt.Sprintf("annotated-%d.pcapng", i))
		findings := checkedFindings(t, args...)
		msg, err, code := run(t, append([]string{"check", "--annotate", out}, args...)...)
		if code == ExitUsage {
			t.Fatalf("check --annotate %v: %v", args, err)
		}
		if !strings.Contains(msg, "annotated capture: "+out) {
			t.Errorf("check --annotate %v does not say where it wrote: %q", args, msg)
		}
		if got := homaComments(t, out); !sameFindings(findings, got) {
			t.Errorf("%s: comments\n%s\nwant the findings\n%s", args[len(args)-1], strings.Join(got, "\n"), strings.Join(findings, "\n"))
		}
		total += len(findings)
	}
	if total < 30 {
		t.Errorf("only %d findings over %d captures: the catalogue should flag every fault", total, len(cases))
	}
	// One FILE only; an unwritable destination is exit 2.
	if _, err, code := run(t, "check", "--annotate", filepath.Join(dir, "x.pcapng"), faults[0], faults[1]); code != ExitUsage || !strings.Contains(err.Error(), "one FILE") {
		t.Errorf("two files: exit %d, %v", code, err)
	}
	if _, err, code := run(t, "check", "--annotate", "/proc/nope/x.pcapng", faults[0]); code != ExitUsage || !strings.Contains(err.Error(), "--annotate") {
		t.Errorf("unwritable: exit %d, %v", code, err)
	}
	// The capture itself as the destination: refused, the capture intact.
	self := filepath.Join(dir, "self.pcapng")
	orig, err := os.ReadFile(faults[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err, code := run(t, "check", "--annotate", self, self); code != ExitUsage || !strings.Contains(err.Error(), "is the capture being checked") {
		t.Errorf("annotating onto the input: exit %d, %v", code, err)
	}
	if got, _ := os.ReadFile(self); !bytes.Equal(got, orig) {
		t.Error("annotating onto the input changed the capture")
	}
}

// TestCheckAnnotateTshark: tshark -Y frame.comment on the annotated real
// capture lists exactly the findings check printed.
func TestCheckAnnotateTshark(t *testing.T) {
	bin := tshark(t)
	out := filepath.Join(t.TempDir(), "annotated.pcapng")
	findings := checkedFindings(t, lossyArgs...)
	if _, err, code := run(t, append([]string{"check", "--annotate", out}, lossyArgs...)...); code == ExitUsage {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-r", out, "-Y", "frame.comment", "-T", "fields", "-e", "frame.number", "-e", "frame.comment")
	cmd.Env = tsharkEnv(t)
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		got = append(got, strings.Replace(l, "\t", " ", 1))
	}
	sort.Strings(got)
	if len(findings) == 0 || !sameFindings(findings, got) {
		t.Fatalf("tshark -Y frame.comment:\n%s\nwant the findings check printed:\n%s", strings.Join(got, "\n"), strings.Join(findings, "\n"))
	}
	// The dissector shows each as Expert Info.
	lua := dissectorFile(t)
	cmd = exec.Command(bin, "-X", "lua_script:"+lua, "-r", out, "-Y", "homa && _ws.expert.message contains \"HOMA-\"", "-T", "fields", "-e", "frame.number")
	cmd.Env = tsharkEnv(t)
	b, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range findings {
		want[strings.Fields(f)[0]] = true
	}
	frames := strings.Fields(string(b))
	match := len(frames) == len(findings)
	for _, f := range frames {
		match = match && want[f]
	}
	if !match {
		t.Errorf("frames with a HOMA- Expert Info: %v, want the %d findings' frames", frames, len(findings))
	}
}
