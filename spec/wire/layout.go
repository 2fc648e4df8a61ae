package wire

// FieldLayout names one wire field: its HomaModule name (struct member, with
// "common." or "ack." prefixes where HomaModule nests it), its byte offset
// from the start of the Homa header and its size in bytes.
type FieldLayout struct {
	Name string
	Off  int
	Size int
}

var commonLayout = []FieldLayout{
	{"sport", 0, 2}, {"dport", 2, 2}, {"sequence", 4, 4}, {"ack", 8, 3}, {"type", 11, 1},
	{"doff", 12, 1}, {"flags", 13, 1}, {"window", 14, 2}, {"checksum", 16, 2},
	{"urgent", 18, 2}, {"sender_id", 20, 8},
}

func withCommon(fs ...FieldLayout) []FieldLayout {
	return append(append([]FieldLayout(nil), commonLayout...), fs...)
}

var (
	dataLayoutCurrent = withCommon(FieldLayout{"message_length", 28, 4}, FieldLayout{"incoming", 32, 4},
		FieldLayout{"ack.client_id", 36, 8}, FieldLayout{"ack.server_port", 44, 2}, FieldLayout{"cutoff_version", 46, 2},
		FieldLayout{"retransmit", 48, 1}, FieldLayout{"pad", 49, 3}, FieldLayout{"seg.offset", 52, 4})
	dataLayout2024 = withCommon(FieldLayout{"message_length", 28, 4}, FieldLayout{"incoming", 32, 4},
		FieldLayout{"ack.client_id", 36, 8}, FieldLayout{"ack.client_port", 44, 2}, FieldLayout{"ack.server_port", 46, 2},
		FieldLayout{"cutoff_version", 48, 2}, FieldLayout{"retransmit", 50, 1}, FieldLayout{"pad", 51, 1},
		FieldLayout{"seg.offset", 52, 4})
	grantLayout     = withCommon(FieldLayout{"offset", 28, 4}, FieldLayout{"priority", 32, 1})
	grantLayout2024 = withCommon(FieldLayout{"offset", 28, 4}, FieldLayout{"priority", 32, 1}, FieldLayout{"resend_all", 33, 1})
	resendLayout    = withCommon(FieldLayout{"offset", 28, 4}, FieldLayout{"length", 32, 4}, FieldLayout{"priority", 36, 1})
	resendUpstream  = withCommon(FieldLayout{"offset", 28, 4}, FieldLayout{"length", 32, 4})
	cutoffsLayout   = withCommon(FieldLayout{"unsched_cutoffs", 28, 32}, FieldLayout{"cutoff_version", 60, 2})
	ackLayout       = withCommon(FieldLayout{"num_acks", 28, 2}, FieldLayout{"acks", 30, 50})
	ackLayout2024   = withCommon(FieldLayout{"num_acks", 28, 2}, FieldLayout{"acks", 30, 60})
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
