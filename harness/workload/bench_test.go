package workload

import (
	"math/rand/v2"
	"testing"
)

var sink int

// BenchmarkSample draws sizes from each workload; "baseline" is the
// r.Float64 call every draw makes, so ns/op over baseline is the search.
func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink += int(r.Float64() * 10)
		}
	})
	for _, w := range Names {
		d, _ := Parse(w)
		b.Run(w, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink += d.Sample(r)
			}
		})
	}
}

// BenchmarkGenerator produces W3 RPCs with W3 responses.
func BenchmarkGenerator(b *testing.B) {
	d, _ := Parse("w3")
	a, _ := Poisson(0.8, 25e9, d, HomaDataOverhead{})
	g, _ := NewGenerator(GeneratorConfig{Request: d, Response: d, Arrivals: a, Seed: 1})
	b.ReportAllocs()
	for b.Loop() {
		sink += g.Next().Request
	}
}
