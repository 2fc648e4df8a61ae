package wire

// FieldLayout names one wire field: its HomaModule name (struct member, with
// "common." or "ack." prefixes where HomaModule nests it), its byte offset
// from the start of the Homa header and its size in bytes. An array field
// (unsched_cutoffs[8], acks[5]) has Count > 0 elements of Size/Count bytes
// each; Elem describes the members of one element (acks: client_id, …,
// offsets from the element's start), nil for an array of integers.
type FieldLayout struct {
	Name  string
	Off   int
	Size  int
	Count int
	Elem  []FieldLayout
}

// fl is a scalar field.
func fl(name string, off, size int) FieldLayout { return FieldLayout{Name: name, Off: off, Size: size} }

var commonLayout = []FieldLayout{
	fl("sport", 0, 2), fl("dport", 2, 2), fl("sequence", 4, 4), fl("ack", 8, 3), fl("type", 11, 1),
	fl("doff", 12, 1), fl("flags", 13, 1), fl("window", 14, 2), fl("checksum", 16, 2),
	fl("urgent", 18, 2), fl("sender_id", 20, 8),
}

// ackEntryLayout is struct homa_ack; ackEntryLayout2024 has client_port.
var (
	ackEntryLayout     = []FieldLayout{fl("client_id", 0, 8), fl("server_port", 8, 2)}
	ackEntryLayout2024 = []FieldLayout{fl("client_id", 0, 8), fl("client_port", 8, 2), fl("server_port", 10, 2)}
)

func withCommon(fs ...FieldLayout) []FieldLayout {
	return append(append([]FieldLayout(nil), commonLayout...), fs...)
}

var (
	dataLayoutCurrent = withCommon(fl("message_length", 28, 4), fl("incoming", 32, 4),
		fl("ack.client_id", 36, 8), fl("ack.server_port", 44, 2), fl("cutoff_version", 46, 2),
		fl("retransmit", 48, 1), fl("pad", 49, 3), fl("seg.offset", 52, 4))
	dataLayout2024 = withCommon(fl("message_length", 28, 4), fl("incoming", 32, 4),
		fl("ack.client_id", 36, 8), fl("ack.client_port", 44, 2), fl("ack.server_port", 46, 2),
		fl("cutoff_version", 48, 2), fl("retransmit", 50, 1), fl("pad", 51, 1),
		fl("seg.offset", 52, 4))
	grantLayout     = withCommon(fl("offset", 28, 4), fl("priority", 32, 1))
	grantLayout2024 = withCommon(fl("offset", 28, 4), fl("priority", 32, 1), fl("resend_all", 33, 1))
	resendLayout    = withCommon(fl("offset", 28, 4), fl("length", 32, 4), fl("priority", 36, 1))
	resendUpstream  = withCommon(fl("offset", 28, 4), fl("length", 32, 4))
	cutoffsLayout   = withCommon(FieldLayout{Name: "unsched_cutoffs", Off: 28, Size: 4 * NumCutoffs, Count: NumCutoffs},
		fl("cutoff_version", 60, 2))
	ackLayout = withCommon(fl("num_acks", 28, 2),
		FieldLayout{Name: "acks", Off: 30, Size: MaxAcksPerPkt * 10, Count: MaxAcksPerPkt, Elem: ackEntryLayout})
	ackLayout2024 = withCommon(fl("num_acks", 28, 2),
		FieldLayout{Name: "acks", Off: 30, Size: MaxAcksPerPkt * 12, Count: MaxAcksPerPkt, Elem: ackEntryLayout2024})
)

// Layout returns the field layout of type t in version v (VersionAuto means
// VersionCurrent), in offset order, or nil if v lacks t. The slice is shared;
// do not modify it.
func Layout(t PacketType, v Version) []FieldLayout {
	if !t.SupportedBy(v) {
		return nil
	}
	switch t {
	case TypeData:
		if v == Version2024 {
			return dataLayout2024
		}
		return dataLayoutCurrent
	case TypeGrant:
		if v == Version2024 {
			return grantLayout2024
		}
		return grantLayout
	case TypeResend:
		if v == VersionUpstream {
			return resendUpstream
		}
		return resendLayout
	case TypeCutoffs:
		return cutoffsLayout
	case TypeAck:
		if v == Version2024 {
			return ackLayout2024
		}
		return ackLayout
	default:
		return commonLayout
	}
}

// truncatedAt returns the first field of layout that does not fit in have bytes.
func truncatedAt(layout []FieldLayout, have int) FieldLayout {
	for _, f := range layout {
		if f.Off+f.Size > have {
			return f
		}
	}
	return FieldLayout{Name: "header", Off: 0, Size: have + 1}
}

// CommonLayout returns the layout of the 28-byte common header (struct
// homa_common_hdr), the same in every version. The slice is shared; do
// not modify it.
func CommonLayout() []FieldLayout { return commonLayout }
