package conformance

import (
	"github.com/homatest/homatest/homa"
	"os"
	"testing"
)

// TestConformance runs the whole suite against the reference implementation
// on the in-memory network (no privileges needed).
func TestConformance(t *testing.T) {
	var faults []homa.Fault
	if f := os.Getenv("HOMATEST_FAULT"); f != "" {
		faults = append(faults, homa.Fault(f))
	}
	res, err := Run(t, Options{NewEnv: func() (*Env, error) { return NewMemEnv(MemEnvConfig{Faults: faults}) },
		Log: os.Stdout, Artifacts: artifactsDir(t), Verbose: testing.Verbose(),
		Focus: os.Getenv("HOMATEST_FOCUS"), LabelFilter: os.Getenv("HOMATEST_LABEL_FILTER")})
	if err != nil {
		t.Fatal(err)
	}
	if res.SetupError != "" {
		t.Fatal(res.SetupError)
	}
	if len(res.Specs) == 0 {
		t.Fatal("no spec ran")
	}
	for _, s := range res.Specs {
		if len(s.Rules) == 0 || s.Area == "" || s.Level == "" {
			t.Errorf("spec %q lacks rule, area or level labels", s.Name)
		}
		if s.State == "failed" || s.State == "error" {
			t.Errorf("%s: %s: %s (capture %s)", s.Name, s.State, s.Failure, s.Capture)
		}
	}
}

// artifactsDir is $HOMATEST_ARTIFACTS when set (to keep failed specs'
// captures), else a temporary directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("HOMATEST_ARTIFACTS"); d != "" {
		return d
	}
	return t.TempDir()
}
