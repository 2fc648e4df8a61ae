package cli

import (
	"strings"
	"testing"
)

// TestUsageErrorsUpFront: a bad --capture-point, --profile or --rules, or
// standard input given twice, is one usage error (exit 2) before any file
// is read, naming every valid form; check's --wire help lists auto.
func TestUsageErrorsUpFront(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // homatest run re-executes this binary (TestMain)
	capture := faultsDir + "/does-not-matter.pcapng"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "-o", "json", "--capture-point", "bogus", capture, capture},
			[]string{"--capture-point", `"bogus"`, "auto", "switch", "host:ADDR", "sent", "delivered", "ports"}},
		{[]string{"check", "--profile", "bogus", capture},
			[]string{"--profile", `"bogus"`, "auto", "linux", "linux-2024", "linux-2025", "upstream"}},
		{[]string{"check", "--rules", "[", capture}, []string{"--rules", "syntax error in pattern"}},
		{[]string{"run", "--env", "sim", "--rules", "["}, []string{"--rules", "syntax error in pattern"}},
		// Standard input twice: it can be read once (the second "-" was an
		// empty capture, or a wait for input).
		{[]string{"check", "-", capture, "-"}, []string{"check: standard input", "can be given once, got it 2 times"}},
		{[]string{"decode", "-", "-", "-"}, []string{"decode: standard input", "can be given once, got it 3 times"}},
	} {
		out, err, code := run(t, c.args...)
		if code != ExitUsage || err == nil {
			t.Errorf("%v: exit %d, %v, want exit %d", c.args, code, err, ExitUsage)
			continue
		}
		if out != "" {
			t.Errorf("%v printed %q besides the error", c.args, out)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%v: %q is not one line", c.args, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: %q does not say %q", c.args, msg, w)
			}
		}
	}
	cmd := New()
	check, _, err := cmd.Find([]string{"check"})
	if err != nil {
		t.Fatal(err)
	}
	if u := check.Flags().Lookup("wire").Usage; !strings.Contains(u, "auto, current, 2024, upstream or 2025") {
		t.Errorf("check --wire help %q does not list auto", u)
	}
	// Every pass writes its whole capture, not only failed specs' (the
	// help said "directory for captures of failed specs and logs").
	runCmd, _, err := cmd.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if u := runCmd.Flags().Lookup("artifacts").Usage; !strings.Contains(u, "per pass its whole capture (capture.pcapng") {
		t.Errorf("run --artifacts help %q does not name the pass's whole capture", u)
	}
}
