package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBuckets(t *testing.T) {
	// Every bucket's bounds map back to it, buckets tile the range, and a
	// bucket is at most 1/128 of its lower bound wide.
	prevHi := int64(-1)
	for i := range numBuckets {
		lo, hi := bounds(i)
		if lo != prevHi+1 || index(lo) != i || index(hi) != i {
			t.Fatalf("bucket %d: [%d, %d] after %d; index(lo) %d, index(hi) %d", i, lo, hi, prevHi, index(lo), index(hi))
		}
		if lo >= subCount && float64(hi-lo+1)/float64(lo) > 1.0/subCount {
			t.Fatalf("bucket %d: [%d, %d] wider than 1/%d", i, lo, hi, subCount)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("last bucket ends at %d, want MaxInt64", prevHi)
	}
}

// TestQuantiles records 100,000 log-normal latencies (median 50 µs, long
// tail) and compares each quantile with the exact one from the sorted
// samples: the error must be within 1/256 of the exact value.
func TestQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := New()
	var xs []int64
	sum := 0.0
	for range 100000 {
		v := int64(math.Exp(math.Log(50000) + 1.2*r.NormFloat64()))
		h.Record(v)
		xs = append(xs, v)
		sum += float64(v)
	}
	slices.Sort(xs)
	for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999} {
		exact := xs[int(math.Ceil(q*float64(len(xs))))-1]
		got := h.Quantile(q)
		if math.Abs(float64(got-exact)) > float64(exact)/256+0.5 {
			t.Errorf("p%g: %d ns, exact %d ns (error %.3f %%)", 100*q, got, exact, 100*float64(got-exact)/float64(exact))
		}
	}
	if h.Count() != 100000 || h.Min() != xs[0] || h.Max() != xs[len(xs)-1] || h.Quantile(0) != xs[0] || h.Quantile(1) != xs[len(xs)-1] {
		t.Errorf("count %d min %d max %d, want 100000 %d %d", h.Count(), h.Min(), h.Max(), xs[0], xs[len(xs)-1])
	}
	if m := sum / 100000; math.Abs(h.Mean()-m) > 1e-6*m {
		t.Errorf("mean %.1f, want %.1f", h.Mean(), m)
	}
}

func TestSmallAndEdgeValues(t *testing.T) {
	h := New()
	if h.Quantile(0.5) != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram not all zero")
	}
	for v := int64(1); v <= 100; v++ {
		h.Record(v)
	}
	if got := h.Quantile(0.5); got != 50 {
		t.Errorf("median of 1..100 = %d, want 50 (exact below 128 ns)", got)
	}
	h.Record(-7)
	h.Record(math.MaxInt64)
	if h.Min() != 0 || h.Max() != math.MaxInt64 || h.Quantile(1) != math.MaxInt64 {
		t.Errorf("min %d max %d", h.Min(), h.Max())
	}
	h.Reset()
	if h.Count() != 0 || h.Quantile(0.9) != 0 {
		t.Error("Reset left values")
	}
}

func TestMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b, all := New(), New(), New()
	for i := range 20000 {
		v := r.Int64N(10_000_000)
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	empty := New()
	a.Merge(b)
	a.Merge(empty)
	for _, q := range []float64{0, 0.25, 0.5, 0.99, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q %v: merged %d, direct %d", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Min() != all.Min() || a.Max() != all.Max() || math.Abs(a.Mean()-all.Mean()) > 1e-6*all.Mean() {
		t.Errorf("merged %d/%d/%d/%f, direct %d/%d/%d/%f", a.Count(), a.Min(), a.Max(), a.Mean(), all.Count(), all.Min(), all.Max(), all.Mean())
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := New()
	v := int64(1)
	if n := testing.AllocsPerRun(1000, func() { h.Record(v); v = v*3 + 1 }); n != 0 {
		t.Errorf("Record allocates %v times per call", n)
	}
}

var (
	sinkSlice []int64
	sink      int64
)

// BenchmarkRecord records latencies; "baseline-append" appends them to a
// slice instead (keeping every sample, the alternative to a histogram).
func BenchmarkRecord(b *testing.B) {
	b.Run("baseline-append", func(b *testing.B) {
		b.ReportAllocs()
		var xs []int64
		v := int64(1)
		for b.Loop() {
			v = v*6364136223846793005 + 1
			xs = append(xs, v&(1<<30-1))
		}
		sinkSlice = xs
	})
	b.Run("histogram", func(b *testing.B) {
		b.ReportAllocs()
		h := New()
		v := int64(1)
		for b.Loop() {
			v = v*6364136223846793005 + 1
			h.Record(v & (1<<30 - 1))
		}
	})
}

// BenchmarkQuantile reads p99 of a histogram of 100,000 values.
func BenchmarkQuantile(b *testing.B) {
	h := New()
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		h.Record(r.Int64N(1 << 30))
	}
	b.ReportAllocs()
	for b.Loop() {
		sink += h.Quantile(0.99)
	}
}
