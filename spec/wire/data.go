package wire

import (
	"encoding/json"
	"fmt"
)

// Data is a view of a DATA packet (HomaModule homa_wire.h struct
// homa_data_hdr): the common header, then
//
//	off  size  current / upstream         2024 (linux_6.1.38)
//	28   4     message_length             message_length
//	32   4     incoming (upstream: 0)     incoming
//	36   8     ack.client_id              ack.client_id
//	44   2     ack.server_port            ack.client_port
//	46   2     cutoff_version (up.: 0)    ack.server_port
//	48   1     retransmit                 cutoff_version (2 bytes)
//	49   3     pad                        50: retransmit, 51: pad
//	52   4     seg.offset                 seg.offset
//	56   n     data bytes
//
// A non-hijacked GSO frame captured before segmentation (doff 0xD0, more data
// than one segment) interleaves a 4-byte seg.offset before every segment after
// the first; [Data.Segments] splits it.
type Data struct{ Packet }

// MessageLength returns message_length: total bytes in the message (1 to
// 1,000,000), the same in every DATA packet of the message.
func (d Data) MessageLength() uint32 { return at32(d.b, hdrsOf(d.v).at.data[dataMessageLength]) }

// Incoming returns incoming: in first transmissions the unscheduled byte
// count U = min(message_length, unsched_bytes); in retransmissions the end of
// the retransmitted range. Reserved (0) upstream.
func (d Data) Incoming() uint32 { return at32(d.b, hdrsOf(d.v).at.data[dataIncoming]) }

// AckClientID returns ack.client_id: the client id of a completed RPC that the
// sender acknowledges to the receiver (piggy-backed ack), or 0 for none.
func (d Data) AckClientID() uint64 { return at64(d.b, hdrsOf(d.v).at.dataAck[ackEntryClientID]) }

// AckClientPort returns ack.client_port, which exists only in Version2024;
// 0 in other versions.
func (d Data) AckClientPort() uint16 { return at16(d.b, hdrsOf(d.v).at.dataAck[ackEntryClientPort]) }

// AckServerPort returns ack.server_port: the server port of the acked RPC.
func (d Data) AckServerPort() uint16 { return at16(d.b, hdrsOf(d.v).at.dataAck[ackEntryServerPort]) }

// CutoffVersion returns cutoff_version: the version of the CUTOFFS the sender
// last received from this packet's destination, 0 if none (reserved upstream).
func (d Data) CutoffVersion() uint16 { return at16(d.b, hdrsOf(d.v).at.data[dataCutoffVersion]) }

// Retransmit returns retransmit: 1 iff the packet was sent because of a
// RESEND or an RPC_UNKNOWN restart.
func (d Data) Retransmit() uint8 { return at8(d.b, hdrsOf(d.v).at.data[dataRetransmit]) }

// SegOffset returns the raw seg.offset: the offset of the first data byte, or
// 0xFFFFFFFF (SegOffsetInSequence) meaning the offset is in common.sequence.
func (d Data) SegOffset() uint32 { return at32(d.b, hdrsOf(d.v).at.data[dataSegOffset]) }

// Offset returns the byte offset in the message of the packet's first data
// byte: seg.offset, or common.sequence when seg.offset is 0xFFFFFFFF (the
// rule homa_gro_receive applies).
func (d Data) Offset() uint32 {
	if o := d.SegOffset(); o != SegOffsetInSequence {
		return o
	}
	return d.Common().Sequence()
}

// DataLen returns the number of bytes after the 56-byte header as sent
// (WireLen - 56): the data length of a single-segment packet. In a
// multi-segment GSO frame it includes the interleaved seg headers.
func (d Data) DataLen() int {
	if n := int(d.wireLen) - DataHeaderLen; n > 0 {
		return n
	}
	return 0
}

// Payload returns the captured bytes after the header (fewer than DataLen if
// the capture was truncated).
func (d Data) Payload() []byte {
	if len(d.b) <= DataHeaderLen {
		return nil
	}
	return d.b[DataHeaderLen:]
}

// Segment is one segment of a DATA packet: Offset in the message, Length in
// bytes as sent, and the captured bytes (Data may be shorter than Length, or
// nil, when the capture was truncated). Assumed is set on the segments of a
// GSO frame whose interleaved seg headers were not captured, so the segment
// size could not be checked: Offset and Length then follow from the assumed
// max_seg_data alone.
type Segment struct {
	Offset  uint32
	Length  int
	Data    []byte
	Assumed bool
}

