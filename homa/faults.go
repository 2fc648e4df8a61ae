package homa

import (
	"fmt"
	"slices"
	"strings"
)

// Fault names a deliberate misbehaviour, each reproducing a fault class
// from real Homa implementations (docs/homa-faults.md, BR-nn), so that
// the conformance suite can be shown to catch it.
type Fault string

// The fault knobs. Each is described once, in the catalogue (FaultNames:
// what it does, what it reproduces, the rules that catch it).
const (
	FaultWrongPriorityBits    Fault = "wrong-priority-bits"
	FaultGrantPastEnd         Fault = "grant-past-end"
	FaultRepeatGrants         Fault = "repeat-grants"
	FaultNoGrants             Fault = "no-grants"
	FaultOvercommit           Fault = "overcommit"
	FaultGrantTopPriority     Fault = "grant-top-priority"
	FaultUnschedOverflow      Fault = "unsched-overflow"
	FaultEarlyResend          Fault = "early-resend"
	FaultNoRetransmitFlag     Fault = "no-retransmit-flag"
	FaultNoBusy               Fault = "no-busy"
	FaultIgnoreRPCUnknown     Fault = "ignore-rpc-unknown"
	FaultNoAcks               Fault = "no-acks"
	FaultControlLowPriority   Fault = "control-low-priority"
	FaultStaleCutoffVersion   Fault = "stale-cutoff-version"
	FaultDuplicateData        Fault = "duplicate-data"
	FaultResendPriorityZero   Fault = "resend-priority-zero"
	FaultResendPastGrant      Fault = "resend-past-grant"
	FaultLateResend           Fault = "late-resend"
	FaultPartialRetransmit    Fault = "partial-retransmit"
	FaultUnpromptedAck        Fault = "unprompted-ack"
	FaultCutoffsUnprompted    Fault = "cutoffs-unprompted"
	FaultControlSequence      Fault = "control-sequence"
	FaultRestartPriority      Fault = "restart-priority"
	FaultIDZero               Fault = "id-zero"
	FaultRPCUnknownAny        Fault = "rpc-unknown-any"
	FaultRetransmitWrongBytes Fault = "retransmit-wrong-bytes"
	FaultOversizeSegment      Fault = "oversize-segment"
	FaultForgetHeldRPC        Fault = "forget-held-rpc"
	FaultReuseTimedOutID      Fault = "reuse-timed-out-id"
	FaultAckPartialResponse   Fault = "ack-partial-response"
	FaultGrantStopAndWait     Fault = "grant-stop-and-wait"
	FaultBusySecondResend     Fault = "busy-second-resend"
)

