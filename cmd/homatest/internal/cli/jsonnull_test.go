package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/homa"
)

// nullPaths returns the paths of the null values in JSON document data
// ("failures", "files[0].capture.other").
func nullPaths(t *testing.T, what string, data []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var out []string
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case nil:
			if p == "" {
				p = "(the whole document)"
			}
			out = append(out, p)
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(p+"."+k, "."), e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		}
	}
	walk("", v)
	return out
}

// TestJSONNoNullLists: the JSON outputs and run-folder files say [] (or
// {}) for an empty list (or map), never null, so that scripts can iterate
// them without a guard: explore with no failure, spec coverage, check of
// a capture with only Homa frames, a scenario's and a conformance run's
// files in the simulator, the mutation matrix.
func TestJSONNoNullLists(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // homatest run re-executes this binary (TestMain)
	dir := t.TempDir()
	docs := map[string][]byte{}
	out, err, code := run(t, "explore", "--budget", "1h", "--max-cases", "20", "--artifacts", filepath.Join(dir, "explore"), "-q", "-o", "json")
	if code != ExitOK {
		t.Fatalf("explore: exit %d, %v\n%s", code, err, out)
	}
	docs["explore -o json"] = []byte(out)
	for _, args := range [][]string{{"spec", "coverage", "-o", "json"}, {"spec", "list", "-o", "json"}, {"spec", "params", "-o", "json"}, {"faults", "-o", "json"}} {
		out, err, code := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d, %v", args, code, err)
		}
		docs[strings.Join(args, " ")] = []byte(out)
	}
	sc := filepath.Join(dir, "scenario")
	if out, err, code := run(t, "scenario", "run", "--env", "sim", filepath.Join(exampleDir, "two-hosts-drops.yaml"), "--artifacts", sc, "-q"); code != ExitOK {
		t.Fatalf("scenario run: exit %d, %v\n%s", code, err, out)
	}
	out, err, code = run(t, "check", "-o", "json", filepath.Join(sc, "sent.pcapng"))
	if code != ExitOK {
		t.Fatalf("check: exit %d, %v\n%s", code, err, out)
	}
	docs["check -o json"] = []byte(out)
	rn := filepath.Join(dir, "run")
	out, err, code = run(t, "run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", rn, "-o", "json")
	if code != ExitOK {
		t.Fatalf("run: exit %d, %v\n%s", code, err, out)
	}
	docs["run -o json"] = []byte(out)
	// The mutation matrix over one spec: some knobs caught (with and
	// without findings), most not (no failing spec, no rule).
	// Its progress goes to stderr: one line at the first knob, then one
	// every 10 s, and the last state (it printed nothing for minutes).
	out, stderr, err, code := runSplit(t, "run", "--env", "sim", "--mutation-matrix", "--focus", "RPC_UNKNOWN-reply", "--artifacts", filepath.Join(dir, "matrix"), "-o", "json")
	if code != ExitOK && code != ExitViolations {
		t.Fatalf("run --mutation-matrix: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	n := len(homa.FaultNames())
	var matrix []conformance.MatrixEntry
	if err := json.Unmarshal([]byte(out), &matrix); err != nil {
		t.Fatalf("run --mutation-matrix -o json: %v\n%s", err, out)
	}
	caught := 0
	for _, e := range matrix {
		if e.Caught {
			caught++
		}
	}
	// The last line counts every knob (it said "knob 30 of 30, 29 of 29
	// caught so far": the last knob's pass not counted).
	if !strings.HasPrefix(stderr, fmt.Sprintf("homatest run --mutation-matrix: fault knob 1 of %d (%s)\n", n, homa.FaultNames()[0].Name)) ||
		!strings.Contains(stderr, fmt.Sprintf("homatest run --mutation-matrix: all %d fault knobs done, %d caught\n", n, caught)) || len(matrix) != n {
		t.Errorf("run --mutation-matrix: stderr %q; want a progress line at the first knob and a last one counting all %d knobs, %d caught", stderr, n, caught)
	}
	docs["run --mutation-matrix -o json"] = []byte(out)
	// The matrix removes its passes' captures, and their sidecars with
	// them (helper-165 found .params and .stalls.json of removed ones).
	for _, pat := range []string{"*.pcapng", "*.pcapng.params", "*.pcapng.stalls.json"} {
		if left, _ := filepath.Glob(filepath.Join(dir, "matrix", "fault-*", pat)); len(left) > 0 {
			t.Errorf("run --mutation-matrix left %v", left)
		}
	}
	// Nor do the passes' result.json name a removed capture as a spec's
	// own (helper-165: RUN-capture's failure text named one); a failure
	// text naming one says it was removed.
	results, _ := filepath.Glob(filepath.Join(dir, "matrix", "fault-*", "result.json"))
	for _, f := range results {
		var res conformance.Result
		if b, err := os.ReadFile(f); err != nil || json.Unmarshal(b, &res) != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, sp := range res.Specs {
			if sp.Capture != "" {
				if _, err := os.Stat(sp.Capture); err != nil {
					t.Errorf("%s: %s names capture %s: %v", f, sp.ShortName(), sp.Capture, err)
				}
			}
			for _, m := range regexp.MustCompile(`\S+\.pcapng( \(removed)?`).FindAllStringSubmatch(sp.Failure, -1) {
				if m[1] == "" {
					t.Errorf("%s: %s's failure names %s without saying it was removed", f, sp.ShortName(), m[0])
				}
			}
		}
	}
	if len(results) == 0 {
		t.Errorf("run --mutation-matrix wrote no fault-*/result.json")
	}
	if caught == 0 || caught == len(matrix) {
		t.Errorf("run --mutation-matrix: %d of %d knobs caught; the test wants both kinds of row", caught, len(matrix))
	}
	files, _ := filepath.Glob(filepath.Join(sc, "*.json"))
	more, _ := filepath.Glob(filepath.Join(rn, "*", "*.json"))
	files = append(append(files, more...), filepath.Join(dir, "explore", "result.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, f)
		docs[rel] = b
	}
	for _, must := range []string{"scenario/check.json", "scenario/stalls.json", "explore/result.json"} {
		if docs[must] == nil {
			t.Errorf("no %s", must)
		}
	}
	for what, b := range docs {
		if p := nullPaths(t, what, b); len(p) > 0 {
			t.Errorf("%s: null at %s", what, strings.Join(p, ", "))
		}
	}
	var ex struct {
		Failures []any `json:"failures"`
	}
	if json.Unmarshal(docs["explore -o json"], &ex) != nil || ex.Failures == nil || len(ex.Failures) != 0 {
		t.Errorf("explore -o json: failures %#v, want []", ex.Failures)
	}
}
