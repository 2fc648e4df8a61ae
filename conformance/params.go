package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/homatest/homatest/spec"
)

// SpecParams turns the parameters an IUT reports in its hello (HomaModule
// sysctl names: unsched_bytes, resend_ticks, tick_ns, unsched_cutoffs as a
// list of 8 byte counts, …) into spec parameters, starting from the
// profile's defaults. Names the spec does not use (link_mbps, mtu,
// grant_fifo_fraction, …) are ignored; "mtu" is returned separately (0 if
// absent). Errors: a value of the wrong shape for a spec parameter.
func SpecParams(profile string, hello map[string]any) (spec.Params, int, error) {
	prof, err := spec.LookupProfile(profile)
	if err != nil {
		return spec.Params{}, 0, err
	}
	p := prof.Params
	known := map[string]bool{}
	for _, n := range spec.ParamNames() {
		known[n] = true
	}
	mtu := 0
	for name, v := range hello {
		var s string
		switch x := v.(type) {
		case []any:
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = fmt.Sprint(e)
			}
			s = strings.Join(parts, ",")
		case float64:
			s = fmt.Sprintf("%.0f", x)
		default:
			s = fmt.Sprint(x)
		}
		switch {
		case name == "tick_ns":
			var ns int64
			if _, err := fmt.Sscan(s, &ns); err != nil || ns <= 0 {
				return p, 0, fmt.Errorf("hello parameter tick_ns: %q is not a positive number of ns", s)
			}
			p.Tick = time.Duration(ns)
		case name == "mtu":
			if _, err := fmt.Sscan(s, &mtu); err != nil {
				return p, 0, fmt.Errorf("hello parameter mtu: %q is not a byte count", s)
			}
		case name == "tick" || name == "wire" || !known[name]:
			// tick comes as tick_ns; wire is the profile's.
		default:
			if err := p.Set(name, s); err != nil {
				return p, 0, fmt.Errorf("hello parameter: %w", err)
			}
		}
	}
	return p, mtu, nil
}
