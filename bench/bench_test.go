package bench

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/harness/workload"
)

func mustDist(t testing.TB, name string) workload.Dist {
	t.Helper()
	d, err := workload.Parse(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuckets(t *testing.T) {
	for _, w := range workload.Names {
		d := mustDist(t, w)
		bs := Buckets(d, 10)
		if len(bs) < 5 || len(bs) > 10 {
			t.Errorf("%s: %d buckets, want 5..10: %v", w, len(bs), bs)
		}
		sum, prev := 0.0, 0
		for i, b := range bs {
			if b.Lo > b.Hi || b.Lo <= prev || b.Share <= 0 {
				t.Errorf("%s bucket %d = %+v after Hi %d", w, i, b, prev)
			}
			if d.CDF(b.Lo-1) != d.CDF(prev) {
				t.Errorf("%s bucket %d: sizes %d..%d are drawn but in no bucket", w, i, prev+1, b.Lo-1)
			}
			sum += b.Share
			prev = b.Hi
		}
		if last := bs[len(bs)-1]; last.Hi != d.Max() || last.CDF != 1 || math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: last bucket %+v, shares sum to %v, want Hi %d, CDF 1, sum 1", w, last, sum, d.Max())
		}
	}
	// W4 (HomaModule util/dist.cc w4): 10 % of messages are at most 315
	// bytes, the median is 662 bytes.
	w4 := Buckets(mustDist(t, "w4"), 10)
	if w4[0].Hi != 315 || w4[4].Hi != 662 {
		t.Errorf("w4 buckets = %v, want the first to end at 315 and the fifth at 662", w4)
	}
	if one := Buckets(mustDist(t, "1000"), 10); len(one) != 1 || one[0] != (Bucket{Lo: 1000, Hi: 1000, CDF: 1, Share: 1}) {
		t.Errorf("fixed size buckets = %v, want one 1000-byte bucket", one)
	}
	if got := len(Buckets(mustDist(t, "w3"), 0)); got != DefaultBuckets {
		t.Errorf("Buckets(w3, 0) has %d buckets, want %d", got, DefaultBuckets)
	}
	bs := []Bucket{{Lo: 1, Hi: 100}, {Lo: 101, Hi: 1000}}
	for size, want := range map[int]int{1: 0, 100: 0, 101: 1, 1000: 1, 5000: 1} {
		if got := bucketOf(bs, size); got != want {
			t.Errorf("bucketOf(%d) = %d, want %d", size, got, want)
		}
	}
}

func TestBaseline(t *testing.T) {
	recs := []Record{
		{Request: 100, Latency: 9 * time.Microsecond}, {Request: 100, Latency: 10 * time.Microsecond},
		{Request: 100, Latency: 500 * time.Microsecond}, {Request: 100, Err: "timeout: x"},
		{Request: 10100, Latency: 110 * time.Microsecond},
		{Request: 20100, Latency: 210 * time.Microsecond},
	}
	b, err := NewBaseline(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Points) != 3 || b.Points[0].Size != 100 || b.Points[0].Count != 3 || b.Points[2].Size != 20100 {
		t.Fatalf("points = %+v", b.Points)
	}
	// A stall during a small size's RPCs: its median is lowered to the
	// larger size's.
	stalled, err := NewBaseline([]Record{{Request: 10, Latency: 5 * time.Millisecond}, {Request: 20, Latency: time.Millisecond},
		{Request: 30, Latency: 3 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if p := stalled.Points; p[0].Latency != time.Millisecond || p[0].Median != 5*time.Millisecond || p[1].Latency != time.Millisecond || p[2].Latency != 3*time.Millisecond {
		t.Errorf("stalled points = %+v, want 1ms, 1ms, 3ms with the 5ms median kept", p)
	}
	near := func(d, want time.Duration) bool { return math.Abs(float64(d-want)) <= float64(want)/256+1 }
	// Three of five RPCs stalled (the user's --unloaded 5 at 385 bytes):
	// the 25th percentile is the second fastest, the median a stall.
	var five []Record
	for _, us := range []int{300, 310, 5600, 5690, 5800} {
		five = append(five, Record{Request: 385, Latency: time.Duration(us) * time.Microsecond})
	}
	if p := baseline(t, five).Points[0]; !near(p.Latency, 310*time.Microsecond) || !near(p.Median, 5600*time.Microsecond) {
		t.Errorf("3 of 5 stalled: latency %v, median %v; want 310µs and 5.6ms", p.Latency, p.Median)
	}
	for size, want := range map[int]time.Duration{
		1:      9 * time.Microsecond,    // below the smallest: clamped
		100:    9 * time.Microsecond,    // the 25th percentile of 9, 10, 500
		5100:   59500 * time.Nanosecond, // interpolated
		10100:  110 * time.Microsecond,
		40100:  410 * time.Microsecond, // extrapolated along the last segment
		100000: 1009 * time.Microsecond,
	} {
		if got := b.At(size); !near(got, want) {
			t.Errorf("At(%d) = %v, want %v", size, got, want)
		}
	}
	if _, err := NewBaseline([]Record{{Request: 5, Err: "unreachable: no route"}}); err == nil || !strings.Contains(err.Error(), "unreachable: no route") {
		t.Errorf("all failed: err = %v, want the first error quoted", err)
	}
	if _, err := NewBaseline(nil); err == nil {
		t.Error("no records: no error")
	}
	if got := (Baseline{}).At(5); got != 0 {
		t.Errorf("zero Baseline At = %v", got)
	}
	one := Baseline{Points: []BaselinePoint{{Size: 10, Latency: time.Millisecond}}}
	if got := one.At(1000); got != time.Millisecond {
		t.Errorf("one point At(1000) = %v, want 1ms", got)
	}
	falling := Baseline{Points: []BaselinePoint{{Size: 10, Latency: 2 * time.Millisecond}, {Size: 20, Latency: time.Millisecond}}}
	if got := falling.At(1000); got != time.Millisecond {
		t.Errorf("falling baseline At(1000) = %v, want 1ms (never extrapolated down)", got)
	}
	want := []int{53, 315, 318, 376}
	if got := DistBaselineSizes(mustDist(t, "w4"), 10); len(got) != 20 || !equalInts(got[:4], want) || got[19] != 1000000 {
		t.Errorf("w4 baseline sizes = %v, want 20 starting %v and ending 1000000", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// synthetic returns a Report of two transports over buckets 1-100 and
// 101-10000 with unloaded latency 10 µs + 1 ns per byte: "homa" RPCs of 100
// bytes have slowdowns 1..100, "tcp" ones ten times those; the large
// bucket has slowdown 2 (homa) and 3 (tcp); tcp has one failure.
func synthetic(t testing.TB) *Report {
	t.Helper()
	base := Baseline{Points: []BaselinePoint{{Size: 100, Latency: 10100}, {Size: 10000, Latency: 20000}}}
	bs := []Bucket{{Lo: 1, Hi: 100, CDF: 0.5, Share: 0.5}, {Lo: 101, Hi: 10000, CDF: 1, Share: 0.5}}
	r := &Report{Workload: "test", Load: 0.5, RateBps: 1e9, Hosts: 3, Seed: 7, Buckets: bs,
		Params: map[string]any{"tick_ns": 10000000, "unsched_cutoffs": []int{0, 200}}}
	for _, tr := range []struct {
		name  string
		k     float64
		large float64
	}{{"homa", 1, 2}, {"tcp", 10, 3}} {
		var recs []Record
		for i := 1; i <= 100; i++ {
			recs = append(recs, Record{Request: 100, Latency: time.Duration(float64(i) * tr.k * 10100)})
			recs = append(recs, Record{Request: 5050, Latency: time.Duration(tr.large * 15050)})
		}
		if tr.name == "tcp" {
			recs = append(recs, Record{Request: 7, Err: "timeout: no response"})
		}
		run := Run{Transport: tr.name, Records: recs, Baseline: base, Elapsed: time.Second, OfferedBps: 5e8}
		if tr.name == "tcp" {
			run.Counters = map[string]uint64{"switch_buffer_drops": 3, "connections_broken": 1}
		}
		s, err := Analyze(run, bs)
		if err != nil {
			t.Fatal(err)
		}
		r.Transports = append(r.Transports, s)
	}
	return r
}

func TestAnalyze(t *testing.T) {
	r := synthetic(t)
	near := func(got, want float64) bool { return math.Abs(got-want) <= want/200 }
	h, tc := r.Transports[0], r.Transports[1]
	small, large := h.Buckets[0], h.Buckets[1]
	if small.Count != 100 || !near(small.P50, 50) || !near(small.P99, 99) || large.Count != 100 || !near(large.P50, 2) || !near(large.P99, 2) {
		t.Errorf("homa buckets = %+v", h.Buckets)
	}
	if !near(float64(small.P99Latency), 99*10100) {
		t.Errorf("homa small p99 latency = %v, want %v", small.P99Latency, 99*10100)
	}
	if tc.Errors != 1 || tc.Buckets[0].Errors != 1 || tc.Count != 200 || tc.FirstError != "timeout: no response" || !near(tc.Buckets[0].P99, 990) {
		t.Errorf("tcp summary = %+v", tc)
	}
	// 100 × 100 + 100 × 5050 request bytes in 1 s.
	if want := float64(100*100+100*5050) * 8; !near(h.AchievedBps, want) {
		t.Errorf("achieved = %v, want %v", h.AchievedBps, want)
	}
	if ratio, ok := r.Ratio(0); !ok || !near(ratio, 10) {
		t.Errorf("Ratio(0) = %v %v, want 10", ratio, ok)
	}
	if ratio, ok := r.Ratio(1); !ok || !near(ratio, 1.5) {
		t.Errorf("Ratio(1) = %v %v, want 1.5", ratio, ok)
	}
	if _, ok := r.Ratio(2); ok {
		t.Error("Ratio(2) of 2 buckets: ok")
	}
	if _, err := Analyze(Run{}, r.Buckets); err == nil {
		t.Error("no baseline: no error")
	}
	if _, err := Analyze(Run{Baseline: h.Baseline}, nil); err == nil {
		t.Error("no buckets: no error")
	}
	empty, err := Analyze(Run{Baseline: h.Baseline, AchievedBps: 42}, r.Buckets)
	if err != nil || empty.Buckets[0].P99 != 0 || empty.AchievedBps != 42 {
		t.Errorf("no records: %+v %v", empty, err)
	}
}

func TestReportText(t *testing.T) {
	var buf bytes.Buffer
	if err := synthetic(t).WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"workload test at load 0.50, 1 Gbit/s links, 3 hosts (2 clients, 1 server), seed 7",
		"p99 tcp/homa",
		"homa params: tick_ns 10000000, unsched_cutoffs [0 200]\n",
		"tcp: first error: timeout: no response",
		"tcp: connections_broken 1, switch_buffer_drops 3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	// tcp had a failed RPC: a "failed" column after its n, and every
	// ratio marked "!" once Warn names tcp.
	if f := rows["1-100"]; len(f) != 10 || f[1] != "0.50" || f[2] != "100" || f[6] != "1" || f[9] != "10.0x" {
		t.Errorf("row 1-100 = %q", f)
	}
	if f := rows["homa"]; len(f) < 5 || f[1] != "200" || f[2] != "200" || f[3] != "0" || f[4] != "1s" {
		t.Errorf("row homa = %q", f)
	}
	for bps, want := range map[float64]string{812e6: "812 Mbit/s", 1.5e9: "1.5 Gbit/s", 999: "999 bit/s", 25e3: "25 kbit/s"} {
		if got := FormatBps(bps); got != want {
			t.Errorf("FormatBps(%v) = %q, want %q", bps, got, want)
		}
	}
}

func TestReportJSON(t *testing.T) {
	var buf bytes.Buffer
	r := synthetic(t)
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Transports) != 2 || back.Transports[1].Buckets[0].P99 != r.Transports[1].Buckets[0].P99 || back.Buckets[1].Hi != 10000 {
		t.Errorf("JSON round trip = %+v", back)
	}
	if !strings.Contains(buf.String(), `"p99_latency_ns"`) {
		t.Errorf("JSON lacks p99_latency_ns:\n%s", buf.String())
	}
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	r := synthetic(t)
	pngPath := filepath.Join(dir, "s.png")
	if err := r.Plot(pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", pngPath, err)
	}
	b := img.Bounds()
	if b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("PNG is %v", b)
	}
	// Nothing touches the top and right edges (the title was clipped).
	for x := b.Min.X; x < b.Max.X; x++ {
		for _, y := range []int{b.Min.Y, b.Min.Y + 1} {
			if r, g, bl, _ := img.At(x, y).RGBA(); r&g&bl != 0xffff {
				t.Fatalf("pixel (%d, %d) at the top edge is not white: the title is clipped", x, y)
			}
		}
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		if r, g, bl, _ := img.At(b.Max.X-1, y).RGBA(); r&g&bl != 0xffff {
			t.Fatalf("pixel (%d, %d) at the right edge is not white: a label is clipped", b.Max.X-1, y)
		}
	}
	svgPath := filepath.Join(dir, "s.svg")
	if err := r.Plot(svgPath); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "</svg>", "homa p99", "tcp p50", "10K", "slowdown"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if err := r.Plot(filepath.Join(dir, "s.gif")); err == nil || !strings.Contains(err.Error(), ".png or .svg") {
		t.Errorf("gif: err = %v", err)
	}
	if err := (&Report{}).Plot(pngPath); err == nil {
		t.Error("empty report: no error")
	}
	// Buckets and transports but no completed RPC (a run too short): an
	// error, not gonum's panic on a log axis without points.
	none := synthetic(t)
	for i := range none.Transports {
		for j := range none.Transports[i].Buckets {
			none.Transports[i].Buckets[j].Count = 0
		}
	}
	if err := none.Plot(filepath.Join(dir, "none.png")); err == nil || !strings.Contains(err.Error(), "no bucket has a completed RPC") {
		t.Errorf("report without completed RPCs: err = %v", err)
	}
	for n, want := range map[int]string{96: "96", 1424: "1.4K", 40000: "40K", 1000000: "1M", 123857: "123.9K"} {
		if got := shortSize(n); got != want {
			t.Errorf("shortSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkAnalyze analyses 100 000 W4 records in 10 buckets;
// "baseline" only looks up each record's bucket and unloaded latency, so
// analyze's time over it is the histograms and quantiles.
func BenchmarkAnalyze(b *testing.B) {
	d := mustDist(b, "w4")
	bs := Buckets(d, 10)
	var recs []Record
	for i := 0; i < 100000; i++ {
		size := d.Quantile(float64(i%1000) / 1000)
		recs = append(recs, Record{Request: size, Latency: time.Duration(10000 + size*8 + i%777*100)})
	}
	var base []Record
	for _, s := range BaselineSizes(bs) {
		base = append(base, Record{Request: s, Latency: time.Duration(10000 + s*8)})
	}
	bl, err := NewBaseline(base)
	if err != nil {
		b.Fatal(err)
	}
	var sink float64
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				sink += float64(bucketOf(bs, r.Request)) + Slowdown(r.Latency, bl.At(r.Request))
			}
		}
	})
	b.Run("analyze", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := Analyze(Run{Transport: "homa", Records: recs, Baseline: bl, Elapsed: time.Second}, bs)
			if err != nil {
				b.Fatal(err)
			}
			sink += s.P99
		}
	})
	_ = sink
}

// baseline is NewBaseline that fails the test on an error.
func baseline(t *testing.T, recs []Record) Baseline {
	t.Helper()
	b, err := NewBaseline(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWarn(t *testing.T) {
	r := synthetic(t)
	r.Warn()
	// tcp's one failed RPC makes the comparison unsound: one warning.
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "tcp HAD FAILED RPCs: 1 of 201 RPCs issued failed (first: timeout: no response); the cause is not known") ||
		!slices.Equal(r.Saturated, []string{"tcp"}) || !r.Transports[1].Saturated || r.Transports[0].Saturated {
		t.Errorf("warnings %q, saturated %q; want one for tcp's failed RPC", r.Warnings, r.Saturated)
	}
	r.Transports[1].Errors, r.Transports[1].FirstError = 0, ""
	r.Warn()
	if len(r.Warnings) != 0 || len(r.Saturated) != 0 {
		t.Errorf("sound report: warnings %q, saturated %q", r.Warnings, r.Saturated)
	}
	// A stalled baseline: 5 ms at 100 bytes, 20 µs at 10 000 (a 250x
	// jump over a 100x size step) and a homa bucket whose p50 is below 1.
	h := &r.Transports[0]
	h.Baseline.Points = []BaselinePoint{{Size: 100, Latency: 20 * time.Microsecond}, {Size: 10000, Latency: 5 * time.Millisecond}}
	h.Buckets[0].P50 = 0.4
	r.Warn()
	want := []string{
		"homa: p50 slowdown 0.4 < 1 in bucket 1-100: its unloaded baseline is too high",
		"homa: unloaded latency jumps 250.0x from 100 bytes (20µs) to 10000 bytes (5ms)",
	}
	if len(r.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", r.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.Warnings[i], w) {
			t.Errorf("warning %d = %q, want it to start %q", i, r.Warnings[i], w)
		}
	}
	// Sizes growing faster than their latencies are no jump (W4's large
	// buckets: 100 KB to 1 MB is 10x in size).
	h.Buckets[0].P50 = 2
	h.Baseline.Points[0].Size = 10
	if r.Warn(); len(r.Warnings) != 0 {
		t.Errorf("latency 250x over size 1000x: warnings %q", r.Warnings)
	}
	// In the simulator nothing stalls: a p50 just under 1 is the
	// baseline's interpolation, a jump the protocol's own; only a p50
	// clearly below 1 is reported, without the stall advice.
	sim := synthetic(t)
	sim.Env = "sim"
	sim.Transports[1].Errors, sim.Transports[1].FirstError = 0, ""
	sim.Transports[0].Baseline.Points = []BaselinePoint{{Size: 100, Latency: 20 * time.Microsecond}, {Size: 10000, Latency: 5 * time.Millisecond}}
	sim.Transports[0].Buckets[0].P50 = 0.997
	if sim.Warn(); len(sim.Warnings) != 0 {
		t.Errorf("sim, p50 0.997 and a baseline jump: warnings %q", sim.Warnings)
	}
	sim.Transports[0].Buckets[0].P50 = 0.5
	if sim.Warn(); len(sim.Warnings) != 1 || !strings.Contains(sim.Warnings[0], "interpolated") || strings.Contains(sim.Warnings[0], "stall") {
		t.Errorf("sim, p50 0.5: warnings %q, want one about interpolation and none about stalls", sim.Warnings)
	}
	r.Artifacts = "homatest-runs/x"
	r.Warnings = []string{"homa: test"}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.HasSuffix(out, "\nwarning: homa: test\n\nrun folder: homatest-runs/x\n") {
		t.Errorf("text ends %q", out[max(0, len(out)-80):])
	}
}

// TestFewForP99: a bucket of fewer than MinP99Count RPCs has its p99
// marked (JSON few_for_p99, "*" in the table and its ratio) and Warn says
// so per transport; a bucket of 100 does not.
func TestFewForP99(t *testing.T) {
	r := synthetic(t)
	base := r.Transports[0].Baseline
	var recs []Record
	for i := 1; i <= 99; i++ {
		recs = append(recs, Record{Request: 100, Latency: time.Duration(i) * 10100})
	}
	for i := 1; i <= 3; i++ {
		recs = append(recs, Record{Request: 5050, Latency: 30100})
	}
	s, err := Analyze(Run{Transport: "homa", Records: recs, Baseline: base, Elapsed: time.Second}, r.Buckets)
	if err != nil {
		t.Fatal(err)
	}
	if s.Buckets[0].FewForP99 != true || s.Buckets[1].FewForP99 != true || s.FewForP99 {
		t.Errorf("99 and 3 RPCs (102 in all): few %v %v, overall %v; want true true false", s.Buckets[0].FewForP99, s.Buckets[1].FewForP99, s.FewForP99)
	}
	if r.Transports[1].Buckets[0].FewForP99 || r.Transports[1].FewForP99 {
		t.Error("100 RPCs: marked as too few")
	}
	r.Transports[0] = s
	r.Transports[1].Errors, r.Transports[1].FirstError = 0, ""
	r.Warn()
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "homa: 2 of 2 buckets hold fewer than 100 RPCs (the fewest 3): their p99 (marked *)") {
		t.Errorf("warnings %q, want one for homa's 2 small buckets", r.Warnings)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(l); len(f) == 9 && f[0] == "1-100" {
			found = true
			if !strings.HasSuffix(f[4], "*") || strings.HasSuffix(f[7], "*") || !strings.HasSuffix(f[8], "x*") {
				t.Errorf("row 1-100 = %q: want homa's p99 and the ratio marked, tcp's not", f)
			}
		}
	}
	if !found {
		t.Errorf("no row 1-100:\n%s", buf.String())
	}
	buf.Reset()
	r.WriteJSON(&buf)
	if !strings.Contains(buf.String(), `"few_for_p99": true`) {
		t.Error("JSON lacks few_for_p99")
	}
	var text bytes.Buffer
	one := &Report{Workload: "w4", Load: 0.5, RateBps: 1e9, Hosts: 2}
	one.WriteText(&text)
	if !strings.Contains(text.String(), "2 hosts (1 client, 1 server)") {
		t.Errorf("setup line %q", strings.SplitN(text.String(), "\n", 2)[0])
	}
}

// TestWritePlotAnyData draws reports of odd shapes: WritePlot answers each
// with a picture or an error, never a panic. One bucket whose p50 and p99
// are both 1 (a fixed size on an idle link) made gonum widen the log axis
// to [0, 2] and panic ("Values must be greater than 0 for a log scale").
func TestWritePlotAnyData(t *testing.T) {
	one := func(cdf float64, vals ...float64) *Report {
		r := &Report{Workload: "1000000", Load: 0.5, Buckets: []Bucket{{Lo: 1000000, Hi: 1000000, CDF: cdf, Share: 1}}}
		s := Summary{Transport: "homa", Buckets: []BucketStats{{Count: 5, P50: vals[0], P99: vals[1]}}}
		r.Transports = []Summary{s}
		return r
	}
	for _, c := range []struct {
		name  string
		r     *Report
		drawn bool
	}{
		{"single bucket, slowdown 1", one(1, 1, 1), true},
		{"single bucket, tiny equal values", one(1, 1e-300, 1e-300), true},
		{"single bucket, huge equal values", one(1, 1e300, 1e300), true},
		{"zero values", one(1, 0, 0), false},
		{"negative values", one(1, -1, -2), false},
		{"NaN and Inf", one(1, math.NaN(), math.Inf(1)), false},
		{"CDF 0", one(0, 2, 3), true},
		{"CDF NaN", one(math.NaN(), 2, 3), true},
		{"synthetic", synthetic(t), true},
	} {
		for _, format := range []string{"png", "svg"} {
			var buf bytes.Buffer
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s (%s): panic %v", c.name, format, p)
					}
				}()
				err = c.r.WritePlot(&buf, format)
			}()
			if c.drawn && (err != nil || buf.Len() == 0) {
				t.Errorf("%s (%s): err %v, %d bytes; want a picture", c.name, format, err, buf.Len())
			}
			if !c.drawn && err == nil {
				t.Errorf("%s (%s): no error for a report with nothing to draw", c.name, format)
			}
		}
	}
}

