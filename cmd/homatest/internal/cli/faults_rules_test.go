package cli

// Fault catalogue scenarios for the rules added for docs/homa-facts.md §4
// facts that had none: one faulty/clean pair per MUST rule an
// implementation can break, built like the BR-nn scenarios of
// faults_test.go (the same hosts, timing and helpers).

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

func ruleFaultCases() []faultCase {
	return []faultCase{
		{
			id: "ACK-004", slug: "ack-names-server-id",
			what:  "extra fault: the client's piggy-backed ack names RPC 10 by the server's id 11 (the id of the packet it last received), not its client id",
			build: func(fault bool) *capb { return ackNamesServerID(fault) },
			want:  []hit{{"HOMA-ACK-004", 7}},
		},
		{
			id: "WIRE-011", slug: "one-id-two-servers",
			what:  "extra fault: the client sends a request with id 10 to a second server while its RPC 10 with the first is live (an id counter per peer)",
			build: func(fault bool) *capb { return oneIDTwoServers(fault) },
			want:  []hit{{"HOMA-WIRE-011", 2}},
		},
		{
			id: "RESEND-022", slug: "resend-after-own-unknown",
			what:  "extra fault: the client answers the server's RESEND for its request with RPC_UNKNOWN, yet keeps the RPC and RESENDs for the response 3 ms later",
			build: func(fault bool) *capb { return resendAfterOwnUnknown(fault) },
			want:  []hit{{"HOMA-RESEND-022", 8}},
		},
		{
			id: "WIRE-015", slug: "ipv4-ttl-zero",
			what:  "extra fault: the client's user-space Homa writes its own IPv4 headers with TTL 0",
			build: func(fault bool) *capb { return ipv4TTLZero(fault) },
			want:  []hit{{"HOMA-WIRE-015", 1}},
		},
		{
			id: "WIRE-009", slug: "control-sequence-garbage",
			what:  "extra fault: the receiver's GRANTs carry stale bytes in the common header's sequence field (a header not cleared before it is filled) from a build that zeroes its headers (HomaModule main since 2026-06-26)",
			build: func(fault bool) *capb { return grantSequenceGarbage(fault) },
			// linux_6.13.9 and earlier builds send control headers from
			// the stack: only a build that zeroes them is judged.
			args: []string{"--param", "zeroed_headers=1"},
			want: []hit{{"HOMA-WIRE-009", 25}},
		},
		{
			id: "WIRE-010", slug: "retransmit-stale-sequence",
			what:  "extra fault: a retransmitted packet keeps the sequence of its original GSO batch; only seg.offset holds its offset",
			build: func(fault bool) *capb { return retxStaleSequence(fault) },
			want:  []hit{{"HOMA-WIRE-010", 85}},
		},
		{
			id: "WIRE-011", slug: "one-id-two-sockets",
			what:  "extra fault: a client host gives two live RPCs from two sockets the same id 10 (a per-socket id counter)",
			build: func(fault bool) *capb { return oneIDTwoSockets(fault) },
			// One id, so one RPC to an observer: the second request
			// repeats bytes with another length, and the first socket's
			// ACK leaves on ports the RPC last used from the second.
			want: []hit{{"HOMA-WIRE-011", 2}, {"HOMA-RESEND-010", 2}, {"HOMA-WIRE-003", 2}, {"HOMA-ACK-007", 7}},
		},
		{
			id: "ID-003", slug: "client-id-zero",
			what:  "extra fault: the client's id counter starts at 0: its first RPC has id 0",
			build: func(fault bool) *capb { return clientIDZero(fault) },
			// Its ACK then lists id 0, no client id (HOMA-ACK-004).
			want: []hit{{"HOMA-ID-003", 1}, {"HOMA-ACK-004", 4}},
		},
		{
			id: "ID-004", slug: "id-reused",
			what:  "extra fault: the client reuses id 10 for a new RPC 60 ms after RPC 10 was acknowledged (its id counter went back)",
			build: func(fault bool) *capb { return idReused(fault) },
			want:  []hit{{"HOMA-ID-004", 9}},
		},
		{
			id: "ID-005", slug: "icmp-then-rpc-unknown",
			what:  "extra fault: a request to a port without a socket gets ICMP port unreachable, and the client's RESEND for it then gets RPC_UNKNOWN from that same port",
			build: func(fault bool) *capb { return icmpThenUnknown(fault) },
			want:  []hit{{"HOMA-ID-005", 4}},
		},
		{
			id: "ID-006", slug: "need-ack-after-icmp",
			what:  "extra fault: the client's socket closed and its host answers NEED_ACK with ICMP port unreachable; the server keeps sending NEED_ACK there every tick",
			build: func(fault bool) *capb { return needAckAfterICMP(fault) },
			want:  []hit{{"HOMA-ID-006", 7}},
		},
		{
			id: "GRANT-012", slug: "grants-from-timer",
			what:  "extra fault: the receiver grants after every DATA packet; the sender pauses 45 ms after 70000 bytes and the receiver grants 20000 more every 5 ms from its timer, a GRANT no packet paid for",
			build: func(fault bool) *capb { return grantsFromTimer(fault) },
			// The bridge saw every packet of both hosts (auto would not
			// take two hosts for all of the receiver's traffic).
			args: []string{"--capture-point", "switch"},
			// When the sender resumes, the receiver's GRANTs on arrival
			// lie below its timer GRANTs (GRANT-003).
			want: []hit{{"HOMA-GRANT-012", 105}, {"HOMA-GRANT-003", 116}},
		},
		{
			id: "GRANT-011", slug: "three-active-all-level-zero",
			what:  "extra fault: the receiver grants three requests at once (100000, 200000 and 300000 bytes from three clients) and sends every GRANT at level 0; with three messages active the best gets 2 and the next 1",
			args:  []string{"--strict"},
			build: func(fault bool) *capb { return threeActiveLevels(fault) },
			want:  []hit{{"HOMA-GRANT-011", 133}},
		},
		{
			id: "GRANT-015", slug: "lone-message-high-priority",
			what:  "extra fault: the receiver grants its only incoming message at priority 2; with one message being granted every GRANT carries 0",
			build: func(fault bool) *capb { return loneHighPriority(fault) },
			args:  []string{"--capture-point", "switch"},
			want:  []hit{{"HOMA-GRANT-015", 25}},
		},
		{
			id: "GRANT-016", slug: "grant-before-buffers",
			what:  "extra fault: the receiver grants a message, then sends the buffer-wakeup RESEND {0, -1} at level 6 that only a message waiting for buffers (never granted) gets",
			build: func(fault bool) *capb { return grantBeforeBuffers(fault) },
			want:  []hit{{"HOMA-GRANT-016", 53}},
		},
		{
			id: "CUTOFF-003", slug: "cutoffs-unprompted",
			what:  "extra fault: the receiver sends CUTOFFS although the sender's DATA carry its current cutoff_version (a periodic CUTOFFS broadcast)",
			build: func(fault bool) *capb { return cutoffsUnprompted(fault) },
			want:  []hit{{"HOMA-CUTOFF-003", 87}},
		},
		{
			id: "PRIO-003", slug: "restart-at-resend-priority",
			what:  "extra fault: a client restarting its 30000-byte request after RPC_UNKNOWN retransmits it at level 7 instead of the unscheduled level 4",
			build: func(fault bool) *capb { return restartPriority(fault) },
			want:  []hit{{"HOMA-PRIO-003", 29}},
		},
		{
			id: "RESEND-012", slug: "resend-beyond-grant",
			what:  "extra fault: a receiver that granted 60000 bytes asks with RESEND for [60000, 80000), bytes it never authorised",
			build: func(fault bool) *capb { return resendBeyondGrant(fault) },
			want:  []hit{{"HOMA-RESEND-012", 52}},
		},
		{
			id: "RESEND-013", slug: "resend-priority-zero",
			what:  "extra fault: the receiver's RESEND asks for priority 0; the sender retransmits at 0, behind every scheduled packet",
			build: func(fault bool) *capb { return resendPriorityZero(fault) },
			want:  []hit{{"HOMA-RESEND-013", 84}},
		},
		{
			id: "RESEND-014", slug: "resend-late",
			what:  "extra fault: a receiver missing one packet stays silent 30 ms (30 ticks) before its first RESEND instead of resend_ticks (5)",
			build: func(fault bool) *capb { return resendLate(fault) },
			want:  []hit{{"HOMA-RESEND-014", 84}},
		},
		{
			id: "RESEND-016", slug: "retransmission-partial",
			what:  "extra fault: a RESEND asks for two lost packets; the sender retransmits only the first, and the receiver must ask again",
			build: func(fault bool) *capb { return retransmitPartial(fault) },
			// Its BUSY for bytes it has sent is HOMA-RESEND-015's warning
			// (main's homa_qdisc may still hold the first RESEND's
			// retransmission, whose offset homa_rpc_tx_end then gives:
			// not a HOMA-RESEND-028 violation).
			want: []hit{{"HOMA-RESEND-016", 84}, {"HOMA-RESEND-015", 87}},
		},
		{
			id: "RESEND-017", slug: "restart-while-receiving",
			what:  "extra fault: the server restarted while sending a 30000-byte response; told RPC_UNKNOWN, the client, which had part of the response, restarts its request instead of ignoring it",
			build: func(fault bool) *capb { return restartWhileReceiving(fault) },
			want:  []hit{{"HOMA-RESEND-017", 14}},
		},
		{
			id: "RESEND-018", slug: "rpc-unknown-for-grant",
			what:  "extra fault: a client that aborted its RPC answers the server's next GRANT with RPC_UNKNOWN; only a RESEND may get one",
			build: func(fault bool) *capb { return unknownForGrant(fault) },
			want:  []hit{{"HOMA-RESEND-018", 35}},
		},
		{
			id: "ACK-006", slug: "need-ack-twice-per-tick",
			what:  "extra fault: server-side capture: the server sends NEED_ACK every 0.4 ms for an unacknowledged RPC, more than once per timer tick",
			args:  []string{"--capture-point", "host:10.0.0.1"},
			build: func(fault bool) *capb { return needAckStorm(fault) },
			want:  []hit{{"HOMA-ACK-006", 5}},
		},
		{
			id: "ACK-007", slug: "ack-unprompted",
			what:  "extra fault: the client sends an ACK packet as soon as each response arrives, without a NEED_ACK (acks ride in DATA or answer NEED_ACK)",
			build: func(fault bool) *capb { return ackUnprompted(fault) },
			// The unprompted ACK hands out the pending ack that the
			// next request piggy-backs again.
			want: []hit{{"HOMA-ACK-007", 3}, {"HOMA-ACK-004", 4}},
		},
		{
			id: "RESEND-023", slug: "busy-storm",
			what:  "extra fault: the server, computing its response, answers each of the client's RESENDs with four BUSY packets 10 µs apart",
			build: func(fault bool) *capb { return busyStorm(fault) },
			want:  []hit{{"HOMA-RESEND-023", 8}},
		},
		{
			id: "RESEND-021", slug: "retransmit-twice",
			what:  "extra fault: the client answers the server's RESEND for one lost packet with three retransmissions of it 300 µs apart",
			build: func(fault bool) *capb { return retransmitTwice(fault) },
			want:  []hit{{"HOMA-RESEND-021", 87}},
		},
		{
			id: "RESEND-014", slug: "never-resend",
			what:  "extra fault: a scheduled request packet is lost before the capture; the server never RESENDs it and answers the client's RESENDs for the response with BUSY for 30 ms",
			build: func(fault bool) *capb { return neverResend(fault) },
			want:  []hit{{"HOMA-RESEND-014", 88}},
		},
		{
			id: "RESEND-012", slug: "resend-after-own-ack",
			what:  "extra fault: 5 ms after acknowledging RPC 10 the client RESENDs for its response",
			build: func(fault bool) *capb { return resendAfterOwnAck(fault) },
			want:  []hit{{"HOMA-ACK-012", 5}, {"HOMA-RESEND-012", 5}},
		},
		{
			id: "ACK-004", slug: "ack-to-other-server",
			what:  "extra fault: the client piggy-backs the ack of its RPC 10 with server 10.0.0.1 on its request to server 10.0.0.2",
			build: func(fault bool) *capb { return ackToOtherServer(fault) },
			want:  []hit{{"HOMA-ACK-004", 3}},
		},
		{
			id: "ACK-004", slug: "ack-repeated",
			what:  "extra fault: the client's pending ack of RPC 10 is never removed: the first DATA of each of its next three requests piggy-backs it",
			build: func(fault bool) *capb { return ackRepeated(fault) },
			want:  []hit{{"HOMA-ACK-004", 5}},
		},
		{
			id: "WIRE-006", slug: "retransmit-byte-two",
			what:  "extra fault: the client answers the server's RESEND for a lost packet with a retransmission whose retransmit byte is 2 (HomaModule writes only 0 or 1)",
			build: func(fault bool) *capb { return retransmitTwo(fault) },
			want:  []hit{{"HOMA-WIRE-006", 85}},
		},
		{
			id: "ACK-004", slug: "ack-entry-twice",
			what:  "extra fault: the client's ACK answering NEED_ACK for RPC 10 lists the ack of RPC 12 twice among its entries",
			build: func(fault bool) *capb { return ackEntryTwice(fault) },
			want:  []hit{{"HOMA-ACK-004", 6}},
		},
		{
			id: "GRANT-016", slug: "resend-all-after-grants-2024",
			what:  "extra fault: a linux_6.1.38 receiver sets resend_all (the buffer wakeup) in its third GRANT of a message it has been granting; the sender retransmits everything it sent",
			build: func(fault bool) *capb { return resendAllAfterGrants(fault) },
			want:  []hit{{"HOMA-GRANT-016", 31}},
		},
		{
			id: "GRANT-005", slug: "restart-beyond-sent",
			what:  "extra fault: told RPC_UNKNOWN after sending the 40000 unscheduled bytes of a 100000-byte request, the client restarts by retransmitting all 100000 bytes, 60000 of which it had never sent",
			build: func(fault bool) *capb { return restartBeyondSent(fault) },
			// Its incoming, 100000 (the end it claims transmitted), lies
			// past the grant horizon as well.
			want: []hit{{"HOMA-GRANT-005", 70}, {"HOMA-RESEND-020", 36}},
		},
		{
			id: "RESEND-011", slug: "retransmit-unsent-bytes",
			what:  "extra fault: the client, granted 80000 bytes and paused at 61360, answers the server's RESEND for [61360, 80000) by retransmitting those bytes, which it never sent, and then goes on from 80000",
			build: func(fault bool) *capb { return retransmitUnsent(fault) },
			args:  []string{"--capture-point", "host:10.0.0.11"},
			want:  []hit{{"HOMA-RESEND-011", 70}},
		},
		{
			id: "RESEND-024", slug: "client-resend-while-sending",
			what:  "extra fault: a client granted its whole request pauses at 60000 bytes (its pacer holds the rest) and its timer RESENDs for the response meanwhile; the server answers BUSY",
			build: func(fault bool) *capb { return clientResendWhileSending(fault) },
			args:  []string{"--capture-point", "host:10.0.0.11"}, // elsewhere DATA may queue behind the RESEND
			want:  []hit{{"HOMA-RESEND-024", 55}},
		},
		{
			id: "SEND-004", slug: "odd-client-id",
			what:  "extra fault: a client's id counter is off by one: its request carries the odd id 11 and the server, equally wrong, answers with 10; seen by id, the response came before its request",
			build: func(fault bool) *capb { return oddClientID(fault) },
			want:  []hit{{"HOMA-SEND-004", 6}},
		},
		{
			id: "CUTOFF-005", slug: "cutoffs-every-stale-packet",
			what:  "extra fault: a new peer's 30000-byte request carries cutoff_version 0 in all 22 packets; the server answers each of the first ten with CUTOFFS within 10 µs instead of once per jiffy",
			build: func(fault bool) *capb { return cutoffsEveryPacket(fault) },
			want:  []hit{{"HOMA-CUTOFF-005", 15}},
		},
		{
			id: "RESEND-025", slug: "round-skips-gap",
			what:  "extra fault: two scheduled request packets are lost before the capture; the server's RESEND round asks only for the first, and for the second only in its next round 5 ms later",
			build: func(fault bool) *capb { return roundSkipsGap(fault) },
			want:  []hit{{"HOMA-RESEND-026", 82}, {"HOMA-RESEND-025", 84}},
		},
		{
			id: "RESEND-026", slug: "round-omits-tail",
			what:  "extra fault: a scheduled request packet and the request's last packet are lost before the capture; the server's RESEND round asks only for the first (not for the granted tail), and the capture ends 2 ms later",
			build: func(fault bool) *capb { return roundOmitsTail(fault) },
			want:  []hit{{"HOMA-RESEND-026", 82}},
		},
		{
			id: "RESEND-022", slug: "server-unknown-keeps-rpc",
			what:  "extra fault: the client RESENDs a lost packet of its 30000-byte response; the server answers RPC_UNKNOWN, yet retransmits the packet and sends NEED_ACK 2.5 ms later",
			build: func(fault bool) *capb { return serverUnknownKeepsRPC(fault) },
			// The server's first NEED_ACK comes 7.6 ms after its response
			// went out, after the client's RESEND: request_ack_ticks 5.
			args: []string{"--param", "request_ack_ticks=5"},
			want: []hit{{"HOMA-RESEND-022", 31}},
		},
		{
			id: "ACK-004", slug: "ack-wrong-client-port-2024",
			what:  "extra fault: a linux_6.1.38 client piggy-backs the ack of RPC 2 with client_port 32769, not the port 32768 the RPC ran from (the server finds no RPC to free)",
			build: func(fault bool) *capb { return ackWrongClientPort2024(fault) },
			want:  []hit{{"HOMA-ACK-004", 3}},
		},
		{
			id: "RESEND-016", slug: "partial-retransmission-2024",
			what:  "extra fault: a linux_6.1.38 client that has sent its whole 50000-byte request answers the server's RESEND for two lost packets with only the first, and the server's next four RESENDs for the second with BUSY",
			build: func(fault bool) *capb { return partialRetransmission2024(fault) },
			// Its BUSYs for bytes it has sent: HOMA-RESEND-028.
			want: []hit{{"HOMA-RESEND-016", 47}, {"HOMA-RESEND-028", 50}},
		},
		{
			id: "WIRE-014", slug: "restart-other-bytes",
			what:  "extra fault: told RPC_UNKNOWN by a restarted server, the client restarts its 3000-byte request with other bytes than it first sent",
			build: func(fault bool) *capb { return restartOtherBytes(fault) },
			want:  []hit{{"HOMA-WIRE-014", 4}},
		},
		{
			id: "GRANT-021", slug: "grant-before-data",
			what:  "extra fault: the server's first GRANT for the 100000-byte request leaves 500 µs before the request's first DATA (a receiver that grants on a timer, or from stale state)",
			build: func(fault bool) *capb { return grantBeforeData(fault) },
			want:  []hit{{"HOMA-GRANT-021", 6}},
		},
		{
			id: "SEND-005", slug: "response-without-request-tail",
			what:  "extra fault: the request's last DATA never passes the capture point (lost before it, never sent again), yet the server sends its response",
			build: func(fault bool) *capb { return responseWithoutRequestTail(fault) },
			want:  []hit{{"HOMA-SEND-005", 83}},
		},
	}
}

