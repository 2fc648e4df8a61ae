package cli

import (
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// rt8Cases are the fault classes of red team round 8 (derived from
// HomaModule's homa_incoming.c, homa_outgoing.c, homa_timer.c and
// homa_grant.c, not from docs/homa-faults.md).
func rt8Cases() []redteamClass {
	return []redteamClass{
		{id: "N01-grant-beyond-length", rule: "HOMA-GRANT-002", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				g := m.grants[len(m.grants)-1]
				b.pkts[g].f.(*wire.GrantFields).Offset = 120000
				b.mark(g, "grant beyond length")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N02-grant-after-ack", rule: "HOMA-GRANT-004", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, _ := rpc100k(b, msgOpts{}, hostC, hostS)
			t := b.respondAndAck(r, b.lastTime()+us(30))
			if f {
				b.mark(b.grant(t+us(30), r, true, 100000, 0), "grant after ack")
			}
			return b
		}},
		{id: "N03-grant-prio-8", rule: "HOMA-GRANT-007", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				b.pkts[m.grants[0]].f.(*wire.GrantFields).Priority = 8
				b.mark(m.grants[0], "grant prio 8")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N04-data-beyond-grant-after-resend", rule: "HOMA-RESEND-010", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			lost := uint32(40000 + 5*1424)
			r, _ := rpc100k(b, msgOpts{grantCap: 80000, lost: map[uint32]bool{lost: true}}, hostC, hostS)
			at := b.lastTime() + ms(5.1)
			b.resend(at, r, false, lost, 1424)
			b.data(at+us(20), r, true, 7, 100000, lost, 1424, 80000, 1, true)
			if f {
				b.mark(b.data(at+us(21), r, true, 0, 100000, 80000, 1424, 80000, 1, false), "fresh data beyond grant")
			}
			return b
		}},
		{id: "N05-response-even-id", rule: "HOMA-ID-001", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
			i := b.data(t+us(90), r, false, 7, 100, 0, 100, 100, 1, false)
			if f {
				b.pkts[i].f.(*wire.DataFields).Common.SenderID = 4
				b.mark(i, "even sender id in response")
			}
			b.needAck(t+ms(2.6), r)
			b.ack(t+ms(2.62), r)
			return b
		}},
		{id: "N06-resend-received-bytes", rule: "HOMA-RESEND-008", args: []string{"--capture-point", "host:10.0.0.1"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			lost := uint32(40000 + 5*1424)
			r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}, capLost: true}, hostC, hostS)
			at := b.lastTime() + ms(5.1)
			b.resend(at, r, false, lost, 1424)
			if f {
				b.mark(b.resend(at, r, false, 20000, 1424), "resend received bytes")
			}
			b.data(at+us(20), r, true, 7, 100000, lost, 1424, 100000, 1, true)
			if f {
				b.data(at+us(21), r, true, 7, 100000, 20000, 1424, 100000, 1, true)
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N07-data-after-unknown-incoming", rule: "HOMA-RESEND-017", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
			l := uint32(5 * 1424)
			b.send(r, false, t+us(100), msgOpts{length: 30000, uprio: 4, cv: 1, lost: map[uint32]bool{l: true}, capLost: true})
			at := b.lastTime() + ms(5.1)
			b.resend(at, r, true, l, 1424)
			b.unknown(at+us(20), r, false)
			if f {
				b.mark(b.data(at+us(40), r, true, 7, 100, 0, 100, 100, 1, true), "client with response under way retransmits request after unknown")
			}
			return b
		}},
		{id: "N08-ack-before-response", rule: "HOMA-ACK-004", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
			if f {
				b.mark(b.ack(t+us(60), r), "ack before response")
			}
			b.data(t+us(90), r, false, 7, 100, 0, 100, 100, 1, false)
			b.needAck(t+ms(2.6), r)
			b.ack(t+ms(2.62), r)
			return b
		}},
		{id: "N09-need-ack-before-response", rule: "HOMA-ACK-001", args: []string{"--capture-point", "host:10.0.0.1"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.data(t+us(40), r, true, 7, 100, 0, 100, 100, 1, false)
			if f {
				b.mark(b.needAck(t+us(60), r), "need_ack before response")
			}
			b.data(t+us(90), r, false, 7, 100, 0, 100, 100, 1, false)
			b.needAck(t+ms(2.6), r)
			b.ack(t+ms(2.62), r)
			return b
		}},
		{id: "N10-busy-unprompted-client", rule: "HOMA-RESEND-005", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				b.mark(b.busy(b.pkts[m.data[40000]].t+us(1)/2, r, true), "busy unprompted")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N11-cutoffs-ignored", rule: "HOMA-CUTOFF-001", b: func(f bool) *capb { return cutoffsIgnored(wire.VersionCurrent, f) }},
		// Before main only a message begun after the CUTOFFS arrived is
		// judged (a linux_6.1.38 capture shows older ones keeping the old
		// version): here a 100-byte request, which leaves as it begins
		// (at most defer_min_bytes).
		{id: "N11b-cutoffs-ignored-2024", rule: "HOMA-CUTOFF-001", b: func(f bool) *capb { return cutoffsIgnored(wire.Version2024, f) }},
		{id: "N12-incoming-too-high", rule: "HOMA-WIRE-007", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				for _, o := range m.offs {
					if o < 40000 {
						b.pkts[m.data[o]].f.(*wire.DataFields).Incoming = 100000
					}
				}
				b.mark(m.data[0], "incoming 100000 in unscheduled")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N13-incoming-below-sent", rule: "HOMA-WIRE-007", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				for _, o := range m.offs {
					if o < 40000 {
						b.pkts[m.data[o]].f.(*wire.DataFields).Incoming = 10000
					}
				}
				b.mark(m.data[0], "incoming 10000 < unscheduled sent")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N14-length-changes", rule: "HOMA-WIRE-003", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				i := m.data[m.offs[10]]
				b.pkts[i].f.(*wire.DataFields).MessageLength = 90000
				b.mark(i, "length changes")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N15-segment-overlap", rule: "HOMA-RESEND-010", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				i := m.data[m.offs[10]]
				d := b.pkts[i].f.(*wire.DataFields)
				d.Common.Sequence -= 500
				b.mark(i, "overlap")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N16-retransmit-flag-first", rule: "HOMA-RESEND-003", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				i := m.data[m.offs[10]]
				d := b.pkts[i].f.(*wire.DataFields)
				d.Retransmit, d.SegOffset = 1, d.Common.Sequence
				b.mark(i, "retransmit flag on first")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N17-grant-backwards", rule: "HOMA-GRANT-003", args: []string{"--capture-point", "host:10.0.0.1"}, b: func(f bool) *capb {
			// A paced sender (DATA 150 µs apart): the backwards offset,
			// below the first GRANT's, comes more than slack after that
			// GRANT, too late for a GRANT another core decided before it
			// and its NIC queue held back.
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{gap: us(150)}, hostC, hostS)
			if f {
				g := m.grants[2]
				b.mark(b.grant(b.pkts[g].t+us(1)/2, r, true, 41000, 0), "grant backwards")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N18-resend-zero-length", rule: "HOMA-RESEND-012", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			lost := uint32(40000 + 5*1424)
			r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}, capLost: true}, hostC, hostS)
			at := b.lastTime() + ms(5.1)
			n := uint32(1424)
			if f {
				n = 0
			}
			i := b.resend(at, r, false, lost, n)
			if f {
				b.mark(i, "resend length 0")
			}
			b.data(at+us(20), r, true, 7, 100000, lost, 1424, 100000, 1, true)
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N19-response-before-request-complete", rule: "HOMA-SEND-004", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				b.mark(b.data(b.pkts[m.data[m.offs[40]]].t+us(1)/2, r, false, 7, 100, 0, 100, 100, 1, false), "response before request complete")
				b.mark(m.data[m.offs[41]], "SEND-004: request bytes still coming after the server began its response")
				b.needAck(b.lastTime()+ms(2.5), r)
				b.ack(b.lastTime()+us(20), r)
				return b
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N20-client-grants-unstarted-response", rule: "HOMA-GRANT-012", args: []string{"--capture-point", "switch"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				b.mark(b.grant(b.pkts[m.data[1424*3]].t+us(1)/2, r, false, 50000, 0), "client grants response not started")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N21-need-ack-from-client", rule: "HOMA-ACK-010", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				b.mark(b.ctl(b.pkts[m.data[1424*3]].t+us(1)/2, r, true, &wire.NeedAckFields{}), "need_ack from client")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N22-ack-from-server", rule: "HOMA-ACK-007", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				e := wire.AckEntry{ClientID: 2, ServerPort: portS}
				b.mark(b.ctl(b.pkts[m.data[1424*3]].t+us(1)/2, r, false, &wire.AckFields{Acks: []wire.AckEntry{e}}), "ack from server")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N23-payload-beyond-length", rule: "HOMA-WIRE-002", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			n := uint32(100)
			if f {
				n = 200
			}
			i := b.data(t+us(40), r, true, 7, 100, 0, n, 100, 1, false)
			if f {
				b.mark(i, "payload beyond length")
			}
			b.respondAndAck(r, t+us(90))
			return b
		}},
		{id: "N24-retx-length-differs", rule: "HOMA-WIRE-003", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			lost := uint32(40000 + 5*1424)
			r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}}, hostC, hostS)
			at := b.lastTime() + ms(5.1)
			b.resend(at, r, false, lost, 1424)
			i := b.data(at+us(20), r, true, 7, 100000, lost, 1424, 100000, 1, true)
			if f {
				b.pkts[i].f.(*wire.DataFields).MessageLength = 120000
				b.mark(i, "retx message length differs")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N25-grant-unscheduled-only", rule: "HOMA-GRANT-012", args: []string{"--capture-point", "switch"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.send(r, true, t+us(40), msgOpts{length: 3000, uprio: 5, cv: 1})
			if f {
				b.mark(b.grant(b.lastTime()+us(10), r, true, 3000, 0), "grant for unscheduled-only message")
			}
			b.respondAndAck(r, b.lastTime()+us(40))
			return b
		}},
		{id: "N26-sched-prio-not-granted", rule: "HOMA-GRANT-008", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, m := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				for _, o := range m.offs {
					if o >= 40000 {
						b.pkts[m.data[o]].prio = 3
					}
				}
				b.mark(m.data[40000], "scheduled at 3, granted 0")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N27-cutoffs-unsorted", rule: "HOMA-CUTOFF-004", should: true, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, _ := rpc100k(b, msgOpts{}, hostC, hostS)
			if f {
				c := b.pkts[1].f.(*wire.CutoffsFields)
				c.UnschedCutoffs = [8]uint32{0, 0, 0, 0, 1000000, 200, 2800, 15000}
				b.mark(1, "cutoffs unsorted")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N28-resend-beyond-length", rule: "HOMA-RESEND-012", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			lost := uint32(100000 - 100000%1424)
			r, _ := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}, capLost: true}, hostC, hostS)
			at := b.lastTime() + ms(5.1)
			n := 100000 - lost
			if f {
				n = 20000
			}
			i := b.resend(at, r, false, lost, n)
			if f {
				b.mark(i, "resend beyond length")
			}
			b.data(at+us(20), r, true, 7, 100000, lost, 100000-lost, 100000, 1, true)
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N29-client-ignores-unknown", rule: "HOMA-RESEND-007", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			r, at := b.toldUnknown()
			if !f {
				b.restart(r, at, 3000, true)
				b.respondAndAck(r, at+us(100))
			} else {
				for k := 1; k <= 5; k++ {
					i := b.resend(at+ms(5.1*float64(k)), r, true, 0, wire.ResendAll)
					if k == 1 {
						b.mark(i, "client ignored RPC_UNKNOWN: RESENDs again, no restart")
					}
					b.unknown(at+ms(5.1*float64(k))+us(20), r, false)
				}
			}
			return b
		}},
		{id: "N30-restart-skips-start", rule: "HOMA-RESEND-007", args: []string{"--capture-point", "host:10.0.0.11"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			t := b.warmup(hostC, hostS, 0)
			r := rpcOf(hostC, hostS, 4)
			b.send(r, true, t+us(40), msgOpts{length: 3000, uprio: 5, cv: 1})
			at := b.lastTime() + ms(5.1)
			b.resend(at, r, true, 0, wire.ResendAll)
			u := b.unknown(at+us(20), r, false)
			if f {
				b.mark(u, "RESEND-007: RPC_UNKNOWN the client answers by restarting at offset 1424, sending offset 0 only when the server RESENDs it")
			}
			if !f {
				b.data(at+us(40), r, true, 5, 3000, 0, 1424, 3000, 1, true)
			}
			b.data(at+us(41), r, true, 5, 3000, 1424, 1424, 3000, 1, true)
			i := b.data(at+us(42), r, true, 5, 3000, 2848, 152, 3000, 1, true)
			if f {
				b.mark(i, "restart without [0, 1424)")
				b.resend(at+ms(5.1), r, false, 0, 1424)
				b.data(at+ms(5.1)+us(20), r, true, 7, 3000, 0, 1424, 3000, 1, true)
			}
			b.respondAndAck(r, b.lastTime()+us(60))
			b.smallRPC(rpcOf(hostC, hostS, 6), b.lastTime()+ms(20), wire.AckEntry{})
			return b
		}},
		{id: "N33-grant-above-max-sched", rule: "HOMA-GRANT-015", args: []string{"--capture-point", "switch"}, b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			o := msgOpts{}
			if f {
				o.gprio = 5
			}
			r, m := rpc100k(b, o, hostC, hostS)
			if f {
				b.mark(m.grants[0], "grant priority 5 above max_sched_prio 3")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
		{id: "N34-too-many-unscheduled", rule: "HOMA-UNSCHED-001", b: func(f bool) *capb {
			b := newCap(wire.VersionCurrent)
			o := msgOpts{}
			if f {
				o.unsched, o.incoming = 60000, 60000
			}
			r, m := rpc100k(b, o, hostC, hostS)
			if f {
				b.mark(m.data[m.offs[29]], "unscheduled beyond rtt_bytes")
			}
			b.respondAndAck(r, b.lastTime()+us(30))
			return b
		}},
	}
}