// TestWarnShortRun: a run whose drawn sizes offered more than the link
// carries (a 5 ms W4 run at 1 Gbit/s offered 243% of it at nominal load
// 0.8) did not keep up through no fault of the transport: the warning
// names the run's length and the realised load against the nominal and
// asks for a longer --duration, and WriteText prints it once (it came
// twice, before and after the tables). A transport that fell short of an
// offered load below the link's is still DID NOT KEEP UP. Neither speaks
// of "the 0 failed ones"; an empty bucket is said to be empty.
func TestWarnShortRun(t *testing.T) {
	r := synthetic(t)
	h, tc := &r.Transports[0], &r.Transports[1]
	tc.Errors, tc.FirstError = 0, ""
	h.OfferedBps, h.DeliveredBps = 2.43e9, 0.986e9
	tc.OfferedBps, tc.DeliveredBps = 8e8, 3e8
	r.Warn()
	if len(r.Warnings) != 2 || !slices.Equal(r.Saturated, []string{"homa", "tcp"}) || !h.ShortRun || tc.ShortRun {
		t.Fatalf("warnings %q, saturated %q, short run homa %v tcp %v; want both saturated, homa's run too short", r.Warnings, r.Saturated, h.ShortRun, tc.ShortRun)
	}
	for _, want := range []string{"homa COULD NOT KEEP UP: RUN TOO SHORT: ", "243% of the 1 Gbit/s link, not the nominal load 0.50 (50%)", "not homa", "Rerun with a longer --duration, until the offered load is near 500 Mbit/s"} {
		if !strings.Contains(r.Warnings[0], want) {
			t.Errorf("homa's warning lacks %q: %s", want, r.Warnings[0])
		}
	}
	if !strings.HasPrefix(r.Warnings[1], "tcp DID NOT KEEP UP: it carried 300 Mbit/s of the 800 Mbit/s offered") {
		t.Errorf("tcp's warning: %s", r.Warnings[1])
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "WARNING: homa"); n != 1 || strings.Contains(b.String(), "the 0 failed") {
		t.Errorf("homa's WARNING printed %d times (want 1), or speaks of 0 failed RPCs:\n%s", n, b.String())
	}
	h.OfferedBps, h.DeliveredBps, tc.OfferedBps, tc.DeliveredBps = 5e8, 5e8, 5e8, 5e8
	h.Buckets[1] = BucketStats{}
	r.Warn()
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "homa: 1 of 2 buckets hold no RPC (the run drew no size there") {
		t.Errorf("warnings %q; want one saying homa's bucket 2 is empty", r.Warnings)
	}
}
