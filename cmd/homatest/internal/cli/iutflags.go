package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/homa"
)

// implUsage describes --impl, the implementation under test, alike in
// every command that takes it (run, explore, bench).
const implUsage = "implementation under test: ref (built-in reference implementation), linux (kernel Homa module), or a manifest YAML file"

// knownFault reports whether name is one of the reference
// implementation's fault knobs (homa.LookupFault).
func knownFault(name string) bool {
	_, ok := homa.LookupFault(name)
	return ok
}

// nsEnvConfig is the namespace environment of IUT manifest m with faults
// and extra parameter overrides (--param) over the manifest's own
// (agent.Manifest.HelloParams applies them in hello).
func nsEnvConfig(m *agent.Manifest, faults []string, extra agent.Params, artifacts string) conformance.NSEnvConfig {
	return conformance.NSEnvConfig{Manifest: m.WithParams(extra), Faults: faults, Artifacts: artifacts}
}

// parseParams parses --param NAME=VALUE overrides for an agent's hello:
// an integer, or comma-separated integers (unsched_cutoffs). Errors name
// the flag and the fix.
func parseParams(list []string) (agent.Params, error) {
	p := agent.Params{}
	for _, kv := range list {
		name, val, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: want NAME=VALUE, e.g. unsched_bytes=12000", kv)
		}
		// homatest spec params' (and check's) names are aliases of the
		// agents' hello names: tick (a duration), link_mbps.
		switch name {
		case "tick":
			d, err := time.ParseDuration(strings.TrimSpace(val))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--param %q: tick is a positive duration such as 1ms (or give tick_ns in nanoseconds)", kv)
			}
			name, val = "tick_ns", strconv.FormatInt(d.Nanoseconds(), 10)
		case "link_mbps":
			v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if err != nil || v < 0 || v > 1<<40/1_000_000 {
				return nil, fmt.Errorf("--param %q: link_mbps is a whole number of Mbit/s such as 1000 (or give link_bps in bit/s)", kv)
			}
			name, val = "link_bps", strconv.FormatInt(v*1_000_000, 10)
		}
		if _, dup := p[name]; dup {
			return nil, fmt.Errorf("--param %q: %s is given twice; give each parameter once", kv, name)
		}
		var ints []int64
		for _, f := range strings.Split(val, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if errors.Is(err, strconv.ErrRange) {
				return nil, fmt.Errorf("--param %q: %q is out of range (parameters are at most 2^40)", kv, f)
			}
			if err != nil {
				// A misspelt name is the likelier mistake than its value
				// (tik=1ms): say so first.
				if unknown, hint := agent.UnknownParam(name); unknown {
					return nil, fmt.Errorf("--param %q: %s is no parameter of the built-in ref%s, and %q is not an integer (homatest spec params lists each parameter and its default)", kv, name, hint, f)
				}
				return nil, fmt.Errorf("--param %q: %q is not an integer: give a whole number (homatest spec params lists each parameter and its default)", kv, f)
			}
			ints = append(ints, v)
		}
		if len(ints) == 1 {
			p[name] = ints[0]
		} else {
			p[name] = ints
		}
	}
	return p, nil
}

// checkRefParams refuses, before any environment is built, parameter
// overrides the built-in ref would refuse in its hello (agent.RefParams):
// what names them (--param, or a replay's param lines) prefixes the
// reason. Any other IUT judges its own parameters in hello.
func checkRefParams(impl string, par agent.Params, what string) error {
	if impl != "ref" {
		return nil
	}
	if _, err := agent.RefParams(par); err != nil {
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "params: "))
	}
	return nil
}
