package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/spec"
)

// validate checks the flags before anything runs.
func (o *exploreOpts) validate() error {
	if o.env == "auto" {
		o.env = "sim"
		if o.impl != "ref" {
			o.env = "ns"
		}
	}
	if _, err := agent.ResolveManifest(o.impl); err != nil {
		return err
	}
	switch {
	case o.env != "sim" && o.env != "ns":
		return fmt.Errorf("--env %q: want sim, ns or auto", o.env)
	case o.env == "sim" && o.impl != "ref":
		return fmt.Errorf("--impl %s needs --env ns (the simulator runs only the built-in reference implementation)", o.impl)
	case o.env == "ns" && os.Geteuid() != 0:
		return errors.New("--env ns builds network namespaces and needs root: run with sudo, or use --env sim")
	case o.budget <= 0 && o.replay == "":
		return fmt.Errorf("--budget %v: want a positive duration such as 60s", o.budget)
	case o.maxCases < 0:
		return fmt.Errorf("--max-cases %d: want 0 or more", o.maxCases)
	case o.shrinkRuns < 0:
		return fmt.Errorf("--shrink-runs %d: want 0 or more", o.shrinkRuns)
	}
	if o.fault != "" && !knownFault(o.fault) {
		return fmt.Errorf("--fault %q: no such fault knob (homatest faults lists them)", o.fault)
	}
	if err := checkOutputFile("--junit", o.junit); err != nil {
		return err
	}
	lvl, err := parseLevel(o.level)
	if err != nil {
		return err
	}
	o.lvl = lvl
	par, err := parseParams(o.params)
	if err != nil {
		return err
	}
	if err := exploreLink(par); err != nil {
		return err
	}
	if err := checkRefParams(o.impl, par, "--param"); err != nil {
		return err
	}
	o.par = par
	if o.rules != "" {
		sel, err := spec.Select(spec.Rules(), o.rules, 0, "")
		if err == nil {
			_, err = spec.SelectSome(spec.Rules(), o.rules, lvl, "") // --level must of SHOULD rules only judges nothing
		}
		if err != nil {
			return fmt.Errorf("--rules: %v", err)
		}
		o.sel = sel
	}
	return nil
}

// exploreLinkMin and exploreLinkMax bound explore's link_bps: a hello
// carries whole Mbit/s (link_mbps, rounded up), and 0 (the ref's "send as
// fast as the link takes") would write link_mbps=0 into the run's .params,
// where the checker paces FIFO grants by the link's rate.
const (
	exploreLinkMin = 1_000_000
	exploreLinkMax = 1 << 40
)

// exploreLink refuses a link rate explore cannot run (link_bps, or
// link_mbps that parseParams turned into it): 0 was accepted.
func exploreLink(par agent.Params) error {
	v, ok := par.Int("link_bps")
	if _, given := par["link_bps"]; !given || ok && v >= exploreLinkMin && v <= exploreLinkMax {
		return nil
	}
	return fmt.Errorf("--param link_bps=%v: explore's link runs from %d to %d bit/s (1 Mbit/s to 2^40), e.g. link_bps=1000000000", par["link_bps"], exploreLinkMin, exploreLinkMax)
}
