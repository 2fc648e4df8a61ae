package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// facts holds the validation numbers of the shared facts (§5.1), which
// were computed from HomaModule util/dist.cc: raw point counts, raw means,
// means truncated at 1,000,000 B, means and point counts (including the
// (0, 0) origin) of the reduced generator with DefaultOptions, raw
// quantiles p10..p99.9, and the raw fraction of messages ≤ 1000 B.
var facts = []struct {
	name                            string
	rawPoints                       int
	rawMean, truncMean, reducedMean float64
	reducedPoints                   int
	quantiles                       [8]int
	fracLE1000                      float64
	reducedP99                      int
	minLen, maxLen                  int
}{
	{"w1", 300, 189.2, 189.2, 192.8, 157, [8]int{8, 8, 27, 203, 503, 804, 1876, 4924}, 0.965, 2109, 8, 100000},
	{"w2", 152, 441.6, 433.3, 440.8, 96, [8]int{8, 43, 269, 394, 512, 931, 3151, 21845}, 0.953, 3413, 8, 3529904},
	{"w3", 842, 2927.7, 2423.1, 2567.7, 114, [8]int{36, 85, 268, 469, 1755, 5521, 31013, 356516}, 0.858, 32161, 8, 15158197},
	{"w4", 460, 127796.6, 60175.1, 61008.1, 226, [8]int{315, 463, 662, 42493, 120373, 273075, 3430822, 10000000}, 0.604, 1000000, 53, 10000000},
	{"w5", 400, 2564689.7, 385315.5, 386161.4, 110, [8]int{5720, 23520, 72030, 1470000, 4899510, 19600980, 27440490, 29400000}, 0.000, 1000000, 1430, 29400000},
}

var quantileLevels = [8]float64{0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999}

// near reports whether got rounds to want at one decimal (the precision
// the facts print).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.05+1e-9 }

