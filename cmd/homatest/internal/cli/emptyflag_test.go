package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptySelectionFlags: an empty --focus (Ginkgo ignores it: the whole
// suite ran) and an empty --rpc (every packet printed) are usage errors
// that say what to give. Both fail on the old code (exit 0).
func TestEmptySelectionFlags(t *testing.T) {
	good := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--env", "sim", "--list", "--focus", ""}, `--focus "": empty text selects no spec; give text of a spec's name`},
		{[]string{"run", "--env", "sim", "--focus", "GRANT-srpt", "--focus", " "}, `--focus " ": empty text selects no spec`},
		{[]string{"decode", "--rpc", "", good}, `--rpc "": empty; give an RPC id as homatest rpcs prints it`},
	} {
		out, err, code := run(t, c.args...)
		if code != 2 || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("homatest %q: exit %d, error %v, want exit 2 and %q\n%s", c.args, code, err, c.want, out)
		}
	}
}

// TestFocusNoteUnmatched: beside a --focus that selects specs, one that
// selects none is named on standard error and the run goes on with the
// others' specs (it ran them silently). Fails on the old code (no note).
func TestFocusNoteUnmatched(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass child runs Main
	dir := t.TempDir()
	out, err, code := run(t, "run", "--env", "sim", "--focus", "GRANT-long-request", "--focus", "GRANT-lnog", "--artifacts", filepath.Join(dir, "r"))
	if code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	want := `homatest: note: --focus "GRANT-lnog" selects no spec; the run goes on with the specs the other --focus texts select`
	if !strings.Contains(out, want) {
		t.Errorf("no note on the --focus that selects nothing; want %q in\n%s", want, out)
	}
	if strings.Contains(out, `--focus "GRANT-long-request" selects no spec`) {
		t.Errorf("the --focus that selects a spec is noted too:\n%s", out)
	}
	if !strings.Contains(out, "PASS (1 spec run)") {
		t.Errorf("want the focused spec run: PASS (1 spec run)\n%s", out)
	}
}

// TestCheckProfileSidecarDisagree: --profile upstream on a capture whose
// .params sidecar names the current wire format is judged with the
// file's values, and standard error says so (it said nothing); the
// profile the file agrees with, or --param wire=..., draws no warning.
// Fails on the old code (no WARNING line).
func TestCheckProfileSidecarDisagree(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "c.pcap")
	if err := os.WriteFile(capture, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capture+".params", []byte("# a run's\nwire=current\nnum_priorities=8\nunsched_bytes=40000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ := run(t, "check", "--profile", "upstream", capture)
	want := "homatest: WARNING: " + capture + ": --profile upstream, but " + capture + ".params beside the capture names another wire format and sets 3 values otherwise, and the file's were used: wire=current (profile: upstream), num_priorities=8 (profile: 1), unsched_bytes=40000 (profile: 1000000); to judge with the profile's values, move the file away or give them with --param"
	if !strings.Contains(out, want) {
		t.Errorf("want\n%s\nin\n%s", want, out)
	}
	js, _, _ := run(t, "check", "--profile", "upstream", "-o", "json", capture)
	if !strings.Contains(js, `"profile_overridden": "--profile upstream, but `) {
		t.Errorf("-o json lacks profile_overridden:\n%s", js)
	}
	for _, args := range [][]string{{"--profile", "linux"}, {"--profile", "upstream", "--param", "wire=upstream"}, {}} {
		out, _, _ := run(t, append(append([]string{"check"}, args...), capture)...)
		if strings.Contains(out, "WARNING: "+capture+": --profile") {
			t.Errorf("check %v: warned, want no warning:\n%s", args, out)
		}
	}
}
