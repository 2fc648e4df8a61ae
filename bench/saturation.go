package bench

import (
	"fmt"
	"strings"
	"time"
)

// KeepUpFraction is the share of the offered load a transport must carry
// (Summary.DeliveredBps against OfferedBps) to count as keeping up: below
// it RPCs queued faster than they ended, and the run measured the backlog.
const KeepUpFraction = 0.9

// CPUSaturatedBusy is the share of its cores' time above which a
// simulated host's modelled processing (HostCPU.Busy) is saturated.
const CPUSaturatedBusy = 0.9

// HostCPU is the modelled packet processing of a loaded run's busiest
// simulated host (package sim's Cost: every packet a host sends or takes
// in occupies one of its cores for a fixed time).
type HostCPU struct {
	// Host names the host ("h8"); Server is set when it is the server.
	Host   string `json:"host"`
	Server bool   `json:"server,omitempty"`
	// Busy is the work the run's packets gave its cores, as a share of
	// what they do from the run's first RPC to its last end: the share
	// of the time they were busy, above 1 when work was still queued at
	// the end (the cores were offered more than they carry).
	Busy float64 `json:"busy"`
	// PacketsPerSec is the packets it processed per second of the run;
	// CapacityPerSec is what its cores carry (cores / per-packet time).
	PacketsPerSec  float64 `json:"packets_per_sec"`
	CapacityPerSec float64 `json:"capacity_per_sec"`
	// PerPacket and Cores are the modelled cost (sim.Cost).
	PerPacket time.Duration `json:"per_packet_ns"`
	Cores     int           `json:"cores"`
	// PacketsPerRPC is the packets it processed per RPC issued.
	PacketsPerRPC float64 `json:"packets_per_rpc"`
	// MaxWait is the longest a packet waited for a free core.
	MaxWait time.Duration `json:"max_wait_ns"`
}

// Saturated reports whether the host's cores were busy more than
// CPUSaturatedBusy of the run.
func (c *HostCPU) Saturated() bool { return c != nil && c.Busy >= CPUSaturatedBusy }

// String describes the host's processing in one clause.
func (c *HostCPU) String() string {
	role := ""
	if c.Server {
		role = " (the server)"
	}
	return fmt.Sprintf("the modelled CPU of host %s%s was given %.0f%% of what its cores do in the run: %s packets/s (%.1f per RPC) against the %s its %d cores × %v per packet carry; a packet waited up to %v for a core",
		c.Host, role, 100*c.Busy, si(c.PacketsPerSec), c.PacketsPerRPC, si(c.CapacityPerSec), c.Cores, c.PerPacket, c.MaxWait.Round(time.Microsecond))
}

// si formats a rate with 3 significant digits and k or M.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// KeptUp reports whether the transport carried its run: no RPC failed and
// it delivered at least KeepUpFraction of the offered load (when both are
// known). Otherwise why says what fell short, in words.
func (s *Summary) KeptUp() (ok bool, why string) {
	var short []string
	if s.Errors > 0 {
		short = append(short, fmt.Sprintf("%d of %d RPCs issued failed (first: %s)", s.Errors, s.Issued, s.FirstError))
	}
	if s.OfferedBps > 0 && s.DeliveredBps > 0 && s.DeliveredBps < KeepUpFraction*s.OfferedBps {
		short = append(short, fmt.Sprintf("it carried %s of the %s offered (%.0f%%: its RPCs ended %.1fx slower than they were issued)",
			FormatBps(s.DeliveredBps), FormatBps(s.OfferedBps), 100*s.DeliveredBps/s.OfferedBps, s.OfferedBps/s.DeliveredBps))
	}
	return len(short) == 0, strings.Join(short, "; ")
}

// warnSaturated marks the transports that did not keep up (Saturated,
// r.Saturated) and returns a warning line for each: what fell short, the
// likely cause, and that the comparison is not valid; then one for each
// transport that kept up on a saturated simulated host (HostCPU), whose
// slowdowns include the wait for its cores.
func (r *Report) warnSaturated() []string {
	r.Saturated = nil
	var lines, busy []string
	for i := range r.Transports {
		s := &r.Transports[i]
		ok, why := s.KeptUp()
		s.Saturated = !ok
		if ok {
			if s.HostCPU.Saturated() {
				busy = append(busy, fmt.Sprintf("%s kept up, but %s: its slowdowns include waiting for those cores", s.Transport, s.HostCPU))
			}
			continue
		}
		r.Saturated = append(r.Saturated, s.Transport)
		cause := "the cause is not known to the bench (on emulated hosts: the CPUs of this machine, see the switch's read lag and the retransmissions)"
		switch {
		case s.HostCPU.Saturated():
			cause = "likely cause: " + s.HostCPU.String() + "; the workload needs more packets per second than the model's cores carry: lower --load, or --rate below 10gbit (hosts keep 4 cores there)"
		case s.HostCPU != nil:
			cause = "no simulated host's CPU was saturated (the busiest: " + s.HostCPU.String() + ")"
		}
		title, backlog := "HAD FAILED RPCs", ""
		if s.OfferedBps > 0 && s.DeliveredBps > 0 && s.DeliveredBps < KeepUpFraction*s.OfferedBps {
			title, backlog = "DID NOT KEEP UP", " and measure a backlog, not the transport"
			if r.RateBps > 0 && s.OfferedBps > r.RateBps && s.Errors == 0 {
				// The sizes drawn offered more than the link carries: with
				// few arrivals a heavy-tailed workload's realised load
				// strays far from the nominal one, and no transport
				// carries more than its link.
				s.ShortRun = true
				title = "COULD NOT KEEP UP: RUN TOO SHORT"
				cause = fmt.Sprintf("cause: the run was too short for workload %s: the %d RPCs it drew offered %s, %.0f%% of the %s link, not the nominal load %.2f (%.0f%%); no transport carries more than its link, so this measures the sizes drawn, not %s. Rerun with a longer --duration, until the offered load is near %s",
					r.Workload, s.Issued, FormatBps(s.OfferedBps), 100*s.OfferedBps/r.RateBps, FormatBps(r.RateBps), r.Load, 100*r.Load, s.Transport, FormatBps(r.Load*r.RateBps))
			}
		}
		failed := ""
		if s.Errors > 0 {
			failed = fmt.Sprintf(" (the %d failed ones are in no quantile)", s.Errors)
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s; %s. Its slowdowns are of its %d completed RPCs only%s%s: the p99 ratios (marked !) do not compare the transports",
			s.Transport, title, why, cause, s.Count, failed, backlog))
	}
	return append(lines, busy...)
}
