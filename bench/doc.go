// Package bench turns the outcome of an RPC benchmark into the Homa
// papers' slowdown curves: for each message-size bucket, the median and
// 99th-percentile slowdown, where slowdown is an RPC's latency divided by
// the latency an RPC of that request size has on an unloaded network
// (Homa SIGCOMM 2018 §5.2 and Fig. 12; the 2021 Linux paper, USENIX ATC,
// §5.2 and Fig. 6). It does not run traffic: it reads records (request
// size, latency, error) from any source, typically harness/traffic, plus a
// Baseline measured by issuing RPCs of representative sizes one at a time
// on the same network.
//
// Buckets follow the papers' x axis: the workload's message-size
// distribution split into buckets of equal probability (10 by default),
// each labelled by its largest size and placed at its cumulative
// probability, so short messages, which dominate every workload, get as
// much of the plot as long ones. Report prints the result as a text table
// or JSON and draws it with gonum.org/v1/plot (PNG or SVG).
//
// Histograms are internal/latency's: slowdowns are recorded in thousandths,
// so a quantile is within 0.4 % of the recorded value.
package bench
