package bench

import (
	"fmt"
	"slices"

	"github.com/homatest/homatest/harness/workload"
)

// DefaultBuckets is the number of buckets the papers' slowdown plots use
// (one per 10 % of the workload's messages).
const DefaultBuckets = 10

// Bucket is a range of message sizes holding about an equal share of a
// workload's messages.
type Bucket struct {
	// Lo and Hi are the smallest and largest message sizes in bytes that
	// the workload draws in this bucket (inclusive).
	Lo int `json:"lo"`
	Hi int `json:"hi"`
	// CDF is the workload's cumulative probability at Hi (the bucket's
	// position on the papers' x axis), in (0, 1].
	CDF float64 `json:"cdf"`
	// Share is the probability that a message falls in this bucket.
	Share float64 `json:"share"`
}

// String returns the size range, e.g. "1-96" or "1000000".
func (b Bucket) String() string {
	if b.Lo == b.Hi {
		return fmt.Sprint(b.Hi)
	}
	return fmt.Sprintf("%d-%d", b.Lo, b.Hi)
}

// Buckets splits d into at most n buckets of equal probability: bucket i
// ends at the size of workload quantile (i+1)/n. A size that alone holds
// more than 1/n of the messages makes fewer buckets (the quantiles repeat);
// a fixed-size workload has one bucket. n < 1 means DefaultBuckets.
func Buckets(d workload.Dist, n int) []Bucket {
	if n < 1 {
		n = DefaultBuckets
	}
	pts := d.Points()
	var out []Bucket
	prevHi, prevCDF := 0, 0.0
	for i := 1; i <= n; i++ {
		hi := d.Quantile(float64(i) / float64(n))
		if hi <= prevHi {
			continue
		}
		// The smallest size the workload draws above the previous bucket.
		j, _ := slices.BinarySearchFunc(pts, prevHi+1, func(p workload.Point, l int) int { return p.Length - l })
		lo := hi
		if j < len(pts) && pts[j].Length < hi {
			lo = pts[j].Length
		}
		cdf := d.CDF(hi)
		out = append(out, Bucket{Lo: lo, Hi: hi, CDF: cdf, Share: cdf - prevCDF})
		prevHi, prevCDF = hi, cdf
	}
	return out
}

// bucketOf returns the index of the bucket holding size: the first whose
// Hi is at least size, the last one for a larger size.
func bucketOf(buckets []Bucket, size int) int {
	i, _ := slices.BinarySearchFunc(buckets, size, func(b Bucket, s int) int { return b.Hi - s })
	return min(i, len(buckets)-1)
}
