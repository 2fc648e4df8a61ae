// Package workload generates Homa benchmark traffic: message sizes drawn
// from the workloads W1..W5 of the Homa paper exactly as HomaModule's
// cp_node draws them (util/dist.cc dist_point_gen), or a fixed size;
// Poisson message arrivals whose offered load, counting the header bytes of
// every Homa DATA packet, is a chosen fraction of the receiver's link; and
// a seeded Generator that turns both into a repeatable sequence of
// (time offset, request size, response size).
//
// The five tables are data files in dists/, transcribed from
// PlatformLab/HomaModule util/dist.cc (the header line of each names the
// commit and line range) and embedded in the binary.
package workload