// IsGSO reports whether d is a multi-segment GSO frame as seen on the sending
// host before segmentation: doff 13 words (0xD0) and more data than one
// segment of maxSegData bytes (max_seg_data = MTU - IP header - 56; see
// MaxSegDataIPv4). maxSegData ≤ 0 means "never".
func (d Data) IsGSO(maxSegData int) bool {
	return maxSegData > 0 && d.Common().Doff()>>4 == DoffGSO>>4 && d.DataLen() > maxSegData
}

// Segments appends d's segments to dst and returns it. A packet that is not
// a GSO frame (see IsGSO) has one segment. A GSO frame is walked with
// segments of maxSegData bytes; if a captured interleaved seg.offset does not
// continue the previous segment, the segment size is inferred from the first
// interleaved header instead (HomaModule homa_message_out_fill builds all but
// the last segment at one size). When no header after the first was
// captured, the segments are marked Assumed. It returns a *DecodeError
// wrapping ErrSegments, naming the byte position and the offsets found and
// expected, when no segment size explains the frame. Appending to a reused
// dst does not allocate. A Partial packet has no segments (its seg.offset
// was not captured): Segments returns the ErrTruncated *DecodeError.
func (d Data) Segments(dst []Segment, maxSegData int) ([]Segment, error) {
	if d.partial {
		f := truncatedAt(Layout(TypeData, d.v), len(d.b))
		return dst, &DecodeError{Type: TypeData, Version: d.v, Field: f.Name, Want: f.Off + f.Size, Have: len(d.b), Err: ErrTruncated}
	}
	if !d.IsGSO(maxSegData) {
		return d.appendSingle(dst), nil
	}
	if d.DataLen() > MaxGSOFrameLen {
		return dst, &DecodeError{Type: TypeData, Version: d.v, Field: "seg.offset", Err: ErrSegments,
			Detail: fmt.Sprintf("GSO frame of %d data bytes is larger than %d", d.DataLen(), MaxGSOFrameLen)}
	}
	ok, checked, badPos, badHave, badWant := d.gsoFits(maxSegData)
	if ok {
		return d.appendGSO(dst, maxSegData, !checked), nil
	}
	// Infer the segment size from the first interleaved header: a position
	// p whose 4 bytes hold the offset that segments of p-56 bytes predict.
	// One pass over the captured bytes, validating only candidates.
	end := min(len(d.b), DataHeaderLen+d.DataLen())
	off := d.Offset()
	for p := DataHeaderLen + 1; p+SegHeaderLen <= end; p++ {
		s := p - DataHeaderLen
		if get32(d.b, p) == off+uint32(s) {
			if ok, _, _, _, _ := d.gsoFits(s); ok {
				return d.appendGSO(dst, s, false), nil
			}
		}
	}
	if badPos == DataHeaderLen+maxSegData && uint64(d.Offset())+uint64(d.DataLen()) <= uint64(d.MessageLength()) {
		// No interleaved header fits anywhere and the data fits the message as
		// one segment: an already segmented frame, larger than maxSegData
		// assumed (e.g. IPv4 segments read with the IPv6 size).
		return d.appendSingle(dst), nil
	}
	detail := fmt.Sprintf("seg header at byte %d holds offset %d, want %d for %d-byte segments, and no other segment size fits",
		badPos, badHave, badWant, maxSegData)
	if badHave == badWant {
		detail = fmt.Sprintf("%d bytes after the last %d-byte segment (byte %d) are too few for a seg header and data, and no other segment size fits",
			end-badPos, maxSegData, badPos)
	}
	return dst, &DecodeError{Type: TypeData, Version: d.v, Field: "seg.offset", Err: ErrSegments, Detail: detail}
}