// grantBeforeData is GRANT-021's scenario: RPC 4's exchange with the
// server's first GRANT moved (fault) to 500 µs before the request's first
// DATA, which is marked.
func grantBeforeData(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, m := rpc100k(b, msgOpts{}, hostC, hostS)
	if fault {
		first := m.data[0]
		g := m.grants[0]
		b.pkts[g].t = b.pkts[first].t - us(500)
		b.mark(g, "GRANT for a request none of which has arrived")
		b.mark(first, "GRANT-021: the request's first DATA, after the GRANT")
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// responseWithoutRequestTail is SEND-005's scenario: RPC 4's request
// without (fault) its last DATA, and the response, which is marked.
func responseWithoutRequestTail(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, m := rpc100k(b, msgOpts{}, hostC, hostS)
	at := b.lastTime() + us(30)
	if fault {
		last := m.data[m.offs[len(m.offs)-1]]
		b.pkts = append(b.pkts[:last], b.pkts[last+1:]...)
	}
	resp := len(b.pkts)
	b.respondAndAck(r, at)
	if fault {
		b.mark(resp, "SEND-005: response while the request's last bytes never came")
	}
	return b
}

// lossy100k is rpc100k with the first transmission of the packet at
// offset lost between the client and the server, seen by the capture.
func lossy100k(b *capb, lost ...uint32) (ends, msgOut) {
	m := map[uint32]bool{}
	for _, o := range lost {
		m[o] = true
	}
	return rpc100k(b, msgOpts{lost: m}, hostC, hostS)
}

// grantSequenceGarbage (WIRE-009): the base exchange; faulty, every GRANT's
// sequence holds 0x0001b2c0.
func grantSequenceGarbage(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, m := rpc100k(b, msgOpts{}, hostC, hostS)
	if fault {
		for k, i := range m.grants {
			b.pkts[i].f.(*wire.GrantFields).Common.Sequence = 0x1b2c0
			if k == 0 {
				b.mark(i, "WIRE-009: GRANT with sequence 111296 (stale header bytes), want 0")
			}
		}
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// retxStaleSequence (WIRE-010): one packet of the request is lost; after 5
// ms the server RESENDs it and the client retransmits it. Faulty, the
// retransmission's sequence is its GSO batch's first offset.
func retxStaleSequence(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, _ := lossy100k(b, lost)
	at := b.lastTime() + ms(5.1)
	b.resend(at, r, false, lost, 1424)
	i := b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	if fault {
		b.pkts[i].f.(*wire.DataFields).Common.Sequence = lost - 3*1424
		b.mark(i, "WIRE-010: retransmission with seg.offset 68480 but sequence 64208")
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// oneIDTwoSockets (WIRE-011): two 100-byte RPCs of one client host to the
// server, overlapping, from ports 32768 and 32769. Faulty, both have id 10.
func oneIDTwoSockets(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r1 := rpcOf(hostC, hostS, 10)
	r2 := rpcOf(hostC, hostS, 12)
	r2.cport = 32769
	if fault {
		r2.id = 10
	}
	b.data(0, r1, true, 7, 100, 0, 100, 100, 1, false)
	i := b.data(us(10), r2, true, 7, 200, 0, 200, 200, 1, false)
	if fault {
		b.mark(i, "WIRE-011: RPC 10 again, from port 32769, while RPC 10 from port 32768 is live")
	}
	b.respondAndAck(r1, us(50))
	b.respondAndAck(r2, us(60))
	return b
}

// clientIDZero (ID-003): two 100-byte RPCs; faulty, the first has id 0.
func clientIDZero(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	first := rpcOf(hostC, hostS, 10)
	if fault {
		first.id = 0
	}
	t := b.smallRPC(first, 0, wire.AckEntry{})
	if fault {
		b.mark(0, "ID-003: request DATA with sender_id 0")
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), t+ms(1), wire.AckEntry{})
	return b
}

// idReused (ID-004): RPC 10 and 12 complete and are acknowledged; 60 ms
// later a new RPC: faulty with id 10, clean with id 14.
func idReused(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.smallRPC(rpcOf(hostC, hostS, 10), 0, wire.AckEntry{})
	t = b.smallRPC(rpcOf(hostC, hostS, 12), t+ms(1), wire.AckEntry{})
	id := uint64(14)
	if fault {
		id = 10
	}
	b.smallRPC(rpcOf(hostC, hostS, id), t+ms(60), wire.AckEntry{})
	if fault {
		b.mark(8, "ID-004: a new request with id 10, acknowledged 63 ms earlier")
	}
	return b
}

// icmpQuote returns an ICMP port-unreachable frame from "from" quoting the
// Homa packet of frame i of b (its IP header and 28 Homa bytes, as Linux
// quotes up to 576 bytes).
func icmpQuote(b *capb, i int, from netip.Addr) []byte {
	p := b.pkts[i]
	fr, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: p.src, Dst: p.dst, Priority: p.prio}, p.f,
		wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		panic(err)
	}
	q := fr[14:]
	q = q[:min(len(q), 20+wire.CommonHeaderLen)]
	return icmpUnreachableN(from, p.src, q)
}

// icmpThenUnknown (ID-005): a 100-byte request to port 4001, which has no
// socket: ICMP port unreachable. 5 ms later the client RESENDs; clean, the
// host answers ICMP again; faulty, RPC_UNKNOWN from port 4001.
func icmpThenUnknown(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	r.sport = 4001
	i := b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.extra = append(b.extra, rawFrame{us(20), icmpQuote(b, i, hostS)})
	j := b.resend(ms(5.1), r, true, 0, wire.ResendAll)
	if fault {
		b.mark(b.unknown(ms(5.1)+us(20), r, false), "ID-005: RPC_UNKNOWN from port 4001, which the host declared unreachable")
	} else {
		b.extra = append(b.extra, rawFrame{ms(5.1) + us(20), icmpQuote(b, j, hostS)})
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(8), wire.AckEntry{})
	return b
}

// icmpUnreachableN is icmpUnreachable quoting all of quoted.
func icmpUnreachableN(from, to netip.Addr, quoted []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xc0, TTL: 64, Protocol: layers.IPProtocolICMPv4,
		SrcIP: from.AsSlice(), DstIP: to.AsSlice()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort)}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, icmp, gopacket.Payload(quoted)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// needAckAfterICMP (ID-006): a 100-byte RPC; the client's socket closes
// before its ack; the server's NEED_ACK gets ICMP port unreachable from
// the client host. Faulty, NEED_ACK keeps coming every tick.
func needAckAfterICMP(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	na := b.needAck(us(50)+ms(2.5), r)
	b.extra = append(b.extra, rawFrame{us(50) + ms(2.5) + us(20), icmpQuote(b, na, hostC)})
	if fault {
		for k := 1; k <= 6; k++ {
			i := b.needAck(us(50)+ms(2.5+float64(k)), r)
			if k == 3 {
				b.mark(i, "ID-006: NEED_ACK to port 32768 3 ms after the client host reported it unreachable")
			}
		}
	}
	b.smallRPC(rpcOf(hostC2, hostS, 10), ms(12), wire.AckEntry{})
	return b
}

// grantsFromTimer (GRANT-012): a 500000-byte request; the receiver grants
// 60000 bytes ahead after every DATA packet, so each packet pays for one
// GRANT. After 70000 bytes the sender's uplink is busy for 45 ms.
// Faulty, the receiver grants 20000 more every 5 ms while nothing
// arrives: the first of those is one GRANT more than packets received.
func grantsFromTimer(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	const stop = 40000 + 21*1424 // 69904
	m := b.send(r, true, t+us(40), msgOpts{length: 500000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 60000, batch: 1, stopAt: stop, resumeAt: t + ms(45)})
	if fault {
		var last time.Duration
		var granted uint32
		for _, i := range m.grants {
			if p := b.pkts[i]; p.t < t+ms(45) {
				last = max(last, p.t)
				granted = max(granted, p.f.(*wire.GrantFields).Offset)
			}
		}
		for k := 1; k <= 6; k++ {
			granted += 20000
			i := b.grant(last+ms(5*float64(k)), r, true, granted, 0)
			if k == 1 {
				b.mark(i, "GRANT-012: a GRANT no packet paid for: every DATA packet received already paid for one")
			}
		}
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// threeActiveLevels (GRANT-011): three clients send requests of 100000,
// 200000 and 300000 bytes at once (unscheduled packets interleaved). The
// receiver grants every incomplete message 19936 bytes (14 packets) past what it has,
// in SRPT order, once per round; each round's scheduled DATA follow round
// robin at the level of each message's latest GRANT. Clean: the levels
// homa_grant_priority gives, min(max_sched_prio, n-1) - rank for n
// incomplete messages (2, 1, 0; then 1, 0 once the first is complete).
// Faulty (red-team fault N3): every GRANT at level 0. The first GRANT
// below its floor is the second one for the 100000-byte request, when the
// other two have had theirs.
func threeActiveLevels(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	rs := []ends{rpcOf(hostC, hostS, 10), rpcOf(hostC2, hostS, 10), rpcOf(hostC3, hostS, 10)}
	L := []uint32{100000, 200000, 300000}
	// Each GRANT gives 14 packets more (a sender cuts whole packets,
	// HOMA-WIRE-016).
	const U, step = 40000, 14 * 1424
	t := time.Duration(0)
	for off := uint32(0); off < U; off += 1424 {
		for i, r := range rs {
			b.data(t, r, true, 4, L[i], off, min(1424, U-off), U, 1, false)
			t += us(1)
		}
	}
	rcv := []uint32{U, U, U}
	granted := []uint32{U, U, U}
	prio := []uint8{0, 0, 0}
	grants := 0
	for round := 0; ; round++ {
		// Incomplete messages in SRPT order: the index order, as the
		// shorter ones stay ahead.
		var active []int
		for i := range rs {
			if rcv[i] < L[i] {
				active = append(active, i)
			}
		}
		if len(active) == 0 {
			break
		}
		t += us(5)
		for rank, i := range active {
			g := min(L[i], rcv[i]+step)
			if g <= granted[i] {
				continue
			}
			p := uint8(max(0, min(3, len(active)-1)-rank))
			if fault {
				p = 0
			}
			f := b.grant(t, rs[i], true, g, p)
			grants++
			if fault && grants == 4 {
				b.mark(f, "GRANT-011: level 0 for the best of three messages being granted; homa_grant_priority gives it 2")
			}
			granted[i], prio[i] = g, p
			t += us(1)
		}
		t += us(5)
		// The granted bytes, one packet per message in turn.
		for more := true; more; {
			more = false
			for _, i := range active {
				if rcv[i] < granted[i] {
					n := min(1424, granted[i]-rcv[i])
					b.data(t, rs[i], true, prio[i], L[i], rcv[i], n, U, 1, false)
					rcv[i] += n
					t += us(1)
					more = true
				}
			}
		}
	}
	for i, r := range rs {
		b.respondAndAck(r, t+us(100*float64(i+1)))
	}
	return b
}

// loneHighPriority (GRANT-015): the base exchange; faulty, its GRANTs
// carry priority 2 (and the scheduled DATA follow them).
func loneHighPriority(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	o := msgOpts{}
	if fault {
		o.gprio = 2
	}
	r, m := rpc100k(b, o, hostC, hostS)
	if fault {
		b.mark(m.grants[0], "GRANT-015: priority 2 with one message being granted")
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// grantBeforeBuffers (GRANT-016): a 100000-byte request. Clean: the server
// has no receive buffers: it drops the unscheduled bytes and grants
// nothing; 8 ms later buffers free up and it sends the wakeup RESEND {0,
// -1} at level 6; the client retransmits the 40000 bytes at level 6 and
// the exchange goes on. Faulty: the server grants 20000 more (it had
// buffers), then sends the wakeup RESEND anyway.
func grantBeforeBuffers(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	o := msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2))}
	sent := uint32(40000)
	if fault {
		o.window, o.stopAt = 20000, 60000
		sent = 60000
	}
	m := b.send(r, true, t+us(40), o)
	for _, off := range m.offs {
		sent = max(sent, off+uint32(len(b.pkts[m.data[off]].f.(*wire.DataFields).Payload)))
	}
	at := m.end + ms(8)
	i := b.ctl(at, r, false, &wire.ResendFields{Offset: 0, Length: wire.ResendAll, Priority: 6})
	b.pkts[i].prio = 7
	if fault {
		b.mark(i, "GRANT-016: buffer-wakeup RESEND for a message the server had granted")
	}
	at += us(20)
	for off := uint32(0); off < sent; {
		n := min(1424, sent-off)
		if off < 40000 && off+n > 40000 {
			n = 40000 - off // the original packets had a boundary at U
		}
		b.data(at, r, true, 6, 100000, off, n, sent, 1, true)
		at += us(1)
		off += n
	}
	b.send(r, true, at+us(10), msgOpts{length: 100000, uprio: 4, cv: 1, window: 20000, from: sent, granted: sent})
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// cutoffsUnprompted (CUTOFF-003): the base exchange; faulty, the server
// sends CUTOFFS (version 1) in the middle of the request, whose DATA all
// carry version 1.
func cutoffsUnprompted(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, _ := rpc100k(b, msgOpts{}, hostC, hostS)
	t := b.respondAndAck(r, b.lastTime()+us(30))
	if fault {
		b.mark(b.cutoffs(t+ms(25), r, false), "CUTOFF-003: CUTOFFS 25 ms after the last DATA, all of which carried cutoff_version 1")
	}
	b.smallRPC(rpcOf(hostC, hostS, 6), t+ms(30), wire.AckEntry{}) // RPC 4's ack went in its ACK
	return b
}

// restartPriority (PRIO-003): a 30000-byte request between warm peers (at
// level 4); the server restarted and lost it. 5 ms later the client
// RESENDs for its response, the server answers RPC_UNKNOWN and the client
// retransmits its request from 0: clean at level 4, faulty at level 7.
func restartPriority(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 30000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2))})
	at := m.end + ms(5.1)
	b.resend(at, r, true, 0, wire.ResendAll)
	b.unknown(at+us(20), r, false)
	at += us(40)
	prio := uint8(4)
	if fault {
		prio = 7
	}
	for off := uint32(0); off < 30000; off += 1424 {
		i := b.data(at, r, true, prio, 30000, off, min(1424, 30000-off), 30000, 1, true)
		if fault && off == 0 {
			b.mark(i, "PRIO-003: restart retransmission at level 7, want the unscheduled level 4")
		}
		at += us(1)
	}
	b.respondAndAck(r, at+us(30))
	return b
}

