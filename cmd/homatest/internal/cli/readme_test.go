package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestREADMESynopses: every synopsis of a command in the README (a code
// block's lines that begin "homatest CMD", and the indented lines that
// continue them) names every flag that command's --help lists, by its
// long name or its shorthand, and no flag the command lacks. Before,
// run's synopsis lacked --strict and --param, lab's --timeout, --cpus,
// --memory, --console and --homatest, bench's --response, replay's -q
// and netem set's delay, jitter, duplication, corruption and
// reordering flags.
func TestREADMESynopses(t *testing.T) {
	b, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	root := New()
	// The synopses by command path ("bench collective"), joined.
	syn := map[string]string{}
	start := regexp.MustCompile(`^homatest ([a-z]+)(?: ([a-z]+))?\b`)
	var cur string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			in, cur = !in, ""
			continue
		}
		if !in {
			continue
		}
		if m := start.FindStringSubmatch(l); m != nil {
			cur = m[1]
			if c, _, err := root.Find([]string{m[1], m[2]}); err == nil && c.Name() == m[2] {
				cur += " " + m[2]
			}
			syn[cur] += " " + l
			continue
		}
		if cur != "" && strings.HasPrefix(l, " ") {
			syn[cur] += " " + l
			continue
		}
		cur = ""
	}
	for _, path := range []string{"run", "check", "decode", "plot", "explore", "agent", "bench", "bench collective",
		"scenario run", "scenario validate", "replay", "netem set", "netem show", "netem reset", "lab", "wireshark dissector"} {
		text, ok := syn[path]
		if !ok {
			t.Errorf("README has no synopsis of homatest %s", path)
			continue
		}
		cmd, _, err := root.Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		checkSynopsis(t, path, cmd, text)
	}
}

// checkSynopsis reports the flags of cmd that text omits and the flags
// text names that cmd does not have.
func checkSynopsis(t *testing.T, path string, cmd *cobra.Command, text string) {
	t.Helper()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Hidden {
			return
		}
		long := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`)
		short := f.Shorthand != "" && regexp.MustCompile(`(^|[\s\[])-`+f.Shorthand+`\b`).MatchString(text)
		if !long.MatchString(text) && !short {
			t.Errorf("README's synopsis of homatest %s lacks --%s", path, f.Name)
		}
	})
	for _, m := range regexp.MustCompile(`--([a-z0-9-]+)`).FindAllStringSubmatch(text, -1) {
		if cmd.Flags().Lookup(m[1]) == nil {
			t.Errorf("README's synopsis of homatest %s names --%s, which it does not take", path, m[1])
		}
	}
}

// TestREADMEDecodeExitCodes: the README's exit codes of homatest decode
// name every code decode --help lists, and say that an ACK the snap
// length cut only in its unused acks slots is no decode error. Before,
// the README counted every cut or malformed packet as a decode error and
// lacked 130 (interrupted) and the exit 2 of a capture without Homa.
func TestREADMEDecodeExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## homatest decode\n")
	end := strings.Index(readme, "\n## homatest check\n")
	if start < 0 || end < start {
		t.Fatal("README has no homatest decode section before homatest check's")
	}
	para := func(text string) string {
		i := strings.Index(text, "Exit codes:")
		if i < 0 {
			return ""
		}
		p, _, _ := strings.Cut(text[i:], "\n\n")
		return strings.Join(strings.Fields(p), " ")
	}
	doc := para(readme[start:end])
	c, _, err := New().Find([]string{"decode"})
	if err != nil {
		t.Fatal(err)
	}
	help := para(c.Long)
	if doc == "" || help == "" {
		t.Fatalf("exit codes paragraph missing: README %q, --help %q", doc, help)
	}
	codes := regexp.MustCompile(`(?:^Exit codes: |; )(\d+) `)
	for _, m := range codes.FindAllStringSubmatch(help, -1) {
		if !regexp.MustCompile(`(?:^Exit codes: |; )` + m[1] + ` `).MatchString(doc) {
			t.Errorf("README's decode exit codes lack %s, which --help lists: %s", m[1], doc)
		}
	}
	for _, w := range []string{"unused acks slots", "not a decode error", "holds no Homa packet"} {
		if !strings.Contains(doc, w) {
			t.Errorf("README's decode exit codes do not say %q: %s", w, doc)
		}
	}
}
