package spec_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// testCaptures returns the captures the tests keep: the real HomaModule
// captures and the fault captures of homatest check's tests.
func testCaptures(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, g := range []string{"../pcap/testdata/real/*/*.pcap", "../pcap/testdata/real/*/*.pcapng", "../cmd/homatest/internal/cli/testdata/faults/*.pcapng"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 50 {
		t.Fatalf("found only %d captures", len(paths))
	}
	return paths
}

// cutEvent returns e as a capture reader gives the frame of e cut by a
// snap length to its first n transport bytes, and whether that cuts its
// header: a decode error (ErrTruncated, SnapCut) carrying the readable
// part of the header when the common header is whole. e must be a
// well-formed packet's first (or only) segment.
func cutEvent(e *spec.Event, n int) (spec.Event, bool) {
	b := e.Packet.Bytes()
	if n >= e.Packet.HeaderLen() || n >= len(b) {
		return *e, false
	}
	c := *e
	c.Segment, c.Offset, c.Length, c.Payload = 0, 0, 0, nil
	c.Packet, c.Err = wire.Decode(b[:n], wire.DecodeOptions{Version: e.Packet.Version(), WireLen: e.Packet.WireLen(), Partial: true})
	c.SnapCut = true
	return c, true
}

// TestPartialRulesMatchWhole holds every rule that takes the readable part
// of a cut header (Each.Partial, AtMost.Partial) to its word on the whole
// packet: over every packet of the kept captures, under both profiles,
// cut at every length from the common header to the whole header, a rule
// the Checker would give the cut packet (TakesPartial; every per-packet
// rule for an ACK that lost only unused acks slots, wire.Packet.Complete)
// must return the same result, reason and all, as for the whole packet. A rule that read a
// field past the cut without declaring it (PartialNeeds) would read zero
// there and differ, at least on the fault captures' bad packets.
func TestPartialRulesMatchWhole(t *testing.T) {
	compared, violations := 0, 0
	for _, profile := range []string{"linux", "linux-2024"} {
		prof, err := spec.LookupProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		p := prof.Params
		rules, err := spec.Select(spec.Rules(), "", spec.Should, profile)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range testCaptures(t) {
			evs, err := pcap.ReadEvents(path, pcap.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := &spec.Ctx{T: spec.NewTrace(&p), P: &p, Net: spec.NewSwitchNetwork(&p)}
			for i := range evs {
				e := &evs[i]
				if e.Err != nil || e.ICMP != nil || e.Segment > 0 {
					continue
				}
				for n := wire.CommonHeaderLen; ; n++ {
					c, cut := cutEvent(e, n)
					if !cut {
						break
					}
					if !c.Partial() || !errors.Is(c.Err, wire.ErrTruncated) {
						t.Fatalf("%s frame %d cut at %d: not a partial packet (%v)", filepath.Base(path), e.Frame, n, c.Err)
					}
					c.Err = nil // as the Checker gives it to the rule
					for _, r := range rules {
						// A cut that took nothing a receiver reads
						// (Complete) goes to every rule.
						if !spec.TakesPartial(r, c.Packet) && !c.Packet.Complete() {
							continue
						}
						whole, part := ruleSays(ctx, r, e), ruleSays(ctx, r, &c)
						if whole != part {
							t.Errorf("%s (%s) frame %d cut at %d bytes: %s says %q of the readable part, %q of the whole packet",
								filepath.Base(path), profile, e.Frame, n, r.ID, part, whole)
						}
						compared++
						if len(whole) > 9 && whole[:9] == "violated:" {
							violations++
						}
					}
				}
			}
		}
	}
	if compared < 10000 || violations < 20 {
		t.Errorf("compared %d results, %d of them violations: too few to hold the rules to anything", compared, violations)
	}
}

// ruleSays returns rule r's word on e as a string: an Each rule's status
// and reason, an AtMost rule's measure.
func ruleSays(ctx *spec.Ctx, r *spec.Rule, e *spec.Event) string {
	switch p := r.Property.(type) {
	case spec.Each:
		res := p.Check(ctx, e)
		return fmt.Sprintf("%s: %s", res.Status, res.Why())
	case spec.AtMost:
		v, lim, ok := p.Measure(ctx, e)
		if ok && v > lim {
			return fmt.Sprintf("violated: %s %d above %d", p.What(e), v, lim)
		}
		return fmt.Sprintf("measure %d limit %d ok %v", v, lim, ok)
	}
	return "not per packet"
}

// TestPartialCheck: checked with every header cut by a snap length, the
// fault captures whose fault lies in the common or IP header (or an
// ACK's num_acks, once captured) are still caught by their rule at their
// frame, and the real captures (the READMEs' timer settings) and the
// faults' other rules show no violation: a cut packet is judged only by
// what it holds.
func TestPartialCheck(t *testing.T) {
	const faults = "../cmd/homatest/internal/cli/testdata/faults/"
	for _, tc := range []struct {
		file   string
		cut    int
		rules  []string
		params []string
	}{
		{"WIRE-009-control-sequence-garbage.pcapng", wire.CommonHeaderLen, []string{"HOMA-WIRE-009"}, []string{"zeroed_headers", "1"}},
		{"WIRE-015-ipv4-ttl-zero.pcapng", wire.CommonHeaderLen, []string{"HOMA-WIRE-015"}, nil},
		{"BR-37-hijacked-ack-doff0.pcapng", wire.CommonHeaderLen, []string{"HOMA-WIRE-005"}, nil},
		{"ID-003-client-id-zero.pcapng", wire.CommonHeaderLen, []string{"HOMA-ID-003"}, nil},
		{"BR-01-ipv4-tos-shift3.pcapng", wire.CommonHeaderLen, []string{"HOMA-PRIO-001", "HOMA-WIRE-012"}, nil},
		{"BR-40-ack-num-acks-overflow.pcapng", wire.CommonHeaderLen, nil, nil}, // num_acks cut
		{"BR-40-ack-num-acks-overflow.pcapng", wire.CommonHeaderLen + 2, []string{"HOMA-WIRE-008"}, nil},
	} {
		whole := checkReport(t, faults+tc.file, "linux", false, 0, tc.params...)
		rep := checkReport(t, faults+tc.file, "linux", false, tc.cut, tc.params...)
		got := map[string]int{}
		for _, v := range rep.Violations {
			got[v.Rule]++
		}
		if len(got) != len(tc.rules) {
			t.Errorf("%s cut at %d: violations %v, want only %v", tc.file, tc.cut, got, tc.rules)
		}
		for _, id := range tc.rules {
			if got[id] == 0 {
				t.Errorf("%s cut at %d: %s not violated (violations %v)", tc.file, tc.cut, id, got)
				continue
			}
			if w, c := firstAt(whole, id), firstAt(rep, id); w != c {
				t.Errorf("%s cut at %d: %s first at frame %d, at %d in the whole capture", tc.file, tc.cut, id, c, w)
			}
		}
	}
	real, err := filepath.Glob("../pcap/testdata/real/*/*.pcap")
	if err != nil || len(real) == 0 {
		t.Fatal(err, "no real captures")
	}
	// The sysctls the real captures ran with (their READMEs).
	timers := []string{"resend_ticks", "50", "resend_interval", "50", "timeout_ticks", "1000", "request_ack_ticks", "20"}
	for _, path := range real {
		profile := "linux"
		if strings.Contains(path, "proto253") {
			profile = "linux-2024"
		}
		for _, cut := range []int{wire.CommonHeaderLen, 30, 36, 48} {
			if rep := checkReport(t, path, profile, false, cut, timers...); len(rep.Violations) > 0 {
				v := rep.Violations[0]
				t.Errorf("%s cut at %d: %d violations, first %s at frame %d: %s", filepath.Base(path), cut, len(rep.Violations), v.Rule, v.Frame, v.Why)
			}
		}
	}
}

// firstAt returns the frame of rule id's first violation in rep (0: none).
func firstAt(rep *spec.Report, id string) int {
	for _, v := range rep.Violations {
		if v.Rule == id {
			return v.Frame
		}
	}
	return 0
}
