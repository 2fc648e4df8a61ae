package explore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFoundCasesClean plays the cases of testdata/found/*.case.json, each
// the shrunk case (result.json's "shrunk") of a failure a session found
// against the clean reference implementation whose cause was the
// legal-peer model, the ref or a rule and is fixed: played again in the
// simulator with the model deciding as then, none fails. README.md in
// that folder says what each was.
func TestFoundCasesClean(t *testing.T) {
	files, err := filepath.Glob("testdata/found/*.case.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/found/*.case.json")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".case.json"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c Case
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(c.RPCs) == 0 {
				t.Fatalf("%s: no RPCs", file)
			}
			f, err := PlayCase(context.Background(), Config{Env: SimEnv(nil, nil), Budget: time.Hour}, &c)
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				t.Errorf("%s fails again: %s\n%s", file, f.Failure.String(), f.Script)
			}
		})
	}
}