// resendBeyondGrant (RESEND-012): a 100000-byte request whose sender
// stops at 60000 (granted); after 5 ms the receiver RESENDs what it
// lacks: clean nothing it may ask for but [60000, 60000) — it asks
// nothing and the sender resumes; faulty, it asks for [60000, 80000).
func resendBeyondGrant(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 20000, grantCap: 60000})
	var sent uint32 // the last packet below 60000 runs past it
	for _, off := range m.offs {
		sent = max(sent, off+uint32(len(b.pkts[m.data[off]].f.(*wire.DataFields).Payload)))
	}
	at := m.end + ms(5.1)
	granted := uint32(60000)
	if fault {
		// The RESEND raises the sender's horizon (RTX-08): it sends on.
		b.mark(b.resend(at, r, false, 60000, 20000), "RESEND-012: RESEND for [60000, 80000), beyond the 60000 bytes granted")
		granted = 80000
	}
	// The RESEND's own authority sends the sender on, and the receiver
	// grants only as that DATA arrives: no GRANT of a raise the RESEND
	// could have raced (HOMA-RESEND-012 holds a RESEND for one).
	b.send(r, true, at+us(20), msgOpts{length: 100000, uprio: 4, cv: 1, window: 20000, from: sent, granted: granted, noFromGrant: fault})
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// resendPriorityZero (RESEND-013): one packet of the request is lost;
// after 5 ms the server RESENDs it, faulty asking for priority 0, and the
// client retransmits it at that priority.
func resendPriorityZero(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, _ := lossy100k(b, lost)
	at := b.lastTime() + ms(5.1)
	i := b.resend(at, r, false, lost, 1424)
	prio := uint8(7)
	if fault {
		b.pkts[i].f.(*wire.ResendFields).Priority = 0
		b.mark(i, "RESEND-013: RESEND asking for priority 0, want 7")
		prio = 0
	}
	b.data(at+us(20), r, true, prio, 100000, lost, 1424, lost+1424, 1, true)
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// resendLate (RESEND-014): one packet of the request is lost; the server
// RESENDs it after 5.1 ms (clean) or 30 ms (faulty).
func resendLate(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, _ := lossy100k(b, lost)
	wait := ms(5.1)
	if fault {
		wait = ms(30)
	}
	at := b.lastTime() + wait
	i := b.resend(at, r, false, lost, 1424)
	if fault {
		b.mark(i, "RESEND-014: first RESEND round after 30 ms of silence, want about 5 ms")
	}
	b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// retransmitPartial (RESEND-016): two adjacent packets of the request are
// lost; the server RESENDs [lost, lost+2848). Clean, both are
// retransmitted; faulty, only the first, and 5 ms later the server asks for
// the second, which then comes.
func retransmitPartial(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, _ := lossy100k(b, lost, lost+1424)
	at := b.lastTime() + ms(5.1)
	i := b.resend(at, r, false, lost, 2848)
	b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+2848, 1, true)
	if fault {
		// The sender retransmits the first packet of a range only, and
		// answers the RESENDs for the second with BUSY until it is sent
		// at last 26 ms later.
		b.mark(i, "RESEND-016: only [68480, 69904) of the two packets asked for is retransmitted")
		for k := 0; k < 5; k++ {
			at += ms(5.1)
			b.resend(at, r, false, lost+1424, 1424)
			b.busy(at+us(20), r, true)
		}
		b.data(at+ms(1), r, true, 7, 100000, lost+1424, 1424, lost+2848, 1, true)
	} else {
		b.data(at+us(21), r, true, 7, 100000, lost+1424, 1424, lost+2848, 1, true)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// restartWhileReceiving (RESEND-017): a 100-byte request; the server sends
// the first 10 packets of a 30000-byte response and restarts. 5 ms later
// the client RESENDs the rest and gets RPC_UNKNOWN; faulty, it restarts
// its request; clean, it ignores it (and its next RESEND gets RPC_UNKNOWN
// again).
func restartWhileReceiving(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	at := us(50)
	for off := uint32(0); off < 10*1424; off += 1424 {
		b.data(at, r, false, 4, 30000, off, 1424, 30000, 1, false)
		at += us(1)
	}
	at += ms(5.1)
	b.resend(at, r, true, 10*1424, 30000-10*1424)
	b.unknown(at+us(20), r, false)
	if fault {
		b.mark(b.data(at+us(40), r, true, 7, 100, 0, 100, 100, 1, true), "RESEND-017: the client restarts its request although its response had begun to arrive")
	} else {
		at += ms(5.1)
		b.resend(at, r, true, 10*1424, 30000-10*1424)
		b.unknown(at+us(20), r, false)
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), at+ms(1), wire.AckEntry{})
	return b
}

// unknownForGrant (RESEND-018): a 100000-byte request whose client
// aborts the RPC after its unscheduled bytes. Faulty: it answers the
// server's GRANT with RPC_UNKNOWN. Clean: it drops the GRANT; 5 ms later
// the server RESENDs what it granted and gets RPC_UNKNOWN.
func unknownForGrant(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), stopAt: 40000})
	g := b.grant(m.end+us(5), r, true, 60000, 0)
	if fault {
		b.mark(b.unknown(b.pkts[g].t+us(5), r, true), "RESEND-018: RPC_UNKNOWN answering a GRANT")
	} else {
		at := b.pkts[g].t + ms(5.1)
		b.resend(at, r, false, 40000, 20000)
		b.unknown(at+us(20), r, true)
	}
	b.smallRPC(rpcOf(hostC, hostS, 6), ms(12), wire.AckEntry{}) // RPC 2's ack rode on RPC 4's first DATA
	return b
}

