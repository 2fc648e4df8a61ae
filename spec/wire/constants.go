package wire

import "fmt"

// Protocol constants, from HomaModule homa.h and homa_wire.h.
const (
	// IPProtoHoma is IPPROTO_HOMA, the IANA-assigned IP protocol 146 used by
	// HomaModule since commit f7e4717 (2024-10-25).
	IPProtoHoma = 146
	// IPProtoHoma2024 is the experimental IP protocol 253 used before that
	// (branch linux_6.1.38).
	IPProtoHoma2024 = 253
	// IPProtoTCP is the IP protocol of TCP-hijacked Homa frames.
	IPProtoTCP = 6

	// CommonHeaderLen is sizeof(struct homa_common_hdr): 28 bytes.
	CommonHeaderLen = 28
	// DataHeaderLen is sizeof(struct homa_data_hdr): 56 bytes in every version.
	DataHeaderLen = 56
	// GSOPrefixLen is the part of a DATA header replicated by GSO in a
	// non-hijacked multi-segment frame (doff 13): the header without seg.offset.
	GSOPrefixLen = 52
	// SegHeaderLen is sizeof(struct homa_seg_hdr): the 4-byte seg.offset.
	SegHeaderLen = 4
	// MaxGSOFrameLen bounds the data bytes of a GSO frame that Segments will
	// split: 256 KiB, above any IP datagram HomaModule builds (≤ 64 KiB).
	MaxGSOFrameLen = 1 << 18
	// MaxHeaderLen is HOMA_MAX_HEADER: 90 bytes (2024 ACK).
	MaxHeaderLen = 90

	// MaxMessageLength is HOMA_MAX_MESSAGE_LENGTH in bytes.
	MaxMessageLength = 1000000
	// MaxPriorities is HOMA_MAX_PRIORITIES.
	MaxPriorities = 8
	// MaxAcksPerPkt is HOMA_MAX_ACKS_PER_PKT (NUM_PEER_UNACKED_IDS on 2024):
	// ack slots in an ACK packet.
	MaxAcksPerPkt = 5
	// NumCutoffs is the number of entries in homa_cutoffs_hdr.unsched_cutoffs.
	NumCutoffs = 8

	// HijackFlags is the value of the TCP flags byte (offset 13) in every
	// HomaModule packet (SYN+RST, which real TCP never sends); homa_hijack.h.
	HijackFlags = 0x06
	// HijackUrgent is the value of the urgent field (offset 18) in every
	// HomaModule packet; HOMA_HIJACK_URGENT / HOMA_TCP_URGENT.
	HijackUrgent = 0xB97D

	// SegOffsetInSequence is the seg.offset sentinel 0xFFFFFFFF meaning "the
	// true offset is in common.sequence" (homa_gro_receive rewrites it).
	SegOffsetInSequence = 0xFFFFFFFF
	// ResendAll is the RESEND length 0xFFFFFFFF meaning "nothing received
	// yet; resend everything sent" (main since be5081e).
	ResendAll = 0xFFFFFFFF

	// DoffData is the doff byte of a single-segment DATA packet (14 words).
	DoffData = 0xE0
	// DoffGSO is the doff byte of a non-hijacked GSO DATA frame (13 words:
	// the 52-byte replicated prefix).
	DoffGSO = 0xD0
	// DoffControl is the doff byte of control packets on main (5 words, since
	// 82b6b88).
	DoffControl = 0x50

	// MaxSegDataIPv4 is max_seg_data at MTU 1500 over IPv4: 1500-20-56 bytes.
	MaxSegDataIPv4 = 1424
	// MaxSegDataIPv6 is max_seg_data at MTU 1500 over IPv6: 1500-40-56 bytes.
	MaxSegDataIPv6 = 1404
)

// MaxSchedPrioFix says how to make max_sched_prio m, which is not below
// num_priorities n, valid ("set max_sched_prio to 1 or less, or
// num_priorities to 4 or more"; the second only while n can rise to it,
// at most MaxPriorities): both parameters' checks name the fix.
// Neither bound is advised below 0 (max_sched_prio) or 1 (num_priorities).
func MaxSchedPrioFix(m, n int) string {
	raise := fmt.Sprintf("num_priorities to %d or more", max(m+1, 1))
	if n < 1 {
		return "set " + raise
	}
	fix := fmt.Sprintf("set max_sched_prio to %d or less", n-1)
	if m < MaxPriorities {
		fix += ", or " + raise
	}
	return fix
}
