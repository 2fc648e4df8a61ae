package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Spec returns the spec parameters (package spec) an IUT runs with, from
// the parameters its hello reports: profile's defaults, overridden by every
// name the spec knows (spec.ParamNames) but the profile's inert ones
// (spec.Profile.Inert: a sysctl that version never acts on), and by
// tick_ns as spec.Params.Tick.
// Names the spec does not use (mtu, ...) are ignored. A link_bps sets
// spec.Params.LinkMbps (rounded up to whole Mbit/s), above or below
// link_mbps: the reference implementation spaces FIFO grants by its
// pacer's link_bps whenever it is set (homa.Params.LinkRate, which
// overrides LinkMbps), so HOMA-GRANT-023 judges the interval it keeps. Kept
// at link_mbps when link_bps is slower, a 1 Gbit/s host's FIFO GRANTs 25
// times too often passed.
// Errors: an unknown profile, or a value of the wrong shape, naming the
// parameter.
func (p Params) Spec(profile string) (spec.Params, error) {
	prof, err := spec.LookupProfile(profile)
	if err != nil {
		return spec.Params{}, err
	}
	sp := prof.Params
	known := map[string]bool{}
	for _, n := range spec.ParamNames() {
		_, inert := prof.Inert[n]
		known[n] = n != "tick" && n != "wire" && !inert // tick comes as tick_ns; wire is the profile's
	}
	for _, name := range slices.Sorted(maps.Keys(p)) { // the first error named does not vary
		if name == "tick_ns" {
			ns, ok := p.Int(name)
			if !ok || ns <= 0 {
				return sp, fmt.Errorf("hello parameter %s", tickNsErr(p[name]))
			}
			sp.Tick = time.Duration(ns)
			continue
		}
		if !known[name] {
			continue
		}
		text := fmt.Sprint(p[name])
		if list, ok := p.Ints(name); ok {
			text = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(list)), ","), "[]")
		} else if n, ok := p.Int(name); ok {
			text = fmt.Sprint(n)
		}
		if err := sp.Assign(name, text); err != nil {
			return sp, fmt.Errorf("hello parameter: %w", err)
		}
	}
	if err := sp.Validate(); err != nil { // the set as a whole: num_priorities and max_sched_prio agree
		return sp, fmt.Errorf("hello parameters: %w", err)
	}
	if bps, ok := p.Int("link_bps"); ok && bps > 0 {
		sp.LinkMbps = int((bps + 999_999) / 1e6)
	}
	return sp, nil
}

// MTU returns the mtu parameter a hello reports, in bytes (0 when it
// reports none). Errors: a value that is not a non-negative integer.
func (p Params) MTU() (int, error) {
	v, present := p["mtu"]
	if !present {
		return 0, nil
	}
	n, ok := p.Int("mtu")
	if !ok || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("hello parameter mtu: %v is not a byte count", v)
	}
	return int(n), nil
}

// tickNsErr is the one message for a tick_ns that is not a positive
// integer (negative, zero or not a number), wherever it is read.
func tickNsErr(v any) string { return fmt.Sprintf("tick_ns %v: want a positive number of ns", v) }

// Profile returns the spec profile of the wire format h names
// (Hello.Wire: "2024" for HomaModule linux_6.1.38, which the linux agent
// finds by itself), else "linux". The harness judges the IUT's captures
// under it: a capture in one format read as another is garbage. Errors:
// a wire name this tree does not know.
func (h Hello) Profile() (string, error) {
	if h.Wire == "" {
		return "linux", nil
	}
	v, err := wire.ParseVersion(h.Wire)
	if err != nil || v == wire.VersionAuto {
		return "", fmt.Errorf("the IUT's hello says wire %q: want one of current, 2024, 2025, upstream", h.Wire)
	}
	return spec.ProfileForWire(v), nil
}