// needAckStorm (ACK-006): three 100-byte RPCs from three clients, captured
// on the server's link; the first client acks only after 5 NEED_ACKs.
// Clean, they come one per tick; faulty, every 0.4 ms.
func needAckStorm(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	gap := ms(1.02)
	if fault {
		gap = ms(0.4)
	}
	at := us(50) + ms(2.5)
	for k := 0; k < 5; k++ {
		i := b.needAck(at, r)
		if fault && k == 2 {
			b.mark(i, "ACK-006: third NEED_ACK 0.8 ms after the first, two repeats in less than a tick")
		}
		at += gap
	}
	b.ack(at, r)
	b.smallRPC(rpcOf(hostC2, hostS, 10), at+ms(1), wire.AckEntry{})
	b.smallRPC(rpcOf(hostC3, hostS, 10), at+ms(5), wire.AckEntry{})
	return b
}

// ackUnprompted (ACK-007): three 100-byte RPCs one after the other; clean,
// each request carries the previous RPC's ack and the last one is acked
// on NEED_ACK; faulty, the client also sends an ACK packet as soon as each
// response arrives.
func ackUnprompted(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	prev := wire.AckEntry{}
	t := time.Duration(0)
	for k, id := range []uint64{10, 12, 14} {
		r := rpcOf(hostC, hostS, id)
		i := b.data(t, r, true, 7, 100, 0, 100, 100, 1, false)
		b.pkts[i].f.(*wire.DataFields).Ack = prev
		b.data(t+us(50), r, false, 7, 100, 0, 100, 100, 1, false)
		if fault {
			j := b.ack(t+us(60), r)
			if k == 0 {
				b.mark(j, "ACK-007: ACK with no NEED_ACK before it")
			}
		}
		prev = b.pigAck(r)
		t += ms(1)
		if k == 2 && !fault {
			b.needAck(t+ms(1.5), r)
			b.ack(t+ms(1.52), r)
		}
	}
	return b
}

