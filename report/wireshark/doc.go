// Package wireshark generates a Wireshark dissector for Homa in Lua (every
// Wireshark build runs Lua plugins without compiling) from spec/wire's
// layout tables, so the wire format is described once: packet types,
// header lengths and field offsets of the current format (IP protocol
// 146), the 2022-2024 format (protocol 253) and the upstream subset come
// from wire.Layout and wire.PacketType.HeaderLen; the dissector's display
// filter names are HomaModule's homa_wire.h member names under "homa."
// (homa.type, homa.sender_id, homa.data.seg.offset, homa.grant.offset, …).
//
// The Lua code mirrors what homatest decode does with a frame (package
// pcap): the wire version picked per packet as wire.DetectVersion does,
// decode errors worded as wire.DecodeError words them, GSO multi-segment
// DATA frames split as wire.Data.Segments splits them, the priority read
// from the IP header with the IPv6 traffic-class shift detected per
// sending host, TCP-hijacked frames recognised by their marks. A test in
// cmd/homatest/internal/cli runs tshark with the generated file over every
// capture in the repository and compares each field with homatest decode
// -o json.
//
// Findings that homatest check --annotate writes as packet comments
// ("HOMA-AREA-NNN LEVEL: reason") become Expert Info items.
package wireshark
