package netem

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNetemShowMatchesTCRoot applies netem configs with ApplyTC and checks
// that ShowTC prints every netem qdisc exactly as Debian's tc -s qdisc
// show does (same values, units and rounding). It runs where sch_netem and
// tc exist: in the kernel lab (lab.TestLabKernel), skipped elsewhere.
func TestNetemShowMatchesTCRoot(t *testing.T) {
	tp := newTestTopo(t)
	needNetem(t)
	tcBin, err := exec.LookPath("tc")
	if err != nil {
		t.Skip("no tc (iproute2) to compare with")
	}
	if out, _ := exec.Command(tcBin, "-V").CombinedOutput(); !strings.Contains(string(out), "iproute2") {
		t.Skipf("%s is not iproute2's tc (%s)", tcBin, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = ResetTC(tp.nsA, tp.ifA) })
	for _, tc := range []struct {
		name string
		cfg  LinkConfig
	}{
		{"all", LinkConfig{Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Loss: LossConfig{Model: "random", Probability: 0.05},
			Duplicate: 0.01, Reorder: ReorderConfig{Probability: 0.25, Gap: 5}, Corrupt: 0.001}},
		{"gilbert-elliott", LinkConfig{Delay: 1500 * time.Microsecond, Loss: LossConfig{Model: "gilbert-elliott", P: 0.01, R: 0.3, LossBad: 1}}},
		{"under-htb", LinkConfig{Rate: 10 * Mbit, Priorities: 8, Delay: 2 * time.Millisecond, Jitter: 100 * time.Microsecond, Loss: LossConfig{Model: "random", Probability: 0.123}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ApplyTC(tp.nsA, tp.ifA, tc.cfg); err != nil {
				t.Fatal(err)
			}
			st, err := ShowTC(tp.nsA, tp.ifA)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tcBin, "-n", tp.prefix+"a", "-s", "qdisc", "show", "dev", tp.ifA).CombinedOutput()
			if err != nil {
				t.Fatalf("tc: %v: %s", err, out)
			}
			tcLines := map[string]string{} // handle -> netem line without "qdisc "
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) > 2 && f[0] == "qdisc" && f[1] == "netem" {
					tcLines[f[2]] = strings.Join(dropRefcnt(f[1:]), " ")
				}
			}
			if len(st.Netem) == 0 || len(st.Netem) != len(tcLines) {
				t.Fatalf("ShowTC found %d netem qdiscs, tc %d:\n%s", len(st.Netem), len(tcLines), out)
			}
			for _, q := range st.Netem {
				ours := strings.Join(strings.Fields(q.String()), " ")
				if theirs := tcLines[q.Handle]; ours != theirs {
					t.Errorf("netem %s:\n ours %s\n tc   %s\ntc printed:\n%s", q.Handle, ours, theirs, out)
				}
			}
			t.Logf("%d netem qdiscs as tc shows them, e.g. %s", len(st.Netem), st.Netem[0])
		})
	}
}

// dropRefcnt removes tc's "refcnt N" (a kernel reference count, not
// configuration).
func dropRefcnt(f []string) []string {
	var out []string
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "refcnt":
			i++
			continue
		}
		out = append(out, f[i])
	}
	return out
}