// ackNamesServerID (ACK-004): RPC 10 completes; the next request carries
// its piggy-backed ack, faulty with id 11 (odd: no client's id).
func ackNamesServerID(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 10)
	b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(t+us(90), r, false, 7, 100, 0, 100, 100, 1, false)
	ack := b.pigAck(r)
	if fault {
		ack.ClientID = 11
	}
	t = b.smallRPC(rpcOf(hostC, hostS, 12), t+us(300), ack)
	if fault {
		b.mark(6, "ACK-004: piggy-backed ack names id 11")
	}
	return b
}

// oneIDTwoServers (WIRE-011): RPC 10 to the server; 10 us later a request
// to a second server (10.0.0.2): faulty with id 10, clean with id 12.
func oneIDTwoServers(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r1 := rpcOf(hostC, hostS, 10)
	r2 := rpcOf(hostC, netip.MustParseAddr("10.0.0.2"), 12)
	if fault {
		r2.id = 10
	}
	b.data(0, r1, true, 7, 100, 0, 100, 100, 1, false)
	i := b.data(us(10), r2, true, 7, 100, 0, 100, 100, 1, false)
	if fault {
		b.mark(i, "WIRE-011: RPC 10 to a second server while RPC 10 is live")
	}
	b.respondAndAck(r1, us(50))
	b.respondAndAck(r2, us(60))
	return b
}

