package wire

import "encoding/json"

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
func (d Data) MessageLength() uint32 { return get32(d.b, 28) }

// Incoming returns incoming: in first transmissions the unscheduled byte
// count U = min(message_length, unsched_bytes); in retransmissions the end of
// the retransmitted range. Reserved (0) upstream.
func (d Data) Incoming() uint32 { return get32(d.b, 32) }

// AckClientID returns ack.client_id: the client id of a completed RPC that the
// sender acknowledges to the receiver (piggy-backed ack), or 0 for none.
func (d Data) AckClientID() uint64 { return get64(d.b, 36) }

// AckClientPort returns ack.client_port, which exists only in Version2024;
// 0 in other versions.
func (d Data) AckClientPort() uint16 {
	if d.v == Version2024 {
		return get16(d.b, 44)
	}
	return 0
}

// AckServerPort returns ack.server_port: the server port of the acked RPC.
func (d Data) AckServerPort() uint16 {
	if d.v == Version2024 {
		return get16(d.b, 46)
	}
	return get16(d.b, 44)
}

// CutoffVersion returns cutoff_version: the version of the CUTOFFS the sender
// last received from this packet's destination, 0 if none (reserved upstream).
func (d Data) CutoffVersion() uint16 {
	if d.v == Version2024 {
		return get16(d.b, 48)
	}
	return get16(d.b, 46)
}

// Retransmit returns retransmit: 1 iff the packet was sent because of a
// RESEND or an RPC_UNKNOWN restart.
func (d Data) Retransmit() uint8 {
	if d.v == Version2024 {
		return get8(d.b, 50)
	}
	return get8(d.b, 48)
}

// SegOffset returns the raw seg.offset: the offset of the first data byte, or
// 0xFFFFFFFF (SegOffsetInSequence) meaning the offset is in common.sequence.
func (d Data) SegOffset() uint32 { return get32(d.b, 52) }

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
	if n := d.wireLen - DataHeaderLen; n > 0 {
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
// nil, when the capture was truncated).
type Segment struct {
	Offset uint32
	Length int
	Data   []byte
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
// continue the previous segment, the segment size is inferred from the
// headers instead (HomaModule homa_message_out_fill builds all but the last
// segment at one size). It returns ErrSegments (wrapped in a *DecodeError)
// when no segment size explains the frame. Appending to a reused dst does not
// allocate.
func (d Data) Segments(dst []Segment, maxSegData int) ([]Segment, error) {
	if !d.IsGSO(maxSegData) {
		n := d.DataLen()
		return append(dst, Segment{Offset: d.Offset(), Length: n, Data: clip(d.Payload(), n)}), nil
	}
	if d.gsoFits(maxSegData) {
		return d.appendGSO(dst, maxSegData), nil
	}
	for s := 1; s < d.DataLen()-SegHeaderLen; s++ {
		if d.gsoFits(s) {
			return d.appendGSO(dst, s), nil
		}
	}
	return dst, &DecodeError{Type: TypeData, Version: d.v, Field: "seg.offset", Err: ErrSegments}
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// gsoFits reports whether every captured interleaved seg header agrees with
// segments of s bytes.
func (d Data) gsoFits(s int) bool {
	total := d.DataLen()
	off := d.Offset()
	pos := DataHeaderLen + s // position of the next seg header
	end := DataHeaderLen + total
	checked := false
	for pos+SegHeaderLen < end {
		off += uint32(s)
		if pos+SegHeaderLen <= len(d.b) {
			if get32(d.b, pos) != off {
				return false
			}
			checked = true
		}
		pos += SegHeaderLen + s
	}
	return checked || len(d.b) < DataHeaderLen+s+SegHeaderLen
}

func (d Data) appendGSO(dst []Segment, s int) []Segment {
	off := d.Offset()
	pos := DataHeaderLen
	end := DataHeaderLen + d.DataLen()
	for pos < end {
		n := min(s, end-pos)
		var data []byte
		if pos < len(d.b) {
			data = d.b[pos:min(pos+n, len(d.b))]
		}
		dst = append(dst, Segment{Offset: off, Length: n, Data: data})
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
	start := len(b)
	b, h, v, err := begin(b, TypeData, &f.Common, o)
	if err != nil {
		return b, err
	}
	put32(h, 28, f.MessageLength)
	put32(h, 32, f.Incoming)
	put64(h, 36, f.Ack.ClientID)
	if v == Version2024 {
		put16(h, 44, f.Ack.ClientPort)
		put16(h, 46, f.Ack.ServerPort)
		put16(h, 48, f.CutoffVersion)
		put8(h, 50, f.Retransmit)
	} else {
		put16(h, 44, f.Ack.ServerPort)
		put16(h, 46, f.CutoffVersion)
		put8(h, 48, f.Retransmit)
	}
	put32(h, 52, f.SegOffset)
	b = append(b, f.Payload...)
	return b, finish(b[start:], TypeData, v, o)
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
