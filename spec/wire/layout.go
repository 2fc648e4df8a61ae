package wire

import "slices"

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

// The wire offsets. Every field of every header is placed here once: the
// tables below hold the current format, and the other versions are written
// as their differences from it (versionHdrs). The typed views' getters, the
// AppendTo encoders, Layout (and through it truncation errors and the
// generated Wireshark dissector) and PacketType.HeaderLen all read these
// tables. Each header is an array of FieldLayout indexed by the named
// constants of its struct, in the style of gVisor's pkg/tcpip/header. A
// field with Size 0 does not exist in that version: getters read 0 from it
// and encoders write nothing to it.

// Fields of struct homa_common_hdr (homa_wire.h), the same in every version.
const (
	commonSport    = iota // sport: the sender's port
	commonDport           // dport: the receiver's port
	commonSequence        // sequence: DATA's offset when seg.offset is 0xFFFFFFFF
	commonAck             // ack[3]: unused high bytes of TCP's acknowledgment number
	commonType            // type: the opcode
	commonDoff            // doff: TCP data offset, high nibble
	commonFlags           // flags: 0x06 (upstream reserved1)
	commonWindow          // window: unused
	commonChecksum        // checksum: TCP-style on main
	commonUrgent          // urgent: 0xB97D (upstream reserved2)
	commonSenderID        // sender_id: the RPC id as the sender knows it
	numCommonFields
)

// commonHdr is struct homa_common_hdr: CommonHeaderLen bytes whose first 20
// line up with a TCP header.
var commonHdr = [numCommonFields]FieldLayout{
	commonSport:    fl("sport", 0, 2),
	commonDport:    fl("dport", 2, 2),
	commonSequence: fl("sequence", 4, 4),
	commonAck:      fl("ack", 8, 3),
	commonType:     fl("type", 11, 1),
	commonDoff:     fl("doff", 12, 1),
	commonFlags:    fl("flags", 13, 1),
	commonWindow:   fl("window", 14, 2),
	commonChecksum: fl("checksum", 16, 2),
	commonUrgent:   fl("urgent", 18, 2),
	commonSenderID: fl("sender_id", 20, 8),
}

// tcpHeaderLen is the part of the common header shaped as a TCP header
// without options (sport … urgent): 20 bytes.
var tcpHeaderLen = commonHdr[commonUrgent].Off + commonHdr[commonUrgent].Size

// Fields of struct homa_data_hdr after its common header.
const (
	dataMessageLength = iota // message_length
	dataIncoming             // incoming (upstream: reserved)
	dataAck                  // ack: a struct homa_ack (members as ackEntry)
	dataCutoffVersion        // cutoff_version (upstream: reserved)
	dataRetransmit           // retransmit
	dataPad                  // pad
	dataSegOffset            // seg.offset (struct homa_seg_hdr)
	numDataFields
)

// Fields of struct homa_grant_hdr after its common header.
const (
	grantOffset    = iota // offset
	grantPriority         // priority
	grantResendAll        // resend_all (2024 only)
	numGrantFields
)

// Fields of struct homa_resend_hdr after its common header.
const (
	resendOffset   = iota // offset
	resendLength          // length
	resendPriority        // priority (absent upstream)
	numResendFields
)

// Fields of struct homa_cutoffs_hdr after its common header.
const (
	cutoffsUnschedCutoffs = iota // unsched_cutoffs[HOMA_MAX_PRIORITIES]
	cutoffsCutoffVersion         // cutoff_version
	numCutoffsFields
)

// Fields of struct homa_ack_hdr after its common header.
const (
	ackNumAcks = iota // num_acks
	ackAcks           // acks[HOMA_MAX_ACKS_PER_PKT], elements as ackEntry
	numAckFields
)

// Fields of struct homa_ack (an element of acks and DATA's ack), offsets
// from the element's start.
const (
	ackEntryClientID   = iota // client_id
	ackEntryClientPort        // client_port (2024 only)
	ackEntryServerPort        // server_port
	numAckEntryFields
)

// numTypes is the number of opcodes, MinType..MaxType.
const numTypes = int(MaxType-MinType) + 1

// hdrs is the layout of every packet type in one wire version: the fields
// as written (data … ackEntry; the size and members of DATA's ack and of
// the acks array follow from ackEntry) and what build derives from them.
type hdrs struct {
	data     [numDataFields]FieldLayout
	grant    [numGrantFields]FieldLayout
	resend   [numResendFields]FieldLayout
	cutoffs  [numCutoffsFields]FieldLayout
	ack      [numAckFields]FieldLayout
	ackEntry [numAckEntryFields]FieldLayout
	lacks    []PacketType // types the version does not have

	// Derived for the accessors: every struct member and array element at
	// its offset from the start of the header (zero where the version
	// lacks the type).
	dataAck        [numAckEntryFields]FieldLayout                // DATA's ack
	acks           [MaxAcksPerPkt][numAckEntryFields]FieldLayout // ACK's acks[i]
	unschedCutoffs [NumCutoffs]FieldLayout                       // CUTOFFS' unsched_cutoffs[i]
	at             atTable
	has            [numTypes]bool
	layout         [numTypes][]FieldLayout // common header then own fields, by offset
	headerLen      [numTypes]int           // end of the last field
}

