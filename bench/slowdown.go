package bench

import (
	"errors"
	"time"

	"github.com/homatest/homatest/internal/latency"
)

// slowdownScale is the histogram unit of a slowdown: thousandths.
const slowdownScale = 1000

// Run is one transport's loaded run, the input of Analyze.
type Run struct {
	// Transport names the transport in reports ("homa", "tcp").
	Transport string
	// Records are the loaded run's RPCs.
	Records []Record
	// Baseline is the transport's unloaded latency, measured on the same
	// network in the same session.
	Baseline Baseline
	// Elapsed is the run's duration, from the first RPC issued to the
	// last one completed.
	Elapsed time.Duration
	// OfferedBps is the offered load in bit/s, as the driver computed it
	// (reported as given).
	OfferedBps float64
	// AchievedBps is the achieved throughput in bit/s as the driver
	// measured it; 0 makes Analyze compute it as the request bytes of
	// the successful RPCs × 8 / Elapsed.
	AchievedBps float64
	// DeliveredBps is the request load the transport carried: the
	// request bytes of the successful RPCs, counted as OfferedBps counts
	// them, per server, over Elapsed (0: not measured). Well below
	// OfferedBps, the transport did not keep up (Warn).
	DeliveredBps float64
	// HostCPU is the busiest host's modelled processing (simulated hosts;
	// nil: not known).
	HostCPU *HostCPU
	// Counters are whatever else the driver counted during the run, by
	// name (retransmissions, switch drops, …), reported as given.
	Counters map[string]uint64
}

// BucketStats are one bucket's slowdowns.
type BucketStats struct {
	Bucket
	// Count is the number of successful RPCs in the bucket; Errors the
	// failed ones (not in the quantiles).
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// P50 and P99 are the median and 99th-percentile slowdown (latency /
	// unloaded latency of the RPC's request size); 0 when Count is 0.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// P50Latency and P99Latency are the latency quantiles.
	P50Latency time.Duration `json:"p50_latency_ns"`
	P99Latency time.Duration `json:"p99_latency_ns"`
	// FewForP99 is set when 0 < Count < MinP99Count: P99 is then about
	// the bucket's largest slowdown, not a 99th percentile (the report
	// marks it and Warn says so).
	FewForP99 bool `json:"few_for_p99,omitempty"`
}

// MinP99Count is the fewest RPCs a sample needs for its 99th percentile
// to be one: below 100 samples the 99th percentile is their maximum, one
// RPC's luck.
const MinP99Count = 100

// Summary is one transport's analysed run.
type Summary struct {
	Transport string `json:"transport"`
	// Issued is the number of RPCs the loaded run issued (the same
	// requests at the same times for every transport); Count and Errors
	// are those that succeeded and failed (Issued = Count + Errors).
	Issued int `json:"issued"`
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// FirstError quotes one failure ("" when none).
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	OfferedBps float64       `json:"offered_bps"`
	// AchievedBps is the achieved throughput in bit/s (see Run).
	AchievedBps float64 `json:"achieved_bps"`
	// DeliveredBps is Run.DeliveredBps, comparable to OfferedBps.
	DeliveredBps float64 `json:"delivered_bps,omitempty"`
	// HostCPU is Run.HostCPU.
	HostCPU *HostCPU `json:"host_cpu,omitempty"`
	// Saturated is set by Report.Warn when the transport did not keep up
	// (Summary.KeptUp): its slowdowns measure a backlog, not the
	// transport, and a comparison with them is not valid.
	Saturated bool `json:"saturated,omitempty"`
	// ShortRun is set by Report.Warn when the transport did not keep up
	// because the sizes the run drew offered more than the link carries
	// (OfferedBps above Report.RateBps, whatever the nominal Load): a run
	// too short for its workload's heavy tail, which no transport could
	// carry, not the transport's shortfall.
	ShortRun bool `json:"short_run,omitempty"`
	// P50 and P99 are the slowdown quantiles over all buckets.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// FewForP99 is set when 0 < Count < MinP99Count (see
	// BucketStats.FewForP99).
	FewForP99 bool          `json:"few_for_p99,omitempty"`
	Buckets   []BucketStats `json:"buckets"`
	Baseline  Baseline      `json:"baseline"`
	// Counters are Run.Counters.
	Counters map[string]uint64 `json:"counters,omitempty"`
}

// Analyze computes run's slowdowns per bucket. Errors: no buckets, or a
// Baseline without points.
func Analyze(run Run, buckets []Bucket) (Summary, error) {
	if len(buckets) == 0 {
		return Summary{}, errors.New("bench: no size buckets (see Buckets)")
	}
	if len(run.Baseline.Points) == 0 {
		return Summary{}, errors.New("bench: the baseline has no points (see NewBaseline)")
	}
	s := Summary{Transport: run.Transport, Issued: len(run.Records), Elapsed: run.Elapsed, OfferedBps: run.OfferedBps,
		AchievedBps: run.AchievedBps, DeliveredBps: run.DeliveredBps, HostCPU: run.HostCPU, Baseline: run.Baseline, Counters: run.Counters, Buckets: make([]BucketStats, len(buckets))}
	slow := make([]*latency.Histogram, len(buckets))
	lat := make([]*latency.Histogram, len(buckets))
	all := latency.New()
	for i := range buckets {
		s.Buckets[i].Bucket = buckets[i]
		slow[i], lat[i] = latency.New(), latency.New()
	}
	var bytes int64
	for _, r := range run.Records {
		i := bucketOf(buckets, r.Request)
		if r.Err != "" {
			s.Errors++
			s.Buckets[i].Errors++
			if s.FirstError == "" {
				s.FirstError = r.Err
			}
			continue
		}
		s.Count++
		s.Buckets[i].Count++
		bytes += int64(r.Request)
		sd := Slowdown(r.Latency, run.Baseline.At(r.Request))
		v := int64(sd * slowdownScale)
		slow[i].Record(v)
		all.Record(v)
		lat[i].Record(r.Latency.Nanoseconds())
	}
	for i := range s.Buckets {
		b := &s.Buckets[i]
		if b.Count == 0 {
			continue
		}
		b.P50 = float64(slow[i].Quantile(0.5)) / slowdownScale
		b.P99 = float64(slow[i].Quantile(0.99)) / slowdownScale
		b.P50Latency = time.Duration(lat[i].Quantile(0.5))
		b.P99Latency = time.Duration(lat[i].Quantile(0.99))
		b.FewForP99 = b.Count < MinP99Count
	}
	if s.Count > 0 {
		s.P50 = float64(all.Quantile(0.5)) / slowdownScale
		s.P99 = float64(all.Quantile(0.99)) / slowdownScale
		s.FewForP99 = s.Count < MinP99Count
	}
	if s.AchievedBps == 0 && run.Elapsed > 0 {
		s.AchievedBps = float64(bytes) * 8 / run.Elapsed.Seconds()
	}
	return s, nil
}

// Slowdown returns latency / unloaded: how many times slower an RPC was
// than on an unloaded network (1 for an unloaded value of 0 or less, which
// a measured baseline never has).
func Slowdown(latency, unloaded time.Duration) float64 {
	if unloaded <= 0 {
		return 1
	}
	return float64(latency) / float64(unloaded)
}
