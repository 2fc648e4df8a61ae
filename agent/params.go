package agent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec"
)

// refParam maps one scalar parameter name to a field of homa.Params.
type refParam struct {
	name string
	get  func(*homa.Params) int64
	set  func(*homa.Params, int64)
}

// intParam maps name to an int field of homa.Params.
func intParam(name string, f func(*homa.Params) *int) refParam {
	return refParam{name,
		func(p *homa.Params) int64 { return int64(*f(p)) },
		func(p *homa.Params, v int64) { *f(p) = int(v) }}
}

// refParams lists the reference implementation's scalar parameters by
// HomaModule sysctl name (plus tick_ns, mtu, link_bps); unsched_cutoffs is
// handled apart.
var refParams = []refParam{
	intParam("unsched_bytes", func(p *homa.Params) *int { return &p.UnschedBytes }),
	intParam("max_incoming", func(p *homa.Params) *int { return &p.MaxIncoming }),
	intParam("max_overcommit", func(p *homa.Params) *int { return &p.MaxOvercommit }),
	intParam("max_rpcs_per_peer", func(p *homa.Params) *int { return &p.MaxRPCsPerPeer }),
	intParam("window", func(p *homa.Params) *int { return &p.Window }),
	intParam("num_priorities", func(p *homa.Params) *int { return &p.NumPriorities }),
	intParam("max_sched_prio", func(p *homa.Params) *int { return &p.MaxSchedPrio }),
	intParam("fifo_grant_increment", func(p *homa.Params) *int { return &p.FIFOGrantIncrement }),
	intParam("grant_fifo_fraction", func(p *homa.Params) *int { return &p.GrantFIFOFraction }),
	intParam("link_mbps", func(p *homa.Params) *int { return &p.LinkMbps }),
	intParam("resend_ticks", func(p *homa.Params) *int { return &p.ResendTicks }),
	intParam("resend_interval", func(p *homa.Params) *int { return &p.ResendInterval }),
	intParam("timeout_ticks", func(p *homa.Params) *int { return &p.TimeoutTicks }),
	intParam("request_ack_ticks", func(p *homa.Params) *int { return &p.RequestAckTicks }),
	intParam("mtu", func(p *homa.Params) *int { return &p.MTU }),
	intParam("defer_min_bytes", func(p *homa.Params) *int { return &p.DeferMinBytes }),
	{"cutoff_version",
		func(p *homa.Params) int64 { return int64(p.CutoffVersion) },
		func(p *homa.Params, v int64) { p.CutoffVersion = uint16(v) }},
	{"tick_ns",
		func(p *homa.Params) int64 { return int64(p.Tick) },
		func(p *homa.Params, v int64) { p.Tick = time.Duration(v) }},
	{"link_bps",
		func(p *homa.Params) int64 { return p.LinkRate },
		func(p *homa.Params, v int64) { p.LinkRate = v }},
	// The ref zeroes every header byte it leaves unused (its encoder
	// writes whole headers): its hello says so, so that spec judges
	// nonzero ones (spec.Params.ZeroedHeaders). Not a setting.
	{"zeroed_headers",
		func(*homa.Params) int64 { return 1 },
		func(*homa.Params, int64) {}},
	// The ref sends one segment per packet, never a GSO batch: its hello
	// says max_gso_size 0 (one MTU, HomaModule main's default), so that
	// spec bounds its overshoot past a grant by one segment (HOMA-GRANT-005,
	// facts SND-01/SND-03), not the profile's 10000 (six segments: a ref
	// sending a packet at its horizon or two segments past it passed,
	// helper-162). Not a setting.
	{"max_gso_size",
		func(*homa.Params) int64 { return 0 },
		func(*homa.Params, int64) {}},
}

// cutoffsParam is the one list-valued parameter.
const cutoffsParam = "unsched_cutoffs"

// paramNames returns every parameter name the ref agent knows, sorted.
func paramNames() []string {
	names := []string{cutoffsParam}
	for _, rp := range refParams {
		names = append(names, rp.name)
	}
	sort.Strings(names)
	return names
}

