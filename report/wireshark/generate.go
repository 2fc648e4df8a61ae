package wireshark

import (
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"

	"github.com/homatest/homatest/spec/wire"
)

// Field is one display-filter field of the generated dissector.
type Field struct {
	// Abbr is the display-filter name, e.g. "homa.grant.offset".
	Abbr string
	// Label is the name Wireshark shows in the packet tree.
	Label string
	// Kind is the Lua ProtoField constructor: uint8, uint16, uint32,
	// uint64, bytes, string or bool.
	Kind string
	// Hex shows an integer in hexadecimal.
	Hex bool
	// Wire is the spec/wire layout name the field shows ("seg.offset",
	// "acks.client_id"); empty for fields the dissector derives (the
	// priority from the IP header, the RPC id, a GSO segment's offset …).
	Wire string
	// Type is the packet type whose header holds the field; 0 for the
	// common header and derived fields of every type.
	Type wire.PacketType
}

// versions are the wire formats the dissector knows, in the order of its
// "Wire format" preference (auto first).
var versions = []wire.Version{wire.VersionCurrent, wire.Version2024, wire.VersionUpstream}

// labels are the tree labels of the layout's fields (by wire name; type-
// specific names override common ones with "TYPE:name" keys).
var labels = map[string]string{
	"sport": "Source port", "dport": "Destination port", "sequence": "Sequence (common.sequence)",
	"ack": "TCP acknowledgment bytes (common.ack, unused)", "type": "Type", "doff": "Data offset (doff)",
	"flags": "Flags", "window": "Window", "checksum": "Checksum", "urgent": "Urgent",
	"sender_id":      "Sender id",
	"message_length": "Message length", "incoming": "Incoming (unscheduled or retransmitted end)",
	"ack.client_id": "Acked RPC: client id", "ack.client_port": "Acked RPC: client port",
	"ack.server_port": "Acked RPC: server port", "cutoff_version": "Cutoff version",
	"retransmit": "Retransmit", "pad": "Padding", "seg.offset": "Segment offset (seg.offset)",
	"GRANT:offset": "Granted offset", "GRANT:priority": "Priority for scheduled DATA",
	"resend_all":    "Resend all",
	"RESEND:offset": "Offset to resend", "length": "Length to resend", "RESEND:priority": "Priority for retransmitted DATA",
	"unsched_cutoffs": "Unscheduled cutoff", "CUTOFFS:cutoff_version": "Cutoff version",
	"num_acks": "Number of acks", "acks.client_id": "Ack: client id", "acks.client_port": "Ack: client port",
	"acks.server_port": "Ack: server port",
}

// hexFields are shown in hexadecimal.
var hexFields = map[string]bool{"doff": true, "flags": true, "window": true, "checksum": true, "urgent": true, "type": true}

// derived are the fields the dissector computes rather than reads from
// one header field.
var derived = []Field{
	{Abbr: "homa.wire", Label: "Wire format", Kind: "string"},
	{Abbr: "homa.hijacked", Label: "TCP-hijacked", Kind: "bool"},
	{Abbr: "homa.priority", Label: "Priority (from the IP header)", Kind: "uint8"},
	{Abbr: "homa.rpc_id", Label: "RPC id (the client's)", Kind: "uint64"},
	{Abbr: "homa.role", Label: "Sent by", Kind: "string"},
	{Abbr: "homa.error", Label: "Decode error", Kind: "string"},
	{Abbr: "homa.data.offset", Label: "Offset of the segment's first byte", Kind: "uint32", Type: wire.TypeData},
	{Abbr: "homa.data.len", Label: "Data bytes in the segment", Kind: "uint32", Type: wire.TypeData},
	{Abbr: "homa.data.segment", Label: "GSO segment", Kind: "uint32", Type: wire.TypeData},
	{Abbr: "homa.data.segments", Label: "GSO segments in the frame", Kind: "uint32", Type: wire.TypeData},
	{Abbr: "homa.data.segment_size_assumed", Label: "Segment size assumed (seg headers not captured)", Kind: "bool", Type: wire.TypeData},
	{Abbr: "homa.data.payload", Label: "Data", Kind: "bytes", Type: wire.TypeData},
}

