package workload

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Point is one point of a distribution's CDF: a message is at most Length
// bytes with probability Fraction (HomaModule dist.h struct cdf_point).
type Point struct {
	// Length is the message length in bytes.
	Length int
	// Fraction is the cumulative probability, in (0, 1]; the last point's
	// is 1.
	Fraction float64
}

// Options are dist_point_gen's reduction parameters (HomaModule
// util/dist.cc dist_point_gen::dist_point_gen).
type Options struct {
	// MaxLength in bytes: the first table length ≥ MaxLength is replaced by
	// MaxLength with fraction 1 and ends the table, so the mass above the
	// cap is truncated onto the cap. 0 means no cap.
	MaxLength int
	// MinBucketFrac: a table point is kept only if the CDF grew by at
	// least this much since the last kept point (or MaxSizeRatio forces
	// it); 0 keeps every point.
	MinBucketFrac float64
	// MaxSizeRatio: a point is also kept when MaxSizeRatio × the last
	// kept length is below the next table length, so one bucket never
	// spans lengths too far apart.
	MaxSizeRatio float64
}

// DefaultOptions are cp_node's: max_length 1,000,000 bytes (Homa's largest
// message), min_bucket_frac 0.0025, max_size_ratio 1.2.
var DefaultOptions = Options{MaxLength: 1000000, MinBucketFrac: 0.0025, MaxSizeRatio: 1.2}

// RawOptions keep a table as it is: no cap, no merged buckets.
var RawOptions = Options{}

// Dist is a message-size distribution: a step CDF over message lengths.
// The zero Dist is invalid; get one from Parse or ParseOptions.
type Dist struct {
	name   string
	points []Point // ascending Length and Fraction; last Fraction 1
	mean   float64
}

// Parse returns the workload name with DefaultOptions: "w1".."w5" (case
// insensitive) or a fixed message length in bytes written as a decimal
// integer 1..DefaultOptions.MaxLength (e.g. "100", "1000000"): the one
// check of a message-size argument every command shares (bench
// --workload, scenario dist and response), so a size Homa cannot send is
// a usage error, never a silent cap. Errors name the accepted forms.
func Parse(name string) (Dist, error) {
	d, err := ParseOptions(name, DefaultOptions)
	if err == nil && d.Max() > DefaultOptions.MaxLength {
		return Dist{}, fmt.Errorf("workload: fixed size %d: want 1..%d bytes (HomaModule's HOMA_MAX_MESSAGE_LENGTH) or w1..w5", d.Max(), DefaultOptions.MaxLength)
	}
	return d, err
}

// ParseOptions is Parse with explicit reduction options. A fixed length is
// used as given (dist_point_gen does not cap fixed sizes either).
func ParseOptions(name string, o Options) (Dist, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if l, err := strconv.Atoi(n); err == nil {
		if l < 1 {
			return Dist{}, fmt.Errorf("workload: fixed size %d: a message has at least 1 byte: give 1 or more, or w1..w5", l)
		}
		return Dist{name: n, points: []Point{{l, 1}}, mean: float64(l)}, nil
	}
	if o.MaxLength < 0 || o.MinBucketFrac < 0 || o.MaxSizeRatio < 0 {
		return Dist{}, fmt.Errorf("workload: options %+v: values must not be negative", o)
	}
	for _, w := range Names {
		if n == w {
			raw, err := table(w)
			if err != nil {
				return Dist{}, err
			}
			return reduce(w, raw, o), nil
		}
	}
	return Dist{}, fmt.Errorf("workload: unknown workload %q: use w1, w2, w3, w4, w5 or a message length in bytes such as 1000", name)
}

// reduce turns raw weights into a reduced CDF exactly as dist_point_gen's
// constructor does, in the same floating-point order, so means and point
// counts match HomaModule's.
func reduce(name string, raw []rawPoint, o Options) Dist {
	total := 0.0
	for _, p := range raw {
		total += p.weight
	}
	pts := []Point{{0, 0}} // the constructor's origin, dropped below
	cur := 0.0
	for i, p := range raw {
		if o.MaxLength > 0 && p.length >= o.MaxLength {
			pts = append(pts, Point{o.MaxLength, 1})
			break
		}
		cur += p.weight / total
		if cur >= 1 {
			pts = append(pts, Point{p.length, 1})
			break
		}
		next := 0 // the table's {0, 0} terminator after the last point
		if i+1 < len(raw) {
			next = raw[i+1].length
		}
		last := pts[len(pts)-1]
		if cur-last.Fraction >= o.MinBucketFrac || o.MaxSizeRatio*float64(last.Length) < float64(next) {
			pts = append(pts, Point{p.length, cur})
		}
		if i == len(raw)-1 {
			pts[len(pts)-1].Fraction = 1 // the terminator closes the CDF
		}
	}
	mean, prev := 0.0, 0.0
	for _, p := range pts {
		mean += float64(p.Length) * (p.Fraction - prev)
		prev = p.Fraction
	}
	return Dist{name: name, points: pts[1:], mean: mean}
}

// Name returns the name the distribution was parsed from ("w3", "1000").
func (d Dist) Name() string { return d.name }

// Mean returns the mean message length in bytes.
func (d Dist) Mean() float64 { return d.mean }

// Points returns a copy of the CDF points, ascending (without
// dist_point_gen's (0, 0) origin, which no sample can return).
func (d Dist) Points() []Point { return append([]Point(nil), d.points...) }

// Max returns the largest message length in bytes.
func (d Dist) Max() int {
	if len(d.points) == 0 {
		return 0
	}
	return d.points[len(d.points)-1].Length
}

// Quantile returns the smallest length L in bytes with P(length ≤ L) ≥ q,
// for q in [0, 1] (q ≤ 0 gives the smallest length, q ≥ 1 the largest).
// It panics on the zero Dist.
func (d Dist) Quantile(q float64) int {
	// Binary search for the first point with Fraction ≥ q.
	i, j := 0, len(d.points)
	for i < j {
		m := int(uint(i+j) >> 1)
		if d.points[m].Fraction < q {
			i = m + 1
		} else {
			j = m
		}
	}
	if i == len(d.points) {
		i = len(d.points) - 1 // q above the last fraction (rounding): the largest length
	}
	return d.points[i].Length
}

// CDF returns P(length ≤ l) for l in bytes.
func (d Dist) CDF(l int) float64 {
	i := sort.Search(len(d.points), func(i int) bool { return d.points[i].Length > l })
	if i == 0 {
		return 0
	}
	return d.points[i-1].Fraction
}

// Sample draws a message length in bytes: u from r.Float64() in [0, 1),
// then the first point whose fraction is ≥ u (dist_point_gen::operator(),
// which draws u from mt19937; u = 0 returns the first point here, not the
// constructor's length-0 origin). It allocates nothing and panics on the
// zero Dist.
func (d Dist) Sample(r *rand.Rand) int {
	if len(d.points) == 1 {
		return d.points[0].Length
	}
	return d.Quantile(r.Float64())
}