// atTable holds, for the typed views' getters read on every packet, each
// field's offset as atOf gives it for the getter's size (derived from the
// tables by build; commonAt for the common header).
type atTable struct {
	data    [numDataFields]uint
	dataAck [numAckEntryFields]uint
}

// dataGetterSize and ackEntryGetterSize are the sizes the Data getters
// read each field at (0: no getter of that name reads it through atTable).
var (
	dataGetterSize     = [numDataFields]int{dataMessageLength: 4, dataIncoming: 4, dataCutoffVersion: 2, dataRetransmit: 1, dataSegOffset: 4}
	ackEntryGetterSize = [numAckEntryFields]int{ackEntryClientID: 8, ackEntryClientPort: 2, ackEntryServerPort: 2}
)

// commonAt is commonHdr's atTable: each field at the size its Common
// getter reads.
var commonAt = func() (t [numCommonFields]uint) {
	for i, f := range commonHdr {
		t[i] = atOf(f, f.Size)
	}
	return t
}()

// hdrsCurrent is HomaModule main's homa_wire.h (IP protocol 146).
var hdrsCurrent = hdrs{
	data: [numDataFields]FieldLayout{
		dataMessageLength: fl("message_length", 28, 4),
		dataIncoming:      fl("incoming", 32, 4),
		dataAck:           {Name: "ack", Off: 36}, // size and members: ackEntry
		dataCutoffVersion: fl("cutoff_version", 46, 2),
		dataRetransmit:    fl("retransmit", 48, 1),
		dataPad:           fl("pad", 49, 3),
		dataSegOffset:     fl("seg.offset", GSOPrefixLen, SegHeaderLen),
	},
	grant: [numGrantFields]FieldLayout{
		grantOffset:   fl("offset", 28, 4),
		grantPriority: fl("priority", 32, 1),
	},
	resend: [numResendFields]FieldLayout{
		resendOffset:   fl("offset", 28, 4),
		resendLength:   fl("length", 32, 4),
		resendPriority: fl("priority", 36, 1),
	},
	cutoffs: [numCutoffsFields]FieldLayout{
		cutoffsUnschedCutoffs: {Name: "unsched_cutoffs", Off: 28, Size: 4 * NumCutoffs, Count: NumCutoffs},
		cutoffsCutoffVersion:  fl("cutoff_version", 60, 2),
	},
	ack: [numAckFields]FieldLayout{
		ackNumAcks: fl("num_acks", 28, 2),
		ackAcks:    {Name: "acks", Off: 30, Count: MaxAcksPerPkt}, // size and members: ackEntry
	},
	ackEntry: [numAckEntryFields]FieldLayout{
		ackEntryClientID:   fl("client_id", 0, 8),
		ackEntryServerPort: fl("server_port", 8, 2),
	},
}

// hdrs2024 is branch linux_6.1.38's homa_wire.h (IP protocol 253) where it
// differs from main: struct homa_ack has client_port (12 bytes, so DATA's
// fields after ack.client_id move by 2 and pad shrinks to 1 byte, and ACK
// is 90 bytes), and GRANT has resend_all (removed by 04df9e0).
func hdrs2024() hdrs {
	h := hdrsCurrent
	h.data[dataCutoffVersion] = fl("cutoff_version", 48, 2)
	h.data[dataRetransmit] = fl("retransmit", 50, 1)
	h.data[dataPad] = fl("pad", 51, 1)
	h.grant[grantResendAll] = fl("resend_all", 33, 1)
	h.ackEntry[ackEntryClientPort] = fl("client_port", 8, 2)
	h.ackEntry[ackEntryServerPort] = fl("server_port", 10, 2)
	return h
}

// hdrs2025 is main's homa_wire.h between be127d8 and 04df9e0 (branch
// linux_6.10.6): the current layout with GRANT's resend_all.
func hdrs2025() hdrs {
	h := hdrsCurrent
	h.grant[grantResendAll] = fl("resend_all", 33, 1)
	return h
}

// hdrsUpstream is what HomaModule util/strip.py leaves for the upstream
// kernel: no GRANT, CUTOFFS or FREEZE, and no RESEND priority (36 bytes).
func hdrsUpstream() hdrs {
	h := hdrsCurrent
	h.grant, h.cutoffs = [numGrantFields]FieldLayout{}, [numCutoffsFields]FieldLayout{}
	h.resend[resendPriority] = FieldLayout{}
	h.lacks = []PacketType{TypeGrant, TypeCutoffs, TypeFreeze}
	return h
}

