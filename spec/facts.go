package spec

import "sort"

// Fact is one behavioural fact of docs/homa-facts.md §4 (the protocol as
// HomaModule implements it), by its ID there (WIRE-01, RTX-06 ...). Rules
// name the facts they implement (Rule.Facts); a fact no packet trace can
// decide says why in NotCheckable.
type Fact struct {
	// ID is the fact's ID in docs/homa-facts.md §4.
	ID string `json:"fact"`
	// Level is the fact's level there (INC-01 has none: 0).
	Level Level `json:"level,omitempty"`
	// Summary paraphrases the fact in one line.
	Summary string `json:"summary"`
	// NotCheckable, when set, says why no rule can judge the fact from
	// packets (the trace does not show it, or HomaModule does not
	// implement it).
	NotCheckable string `json:"not_checkable,omitempty"`
}

// facts lists every fact of docs/homa-facts.md §4 in document order.
var facts = []Fact{
	{ID: "WIRE-01", Level: Must, Summary: "every Homa header is at least its type's minimum length and its type is 0x10-0x18 (upstream: no GRANT, CUTOFFS, FREEZE)"},
	{ID: "WIRE-02", Level: Must, Summary: "all DATA of one message carry the same message_length, sender_id, sport and dport"},
	{ID: "WIRE-03", Level: Must, Summary: "DATA carries at least one byte, inside the message; message_length is 1..1,000,000"},
	{ID: "WIRE-04", Level: Must, Summary: "flags 0x06 and urgent 0xB97D on every packet (upstream 0); control doff 0x50; unused ack[3] and window 0"},
	{ID: "WIRE-05", Level: Must, Summary: "fresh single-segment DATA: seg.offset -1, offset in sequence; retransmissions: seg.offset = sequence = offset, retransmit 1"},
	{ID: "WIRE-06", Level: Must, Summary: "first-transmission incoming is U in every packet of the message"},
	{ID: "WIRE-07", Level: Must, Summary: "the kernel's IP layer writes each Homa packet's IP header: a nonzero TTL or hop limit, an IPv4 header checksum that verifies, no fragmentation"},
	{ID: "ID-01", Level: Must, Summary: "clients send even ids, servers the client's id plus one"},
	{ID: "ID-02", Level: Must, Summary: "a host's client ids are unique and even, new RPCs get larger ids"},
	{ID: "ID-03", Level: Must, Summary: "client sockets use ports from 32768 unless bound; servers listen below 32768"},
	{ID: "ID-04", Level: Must, Summary: "a packet to a port without a socket (or a request to a non-server socket) gets ICMP port unreachable and no Homa reply"},
	{ID: "UNS-01", Level: Must, Summary: "before any GRANT or RESEND reaches it, a sender transmits only [0, U)"},
	{ID: "UNS-02", Level: Must, Summary: "no first-transmission DATA straddles U"},
	{ID: "UNS-03", Level: Should, Summary: "unscheduled packets leave promptly after sendmsg",
		NotCheckable: "the application's sendmsg is not on the wire, and the pacer may hold unscheduled packets behind other messages; the order in which they leave is HOMA-SEND-002"},
	{ID: "UNS-04", Level: Must, Summary: "upstream: the whole message is unscheduled",
		NotCheckable: "the upstream subset has no GRANT packets, so nothing on the wire limits what a sender may transmit; a sender that stops early shows only through its peer's RESENDs (HOMA-RESEND-*)"},
	{ID: "GRANT-01", Level: Must, Summary: "only messages longer than U are granted; offsets per RPC strictly increase, exceed U, stay within the length"},
	{ID: "GRANT-02", Level: Must, Summary: "GRANTs are sent only while the receiver processes incoming packets, not from a timer"},
	{ID: "GRANT-03", Level: Must, Summary: "a non-FIFO GRANT offset is at most received + window (dynamic: max_incoming/(n+1))"},
	{ID: "GRANT-04", Level: Must, Summary: "grant offsets are byte-granular, not rounded to packets"},
	{ID: "GRANT-05", Level: Should, Summary: "granted but unreceived bytes over the receiver's messages stay within max_incoming"},
	{ID: "GRANT-06", Level: Should, Summary: "at most max_overcommit messages receive SRPT grants at once"},
	{ID: "GRANT-07", Level: Should, Summary: "grants spread over sending hosts (linux_6.1.38: one active message per sender)"},
	{ID: "GRANT-08", Level: Should, Summary: "the active set holds the messages with the fewest bytes left to receive"},
	{ID: "GRANT-09", Level: Must, Summary: "non-FIFO GRANT priority is max(0, min(max_sched_prio, n-1) - rank)"},
	{ID: "GRANT-10", Level: Must, Summary: "no grants to a message without receive buffers; when space appears the receiver sends RESEND {0, -1} at num_priorities-2"},
	{ID: "GRANT-11", Level: Must, Summary: "linux_6.1.38: no new grant while the RPC has been silent for more than one tick",
		NotCheckable: "the silence is counted in the receiver's timer ticks up to the moment it decides, which a capture does not show: a loaded or emulated receiver decides milliseconds after its packets passed a tap (the shared linux-6.1 captures grant 5-36 ms after the data they answer); that grants follow packets at all is HOMA-GRANT-012"},
	{ID: "GRANT-12", Level: Must, Summary: "a receiver grants after every batch of DATA it processes (received + window), never stop-and-wait for all it authorised"},
	{ID: "FIFO-01", Level: Should, Summary: "FIFO grants go to the oldest message, add at most fifo_grant_increment at level num_priorities-2, right after an SRPT grant"},
	{ID: "CUT-01", Level: Must, Summary: "DATA with a stale cutoff_version makes the receiver send CUTOFFS (at most once per jiffy per peer)"},
	{ID: "CUT-02", Level: Must, Summary: "after CUTOFFS from R, every DATA to R carries its version"},
	{ID: "CUT-03", Level: Must, Summary: "unscheduled DATA go at the level R's cutoffs give the message length (new peer: num_priorities-2)"},
	{ID: "CUT-04", Level: Should, Summary: "cutoff contents: non-increasing from the lowest unscheduled level up, entry 0 is 0 or INT_MAX"},
	{ID: "CUT-05", Level: Must, Summary: "CUTOFFS is applied even when its RPC is unknown (per-peer state)"},
	{ID: "CTRL-01", Level: Must, Summary: "every control packet goes at level num_priorities-1"},
	{ID: "CTRL-02", Level: Must, Summary: "scheduled DATA at the latest GRANT's priority; retransmissions at the RESEND's; restarts at the unscheduled priority"},
	{ID: "SND-01", Level: Must, Summary: "no first-time packet starts at or beyond the sender's grant horizon"},
	{ID: "SND-02", Level: Should, Summary: "a GRANT that raises the horizon is followed promptly by the newly authorised packets"},
	{ID: "SND-03", Level: Must, Summary: "overshoot past a grant is less than one skb of data"},
	{ID: "SND-04", Level: Should, Summary: "sender SRPT when the uplink is backlogged",
		NotCheckable: "the NIC backlog that makes SRPT apply is not on the wire, and the pacer's FIFO share, the defer_min_bytes bypass, insertion-time sorting and transmission from several cores make any order legal over short spans"},
	{ID: "SND-05", Level: Should, Summary: "pacing keeps the NIC backlog within max_nic_est_backlog_usecs",
		NotCheckable: "the NIC queue is inside the sender; a capture shows only the resulting packet spacing, which also depends on the link and the capture point"},
	{ID: "RTX-01", Level: Must, Summary: "RESEND only while waiting for data (receiving, or a client whose request is sent); never from a server whose request is complete"},
	{ID: "RTX-02", Level: Must, Summary: "first RESEND round after resend_ticks of silence, then every resend_interval ticks"},
	{ID: "RTX-03", Level: Must, Summary: "RESEND content: {0, -1} if nothing arrived, else one per gap plus [recv_end, granted)"},
	{ID: "RTX-04", Level: Must, Summary: "RESEND priority is num_priorities-1, except the buffer-wakeup RESEND (num_priorities-2)"},
	{ID: "RTX-05", Level: Must, Summary: "no per-peer RESEND limit: every silent RPC gets its rounds"},
	{ID: "RTX-06", Level: Must, Summary: "a RESEND is answered: RPC_UNKNOWN for an unknown RPC, BUSY from a server not yet responding or for unsent bytes, else retransmissions at the RESEND's priority"},
	{ID: "RTX-07", Level: Must, Summary: "BUSY resets the receiver's silence count"},
	{ID: "RTX-08", Level: Must, Summary: "a RESEND beyond the sender's horizon raises it (lost-GRANT recovery)"},
	{ID: "RTX-09", Level: Must, Summary: "client restart on RPC_UNKNOWN while sending the request; a server told RPC_UNKNOWN discards the RPC silently"},
	{ID: "RTX-10", Level: Must, Summary: "after timeout_ticks of silence the RPC is aborted: no packet, no more RESENDs"},
	{ID: "RTX-11", Level: Must, Summary: "packets for unknown RPCs other than RESEND, NEED_ACK, ACK, CUTOFFS (and request DATA) are dropped without reply"},
	{ID: "RTX-12", Level: Should, Summary: "no RESEND from a receiver waiting for buffers or holding everything it granted"},
	{ID: "ACK-01", Level: Must, Summary: "NEED_ACK request_ack_ticks after the response is fully sent, then every tick until freed"},
	{ID: "ACK-02", Level: Must, Summary: "a client answers NEED_ACK with ACK (or RESENDs if the response is incomplete)"},
	{ID: "ACK-03", Level: Must, Summary: "acks only for received responses, at most 5 per packet: piggy-backed, answering NEED_ACK, or on overflow"},
	{ID: "ACK-04", Level: Must, Summary: "a server frees acked RPCs and sends no further NEED_ACK for them"},
	{ID: "AMO-01", Level: Must, Summary: "at-most-once: a request is executed once while the server keeps its state"},
	{ID: "ICMP-01", Level: Must, Summary: "ICMP port unreachable for unknown ports; on receipt the RPCs to that port are aborted"},
	{ID: "ABT-01", Level: Must, Summary: "aborts and closes send nothing; later packets of the dead RPC get RPC_UNKNOWN (RESEND) or ACK (NEED_ACK)"},
	{ID: "INC-01", Summary: "the paper's incast optimisation",
		NotCheckable: "not implemented by HomaModule (its README says so): there is nothing to check"},
}