// Abbr returns the display-filter name of the layout field named name
// (wire.FieldLayout.Name, with "acks.client_id" for a member of an array
// element) of packet type t: "homa.NAME" for the common header (common.ack
// is homa.common.ack, apart from the ACK packet's fields), else
// "homa.TYPE.NAME" with the type in lower case (homa.rpc_unknown …).
func Abbr(t wire.PacketType, name string) string {
	if isCommon(name) {
		if name == "ack" {
			return "homa.common.ack"
		}
		return "homa." + name
	}
	return "homa." + strings.ToLower(t.String()) + "." + name
}

func isCommon(name string) bool {
	return slices.ContainsFunc(wire.CommonLayout(), func(f wire.FieldLayout) bool { return f.Name == name })
}

func label(t wire.PacketType, name string) string {
	if l, ok := labels[t.String()+":"+name]; ok {
		return l
	}
	return labels[name]
}

// kindOf is the ProtoField constructor for a field of size bytes.
func kindOf(size int) string {
	switch size {
	case 1:
		return "uint8"
	case 2:
		return "uint16"
	case 4:
		return "uint32"
	case 8:
		return "uint64"
	}
	return "bytes"
}

// Fields returns every field of the dissector: the layout fields of every
// packet type in every version (one per display-filter name), then the
// derived ones. It returns an error if a layout field has no label, or one
// name has different sizes in different versions and is not shown as
// bytes — a new wire field must be named here before it is shown.
func Fields() ([]Field, error) {
	var out []Field
	index := map[string]int{}
	add := func(t wire.PacketType, name string, size int) error {
		ab := Abbr(t, name)
		f := Field{Abbr: ab, Label: label(t, name), Kind: kindOf(size), Hex: hexFields[name], Wire: name}
		if !isCommon(name) {
			f.Type = t
		}
		if f.Label == "" {
			return fmt.Errorf("wireshark: field %s (%s %s) has no label", ab, t, name)
		}
		if i, ok := index[ab]; ok {
			if out[i].Kind != f.Kind {
				out[i].Kind = "bytes" // pad: 3 bytes, 1 byte in 2024
			}
			return nil
		}
		index[ab] = len(out)
		out = append(out, f)
		return nil
	}
	for _, v := range versions {
		for _, t := range wire.AllTypes {
			for _, fl := range wire.Layout(t, v) {
				switch {
				case fl.Count > 0 && fl.Elem != nil:
					for _, m := range fl.Elem {
						if err := add(t, fl.Name+"."+m.Name, m.Size); err != nil {
							return nil, err
						}
					}
				case fl.Count > 0:
					if err := add(t, fl.Name, fl.Size/fl.Count); err != nil {
						return nil, err
					}
				default:
					if err := add(t, fl.Name, fl.Size); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	for _, f := range derived {
		if _, dup := index[f.Abbr]; dup {
			return nil, fmt.Errorf("wireshark: derived field %s is also a layout field", f.Abbr)
		}
		out = append(out, f)
	}
	return out, nil
}

//go:embed dissector.lua.tmpl
var luaTemplate string

// tmplData is what dissector.lua.tmpl renders.
type tmplData struct {
	Fields   []Field
	Types    []tmplType
	Versions []tmplVersion
	Common   string
	Const    []tmplConst
}

type tmplType struct {
	Code uint8
	Name string
}

type tmplVersion struct {
	Name    string
	Proto   uint8
	Headers []tmplHeader
}

type tmplHeader struct {
	Code   uint8
	Len    int
	Layout string // a Lua table constructor
}

type tmplConst struct {
	Name string
	// Value is int64: RESEND_ALL and SEG_OFFSET_IN_SEQUENCE overflow a
	// 32-bit int.
	Value int64
}

// luaLayout renders a layout of type t as a Lua list of
// {name=, abbr=, off=, size=[, count=, elem={...}]}.
func luaLayout(t wire.PacketType, layout []wire.FieldLayout, prefix string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, f := range layout {
		if i > 0 {
			b.WriteString(",")
		}
		name := prefix + f.Name
		fmt.Fprintf(&b, "\n\t\t{name=%q, off=%d, size=%d", name, f.Off, f.Size)
		switch {
		case f.Count > 0 && f.Elem != nil:
			fmt.Fprintf(&b, ", count=%d, elem=%s", f.Count, luaLayout(t, f.Elem, name+"."))
		case f.Count > 0:
			fmt.Fprintf(&b, ", count=%d, abbr=%q", f.Count, Abbr(t, name))
		default:
			fmt.Fprintf(&b, ", abbr=%q", Abbr(t, name))
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

// typeLayout renders the layout of t in v as with_common({own fields}):
// the common header is written once (COMMON) and prepended in Lua. It
// panics if the layout does not start with the common header (a change
// to spec/wire this generator must learn about).
func typeLayout(t wire.PacketType, v wire.Version) string {
	l := wire.Layout(t, v)
	c := wire.CommonLayout()
	if len(l) < len(c) || !slices.EqualFunc(l[:len(c)], c, func(a, b wire.FieldLayout) bool {
		return a.Name == b.Name && a.Off == b.Off && a.Size == b.Size
	}) {
		panic(fmt.Sprintf("wireshark: the %v layout of %v does not start with the common header", v, t))
	}
	return "with_common(" + luaLayout(t, l[len(c):], "") + ")"
}

// Generate writes the Lua dissector (homa.lua) to w.
func Generate(w io.Writer) error {
	fields, err := Fields()
	if err != nil {
		return err
	}
	d := tmplData{Fields: fields, Common: luaLayout(0, wire.CommonLayout(), "")}
	for _, t := range wire.AllTypes {
		d.Types = append(d.Types, tmplType{Code: uint8(t), Name: t.String()})
	}
	for _, v := range versions {
		tv := tmplVersion{Name: v.String(), Proto: v.IPProtocol()}
		for _, t := range wire.AllTypes {
			if !t.SupportedBy(v) {
				continue
			}
			tv.Headers = append(tv.Headers, tmplHeader{Code: uint8(t), Len: t.HeaderLen(v), Layout: typeLayout(t, v)})
		}
		d.Versions = append(d.Versions, tv)
	}
	d.Const = []tmplConst{
		{"IPPROTO_HOMA", wire.IPProtoHoma}, {"IPPROTO_HOMA2024", wire.IPProtoHoma2024}, {"IPPROTO_TCP", wire.IPProtoTCP},
		{"COMMON_HEADER_LEN", wire.CommonHeaderLen}, {"DATA_HEADER_LEN", wire.DataHeaderLen},
		{"SEG_HEADER_LEN", wire.SegHeaderLen}, {"MAX_GSO_FRAME_LEN", wire.MaxGSOFrameLen},
		{"MAX_ACKS_PER_PKT", wire.MaxAcksPerPkt}, {"HIJACK_FLAGS", wire.HijackFlags}, {"HIJACK_URGENT", wire.HijackUrgent},
		{"SEG_OFFSET_IN_SEQUENCE", wire.SegOffsetInSequence}, {"RESEND_ALL", wire.ResendAll},
		{"DOFF_GSO", wire.DoffGSO}, {"MAX_SEG_DATA_IPV4", wire.MaxSegDataIPv4}, {"MAX_SEG_DATA_IPV6", wire.MaxSegDataIPv6},
		{"TYPE_DATA", int64(wire.TypeData)}, {"TYPE_GRANT", int64(wire.TypeGrant)}, {"TYPE_RESEND", int64(wire.TypeResend)},
		{"TYPE_CUTOFFS", int64(wire.TypeCutoffs)}, {"TYPE_ACK", int64(wire.TypeAck)},
	}
	t, err := template.New("homa.lua").Delims("<%", "%>").Parse(luaTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, d)
}
