package spec

import (
	"sort"

	"github.com/homatest/homatest/spec/wire"
)

// FieldCoverage is one row of the wire coverage table: a header field of a
// packet type (HomaModule homa_wire.h names; "IP" for the IP header
// fields HomaModule sets), the rules that constrain its value, or why its
// value is free.
type FieldCoverage struct {
	Type  string   `json:"type"`
	Field string   `json:"field"`
	Rules []string `json:"rules"`
	Free  string   `json:"free,omitempty"`
}

// SendCoverage says, for one packet type, the rules that say when it may
// be sent and, where HomaModule must send it, by when; Note says what no
// rule judges.
type SendCoverage struct {
	Type string   `json:"type"`
	May  []string `json:"may"`
	Must []string `json:"must"`
	Note string   `json:"note,omitempty"`
}

// fieldRules maps "TYPE.field" (or "*.field" for the common header, or
// "IP.field") to the rules constraining it or, with a leading "free: ",
// why its value is free.
var fieldRules = map[string][]string{
	"*.sport":     {"HOMA-ID-002", "HOMA-WIRE-011"},
	"*.dport":     {"HOMA-ID-002", "HOMA-WIRE-011", "HOMA-ID-005"},
	"*.sequence":  {"HOMA-WIRE-009", "HOMA-WIRE-010"},
	"*.ack":       {"HOMA-WIRE-009"},
	"*.type":      {"HOMA-WIRE-001"},
	"*.doff":      {"HOMA-WIRE-005", "HOMA-WIRE-010"},
	"*.flags":     {"HOMA-WIRE-004", "HOMA-WIRE-009"},
	"*.window":    {"HOMA-WIRE-009"},
	"*.checksum":  {"free: receivers do not verify it for IP protocol 146/253; main (since 19f5dec) writes a TCP pseudo-header sum, older builds 0, hijacked GSO segments a partial sum"},
	"*.urgent":    {"HOMA-WIRE-004", "HOMA-WIRE-009"},
	"*.sender_id": {"HOMA-ID-001", "HOMA-ID-003", "HOMA-ID-004", "HOMA-WIRE-011", "HOMA-ACK-010"},

	"DATA.message_length":  {"HOMA-WIRE-002", "HOMA-WIRE-003"},
	"DATA.incoming":        {"HOMA-WIRE-007", "HOMA-RESEND-012", "HOMA-RESEND-020"},
	"DATA.ack.client_id":   {"HOMA-ACK-004", "HOMA-ACK-009"},
	"DATA.ack.client_port": {"HOMA-ACK-004"},
	"DATA.ack.server_port": {"HOMA-ACK-004"},
	"DATA.cutoff_version":  {"HOMA-CUTOFF-001", "HOMA-CUTOFF-002", "HOMA-CUTOFF-003", "HOMA-PRIO-002"},
	"DATA.retransmit":      {"HOMA-RESEND-003", "HOMA-RESEND-010", "HOMA-RESEND-011", "HOMA-RESEND-021", "HOMA-WIRE-006"},
	"DATA.pad":             {"HOMA-WIRE-009"},
	"DATA.seg.offset":      {"HOMA-WIRE-006", "HOMA-WIRE-010"},

	"GRANT.offset":     {"HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-004", "HOMA-GRANT-005", "HOMA-GRANT-009", "HOMA-GRANT-018"},
	"GRANT.priority":   {"HOMA-GRANT-007", "HOMA-GRANT-008", "HOMA-GRANT-011", "HOMA-GRANT-015"},
	"GRANT.resend_all": {"HOMA-RESEND-003", "HOMA-GRANT-016"},

	"RESEND.offset":   {"HOMA-RESEND-012", "HOMA-RESEND-016", "HOMA-RESEND-025", "HOMA-RESEND-026"},
	"RESEND.length":   {"HOMA-RESEND-012", "HOMA-RESEND-016", "HOMA-RESEND-025", "HOMA-RESEND-026"},
	"RESEND.priority": {"HOMA-RESEND-013", "HOMA-RESEND-004"},

	"CUTOFFS.unsched_cutoffs": {"HOMA-CUTOFF-004", "HOMA-CUTOFF-006", "HOMA-PRIO-002"},
	"CUTOFFS.cutoff_version":  {"HOMA-CUTOFF-001", "HOMA-CUTOFF-003", "HOMA-CUTOFF-004", "HOMA-CUTOFF-006"},

	"ACK.num_acks": {"HOMA-WIRE-008", "HOMA-ACK-007"},
	"ACK.acks":     {"HOMA-ACK-004", "HOMA-ACK-003"},

	"IP.protocol":      {"free: 146 (main), 253 (linux_6.1.38) or 6 with the hijack marks; the reader recognises all three and the profile picks the layouts"},
	"IP.tos":           {"HOMA-PRIO-001", "HOMA-PRIO-002", "HOMA-PRIO-003", "HOMA-GRANT-008", "HOMA-RESEND-004", "HOMA-WIRE-012"},
	"IP.traffic_class": {"HOMA-PRIO-001", "HOMA-PRIO-002", "HOMA-PRIO-003", "HOMA-PRIO-004", "HOMA-GRANT-008", "HOMA-RESEND-004", "HOMA-WIRE-012"},
	"IP.ipv4_id":       {"free: Homa packets carry DF, so the ID identifies no fragment (RFC 6864): HomaModule leaves 0 and numbers the segments of a GSO batch 0, 1, 2 ..."},
	"IP.ttl":           {"HOMA-WIRE-015"},
	"IP.checksum":      {"HOMA-WIRE-015"},
	"IP.df":            {"free: Linux sets DF on Homa packets (they are never fragmented, each fits the MTU); receivers do not look at it"},
	"IP.flow_label":    {"free: IPv6 hosts choose it (Linux hashes the flow); Homa does not use it"},
}