// resendAfterOwnUnknown (RESEND-022): the client's application aborts RPC
// 4 after its first request packet; 6 ms later the server RESENDs the rest
// and the client answers RPC_UNKNOWN. Faulty, the client RESENDs for the
// response 3 ms later, in its timer's time, and the server answers
// RPC_UNKNOWN.
func resendAfterOwnUnknown(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	b.data(t+us(40), r, true, 5, 3000, 0, 1424, 3000, 1, false)
	b.resend(t+ms(6), r, false, 1424, 1576)
	b.unknown(t+ms(6)+us(30), r, true)
	if fault {
		b.mark(b.resend(t+ms(9), r, true, 0, ^uint32(0)), "RESEND-022: RESEND for RPC 4 after the client said RPC_UNKNOWN for it")
		b.unknown(t+ms(9)+us(30), r, false)
	}
	return b
}

// ipv4TTLZero (WIRE-015): a 100-byte RPC; faulty, every packet from the
// client has TTL 0 (header checksum right).
func ipv4TTLZero(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	b.smallRPC(rpcOf(hostC, hostS, 4), t+us(40), b.pigAck(rpcOf(hostC, hostS, 2)))
	if fault {
		b.ipv4 = func(i int, ip []byte) {
			if b.pkts[i].src == hostC {
				ip[8] = 0
			}
		}
		b.mark(0, "WIRE-015: TTL 0")
	}
	return b
}

// busyStorm (RESEND-023): a 100-byte request the server computes for 12
// ms; the client RESENDs every 5.2 ms and the server answers BUSY: once
// each (clean), four times each (faulty).
func busyStorm(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	n := 1
	if fault {
		n = 4
	}
	for k := 1; k <= 2; k++ {
		at := ms(5.2 * float64(k))
		b.resend(at, r, true, 0, wire.ResendAll)
		for j := 0; j < n; j++ {
			i := b.busy(at+us(20+10*float64(j)), r, false)
			if fault && k == 2 && j == 0 {
				// At a switch four identical BUSYs within jitter for one
				// RESEND may be two for a copy of the RESEND the network
				// made after the capture point, each copied too.
				b.mark(i, "RESEND-023: fifth BUSY, four having answered the first RESEND")
			}
		}
	}
	b.respondAndAck(r, ms(12))
	return b
}

// retransmitTwice (RESEND-021): one scheduled packet of the base exchange
// is lost; the server RESENDs it after 5 ms and the client retransmits it
// once (clean) or three times, 300 µs apart (faulty: closer than jitter
// a copy could be the network's duplicate, and at a switch the second
// could answer a copy of the RESEND made after the capture point).
func retransmitTwice(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, m := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}, capLost: true}, hostC, hostS)
	at := m.end + ms(5.1)
	b.resend(at, r, false, lost, 1424)
	b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	if fault {
		// A second copy could answer a copy of the RESEND the network
		// made after the capture point (inconclusive at a switch); a
		// third cannot.
		b.data(at+us(320), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
		b.mark(b.data(at+us(620), r, true, 7, 100000, lost, 1424, lost+1424, 1, true), "RESEND-021: third retransmission for one RESEND, 300 µs after the second")
	}
	b.respondAndAck(r, at+us(400))
	return b
}

// neverResend (RESEND-014): a scheduled packet of a 100000-byte request is
// lost before the capture. Clean: the server RESENDs it 5.1 ms after the
// last DATA and the RPC completes. Faulty: the server never RESENDs; the
// client, having sent all it was granted, RESENDs for its response every
// 5.2 ms and the server answers BUSY, showing it still holds the RPC.
func neverResend(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 20000, lost: map[uint32]bool{lost: true}, capLost: true})
	last := b.pkts[m.grants[len(m.grants)-1]].t
	if !fault {
		at := last + ms(5.1)
		b.resend(at, r, false, lost, 1424)
		b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
		b.respondAndAck(r, at+us(60))
		return b
	}
	for k := 1; k <= 6; k++ {
		at := last + ms(5.2*float64(k))
		b.resend(at, r, true, 0, wire.ResendAll)
		i := b.busy(at+us(20), r, false)
		if k == 3 {
			b.mark(i, "RESEND-014: BUSY 15.6 ms after the client's last DATA; the server never RESENT the packet it lacks")
		}
	}
	return b
}

// resendAfterOwnAck (RESEND-012): a 100-byte RPC completes and the client
// acknowledges it; faulty, 5 ms later it RESENDs for the response (the
// server answers RPC_UNKNOWN). A second RPC follows.
func resendAfterOwnAck(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	t := b.smallRPC(r, 0, wire.AckEntry{})
	if fault {
		b.mark(b.resend(t+ms(5), r, true, 0, wire.ResendAll), "RESEND-012: RESEND for a response the client acknowledged 5 ms earlier")
		b.unknown(t+ms(5)+us(20), r, false)
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), t+ms(8), wire.AckEntry{})
	return b
}

// hostS2 is a second server.
var hostS2 = netip.MustParseAddr("10.0.0.2")

// ackToOtherServer (ACK-004): the client's RPC 10 with server 1, then 1 ms
// later its RPC 12 with server 2; faulty, RPC 12's request piggy-backs the
// ack of RPC 10. RPC 10 is acknowledged to server 1 after its NEED_ACK.
func ackToOtherServer(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r1 := rpcOf(hostC, hostS, 10)
	b.data(0, r1, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r1, false, 7, 100, 0, 100, 100, 1, false)
	r2 := rpcOf(hostC, hostS2, 12)
	i := b.data(ms(1), r2, true, 7, 100, 0, 100, 100, 1, false)
	if fault {
		b.pkts[i].f.(*wire.DataFields).Ack = b.pigAck(r1)
		b.mark(i, "ACK-004: ack of RPC 10, which runs with 10.0.0.1, sent to 10.0.0.2")
	}
	b.needAck(us(50)+ms(2.5), r1)
	b.ack(us(50)+ms(2.52), r1)
	b.respondAndAck(r2, ms(1.05))
	return b
}

// ackRepeated (ACK-004): RPC 10, then requests 12, 14 and 16 1 ms apart,
// each piggy-backing the ack of the RPC before it (clean) or, faulty, all
// the ack of RPC 10.
func ackRepeated(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	t := us(200)
	for k := 0; k < 3; k++ {
		rr := rpcOf(hostC, hostS, uint64(12+2*k))
		ack := b.pigAck(rpcOf(hostC, hostS, uint64(10+2*k)))
		if fault {
			ack = b.pigAck(r)
		}
		i := b.data(t, rr, true, 7, 100, 0, 100, 100, 1, false)
		b.pkts[i].f.(*wire.DataFields).Ack = ack
		if fault && k == 1 {
			b.mark(i, "ACK-004: the ack of RPC 10 again")
		}
		b.data(t+us(50), rr, false, 7, 100, 0, 100, 100, 1, false)
		t += ms(1)
	}
	return b
}

// restartOtherBytes (WIRE-014): a 3000-byte request whose last two
// packets are lost before the capture; the server restarted, so the
// client's RESEND gets RPC_UNKNOWN and the client restarts the request
// from 0. Clean, with the bytes it first sent; faulty, with others.
func restartOtherBytes(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	const L = 3000
	bytesAt := func(seed, off uint32, n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte((seed + off + uint32(i)) % 251)
		}
		return p
	}
	i0 := b.data(0, r, true, 5, L, 0, 1424, L, 1, false)
	b.pkts[i0].f.(*wire.DataFields).Payload = bytesAt(0, 0, 1424)
	b.resend(ms(5.2), r, true, 0, wire.ResendAll)
	b.unknown(ms(5.22), r, false)
	seed := uint32(0)
	if fault {
		seed = 7
	}
	for off := uint32(0); off < L; off += 1424 {
		n := min(1424, L-off)
		i := b.data(ms(5.23)+us(float64(off/1424)), r, true, 5, L, off, n, L, 1, true)
		b.pkts[i].f.(*wire.DataFields).Payload = bytesAt(seed, off, int(n))
		if fault && off == 0 {
			b.mark(i, "WIRE-014: the restarted request's first bytes differ from the first copy's")
		}
	}
	b.respondAndAck(r, ms(5.4))
	return b
}

