package agent

import (
	"strings"
	"testing"
)

// TestRefParamsPriosChanged: writing num_priorities or unsched_cutoffs
// makes the cutoffs and max_sched_prio follow, as HomaModule's
// homa_prios_changed does; an explicit max_sched_prio is kept (and
// validated); without either the defaults stand.
func TestRefParamsPriosChanged(t *testing.T) {
	const intMax = 1<<31 - 1
	for _, c := range []struct {
		name  string
		over  Params
		cut   [8]uint32
		sched int
		err   string
	}{
		{"defaults", Params{"unsched_bytes": 10000}, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 3, ""},
		{"prios-8", Params{"num_priorities": 8}, [8]uint32{intMax, 0, 0, 0, 1000000, 15000, 2800, 200}, 3, ""},
		{"prios-6", Params{"num_priorities": 6}, [8]uint32{intMax, 0, 0, 0, 1000000, 15000, 0, 0}, 3, ""},
		{"prios-4", Params{"num_priorities": 4}, [8]uint32{intMax, 0, 0, 0, 0, 0, 0, 0}, 0, ""},
		{"cutoffs", Params{"unsched_cutoffs": []any{0, 0, 1000000, 5000, 1000, 500, 200, 100}}, [8]uint32{intMax, 0, 1000000, 5000, 1000, 500, 200, 100}, 1, ""},
		{"explicit-sched", Params{"num_priorities": 4, "max_sched_prio": 2}, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 2, ""},
		{"explicit-sched-bad", Params{"num_priorities": 2, "max_sched_prio": 3}, [8]uint32{}, 0, "max_sched_prio 3 must be below num_priorities 2"},
		// A JSON number past int64 is too large, not "not an integer"
		// nor "not positive".
		{"tick-huge", Params{"tick_ns": float64(1 << 63)}, [8]uint32{}, 0, "tick_ns is above 2^40"},
		{"ticks-huge", Params{"resend_ticks": 1e19}, [8]uint32{}, 0, "resend_ticks is above 2^40"},
		{"zeroed-headers-0", Params{"zeroed_headers": 0}, [8]uint32{}, 0, "zeroed_headers 0: the ref always zeroes"},
		{"zeroed-headers-1", Params{"zeroed_headers": 1, "unsched_bytes": 10000}, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := RefParams(c.over)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.UnschedCutoffs != c.cut || p.MaxSchedPrio != c.sched {
				t.Errorf("cutoffs %v max_sched_prio %d, want %v %d", p.UnschedCutoffs, p.MaxSchedPrio, c.cut, c.sched)
			}
		})
	}
}