// TestRedteam8Classes: every fault class of round 8 is flagged by its rule
// (a SHOULD rule only under --strict) and its clean twin passes --strict.
func TestRedteam8Classes(t *testing.T) { runRedteam(t, rt8Cases()) }

// redteam8FaultCases are catalogue pairs from red team round 8 (the
// builders of rt8Cases).
func redteam8FaultCases() []faultCase {
	b := map[string]func(bool) *capb{}
	for _, c := range rt8Cases() {
		b[c.id] = c.b
	}
	return []faultCase{
		{
			id: "GRANT-002", slug: "grant-beyond-length",
			what:  "extra fault: the server's last GRANT for the 100000-byte request names offset 120000, beyond the message",
			build: b["N01-grant-beyond-length"],
			want:  []hit{{"HOMA-GRANT-002", 74}},
		},
		{
			id: "GRANT-004", slug: "grant-after-ack",
			what:  "extra fault: after the client's ACK freed RPC 4, the server sends GRANT(100000) for its request",
			build: b["N02-grant-after-ack"],
			want:  []hit{{"HOMA-GRANT-004", 87}},
		},
		{
			id: "ID-001", slug: "response-even-sender-id",
			what:  "extra fault: the server's response carries sender_id 4, the client's own (even) id, instead of 5",
			build: b["N05-response-even-id"],
			want:  []hit{{"HOMA-ID-001", 6}, {"HOMA-ACK-004", 8}},
		},
		{
			id: "ACK-004", slug: "ack-before-response",
			what:  "extra fault: the client ACKs RPC 4 20 µs after its request, before any response byte",
			build: b["N08-ack-before-response"],
			want:  []hit{{"HOMA-ACK-004", 6}, {"HOMA-ACK-003", 8}, {"HOMA-ACK-007", 6}},
		},
		{
			id: "ACK-001", slug: "need-ack-before-response",
			what:  "extra fault: the server sends NEED_ACK for RPC 4 20 µs after the request, before it transmitted the response (taken on the server's link)",
			build: b["N09-need-ack-before-response"],
			args:  []string{"--capture-point", "host:10.0.0.1"},
			want:  []hit{{"HOMA-ACK-001", 6}},
		},
		{
			id: "RESEND-005", slug: "busy-unprompted",
			what:  "extra fault: the client sends BUSY while sending its granted bytes, though no RESEND asked",
			build: b["N10-busy-unprompted-client"],
			want:  []hit{{"HOMA-RESEND-005", 37}},
		},
		{
			id: "WIRE-007", slug: "incoming-whole-message",
			what:  "extra fault: the client's unscheduled DATA of its 100000-byte request claim incoming 100000 (all of it) instead of the 40000 unscheduled bytes",
			build: b["N12-incoming-too-high"],
			want:  []hit{{"HOMA-WIRE-007", 5}},
		},
		{
			id: "WIRE-003", slug: "length-changes-mid-message",
			what:  "extra fault: one DATA of the 100000-byte request names message_length 90000",
			build: b["N14-length-changes"],
			want:  []hit{{"HOMA-WIRE-003", 15}},
		},
		{
			id: "RESEND-010", slug: "segment-overlap",
			what:  "extra fault: a first transmission of the request starts 500 bytes inside the previous segment",
			build: b["N15-segment-overlap"],
			want:  []hit{{"HOMA-RESEND-010", 15}},
		},
		{
			id: "RESEND-003", slug: "retransmit-flag-first",
			what:  "extra fault: a first transmission of the request carries retransmit 1 (no RESEND asked for it)",
			build: b["N16-retransmit-flag-first"],
			want:  []hit{{"HOMA-RESEND-003", 15}},
		},
		{
			id: "GRANT-003", slug: "grant-backwards",
			what:  "extra fault: the server sends GRANT(41000) right after a higher GRANT of the same request, more than slack after its first GRANT (42784) (taken on the server's link)",
			build: b["N17-grant-backwards"],
			args:  []string{"--capture-point", "host:10.0.0.1"},
			want:  []hit{{"HOMA-GRANT-003", 40}},
		},
		{
			id: "SEND-004", slug: "response-before-request-complete",
			what:  "extra fault: the server sends its response halfway through the 100000-byte request",
			build: b["N19-response-before-request-complete"],
			want:  []hit{{"HOMA-SEND-004", 50}, {"HOMA-SEND-005", 49}},
		},
		{
			id: "ACK-010", slug: "need-ack-from-client",
			what:  "extra fault: the client sends NEED_ACK for its own RPC while sending its request",
			build: b["N21-need-ack-from-client"],
			want:  []hit{{"HOMA-ACK-010", 9}},
		},
		{
			id: "ACK-007", slug: "ack-from-server",
			what:  "extra fault: the server sends an ACK packet acknowledging RPC 2",
			build: b["N22-ack-from-server"],
			want:  []hit{{"HOMA-ACK-007", 9}},
		},
		{
			id: "GRANT-008", slug: "scheduled-prio-not-granted",
			what:  "extra fault: the client sends its scheduled bytes at level 3, though every GRANT named priority 0",
			build: b["N26-sched-prio-not-granted"],
			want:  []hit{{"HOMA-GRANT-008", 36}},
		},
		{
			id: "GRANT-012", slug: "grant-unscheduled-message",
			what:  "extra fault: the server GRANTs a 3000-byte request that its unscheduled bytes covered whole",
			build: b["N25-grant-unscheduled-only"],
			args:  []string{"--capture-point", "switch"},
			want:  []hit{{"HOMA-GRANT-001", 8}, {"HOMA-GRANT-002", 8}, {"HOMA-GRANT-012", 8}},
		},
		{
			id: "RESEND-007", slug: "restart-skips-start",
			what:  "extra fault: told RPC_UNKNOWN, the client restarts its 3000-byte request from offset 1424 and sends offset 0 only when the re-created server RESENDs it 5 ms later (taken on the client's link)",
			build: b["N30-restart-skips-start"],
			args:  []string{"--capture-point", "host:10.0.0.11"},
			want:  []hit{{"HOMA-RESEND-007", 9}},
		},
	}
}

// cutoffsIgnored (N11): after the warm-up's CUTOFFS a 100-byte request 20 ms
// later carries cutoff_version 1 at level 7 (clean) or keeps version 0 at
// level 6, drawing another CUTOFFS (faulty).
func cutoffsIgnored(v wire.Version, f bool) *capb {
	b := newCap(v)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	cv, p := uint16(1), uint8(7)
	if f {
		cv, p = 0, 6
	}
	i := b.data(t+ms(20), r, true, p, 100, 0, 100, 100, cv, false)
	if f {
		b.mark(i, "cutoff_version 0 after CUTOFFS")
		b.cutoffs(t+ms(20)+us(20), r, false)
	}
	b.respondAndAck(r, t+ms(20)+us(50))
	return b
}