func (d Data) appendSingle(dst []Segment) []Segment {
	n := d.DataLen()
	return append(dst, Segment{Offset: d.Offset(), Length: n, Data: clip(d.Payload(), n)})
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// gsoFits reports whether every captured interleaved seg header agrees with
// segments of s bytes and the segments tile the frame, whether any header
// was captured to check, and the first disagreement (byte position, offset
// found, offset expected; a tail too short for a seg header and data: its
// position, and 0 for both offsets).
func (d Data) gsoFits(s int) (ok, checked bool, pos int, have, want uint32) {
	total := d.DataLen()
	off := d.Offset()
	pos = DataHeaderLen + s // position of the next seg header
	end := DataHeaderLen + total
	for pos+SegHeaderLen < end {
		off += uint32(s)
		if pos+SegHeaderLen <= len(d.b) {
			if h := get32(d.b, pos); h != off {
				return false, true, pos, h, off
			}
			checked = true
		}
		pos += SegHeaderLen + s
	}
	if pos < end {
		// 1 to 4 bytes after the last segment: too few for a seg header
		// and a byte of data, so s does not tile the frame.
		return false, checked, pos, 0, 0
	}
	if !checked && len(d.b) >= DataHeaderLen+s+SegHeaderLen {
		// The data ends before a second header fits: s is too large.
		return false, false, DataHeaderLen + s, 0, 0
	}
	return true, checked, 0, 0, 0
}

func (d Data) appendGSO(dst []Segment, s int, assumed bool) []Segment {
	off := d.Offset()
	pos := DataHeaderLen
	end := DataHeaderLen + d.DataLen()
	for pos < end {
		n := min(s, end-pos)
		var data []byte
		if pos < len(d.b) {
			data = d.b[pos:min(pos+n, len(d.b))]
		}
		dst = append(dst, Segment{Offset: off, Length: n, Data: data, Assumed: assumed})
		off += uint32(n)
		pos += n + SegHeaderLen
	}
	return dst
}

// AckEntry is one struct homa_ack: the client id and server port of a
// completed RPC (2024 also has client_port).
type AckEntry struct {
	ClientID   uint64 `json:"client_id"`
	ClientPort uint16 `json:"client_port,omitempty"` // Version2024 only
	ServerPort uint16 `json:"server_port"`
}

// DataFields holds the values of a DATA packet for encoding; Payload is
// appended after the header as is.
type DataFields struct {
	Common        CommonFields `json:"common"`
	MessageLength uint32       `json:"message_length"`
	Incoming      uint32       `json:"incoming"`
	Ack           AckEntry     `json:"ack"`
	CutoffVersion uint16       `json:"cutoff_version"`
	Retransmit    uint8        `json:"retransmit"`
	SegOffset     uint32       `json:"-"` // seg.offset; JSON "seg": {"offset": N}
	Payload       []byte       `json:"-"`
}

// NewData returns the one-segment DATA packet carrying payload at byte
// offset off of a msgLen-byte message, framed as HomaModule frames it
// (facts WIRE-05): a first transmission has retransmit 0, the offset in
// common.sequence and seg.offset SegOffsetInSequence
// (homa_tx_data_pkt_alloc); a retransmission has retransmit 1 and the
// offset in both (homa_resend_data). incoming (U in a first transmission,
// WIRE-06; the retransmitted range's end in a retransmission, RTX-06) and
// cutoffVersion are the sender's to give; the ack is left empty. Every
// DATA a tester (conformance, explore) sends is built here, so that its
// framing charges nothing to the tester.
func NewData(c CommonFields, msgLen, incoming uint32, cutoffVersion uint16, off uint32, payload []byte, retransmit bool) *DataFields {
	c.Sequence = off
	f := &DataFields{Common: c, MessageLength: msgLen, Incoming: incoming,
		CutoffVersion: cutoffVersion, SegOffset: SegOffsetInSequence, Payload: payload}
	if retransmit {
		f.Retransmit, f.SegOffset = 1, off
	}
	return f
}

// Fields returns all header values of d; Payload aliases the captured data.
func (d Data) Fields() DataFields {
	return DataFields{
		Common: d.Common().Fields(), MessageLength: d.MessageLength(), Incoming: d.Incoming(),
		Ack:           AckEntry{ClientID: d.AckClientID(), ClientPort: d.AckClientPort(), ServerPort: d.AckServerPort()},
		CutoffVersion: d.CutoffVersion(), Retransmit: d.Retransmit(), SegOffset: d.SegOffset(),
		Payload: d.Payload(),
	}
}

// PacketType returns TypeData.
func (f *DataFields) PacketType() PacketType { return TypeData }

// CommonFields returns &f.Common.
func (f *DataFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the DATA header and payload to b (see [Fields]).
func (f *DataFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeData, &f.Common, f.Payload, o, func(h []byte, l *hdrs) {
		write32(h, &l.data[dataMessageLength], f.MessageLength)
		write32(h, &l.data[dataIncoming], f.Incoming)
		writeAckEntry(h, &l.dataAck, f.Ack)
		write16(h, &l.data[dataCutoffVersion], f.CutoffVersion)
		write8(h, &l.data[dataRetransmit], f.Retransmit)
		write32(h, &l.data[dataSegOffset], f.SegOffset)
	})
}

// MarshalJSON encodes f with HomaModule's field names, seg.offset as
// "seg": {"offset": N}.
func (f DataFields) MarshalJSON() ([]byte, error) {
	type plain DataFields
	return json.Marshal(struct {
		plain
		Seg struct {
			Offset uint32 `json:"offset"`
		} `json:"seg"`
	}{plain: plain(f), Seg: struct {
		Offset uint32 `json:"offset"`
	}{f.SegOffset}})
}