// retransmitTwo (WIRE-006): one packet of the request is lost; the
// server RESENDs it and the client retransmits it, faulty with
// retransmit = 2.
func retransmitTwo(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, _ := lossy100k(b, lost)
	at := b.lastTime() + ms(5.1)
	b.resend(at, r, false, lost, 1424)
	i := b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	if fault {
		b.pkts[i].f.(*wire.DataFields).Retransmit = 2
		b.mark(i, "WIRE-006: retransmit byte 2, want 0 or 1")
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// ackEntryTwice (ACK-004): RPCs 10 and 12 complete; the ACK answering
// NEED_ACK for RPC 10 lists the ack of RPC 12 once (clean) or twice.
func ackEntryTwice(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	r2 := rpcOf(hostC, hostS, 12)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(10), r2, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	b.data(us(60), r2, false, 7, 100, 0, 100, 100, 1, false)
	b.needAck(us(50)+ms(2.5), r)
	i := b.ack(us(50)+ms(2.52), r)
	a := b.pkts[i].f.(*wire.AckFields)
	a.Acks = append(a.Acks, b.pigAck(r2))
	if fault {
		a.Acks = append(a.Acks, b.pigAck(r2))
		b.mark(i, "ACK-004: the ack of RPC 12 twice in one ACK")
	}
	return b
}

// resendAllAfterGrants (GRANT-016): linux_6.1.38, a 60000-byte request
// granted 10000 bytes ahead; faulty, the third GRANT carries resend_all
// and the sender retransmits what it had sent.
func resendAllAfterGrants(fault bool) *capb {
	b := newCap(wire.Version2024)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 60000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), window: 10000})
	if fault {
		g := m.grants[2]
		b.pkts[g].f.(*wire.GrantFields).ResendAll = 1
		b.mark(g, "GRANT-016: resend_all (the buffer wakeup) in the third GRANT of a message being granted")
		gt := b.pkts[g].t
		// Whole segments as first cut (homa_resend_data): 1424 bytes
		// from 0 and from U = 10000, up to the one holding byte 19999.
		for off, k := uint32(0), 0; off < 20000; k++ {
			n := uint32(1424)
			if off < 10000 {
				n = min(n, 10000-off)
			}
			b.data(gt+us(200)+us(float64(k)), r, true, 0, 60000, off, n, 20000, 1, true)
			off += n
		}
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// restartBeyondSent (GRANT-005): the server restarted after the 40000
// unscheduled bytes of a 100000-byte request arrived; the client RESENDs
// for the response, is told RPC_UNKNOWN and restarts: clean, it resends
// [0, 40000) and is granted the rest; faulty, it resends [0, 100000).
func restartBeyondSent(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2))})
	at := b.lastTime() + ms(5.1)
	b.resend(at, r, true, 0, wire.ResendAll)
	b.unknown(at+us(20), r, false)
	end := uint32(40000)
	if fault {
		end = 100000
	}
	k := 0
	for off := uint32(0); off < end; k++ {
		n := min(1424, end-off)
		if off < 40000 && off+n > 40000 {
			n = 40000 - off
		}
		i := b.data(at+us(30)+us(float64(k)), r, true, 4, 100000, off, n, end, 1, true)
		if fault && off+n >= 40000+8544 && off < 40000+8544 {
			b.mark(i, "GRANT-005: the restart retransmits bytes it never sent, more than one skb past the 40000 it had")
		}
		off += n
	}
	if !fault {
		b.send(r, true, b.lastTime()+us(10), msgOpts{length: 100000, uprio: 4, cv: 1, from: 40000, window: 20000})
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// retransmitUnsent (RESEND-011): the server grants the 100000-byte
// request to 80000 at once; the client sends to 61360 (one packet lost)
// and its pacer pauses. The server RESENDs the lost packet and the granted tail, then
// [61360, 80000). Clean, the client answers BUSY (nothing of it sent) and
// goes on; faulty, it retransmits [61360, 80000) and goes on from 80000.
// Taken on the client's link.
func retransmitUnsent(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	lost := uint32(40000 + 7*1424)
	b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), stopAt: 40000})
	b.grant(t+us(60), r, true, 80000, 0)
	sent := uint32(40000)
	tt := t + us(80)
	for sent < 60000 {
		b.data(tt, r, true, 0, 100000, sent, 1424, 40000, 1, false)
		sent += 1424
		tt += us(1)
	}
	// Each round asks for the gap and the granted tail
	// (homa_request_retrans); the client retransmits the one and answers
	// BUSY for the other, which it has not sent.
	at := tt + ms(5.1)
	b.resend(at, r, false, lost, 1424)
	b.resend(at+us(1), r, false, sent, 80000-sent)
	b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	b.busy(at+us(21), r, true)
	at += ms(5.1)
	b.resend(at, r, false, sent, 80000-sent)
	if fault {
		k := 0
		for off := sent; off < 80000; off += 1424 {
			b.data(at+us(20)+us(float64(k)), r, true, 7, 100000, off, min(1424, 80000-off), 80000, 1, true)
			k++
		}
		m := b.send(r, true, b.lastTime()+us(5), msgOpts{length: 100000, uprio: 4, cv: 1, from: 80000, granted: 80000, window: 20000})
		b.mark(m.data[80000], "RESEND-011: the first transmissions go on from 80000: [61360, 80000) went out only as retransmissions, bytes the client had not sent")
	} else {
		b.busy(at+us(20), r, true)
		b.send(r, true, at+us(30), msgOpts{length: 100000, uprio: 4, cv: 1, from: sent, granted: 80000, window: 20000})
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// clientResendWhileSending (RESEND-024): the server grants the whole
// 100000-byte request early; the client's pacer stops it at 60000 until
// 8 ms. Faulty, its timer RESENDs for the response at 5.5 ms (BUSY
// answers).
func clientResendWhileSending(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	if fault {
		b.mark(b.resend(t+ms(5.5), r, true, 0, wire.ResendAll), "RESEND-024: the client RESENDs while granted request bytes wait in its pacer")
		b.busy(t+ms(5.5)+us(20), r, false)
	}
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), window: 60000, stopAt: 60000, resumeAt: t + ms(8)})
	if fault {
		var first uint32 = 100000
		for _, off := range m.offs {
			if off >= 60000 {
				first = min(first, off)
			}
		}
		b.mark(m.data[first], "RESEND-024: request bytes first sent 2.5 ms after the client's RESEND")
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// oddClientID (SEND-004): RPC 8, then a request of the client with id 11
// (faulty; 10 clean) which the server answers with id 10 (11 clean), then
// RPC 12.
func oddClientID(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	b.smallRPC(rpcOf(hostC, hostS, 8), 0, wire.AckEntry{})
	r := rpcOf(hostC, hostS, 10)
	i := b.data(ms(3), r, true, 7, 100, 0, 100, 100, 1, false)
	j := b.data(ms(3)+us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	if fault {
		b.pkts[i].f.(*wire.DataFields).Common.SenderID = 11
		b.pkts[j].f.(*wire.DataFields).Common.SenderID = 10
		b.mark(i, "SEND-004: a request with the odd id 11")
		b.mark(j, "SEND-004: the server's answer with id 10 reads as the request of RPC 10, whose response (id 11) came first")
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(4), wire.AckEntry{})
	return b
}

// cutoffsEveryPacket (CUTOFF-005): peers that have not met; the client's
// 30000-byte request goes at level 6 with cutoff_version 0. The server
// sends CUTOFFS after the first packet (clean) or after each of the first
// ten (faulty), all within one jiffy.
func cutoffsEveryPacket(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 2)
	m := b.send(r, true, 0, msgOpts{length: 30000, uprio: 6, cv: 0})
	for k, off := range m.offs {
		if k == 0 || fault && k < 10 {
			i := b.cutoffs(b.pkts[m.data[off]].t+us(5), r, false)
			if k > 0 {
				b.mark(i, "CUTOFF-005: another CUTOFFS to the same peer within the jiffy of the first")
			}
		}
	}
	t := b.lastTime() + us(30)
	b.data(t, r, false, 6, 100, 0, 100, 100, 0, false)
	b.cutoffs(t+us(20), r, true)
	b.needAck(t+ms(2.5), r)
	b.ack(t+ms(2.52), r)
	b.smallRPC(rpcOf(hostC, hostS, 4), t+ms(3), wire.AckEntry{})
	return b
}

// roundSkipsGap (RESEND-025): the base exchange with two scheduled
// packets lost before the capture point. 5 ms later the server RESENDs
// both in one round (clean) or only the first, the second in its next
// round (faulty).
func roundSkipsGap(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	l1, l2 := uint32(40000+10*1424), uint32(40000+30*1424)
	r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{l1: true, l2: true}, capLost: true}, hostC, hostS)
	at := b.lastTime() + ms(5.1)
	first := b.resend(at, r, false, l1, 1424)
	if !fault {
		b.resend(at, r, false, l2, 1424)
	} else {
		b.mark(first, "RESEND-026: the round asks for the first gap only")
	}
	b.data(at+us(20), r, true, 7, 100000, l1, 1424, l1+1424, 1, true)
	if !fault {
		b.data(at+us(21), r, true, 7, 100000, l2, 1424, l2+1424, 1, true)
	} else {
		at += ms(5.1)
		b.mark(b.resend(at, r, false, l2, 1424), "RESEND-025: a RESEND for a gap the previous round left out")
		b.data(at+us(20), r, true, 7, 100000, l2, 1424, l2+1424, 1, true)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// roundOmitsTail (RESEND-026): the base exchange with a scheduled
// packet and the request's last one lost before the capture point. 5 ms
// later the server RESENDs both in one round (clean) or only the first,
// leaving out the granted tail (faulty); another RPC follows 2 ms later
// and the capture ends before the server's next round.
func roundOmitsTail(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	l1, tail := uint32(40000+10*1424), uint32(40000+42*1424) // the last segment: 99808, 192 bytes
	r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{l1: true, tail: true}, capLost: true}, hostC, hostS)
	at := b.lastTime() + ms(5.1)
	first := b.resend(at, r, false, l1, 1424)
	if !fault {
		b.resend(at+us(1), r, false, tail, 100000-tail)
	} else {
		b.mark(first, "RESEND-026: the round asks for the gap but not for the granted tail")
	}
	b.data(at+us(20), r, true, 7, 100000, l1, 1424, l1+1424, 1, true)
	if !fault {
		b.data(at+us(21), r, true, 7, 100000, tail, 100000-tail, 100000, 1, true)
		b.respondAndAck(r, b.lastTime()+us(30))
		return b
	}
	b.smallRPC(rpcOf(hostC, hostS, 6), at+ms(2), wire.AckEntry{})
	return b
}

