package homa

import (
	"fmt"
	"sort"
	"strings"
)

// Fault names a deliberate misbehaviour, each reproducing a fault class
// from real Homa implementations (docs/homa-faults.md, BR-nn), so that
// the conformance suite can be shown to catch it.
type Fault string

// The fault knobs.
const (
	// FaultWrongPriorityBits writes priorities into the wrong IP bits:
	// level p leaves as p>>2 (BR-01, HomaModule @d4003fb).
	FaultWrongPriorityBits Fault = "wrong-priority-bits"
	// FaultGrantPastEnd grants beyond the message length (BR-06).
	FaultGrantPastEnd Fault = "grant-past-end"
	// FaultRepeatGrants sends a GRANT again 5 ticks after a message is
	// complete (BR-06/BR-07: GRANTs keep arriving after the message is done).
	FaultRepeatGrants Fault = "repeat-grants"
	// FaultNoGrants never grants: messages longer than unsched_bytes stall (BR-09).
	FaultNoGrants Fault = "no-grants"
	// FaultOvercommit grants every incoming message, ignoring max_overcommit
	// and max_incoming (BR-10, BR-15).
	FaultOvercommit Fault = "overcommit"
	// FaultGrantTopPriority sends scheduled grants at the highest level (BR-10).
	FaultGrantTopPriority Fault = "grant-top-priority"
	// FaultUnschedOverflow rounds the unscheduled bytes up past
	// unsched_bytes by one packet (BR-14).
	FaultUnschedOverflow Fault = "unsched-overflow"
	// FaultEarlyResend sends RESEND after one silent tick (BR-18, BR-19).
	FaultEarlyResend Fault = "early-resend"
	// FaultNoRetransmitFlag retransmits with retransmit=0 (RTX-06).
	FaultNoRetransmitFlag Fault = "no-retransmit-flag"
	// FaultNoBusy ignores RESENDs it cannot answer with data instead of
	// sending BUSY (BR-23).
	FaultNoBusy Fault = "no-busy"
	// FaultIgnoreRPCUnknown makes a client ignore RPC_UNKNOWN (BR-48).
	FaultIgnoreRPCUnknown Fault = "ignore-rpc-unknown"
	// FaultNoAcks never acknowledges completed RPCs (BR-32).
	FaultNoAcks Fault = "no-acks"
	// FaultControlLowPriority sends control packets at level 0 (PRIO rules).
	FaultControlLowPriority Fault = "control-low-priority"
	// FaultStaleCutoffVersion never echoes received cutoff versions (CUT-02).
	FaultStaleCutoffVersion Fault = "stale-cutoff-version"
	// FaultDuplicateData sends every first-transmission DATA packet twice
	// (BR-45).
	FaultDuplicateData Fault = "duplicate-data"
	// FaultResendPriorityZero asks for retransmissions at level 0
	// (HOMA-RESEND-013).
	FaultResendPriorityZero Fault = "resend-priority-zero"
	// FaultResendPastGrant asks with RESEND for bytes up to the message's
	// end, past what it granted (HOMA-RESEND-012).
	FaultResendPastGrant Fault = "resend-past-grant"
	// FaultLateResend waits 4*resend_ticks silent ticks before its first
	// RESEND (HOMA-RESEND-014).
	FaultLateResend Fault = "late-resend"
	// FaultPartialRetransmit answers a RESEND with one packet of the
	// range only (HOMA-RESEND-016).
	FaultPartialRetransmit Fault = "partial-retransmit"
	// FaultUnpromptedAck sends an ACK packet as soon as a response is
	// complete, with no NEED_ACK (HOMA-ACK-007).
	FaultUnpromptedAck Fault = "unprompted-ack"
	// FaultCutoffsUnprompted answers DATA with CUTOFFS even when its
	// cutoff_version is current (HOMA-CUTOFF-003).
	FaultCutoffsUnprompted Fault = "cutoffs-unprompted"
	// FaultControlSequence leaves the sequence field of control packets
	// non-zero (HOMA-WIRE-009).
	FaultControlSequence Fault = "control-sequence"
	// FaultRestartPriority restarts a request after RPC_UNKNOWN at the
	// top level instead of its unscheduled level (HOMA-PRIO-003).
	FaultRestartPriority Fault = "restart-priority"
	// FaultIDZero numbers client RPCs from 0 instead of 2 (HOMA-ID-003).
	FaultIDZero Fault = "id-zero"
	// FaultRPCUnknownAny answers every packet of an unknown RPC with
	// RPC_UNKNOWN, not only RESENDs (HOMA-RESEND-018).
	FaultRPCUnknownAny Fault = "rpc-unknown-any"
)

