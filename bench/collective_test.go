package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCollectiveReport(t *testing.T) {
	bg := synthetic(t).Transports[0]
	r := &CollectiveReport{Algorithm: "ring", Bytes: 32e6, Hosts: 8, RateBps: 100e9, MTU: 1500, Iterations: 2,
		Background: "w4", Buckets: []Bucket{bg.Buckets[0].Bucket}, Ideal: 4480 * time.Microsecond, Seed: 1,
		Points: []CollectivePoint{
			{Transport: "homa", Load: 0, Times: []time.Duration{5 * time.Millisecond, 7 * time.Millisecond}},
			{Transport: "homa", Load: 0.5, Times: []time.Duration{9 * time.Millisecond}, Background: &bg},
			{Transport: "tcp", Load: 0.5, Times: []time.Duration{20 * time.Millisecond}, Err: "x: broken"},
		}}
	r.Finish()
	if p := r.Points[0]; p.Mean != 6*time.Millisecond || p.VsUnloaded != 1 || p.VsIdeal < 1.33 || p.VsIdeal > 1.34 {
		t.Errorf("homa unloaded point %+v", p)
	}
	if p := r.Points[1]; p.VsUnloaded != 1.5 {
		t.Errorf("homa loaded: vs unloaded %v, want 1.5", p.VsUnloaded)
	}
	if p := r.Points[2]; p.VsUnloaded != 0 {
		t.Errorf("tcp without an unloaded point: vs unloaded %v, want 0", p.VsUnloaded)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"ring all-reduce of 32MB over 8 hosts, 100 Gbit/s links", "ideal completion 4.48ms",
		"short messages 1-100 bytes", "tcp at load 0.50: collective failed: x: broken"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			rows[f[0]+f[1]] = f
		}
	}
	if f := rows["homa0.50"]; len(f) != 8 || f[2] != "9ms" || f[3] != "2.01x" || f[4] != "1.50x" || f[5] != "200" || !strings.HasPrefix(f[6], "99") {
		t.Errorf("row homa 0.50 = %q", f)
	}
	svg := filepath.Join(t.TempDir(), "c.svg")
	if err := r.Plot(svg); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(svg)
	for _, want := range []string{"completion time (ms)", "homa", "tcp", "ideal"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("plot lacks %q", want)
		}
	}
	if err := r.Plot("c.gif"); err == nil {
		t.Error("gif: no error")
	}
}
