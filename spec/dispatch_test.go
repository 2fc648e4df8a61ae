package spec_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestDispatchMatchesReference checks every capture the tests keep (the
// real HomaModule captures and the fault captures of homatest check's
// tests) under both profiles, once through the Checker's dispatch tables
// (rules by packet type, Within rules by open obligation) and once
// through the reference path that asks every rule about every event with
// its own conditions, and requires byte-identical JSON reports: the
// tables may skip work, never change a finding, count or order.
func TestDispatchMatchesReference(t *testing.T) {
	var paths []string
	for _, g := range []string{"../pcap/testdata/real/*/*.pcap*", "../cmd/homatest/internal/cli/testdata/faults/*.pcapng"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 50 {
		t.Fatalf("found only %d captures", len(paths))
	}
	for _, path := range paths {
		for _, profile := range []string{"linux", "linux-2024"} {
			fast, ref := checkJSON(t, path, profile, false), checkJSON(t, path, profile, true)
			if !bytes.Equal(fast, ref) {
				t.Errorf("%s (%s): the dispatch tables' report differs from the reference path's:\n%s", filepath.Base(path), profile, firstDiff(fast, ref))
			}
		}
	}
}

// checkJSON checks the capture at path with every rule of profile and
// parameter inference, as homatest check does on one view, and returns
// the report as JSON.
func checkJSON(t *testing.T, path, profile string, reference bool) []byte {
	t.Helper()
	prof, err := spec.LookupProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := spec.Select(spec.Rules(), "", spec.Should, profile)
	if err != nil {
		t.Fatal(err)
	}
	// The dispatch tables as they run outside this package's tests
	// (which verify pre-filters by visiting more rules); the reference
	// path verifies the pre-filters.
	c := spec.NewCheckerUnverified(profile, prof.Params, rules)
	if reference {
		c = spec.NewChecker(profile, prof.Params, rules)
		spec.UseReferenceDispatch(c)
	}
	c.SetInferrer(spec.NewInferrer(prof.Params))
	if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, c.Feed); err != nil {
		t.Fatal(err)
	}
	rep := c.Finish()
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// firstDiff shows where two reports first differ.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "dispatch:  ..." + string(a[lo:min(len(a), i+200)]) + "\nreference: ..." + string(b[lo:min(len(b), i+200)])
}