var faultDocs = map[Fault]string{
	FaultWrongPriorityBits:  "priority written into the wrong IP TOS bits (level p sent as p>>2) — BR-01",
	FaultGrantPastEnd:       "GRANT offsets beyond the message length — BR-06",
	FaultRepeatGrants:       "a GRANT arrives 5 ticks after the message is complete — BR-06/BR-07",
	FaultNoGrants:           "receiver never grants; long messages stall — BR-09",
	FaultOvercommit:         "grants every incoming message, ignoring max_overcommit and max_incoming — BR-10/BR-15",
	FaultGrantTopPriority:   "scheduled GRANTs at the highest priority level — BR-10",
	FaultUnschedOverflow:    "unscheduled bytes rounded up one packet past unsched_bytes — BR-14",
	FaultEarlyResend:        "RESEND after one silent tick instead of resend_ticks — BR-18/BR-19",
	FaultNoRetransmitFlag:   "retransmitted DATA without retransmit=1 — RTX-06",
	FaultNoBusy:             "RESENDs for unsent data are ignored instead of answered with BUSY — BR-23",
	FaultIgnoreRPCUnknown:   "client ignores RPC_UNKNOWN and never restarts — BR-48",
	FaultNoAcks:             "completed RPCs are never acknowledged (no ACK, no piggy-backed ack) — BR-32",
	FaultControlLowPriority: "control packets at priority 0 instead of the highest level",
	FaultStaleCutoffVersion: "DATA keeps cutoff_version 0 after CUTOFFS arrived — CUT-02",
	FaultDuplicateData:      "every first-transmission DATA packet is sent twice — BR-45",
	FaultResendPriorityZero: "RESEND asks for retransmission at priority 0 instead of the top level — HOMA-RESEND-013",
	FaultResendPastGrant:    "RESEND asks for bytes up to the message end, past its grants — HOMA-RESEND-012",
	FaultLateResend:         "first RESEND after 4*resend_ticks silent ticks instead of resend_ticks — HOMA-RESEND-014",
	FaultPartialRetransmit:  "a RESEND is answered with one packet of its range only — HOMA-RESEND-016",
	FaultUnpromptedAck:      "an ACK packet as soon as each response is complete, with no NEED_ACK — HOMA-ACK-007",
	FaultCutoffsUnprompted:  "CUTOFFS in answer to DATA whose cutoff_version is current — HOMA-CUTOFF-003",
	FaultControlSequence:    "control packets carry a non-zero sequence field — HOMA-WIRE-009",
	FaultRestartPriority:    "a request restarted after RPC_UNKNOWN goes out at the top level, not its unscheduled level — HOMA-PRIO-003",
	FaultIDZero:             "client RPC ids start at 0 instead of 2 — HOMA-ID-003",
	FaultRPCUnknownAny:      "every packet of an unknown RPC is answered with RPC_UNKNOWN, not only RESEND — HOMA-RESEND-018",
}

// FaultNames returns every fault knob with a one-line description, sorted
// by name.
func FaultNames() []FaultInfo {
	var out []FaultInfo
	for f, d := range faultDocs {
		out = append(out, FaultInfo{string(f), d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FaultInfo names a fault knob and describes it.
type FaultInfo struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

type faultSet map[Fault]bool

func parseFaults(fs []Fault) (faultSet, error) {
	set := faultSet{}
	for _, f := range fs {
		if _, ok := faultDocs[f]; !ok {
			var names []string
			for _, n := range FaultNames() {
				names = append(names, n.Name)
			}
			return nil, fmt.Errorf("homa: unknown fault %q (known: %s)", f, strings.Join(names, ", "))
		}
		set[f] = true
	}
	return set, nil
}
