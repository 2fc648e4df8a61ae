// Package wire is the Homa wire format as data: packet types, header layouts,
// and decoding and encoding over byte slices.
//
// It follows HomaModule's homa_wire.h (struct homa_common_hdr, homa_data_hdr,
// homa_grant_hdr, homa_resend_hdr, homa_rpc_unknown_hdr, homa_busy_hdr,
// homa_cutoffs_hdr, homa_freeze_hdr, homa_need_ack_hdr, homa_ack_hdr) in three
// wire versions (see [Version]): the current format (IP protocol 146), the
// 2022-2024 format of the linux_6.1.38 branch (IP protocol 253) and the
// upstream (__STRIP__) subset.
//
// Decoding: [Decode] checks the type byte and the per-type minimum length and
// returns a [Packet], a zero-copy view whose typed accessors ([Packet.Data],
// [Packet.Grant], ...) return views with named field getters; asked of a
// packet of another type they return an empty view whose getters read zeros.
// Decoding never panics and never reads past the slice it is given; short
// input yields a [*DecodeError] naming the packet type, the first field that
// does not fit, and the wanted and available lengths.
//
// Layout: every field's offset and size is written once per wire version, in
// tables indexed by named constants of HomaModule's struct members
// (layout.go). The getters, the encoders, [Layout] (which the generated
// Wireshark dissector reads) and [PacketType.HeaderLen] all read those
// tables; [Packet.Field] reads a field by its HomaModule name.
//
// Encoding: each packet type has a Fields struct (DataFields, GrantFields, ...)
// whose AppendTo method appends the encoded header (and payload) to a caller
// buffer. [EncodeOptions] decides whether doff, num_acks, the TCP-imitation
// marks and the checksum are filled in, so malformed packets can be built on
// purpose.
//
// The package has no dependencies outside the standard library and allocates
// nothing on the decode path.
package wire