// serverUnknownKeepsRPC (RESEND-022): a 100-byte request and a
// 30000-byte response that loses a packet; the client RESENDs it 5 ms
// later. Clean, the server retransmits it; faulty, it first says
// RPC_UNKNOWN (the client, receiving its response, ignores that) and then
// retransmits. NEED_ACK follows.
func serverUnknownKeepsRPC(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	i := b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].f.(*wire.DataFields).Ack = b.pigAck(rpcOf(hostC, hostS, 2))
	l := uint32(5 * 1424)
	b.send(r, false, t+us(100), msgOpts{length: 30000, uprio: 4, cv: 1, lost: map[uint32]bool{l: true}})
	at := b.lastTime() + ms(5.1)
	b.resend(at, r, true, l, 1424)
	if fault {
		b.mark(b.unknown(at+us(20), r, false), "RESEND-022: RPC_UNKNOWN from a server that still has the RPC")
	}
	b.data(at+us(25), r, false, 7, 30000, l, 1424, l+1424, 1, true)
	at = b.lastTime() + ms(2.5)
	j := b.needAck(at, r)
	if fault {
		b.mark(j, "RESEND-022: NEED_ACK for the RPC the server said it did not know")
	}
	b.ack(at+us(20), r)
	return b
}

// ackWrongClientPort2024 (ACK-004): linux_6.1.38; RPC 2 completes without
// NEED_ACK and RPC 4's request piggy-backs its ack, naming client port
// 32768 (clean) or 32769 (faulty).
func ackWrongClientPort2024(fault bool) *capb {
	b := newCap(wire.Version2024)
	b.smallRPC(rpcOf(hostC, hostS, 2), 0, wire.AckEntry{})
	b.pkts = b.pkts[:len(b.pkts)-2] // acked piggy-backed, not asked
	a := b.pigAck(rpcOf(hostC, hostS, 2))
	if fault {
		a.ClientPort = 32769
	}
	r := rpcOf(hostC, hostS, 4)
	i := b.data(ms(1), r, true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].f.(*wire.DataFields).Ack = a
	if fault {
		b.mark(i, "ACK-004: piggy-backed ack naming client port 32769; RPC 2 ran from 32768")
	}
	b.respondAndAck(r, ms(1)+us(50))
	return b
}

// partialRetransmission2024 (RESEND-016): linux_6.1.38; a 50000-byte
// request granted in full, two packets lost on the way (seen by the
// capture). The server RESENDs both; clean, the client retransmits both
// (it has sent every granted byte: homa_resend_pkt resends); faulty, only
// the first, and it answers the next four RESENDs for the second with
// BUSY before retransmitting it 25 ms later.
func partialRetransmission2024(fault bool) *capb {
	b := newCap(wire.Version2024)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	l := uint32(10000 + 5*1424)
	b.send(r, true, t+us(40), msgOpts{length: 50000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), window: 10000,
		lost: map[uint32]bool{l: true, l + 1424: true}})
	at := b.lastTime() + ms(5.1)
	i := b.resend(at, r, false, l, 2848)
	b.data(at+us(20), r, true, 7, 50000, l, 1424, l+2848, 1, true)
	if !fault {
		b.data(at+us(21), r, true, 7, 50000, l+1424, 1424, l+2848, 1, true)
	} else {
		b.mark(i, "RESEND-016: RESEND for two packets the client has sent; only the first is retransmitted")
		for k := 0; k < 5; k++ {
			at += ms(5.1)
			b.resend(at, r, false, l+1424, 1424)
			if k < 4 {
				b.busy(at+us(20), r, true)
			}
		}
		b.data(at+us(20), r, true, 7, 50000, l+1424, 1424, l+2848, 1, true)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// TestRoundOmitsTailCharged: a RESEND round left incomplete is the doing
// of the round's sender (HOMA-RESEND-026, Within.SenderOwes), not of the
// host it asks, as other obligations are: the finding names the server.
func TestRoundOmitsTailCharged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tail.pcapng")
	if _, err := faultCaseByID(t, "RESEND-026").build(true).write(path, "RESEND-026"); err != nil {
		t.Fatal(err)
	}
	vs := checkDropsJSON(t, path).violations
	if len(vs) != 1 || vs[0].Rule != "HOMA-RESEND-026" || vs[0].ChargedTo != hostS.String() {
		t.Errorf("violations %+v, want one HOMA-RESEND-026 charged to the server %v", vs, hostS)
	}
}

// roundReordered is roundOmitsTail's clean round with its two RESENDs
// reordered by the network before the capture point (the tail first).
func roundReordered() *capb {
	b := newCap(wire.VersionCurrent)
	l1, tail := uint32(40000+10*1424), uint32(40000+42*1424)
	r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{l1: true, tail: true}, capLost: true}, hostC, hostS)
	at := b.lastTime() + ms(5.1)
	b.resend(at, r, false, tail, 100000-tail)
	b.resend(at+us(1), r, false, l1, 1424)
	b.data(at+us(20), r, true, 7, 100000, l1, 1424, l1+1424, 1, true)
	b.data(at+us(21), r, true, 7, 100000, tail, 100000-tail, 100000, 1, true)
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// roundGrantRace: the server's round (a gap and the tail up to 70000) and
// a GRANT to 80000 it decided just after (homa_grant_send builds it
// outside the RPC's lock) pass the capture point in the other order,
// 1 µs apart; the request then completes.
func roundGrantRace() *capb {
	b := newCap(wire.VersionCurrent)
	l1, tail := uint32(40000+10*1424), uint32(40000+21*1424)
	r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{l1: true, tail: true}, capLost: true, grantCap: 70000}, hostC, hostS)
	at := b.lastTime() + ms(5.1)
	b.grant(at, r, true, 80000, 0)
	b.resend(at+us(1), r, false, l1, 1424)
	b.resend(at+us(2), r, false, tail, 70000-tail)
	b.data(at+us(20), r, true, 7, 100000, l1, 1424, l1+1424, 1, true)
	b.data(at+us(21), r, true, 7, 100000, tail, 70000-tail, 70000, 1, true)
	b.send(r, true, at+us(25), msgOpts{length: 100000, from: 70000, granted: 80000, window: 20000, uprio: 4, cv: 1})
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// TestRoundWholeAsSeen: a whole RESEND round passes HOMA-RESEND-026
// however the network ordered its RESENDs, and a GRANT decided just after
// the round but seen just before it does not make the round's tail look
// short (helper-131's false positives).
func TestRoundWholeAsSeen(t *testing.T) {
	for _, c := range []struct {
		name string
		b    *capb
		cps  []string
	}{
		// On the round's sender's own link its RESENDs go out in order
		// (HOMA-RESEND-008 judges that).
		{"reordered", roundReordered(), []string{"switch", "host:10.0.0.11"}},
		{"grant-race", roundGrantRace(), []string{"switch", "host:10.0.0.1"}},
	} {
		name := c.name
		path := filepath.Join(t.TempDir(), name+".pcapng")
		if _, err := c.b.write(path, name); err != nil {
			t.Fatal(err)
		}
		for _, cp := range c.cps {
			r := checkDropsJSON(t, path, "--capture-point", cp)
			if n, ok := r.rules["HOMA-RESEND-026"]; ok || r.code != 0 {
				t.Errorf("%s at %s: exit %d, HOMA-RESEND-026 violated %d times (rules %v)", name, cp, r.code, n, r.rules)
			}
		}
	}
}
