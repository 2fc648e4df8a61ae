package workload

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestHomaDataOverhead(t *testing.T) {
	v4 := HomaDataOverhead{}
	per4 := 38 + 20 + 56
	for _, c := range []struct {
		o      HomaDataOverhead
		length int
		want   int
	}{
		{v4, 1, 1 + per4},
		{v4, 1424, 1424 + per4}, // one full segment: 1500 - 20 - 56
		{v4, 1425, 1425 + 2*per4},
		{v4, 1000000, 1000000 + 703*per4},
		{HomaDataOverhead{IPv6: true}, 1404, 1404 + per4 + 20},
		{HomaDataOverhead{IPv6: true}, 1405, 1405 + 2*(per4+20)},
		{HomaDataOverhead{MTU: 9000}, 8924, 8924 + per4},
	} {
		if got := c.o.WireBytes(c.length); got != c.want {
			t.Errorf("%+v.WireBytes(%d) = %d, want %d", c.o, c.length, got, c.want)
		}
	}
}

func TestPoisson(t *testing.T) {
	d := must(t, "w3", DefaultOptions)
	o := HomaDataOverhead{}
	a, err := Poisson(0.5, 10e9, d, o)
	if err != nil {
		t.Fatal(err)
	}
	wire := d.MeanWireBytes(o)
	if want := 0.5 * 10e9 / 8 / wire; math.Abs(a.Rate-want) > 1e-9*want {
		t.Fatalf("rate %v messages/s, want %v", a.Rate, want)
	}
	if wire <= d.Mean() || wire > d.Mean()+float64(d.Max()/1424+1)*114 {
		t.Fatalf("mean wire bytes %.1f for mean payload %.1f", wire, d.Mean())
	}
	for _, bad := range []struct{ load, bps float64 }{{0, 1e9}, {4.5, 1e9}, {math.NaN(), 1e9}, {0.5, 0}, {0.5, -1}} {
		if _, err := Poisson(bad.load, bad.bps, d, o); err == nil {
			t.Errorf("Poisson(%v, %v): no error", bad.load, bad.bps)
		}
	}
	if _, err := Poisson(0.5, 1e9, Dist{}, o); err == nil {
		t.Error("zero Dist accepted")
	}
}

// TestOfferedLoad generates n = 200,000 RPCs of W2 at 40 % of 1 Gbit/s and
// measures the offered load on the receiver's link: wire bytes of the
// requests over the time they span. The gaps are exponential, so the span
// has relative standard error 1/√n (0.22 %); the sizes add their own
// σ/(mean·√n). The measured load must be within 5 combined standard errors
// of 0.4.
func TestOfferedLoad(t *testing.T) {
	const n = 200000
	d := must(t, "w2", DefaultOptions)
	o := HomaDataOverhead{}
	a, err := Poisson(0.4, 1e9, d, o)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(GeneratorConfig{Request: d, Arrivals: a, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	bytes := 0.0
	var last RPC
	for range n {
		last = g.Next()
		bytes += float64(o.WireBytes(last.Request))
	}
	load := bytes * 8 / last.At.Seconds() / 1e9
	rel := math.Sqrt(1.0/n + variance(d)/(d.Mean()*d.Mean())/n)
	if math.Abs(load-0.4) > 5*rel*0.4 {
		t.Errorf("offered load %.4f of the link, want 0.4 ± %.4f", load, 5*rel*0.4)
	}
	if gap := last.At / n; math.Abs(float64(gap-a.Mean())) > 5/math.Sqrt(n)*float64(a.Mean()) {
		t.Errorf("mean gap %v, want %v", gap, a.Mean())
	}
	t.Logf("rate %.0f RPC/s, mean gap %v, offered load %.4f", a.Rate, a.Mean(), load)
}

func TestGeneratorDeterministic(t *testing.T) {
	req := must(t, "w4", DefaultOptions)
	resp, _ := Parse("100")
	a := Arrivals{Rate: 1e4}
	seq := func(seed uint64, resp Dist) []RPC {
		g, err := NewGenerator(GeneratorConfig{Request: req, Response: resp, Arrivals: a, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]RPC, 1000)
		for i := range out {
			out[i] = g.Next()
		}
		return out
	}
	s1, s2, s3 := seq(1, resp), seq(1, resp), seq(2, resp)
	same := 0
	for i := range s1 {
		if s1[i] != s2[i] {
			t.Fatalf("seed 1 twice: RPC %d differs: %+v vs %+v", i, s1[i], s2[i])
		}
		if s1[i] == s3[i] {
			same++
		}
		if s1[i].Response != 100 {
			t.Fatalf("RPC %d: response %d B, want the fixed 100", i, s1[i].Response)
		}
		if i > 0 && s1[i].At < s1[i-1].At {
			t.Fatalf("RPC %d at %v before RPC %d at %v", i, s1[i].At, i-1, s1[i-1].At)
		}
	}
	if same > 10 {
		t.Errorf("seeds 1 and 2 agree on %d of 1000 RPCs", same)
	}
	for i, r := range seq(3, Dist{}) {
		if r.Response != r.Request {
			t.Fatalf("echo: RPC %d request %d B, response %d B", i, r.Request, r.Response)
		}
	}
	if _, err := NewGenerator(GeneratorConfig{Arrivals: a}); err == nil {
		t.Error("no request distribution accepted")
	}
	if _, err := NewGenerator(GeneratorConfig{Request: req}); err == nil {
		t.Error("zero rate accepted")
	}
	if got := (Arrivals{Rate: 1000}).Mean(); got != time.Millisecond {
		t.Errorf("mean gap at 1000/s: %v", got)
	}
}

func TestArrivalsNext(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := Arrivals{Rate: 2000}
	const n = 100000
	var sum time.Duration
	for range n {
		g := a.Next(r)
		if g < 0 {
			t.Fatalf("negative gap %v", g)
		}
		sum += g
	}
	// Exponential gaps: standard error of the mean = mean/√n.
	mean := float64(sum) / n
	if want := float64(a.Mean()); math.Abs(mean-want) > 5*want/math.Sqrt(n) {
		t.Errorf("mean gap %.0f ns, want %.0f", mean, want)
	}
}
