package spec_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// TestDispatchMatchesReference checks every capture the tests keep (the
// real HomaModule captures and the fault captures of homatest check's
// tests) under both profiles, once through the Checker's dispatch tables
// (rules by packet type, Within rules by open obligation) and once
// through the reference path that asks every rule about every event with
// its own conditions, and requires byte-identical JSON reports: the
// tables may skip work, never change a finding, count or order. Each
// capture is also checked with every header cut after 28 and 36 bytes,
// as a snap length leaves it (cutEvent): the partial packets' rules.
func TestDispatchMatchesReference(t *testing.T) {
	for _, path := range testCaptures(t) {
		for _, profile := range []string{"linux", "linux-2024"} {
			for _, cut := range []int{0, wire.CommonHeaderLen, 36} {
				fast, ref := checkJSON(t, path, profile, false, cut), checkJSON(t, path, profile, true, cut)
				if !bytes.Equal(fast, ref) {
					t.Errorf("%s (%s, cut %d): the dispatch tables' report differs from the reference path's:\n%s", filepath.Base(path), profile, cut, firstDiff(fast, ref))
				}
			}
		}
	}
}

// checkJSON checks the capture at path with every rule of profile and
// parameter inference, as homatest check does on one view, and returns
// the report as JSON. cut > 0 cuts every packet's header after cut bytes
// (cutEvent), as a snap length would.
func checkJSON(t *testing.T, path, profile string, reference bool, cut int) []byte {
	t.Helper()
	out, err := json.Marshal(checkReport(t, path, profile, reference, cut))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkReport is checkJSON's report.
func checkReport(t *testing.T, path, profile string, reference bool, cut int, params ...string) *spec.Report {
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
	p := prof.Params
	for i := 0; i+1 < len(params); i += 2 {
		if err := p.Set(params[i], params[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	c := spec.NewCheckerUnverified(profile, p, rules)
	if reference {
		c = spec.NewChecker(profile, p, rules)
		spec.UseReferenceDispatch(c)
	}
	c.SetInferrer(spec.NewInferrer(p))
	feed := c.Feed
	cutFrames := 0
	if cut > 0 {
		feed = func(e *spec.Event) {
			if e.Err != nil || e.ICMP != nil {
				c.Feed(e)
				return
			}
			ce, ok := cutEvent(e, cut)
			if ok && e.Segment > 0 {
				return // one event for the cut frame
			}
			if ok {
				cutFrames++
			}
			c.Feed(&ce)
		}
	}
	if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, feed); err != nil {
		t.Fatal(err)
	}
	// As homatest check does: the cut packets are unseen to the rules
	// that do not take partial packets.
	c.SetCaptureDrops(uint64(cutFrames))
	return c.Finish()
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