// versionHdrs points to the built layouts of every Version value: one
// entry per uint8, so that the lookup on the getters' path has neither a
// bounds check nor a branch. VersionAuto and the values no constant names
// (an options field set by hand) have the current layout.
var versionHdrs = func() (t [256]*hdrs) {
	current, v2024, upstream, v2025 := hdrsCurrent.build(), hdrs2024().build(), hdrsUpstream().build(), hdrs2025().build()
	for i := range t {
		t[i] = &current
	}
	t[Version2024], t[VersionUpstream], t[Version2025] = &v2024, &upstream, &v2025
	return t
}()

// hdrsOf returns the layouts of version v.
func hdrsOf(v Version) *hdrs { return versionHdrs[v] }

// build derives the size and members of DATA's ack and of the acks array
// from ackEntry, every struct member and array element at its offset in the
// header, and the per-type layouts and header lengths.
func (h hdrs) build() hdrs {
	entry := present(h.ackEntry[:])
	last := entry[len(entry)-1]
	n := last.Off + last.Size
	h.data[dataAck].Size, h.data[dataAck].Elem = n, entry
	h.dataAck = members(h.data[dataAck].Off, &h.ackEntry)
	acks := &h.ack[ackAcks]
	acks.Size, acks.Elem = acks.Count*n, entry
	for i := range h.acks {
		h.acks[i] = members(acks.Off+i*n, &h.ackEntry)
	}
	if u := h.cutoffs[cutoffsUnschedCutoffs]; u.Count > 0 {
		for i := range h.unschedCutoffs {
			h.unschedCutoffs[i] = fl(u.Name, u.Off+i*u.Size/u.Count, u.Size/u.Count)
		}
	}
	h.at = atTable{}
	for i, size := range dataGetterSize {
		h.at.data[i] = atOf(h.data[i], size)
	}
	for i, size := range ackEntryGetterSize {
		h.at.dataAck[i] = atOf(h.dataAck[i], size)
	}
	for i := range h.has {
		h.has[i] = true
	}
	for _, t := range h.lacks {
		h.has[t-MinType] = false
	}
	own := map[PacketType][]FieldLayout{TypeData: h.data[:], TypeGrant: h.grant[:], TypeResend: h.resend[:],
		TypeCutoffs: h.cutoffs[:], TypeAck: h.ack[:]}
	for i := range h.layout {
		if !h.has[i] {
			continue
		}
		l := present(append(commonHdr[:len(commonHdr):len(commonHdr)], flatten(own[MinType+PacketType(i)])...))
		end := l[len(l)-1]
		h.layout[i], h.headerLen[i] = l, end.Off+end.Size
	}
	return h
}

// flatten replaces each struct field of fs (Elem set, Count 0: DATA's ack)
// by its members, named "struct.member" at their offsets in the header, as
// HomaModule's field names go (ack.client_id); so Layout has scalars and
// arrays only, as FieldLayout documents.
func flatten(fs []FieldLayout) []FieldLayout {
	var out []FieldLayout
	for _, f := range fs {
		if f.Elem == nil || f.Count > 0 {
			out = append(out, f)
			continue
		}
		for _, m := range f.Elem {
			out = append(out, fl(f.Name+"."+m.Name, f.Off+m.Off, m.Size))
		}
	}
	return out
}

// present returns a new slice of the fields of fs that exist (Size > 0),
// sorted by offset.
func present(fs []FieldLayout) []FieldLayout {
	out := slices.DeleteFunc(slices.Clone(fs), func(f FieldLayout) bool { return f.Size == 0 })
	slices.SortStableFunc(out, func(a, b FieldLayout) int { return a.Off - b.Off })
	return out
}

// Layout returns the field layout of type t in version v (VersionAuto means
// VersionCurrent), in offset order, or nil if v lacks t. The slice is shared;
// do not modify it.
func Layout(t PacketType, v Version) []FieldLayout {
	if !t.SupportedBy(v) {
		return nil
	}
	return hdrsOf(v).layout[t-MinType]
}

// LayoutField returns the field named name (as FieldLayout.Name spells it:
// "retransmit", "ack.client_id", "acks") in the layout of type t in version
// v, and whether there is one: the way to a field's offset for code that
// cannot use the typed views (nftables rules, dissectors, packet matchers).
func LayoutField(t PacketType, v Version, name string) (FieldLayout, bool) {
	for _, f := range Layout(t, v) {
		if f.Name == name {
			return f, true
		}
	}
	return FieldLayout{}, false
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

// commonLayout is the common header's layout, in offset order.
var commonLayout = present(commonHdr[:])

// CommonLayout returns the layout of the 28-byte common header (struct
// homa_common_hdr), the same in every version. The slice is shared; do
// not modify it.
func CommonLayout() []FieldLayout { return commonLayout }

// members returns the members of a struct homa_ack that starts at offset
// off; a member the version lacks stays absent.
func members(off int, entry *[numAckEntryFields]FieldLayout) [numAckEntryFields]FieldLayout {
	out := *entry
	for i := range out {
		if out[i].Size > 0 {
			out[i].Off += off
		}
	}
	return out
}
