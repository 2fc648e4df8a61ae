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
		{"explicit-sched-bad", Params{"num_priorities": 2, "max_sched_prio": 3}, [8]uint32{}, 0, "max_sched_prio 3 must be below num_priorities 2: set max_sched_prio to 1 or less, or num_priorities to 4 or more"},
		// A JSON number past int64 is too large, not "not an integer"
		// nor "not positive".
		{"tick-huge", Params{"tick_ns": float64(1 << 63)}, [8]uint32{}, 0, "tick_ns is above 2^40"},
		{"ticks-huge", Params{"resend_ticks": 1e19}, [8]uint32{}, 0, "resend_ticks is above 2^40"},
		{"zeroed-headers-0", Params{"zeroed_headers": 0}, [8]uint32{}, 0, "zeroed_headers 0: the ref always zeroes"},
		{"zeroed-headers-1", Params{"zeroed_headers": 1, "unsched_bytes": 10000}, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 3, ""},
		// One segment per packet: max_gso_size is 0 (one MTU), not a setting.
		{"max-gso-10000", Params{"max_gso_size": 10000}, [8]uint32{}, 0, "max_gso_size 10000: the ref sends one segment per packet"},
		{"max-gso-0", Params{"max_gso_size": 0, "unsched_bytes": 10000}, [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 3, ""},
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

// TestRefHelloMaxGSO: the ref's hello says max_gso_size 0 (it never sends
// a GSO batch), so that spec bounds its overshoot past a grant by one
// segment rather than the linux profile's 10000 bytes (helper-162: a ref
// sending a packet at its grant horizon passed).
func TestRefHelloMaxGSO(t *testing.T) {
	p, err := RefParams(Params{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ParamsOf(p)["max_gso_size"]; !ok || v != int64(0) {
		t.Errorf("ParamsOf: max_gso_size %v (present %v), want 0", v, ok)
	}
}