func must(t *testing.T, name string, o Options) Dist {
	t.Helper()
	d, err := ParseOptions(name, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReducedGeneratorMatchesHomaModule(t *testing.T) {
	for _, f := range facts {
		d := must(t, f.name, DefaultOptions)
		if !near(d.Mean(), f.reducedMean) {
			t.Errorf("%s: reduced mean %.4f B, want %.1f", f.name, d.Mean(), f.reducedMean)
		}
		// dist_point_gen keeps a (0, 0) origin that Points leaves out.
		if n := len(d.Points()) + 1; n != f.reducedPoints {
			t.Errorf("%s: %d reduced points (with origin), want %d", f.name, n, f.reducedPoints)
		}
		if got := d.Quantile(0.99); got != f.reducedP99 {
			t.Errorf("%s: reduced p99 %d B, want %d", f.name, got, f.reducedP99)
		}
		if d.Max() > DefaultOptions.MaxLength {
			t.Errorf("%s: largest length %d above the cap", f.name, d.Max())
		}
		pts := d.Points()
		if pts[len(pts)-1].Fraction != 1 {
			t.Errorf("%s: last fraction %v, want 1", f.name, pts[len(pts)-1].Fraction)
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].Length <= pts[i-1].Length || pts[i].Fraction < pts[i-1].Fraction {
				t.Fatalf("%s: points %d, %d not ascending: %v %v", f.name, i-1, i, pts[i-1], pts[i])
			}
		}
	}
}

func TestRawTablesMatchFacts(t *testing.T) {
	for _, f := range facts {
		raw := must(t, f.name, RawOptions)
		if n := len(raw.Points()); n != f.rawPoints {
			t.Errorf("%s: %d raw points, want %d", f.name, n, f.rawPoints)
		}
		if !near(raw.Mean(), f.rawMean) {
			t.Errorf("%s: raw mean %.4f B, want %.1f", f.name, raw.Mean(), f.rawMean)
		}
		if tr := must(t, f.name, Options{MaxLength: 1000000}); !near(tr.Mean(), f.truncMean) {
			t.Errorf("%s: mean truncated at 1 MB %.4f B, want %.1f", f.name, tr.Mean(), f.truncMean)
		}
		for i, q := range quantileLevels {
			if got := raw.Quantile(q); got != f.quantiles[i] {
				t.Errorf("%s: raw p%g = %d B, want %d", f.name, 100*q, got, f.quantiles[i])
			}
		}
		if got := raw.CDF(1000); math.Abs(got-f.fracLE1000) > 0.0005 {
			t.Errorf("%s: P(length ≤ 1000) = %.4f, want %.3f", f.name, got, f.fracLE1000)
		}
		if got := raw.Quantile(0); got != f.minLen {
			t.Errorf("%s: smallest length %d, want %d", f.name, got, f.minLen)
		}
		if got := raw.Max(); got != f.maxLen {
			t.Errorf("%s: largest length %d, want %d", f.name, got, f.maxLen)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{{"100", 100}, {"1000000", 1000000}, {" 1 ", 1}} {
		d, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		if d.Mean() != float64(c.want) || d.Sample(r) != c.want || d.Quantile(0.5) != c.want || len(d.Points()) != 1 {
			t.Errorf("%q: mean %v, sample %d, points %v; want all %d", c.in, d.Mean(), d.Sample(r), d.Points(), c.want)
		}
	}
	if d, err := Parse("W3"); err != nil || d.Name() != "w3" {
		t.Errorf("W3: %v, name %q", err, d.Name())
	}
	for _, bad := range []string{"", "w6", "0", "-5", "1e3", "w1x", "starve"} {
		_, err := Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q): no error", bad)
			continue
		}
		if bad != "0" && bad != "-5" && !strings.Contains(err.Error(), "w1, w2, w3, w4, w5") {
			t.Errorf("Parse(%q): error %q does not list the accepted names", bad, err)
		}
	}
	// A fixed size above Homa's largest message: one error for every
	// command (bench used to cap it silently, scenario to refuse it).
	if _, err := Parse("1000001"); err == nil || !strings.Contains(err.Error(), "want 1..1000000 bytes") {
		t.Errorf("Parse(1000001): %v; want a 1..1000000 error", err)
	}
	if d, err := ParseOptions("2000000", RawOptions); err != nil || d.Max() != 2000000 {
		t.Errorf("ParseOptions(2000000, RawOptions): %v, max %d; want it as given", err, d.Max())
	}
	if _, err := ParseOptions("w1", Options{MinBucketFrac: -1}); err == nil {
		t.Error("negative MinBucketFrac accepted")
	}
	if _, err := parseTable("x", []byte("# only a comment\n")); err == nil {
		t.Error("empty table accepted")
	}
	if _, err := parseTable("x", []byte("10 0.5\n5 0.5\n")); err == nil {
		t.Error("descending table accepted")
	}
}

// variance returns the variance of d's lengths in bytes².
func variance(d Dist) float64 {
	v, prev := 0.0, 0.0
	for _, p := range d.Points() {
		x := float64(p.Length) - d.Mean()
		v += x * x * (p.Fraction - prev)
		prev = p.Fraction
	}
	return v
}

// TestSamplesConverge draws n = 200,000 sizes per workload from a fixed
// seed. The sample mean must lie within 5 standard errors (σ/√n, σ from
// the distribution itself) of Mean: a correct sampler misses that with
// probability below 6e-7 per workload. The empirical CDF must stay within
// the Dvoretzky-Kiefer-Wolfowitz bound ε = √(ln(2/α)/2n) with α = 1e-6
// (ε = 0.0060) of CDF at every point.
func TestSamplesConverge(t *testing.T) {
	const n = 200000
	eps := math.Sqrt(math.Log(2/1e-6) / (2 * n))
	for i, w := range Names {
		d := must(t, w, DefaultOptions)
		r := rand.New(rand.NewPCG(uint64(i), 42))
		sum := 0.0
		counts := map[int]int{}
		for range n {
			s := d.Sample(r)
			sum += float64(s)
			counts[s]++
		}
		mean := sum / n
		se := math.Sqrt(variance(d) / n)
		if math.Abs(mean-d.Mean()) > 5*se {
			t.Errorf("%s: sample mean %.1f B, want %.1f ± %.1f (5 standard errors)", w, mean, d.Mean(), 5*se)
		}
		cum, worst := 0, 0.0
		for _, p := range d.Points() {
			cum += counts[p.Length]
			delete(counts, p.Length)
			worst = max(worst, math.Abs(float64(cum)/n-p.Fraction))
		}
		if len(counts) > 0 {
			t.Errorf("%s: sampled lengths that are not points: %v", w, counts)
		}
		if worst > eps {
			t.Errorf("%s: empirical CDF off by %.4f, DKW bound %.4f", w, worst, eps)
		}
		t.Logf("%s: sample mean %.1f B (mean %.1f, σ/√n %.1f), max CDF error %.4f", w, mean, d.Mean(), se, worst)
	}
}