// sendConditions are the packet types' send conditions.
var sendConditions = []SendCoverage{
	{Type: "DATA", May: []string{"HOMA-UNSCHED-001", "HOMA-UNSCHED-002", "HOMA-GRANT-005", "HOMA-RESEND-003", "HOMA-RESEND-010", "HOMA-RESEND-011", "HOMA-RESEND-021", "HOMA-SEND-002", "HOMA-SEND-004", "HOMA-SEND-005"},
		Must: []string{"HOMA-SEND-001", "HOMA-RESEND-002", "HOMA-RESEND-016", "HOMA-RESEND-007"},
		Note: "unscheduled bytes right after sendmsg are not judged (the application is not on the wire)"},
	{Type: "GRANT", May: []string{"HOMA-GRANT-001", "HOMA-GRANT-004", "HOMA-GRANT-012", "HOMA-GRANT-006", "HOMA-GRANT-013", "HOMA-GRANT-014", "HOMA-GRANT-016", "HOMA-GRANT-018", "HOMA-GRANT-020", "HOMA-GRANT-021", "HOMA-GRANT-022", "HOMA-RESEND-022"},
		Must: []string{"HOMA-GRANT-010", "HOMA-GRANT-019"}},
	{Type: "RESEND", May: []string{"HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-RESEND-009", "HOMA-RESEND-012", "HOMA-RESEND-022", "HOMA-RESEND-024"},
		Must: []string{"HOMA-RESEND-014", "HOMA-RESEND-025", "HOMA-RESEND-026", "HOMA-ACK-009"}},
	{Type: "RPC_UNKNOWN", May: []string{"HOMA-RESEND-006", "HOMA-RESEND-018", "HOMA-RESEND-019", "HOMA-ID-005"},
		Must: []string{"HOMA-RESEND-002"}},
	{Type: "BUSY", May: []string{"HOMA-RESEND-005", "HOMA-RESEND-015", "HOMA-RESEND-022", "HOMA-RESEND-027", "HOMA-RESEND-028"},
		Must: []string{"HOMA-RESEND-002"}},
	{Type: "CUTOFFS", May: []string{"HOMA-CUTOFF-003", "HOMA-CUTOFF-005"},
		Must: []string{"HOMA-CUTOFF-002"},
		Note: "the obligation is SHOULD: DATA a receiver discards before its version check (no buffers, a dead RPC) triggers nothing"},
	{Type: "FREEZE", Note: "debugging only (timetrace freezes), sent on request by tools; nothing in the protocol obliges or forbids it"},
	{Type: "NEED_ACK", May: []string{"HOMA-ACK-001", "HOMA-ACK-003", "HOMA-ACK-005", "HOMA-ACK-006", "HOMA-ACK-010", "HOMA-ID-006", "HOMA-RESEND-022"},
		Must: []string{"HOMA-ACK-011", "HOMA-ACK-008", "HOMA-ACK-013"},
		Note: "the first one after request_ack_ticks and the repeats every tick are SHOULD-level lateness bounds (an implementation may pace them); that the first comes at all, while the server socket shows it is open, is MUST (HOMA-ACK-013)"},
	{Type: "ACK", May: []string{"HOMA-ACK-004", "HOMA-ACK-007"},
		Must: []string{"HOMA-ACK-009", "HOMA-ACK-002"}},
}

// WireCoverage returns the wire coverage table: every field of every
// packet type in every wire version's layout (wire.Layout), with the common
// header's fields once under type "*", and the IP header fields HomaModule
// sets under "IP".
func WireCoverage() []FieldCoverage {
	seen := map[string]bool{}
	var out []FieldCoverage
	add := func(typ, field string) {
		k := typ + "." + field
		if seen[k] {
			return
		}
		seen[k] = true
		rs := fieldRules[k]
		fc := FieldCoverage{Type: typ, Field: field, Rules: []string{}}
		for _, r := range rs {
			if len(r) > 6 && r[:6] == "free: " {
				fc.Free = r[6:]
			} else {
				fc.Rules = append(fc.Rules, r)
			}
		}
		out = append(out, fc)
	}
	for _, t := range wire.AllTypes {
		for _, v := range []wire.Version{wire.VersionCurrent, wire.Version2024, wire.VersionUpstream, wire.Version2025} {
			for _, f := range wire.Layout(t, v) {
				if f.Off < wire.CommonHeaderLen {
					add("*", f.Name)
				} else {
					add(t.String(), f.Name)
				}
			}
		}
	}
	var ip []string
	for k := range fieldRules {
		if len(k) > 3 && k[:3] == "IP." {
			ip = append(ip, k[3:])
		}
	}
	sort.Strings(ip)
	for _, f := range ip {
		add("IP", f)
	}
	return out
}

// SendConditions returns, per packet type, the rules on when it may and
// must be sent.
func SendConditions() []SendCoverage { return append([]SendCoverage(nil), sendConditions...) }