// RefParams returns homa.DefaultParams (homa.ParamsForLink when link_bps
// is given) with the overrides in over applied and validated. Errors name
// the parameter: unknown, not an integer, out of range, or rejected by
// homa.Params.Validate.
func RefParams(over Params) (homa.Params, error) {
	p := homa.DefaultParams()
	if bps, ok := over["link_bps"]; ok {
		v, ok := toInt(bps)
		if !ok || v < 0 {
			return p, fmt.Errorf("params: link_bps %v: want a non-negative integer (bit/s)", bps)
		}
		if v > 0 {
			p = homa.ParamsForLink(v)
		}
	}
	for name, val := range over {
		if name == cutoffsParam {
			list, ok := over.Ints(name)
			if !ok || len(list) != 8 {
				return p, fmt.Errorf("params: unsched_cutoffs %v: want a list of 8 integers (bytes)", val)
			}
			for i, v := range list {
				if v < 0 || v > 1<<31-1 {
					return p, fmt.Errorf("params: unsched_cutoffs[%d] = %d out of 0..2147483647", i, v)
				}
				p.UnschedCutoffs[i] = uint32(v)
			}
			continue
		}
		rp := findParam(name)
		if rp == nil {
			return p, fmt.Errorf("params: unknown parameter %q%s (known: %s)", name, paramHint(name), strings.Join(paramNames(), ", "))
		}
		if f, big := val.(float64); big && f >= 1<<63 {
			// Past int64 (a JSON number is a float64 here): too large,
			// not "not an integer".
			return p, fmt.Errorf("params: %s is above 2^40", name)
		}
		if v, ok := toInt(val); name == "tick_ns" && (!ok || v <= 0) {
			return p, fmt.Errorf("params: %s", tickNsErr(val))
		}
		v, ok := toInt(val)
		if !ok || v < 0 {
			return p, fmt.Errorf("params: %s %v: want a non-negative integer, such as %s=%d (the reference implementation's default)", name, val, name, rp.get(&p))
		}
		if v > 1<<40 {
			return p, fmt.Errorf("params: %s %d is above 2^40", name, v)
		}
		if name == "zeroed_headers" && v != 1 {
			return p, fmt.Errorf("params: zeroed_headers %d: the ref always zeroes the header bytes it leaves unused (its hello says 1); it is not a setting", v)
		}
		if name == "max_gso_size" && v != 0 {
			return p, fmt.Errorf("params: max_gso_size %d: the ref sends one segment per packet (its hello says 0, one MTU); it is not a setting", v)
		}
		if name == "cutoff_version" && v > 0xffff {
			return p, fmt.Errorf("params: cutoff_version %d out of 0..65535", v)
		}
		rp.set(&p, v)
	}
	// As HomaModule's sysctl handler does after a write of either
	// (homa_prios_changed; max_sched_prio is read-only there): the
	// cutoffs and max_sched_prio follow num_priorities, unless
	// max_sched_prio itself is given.
	_, prios := over["num_priorities"]
	_, cuts := over[cutoffsParam]
	if _, sched := over["max_sched_prio"]; (prios || cuts) && !sched && p.NumPriorities >= 1 && p.NumPriorities <= 8 {
		p.PriosChanged()
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("params: %v", err)
	}
	return p, nil
}

// paramHint is a hint for an unknown parameter name: the parameter it
// likely meant (the checker's names for the timer, such as tick, lack
// the unit suffix the agent's carry), or why the checker's measured ones
// cannot be set. Empty when there is none.
func paramHint(name string) string {
	switch {
	case name == "slack" || name == "jitter":
		return " (the checker measures slack and jitter from the machine's noise: they are not the IUT's to set)"
	case findParam(name+"_ns") != nil:
		return fmt.Sprintf(" (did you mean %s_ns?)", name)
	}
	// homatest run's --param also takes the checker's tick and link_mbps.
	if near := spec.CloseNames(name, append(paramNames(), "tick", "link_mbps")); len(near) > 0 {
		return fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	}
	return ""
}

// UnknownParam reports whether name is no parameter of the built-in ref
// (RefParams), and a hint naming the close ones (empty when none); an
// agent of a manifest may still know it.
func UnknownParam(name string) (bool, string) {
	if name == cutoffsParam || findParam(name) != nil {
		return false, ""
	}
	return true, paramHint(name)
}

func findParam(name string) *refParam {
	for i := range refParams {
		if refParams[i].name == name {
			return &refParams[i]
		}
	}
	return nil
}

// ParamsOf returns every parameter of p by name (the ref agent's hello
// params; Params.Spec turns them into spec parameters).
func ParamsOf(p homa.Params) Params {
	out := Params{}
	for _, rp := range refParams {
		out[rp.name] = rp.get(&p)
	}
	cut := make([]int64, len(p.UnschedCutoffs))
	for i, v := range p.UnschedCutoffs {
		cut[i] = int64(v)
	}
	out[cutoffsParam] = cut
	return out
}
