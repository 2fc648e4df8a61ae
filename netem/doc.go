// Package netem emulates datacenter links for Homa tests: strict-priority
// egress queues, link rate, buffer limits, delay and jitter, loss (random or
// Gilbert-Elliott bursts), duplication, reordering, corruption, MTU, and fault
// plans that pick single packets by their Homa meaning ("drop the 2nd GRANT of
// the first RPC").
//
// LinkConfig describes one egress link and Plan a fault plan; both have YAML
// forms for scenario files and Validate methods with one-line errors. Every
// random choice comes from a seeded PCG generator (math/rand/v2), one stream
// per port and purpose, so the same frame sequence gives the same drops.
//
// Two backends share LinkConfig:
//
//   - switch (default): a user-space learning bridge (StartSwitch, or
//     SwitchFabric for a harness) in a switch network namespace, reading and
//     writing its port interfaces with AF_PACKET sockets on one locked
//     forwarding thread (ppoll plus a short spin before each departure).
//     Serialisation and delay count from the kernel receive stamp. It counts
//     every drop by reason (Stats) and can record what it forwarded and
//     dropped as pcapng with a comment on each dropped or altered frame. Its
//     core (Core, Egress) is independent of sockets and is driven by explicit
//     times, so it is unit-tested with a fake clock.
//   - tc: kernel qdiscs by netlink (BuildTC, ApplyTC: an HTB root at the
//     link rate with a 1 ms bucket, one HTB class per priority queue
//     filtered by u32 on the TOS / traffic class; bfifo leaves limited to
//     BufferBytes, per queue; netem leaves where the kernel has sch_netem,
//     Gilbert-Elliott loss as netem's gemodel) plus nftables on the
//     interface's egress hook for random loss where the kernel has no
//     netem, and for fault plans (ApplyTCPlan: Homa header fields at fixed
//     offsets, the nth match by "numgen inc", drop and priority rewrite).
//     Detect and DetectPlan report, one line per feature, what the
//     running kernel or nftables cannot provide before anything is
//     changed (on this lab's kernel: delay, jitter, duplication,
//     reordering, corruption and GE loss; in plans RPC ordinals, in_port,
//     delay, hold and duplicate). The kernel draws its own random numbers,
//     so tc loss does not replay by seed.
//
// Homa priorities are IP precedence (IPv4 TOS>>5, IPv6 traffic class>>5), as
// HomaModule writes them (homa_outgoing.c: priority<<5).
package netem
