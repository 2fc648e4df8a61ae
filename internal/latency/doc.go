// Package latency is a fixed-memory latency histogram for benchmark
// results: log-linear buckets (values below 128 ns exact, then each power
// of two split into 128 equal sub-buckets, the layout HdrHistogram uses),
// so a quantile in nanoseconds is reported within 1/256 (0.4 %) of the
// recorded value, over the whole int64 range, in 57 KiB per histogram.
//
// No well-kept histogram module is available from this project's module
// list (github.com/HdrHistogram/hdrhistogram-go is not served), hence this
// small one. Record does not allocate; histograms of several clients merge.
package latency