// faultCatalogue is every fault knob as data: what it does, the real
// fault it reproduces (a fault-log entry BR-nn of docs/homa-faults.md, or
// the protocol facts of docs/homa-facts.md it breaks), and the rules
// whose findings catch it. homatest faults prints it; the mutation matrix
// (homatest run --mutation-matrix) asserts that a failing spec names one
// of CaughtBy; TestFaultKnobsCaught that the checker reports the first.
var faultCatalogue = []FaultInfo{
	{string(FaultWrongPriorityBits), "priority written into the wrong IP TOS bits (level p sent as p>>2)", []string{"BR-01"}, []string{"HOMA-PRIO-001"}},
	{string(FaultGrantPastEnd), "GRANT offsets beyond the message length", []string{"BR-06"}, []string{"HOMA-GRANT-002"}},
	{string(FaultRepeatGrants), "a GRANT arrives 5 ticks after the message is complete", []string{"BR-06", "BR-07"}, []string{"HOMA-GRANT-004"}},
	{string(FaultNoGrants), "receiver never grants; long messages stall", []string{"BR-09"}, []string{"HOMA-GRANT-010"}},
	{string(FaultOvercommit), "grants every incoming message, ignoring max_overcommit and max_incoming (HOMA-GRANT-006 and HOMA-GRANT-013 are SHOULD rules: run exits 1 on them only with --strict)", []string{"BR-10", "BR-15"}, []string{"HOMA-GRANT-006", "HOMA-GRANT-013"}},
	{string(FaultGrantTopPriority), "scheduled GRANTs at the highest priority level", []string{"BR-10"}, []string{"HOMA-GRANT-007"}},
	{string(FaultUnschedOverflow), "unscheduled bytes rounded up one packet past unsched_bytes", []string{"BR-14"}, []string{"HOMA-UNSCHED-002"}},
	{string(FaultEarlyResend), "RESEND after one silent tick instead of resend_ticks", []string{"BR-18", "BR-19"}, []string{"HOMA-RESEND-001"}},
	{string(FaultNoRetransmitFlag), "retransmitted DATA without retransmit=1", []string{"RTX-06"}, []string{"HOMA-RESEND-010"}},
	{string(FaultNoBusy), "RESENDs for unsent data are ignored instead of answered with BUSY", []string{"BR-23"}, []string{"HOMA-RESEND-002"}},
	{string(FaultIgnoreRPCUnknown), "client ignores RPC_UNKNOWN and never restarts", []string{"BR-48"}, []string{"HOMA-RESEND-007"}},
	{string(FaultNoAcks), "completed RPCs are never acknowledged (no ACK, no piggy-backed ack)", []string{"BR-32"}, []string{"HOMA-ACK-002"}},
	{string(FaultControlLowPriority), "control packets at priority 0 instead of the highest level", []string{"CTRL-01"}, []string{"HOMA-PRIO-001"}},
	{string(FaultStaleCutoffVersion), "DATA keeps cutoff_version 0 after CUTOFFS arrived", []string{"CUT-02"}, []string{"HOMA-CUTOFF-001"}},
	{string(FaultDuplicateData), "every first-transmission DATA packet is sent twice", []string{"BR-45"}, []string{"HOMA-RESEND-010"}},
	{string(FaultResendPriorityZero), "RESEND asks for retransmission at priority 0 instead of the top level", []string{"RTX-04"}, []string{"HOMA-RESEND-013"}},
	{string(FaultResendPastGrant), "RESEND asks for bytes up to the message end, past its grants", []string{"RTX-03"}, []string{"HOMA-RESEND-012"}},
	{string(FaultLateResend), "first RESEND after 4*resend_ticks silent ticks instead of resend_ticks", []string{"RTX-02", "RTX-05"}, []string{"HOMA-RESEND-014"}},
	{string(FaultPartialRetransmit), "a RESEND is answered with one packet of its range only", []string{"RTX-06"}, []string{"HOMA-RESEND-016"}},
	{string(FaultUnpromptedAck), "an ACK packet as soon as each response is complete, with no NEED_ACK", []string{"ACK-02", "ACK-03"}, []string{"HOMA-ACK-007"}},
	{string(FaultCutoffsUnprompted), "CUTOFFS in answer to DATA whose cutoff_version is current", []string{"CUT-01"}, []string{"HOMA-CUTOFF-003"}},
	{string(FaultControlSequence), "control packets carry a non-zero sequence field", []string{"WIRE-04"}, []string{"HOMA-WIRE-009"}},
	{string(FaultRestartPriority), "a request restarted after RPC_UNKNOWN goes out at the top level, not its unscheduled level", []string{"CTRL-02", "RTX-09"}, []string{"HOMA-PRIO-003"}},
	{string(FaultIDZero), "client RPC ids start at 0 instead of 2", []string{"ID-01", "ID-02"}, []string{"HOMA-ID-003"}},
	{string(FaultRPCUnknownAny), "every packet of an unknown RPC is answered with RPC_UNKNOWN, not only RESEND", []string{"RTX-11"}, []string{"HOMA-RESEND-018"}},
	{string(FaultRetransmitWrongBytes), "a retransmission carries the message's bytes from 20 bytes (an IPv4 header) past its offset, wrapping at the message end", []string{"BR-28"}, []string{"HOMA-WIRE-014"}},
	{string(FaultForgetHeldRPC), "a server that answered BUSY for an RPC (still receiving the request, or computing the response) discards it at the client's next RESEND and answers RPC_UNKNOWN, as a timeout of another RPC of that client did: the client restarts and the request may run twice (HOMA-RESEND-019 needs another RPC the server still serves as its witness)", []string{"BR-30"}, []string{"HOMA-RESEND-019"}},
	{string(FaultOversizeSegment), "DATA segments of mtu-56 bytes: max_seg_data computed without the IP header (1444 bytes over IPv4 at MTU 1500)", []string{"BR-34"}, []string{"HOMA-WIRE-013"}},
	{string(FaultReuseTimedOutID), "the client's next RPC after a timeout takes the timed-out RPC's id instead of a new one (seen after the spec that timed it out: the run's whole capture, RUN-capture)", []string{"ID-02"}, []string{"HOMA-RESEND-010", "HOMA-WIRE-014"}},
	{string(FaultAckPartialResponse), "a client RPC is queued as a pending ack when the first packet of its response arrives, not once the application receives the whole response: the client's next DATA to that server (or an ACK) tells it to free an RPC whose response is still incomplete, and the rest of the response never comes", []string{"ACK-03"}, []string{"HOMA-ACK-004"}},
	{string(FaultGrantStopAndWait), "a receiver grants a message only once every byte it authorised has arrived (stop-and-wait: received + window then, a window per round trip), not after every batch of DATA", []string{"GRANT-12"}, []string{"HOMA-GRANT-024"}},
	{string(FaultBusySecondResend), "a server still receiving a request or computing its response answers the first RESEND of the RPC with BUSY and ignores every later one: the client, which goes on asking, hears nothing and aborts the RPC at timeout_ticks", []string{"BR-23", "RTX-06"}, []string{"HOMA-RESEND-002"}},
}

// FaultNames returns the fault catalogue: every fault knob with what it
// does, what it reproduces and the rules that catch it, sorted by name.
func FaultNames() []FaultInfo {
	out := slices.Clone(faultCatalogue)
	slices.SortFunc(out, func(a, b FaultInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupFault returns the catalogue entry of knob name.
func LookupFault(name string) (FaultInfo, bool) {
	for _, f := range faultCatalogue {
		if f.Name == name {
			return f, true
		}
	}
	return FaultInfo{}, false
}

// FaultInfo is one fault knob of the catalogue.
type FaultInfo struct {
	// Name is the knob (a Fault), Doc what it makes the implementation do.
	Name string `json:"name"`
	Doc  string `json:"doc"`
	// Reproduces is the real fault it reproduces: fault-log entries
	// (BR-nn, docs/homa-faults.md) or, for a fault class without a logged
	// bug, the protocol facts it breaks (docs/homa-facts.md), one ID each
	// (a list, as CaughtBy).
	Reproduces []string `json:"reproduces"`
	// CaughtBy are the IDs of the spec rules whose findings catch it.
	CaughtBy []string `json:"caught_by"`
}

type faultSet map[Fault]bool

func parseFaults(fs []Fault) (faultSet, error) {
	set := faultSet{}
	for _, f := range fs {
		if _, ok := LookupFault(string(f)); !ok {
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