// Facts returns every fact of docs/homa-facts.md §4, in document order.
func Facts() []Fact { return append([]Fact(nil), facts...) }

// FactCoverage is one row of the coverage table: a fact, the rules that
// implement it, and why it is not checkable when no rule can.
type FactCoverage struct {
	Fact  string   `json:"fact"`
	Rules []string `json:"rules"`
	// Reason says why the fact is not checkable from packets ("" when
	// rules implement it).
	Reason string `json:"reason"`
	// Checkable is false for facts with a Reason.
	Checkable bool `json:"checkable"`
}

// Coverage returns the fact → rules table over rules (normally Rules()),
// in document order: every fact with the rules that name it in Rule.Facts,
// and NotCheckable as the reason. A fact with neither has empty Rules and
// Reason (the coverage test fails on it).
func Coverage(rules []*Rule) []FactCoverage {
	by := map[string][]string{}
	for _, r := range rules {
		for _, f := range r.Facts {
			by[f] = append(by[f], r.ID)
		}
	}
	out := make([]FactCoverage, 0, len(facts))
	for _, f := range facts {
		rs := by[f.ID]
		sort.Strings(rs)
		if rs == nil {
			rs = []string{}
		}
		out = append(out, FactCoverage{Fact: f.ID, Rules: rs, Reason: f.NotCheckable, Checkable: f.NotCheckable == ""})
	}
	return out
}

// CoverageSummary counts a coverage table: checkable facts, those with at
// least one rule, and the facts not checkable.
func CoverageSummary(cov []FactCoverage) (checkable, implemented, notCheckable int) {
	for _, c := range cov {
		if !c.Checkable {
			notCheckable++
			continue
		}
		checkable++
		if len(c.Rules) > 0 {
			implemented++
		}
	}
	return
}

// LookupFact returns the fact with id, if any.
func LookupFact(id string) (Fact, bool) {
	for _, f := range facts {
		if f.ID == id {
			return f, true
		}
	}
	return Fact{}, false
}
