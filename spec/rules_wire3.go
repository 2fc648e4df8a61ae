package spec

import (
	"github.com/homatest/homatest/spec/wire"
)

// wireRules3: the size of DATA segments and the bytes they carry
// (HomaModule homa_outgoing.c homa_message_out_fill, homa_tx_data_pkt_alloc,
// homa_resend_data).
func wireRules3() []*Rule {
	data := []wire.PacketType{wire.TypeData}
	return []*Rule{
		{
			ID: "HOMA-WIRE-015", Level: Must,
			Facts:     []string{"WIRE-07"},
			Statement: "Every Homa packet carries the IP header the kernel's IP layer writes: a nonzero TTL (IPv6: hop limit), over IPv4 a header checksum that verifies and no options but a security module's label, no fragmentation, and an IP length (IPv4 total length, IPv6 payload length) no longer than the packet.",
			Source:    "HomaModule homa_outgoing.c __homa_xmit_control, __homa_xmit_data (ip_queue_xmit and ip6_xmit write the IP header: the socket's TTL, the length of the skb, ip_send_check; no IP options: homa_setsockopt accepts only IPPROTO_HOMA options, so the socket has none for ip_queue_xmit to write but the CIPSO or RFC 1108 label a Linux security module puts on every AF_INET socket: Smack, SELinux with NetLabel, netlbl_sock_setattr)",
			Capture:   "judged on frames a capture reader parsed (events built without an IP header are skipped), once per frame, also when the Homa header does not decode (a first fragment may end inside it); the IP length is held against the frame's original length, so a snap length's cut is no evidence, and a frame longer than its IP length (Ethernet padding) is legal; a router decrements the TTL but never forwards 0, and no NIC offloads the IPv4 header checksum, so any capture point sees what the sender wrote",
			Property: Each{Needs: NeedsIPHeader, Partial: true, Malformed: true, Check: func(c *Ctx, e *Event) Result {
				if !e.IP.Known || e.Segment > 0 {
					return Skip
				}
				v6 := e.IPv6()
				switch {
				case e.IP.TTL == 0 && v6:
					return Violation("IPv6 hop limit 0: the packet may not be forwarded, and no IP layer sends it")
				case e.IP.TTL == 0:
					return Violation("IPv4 TTL 0: the packet may not be forwarded, and no IP layer sends it (RFC 1122 3.2.1.7)")
				case e.IP.BadChecksum && !v6:
					return Violation("IPv4 header checksum does not verify: a receiver drops the packet")
				case e.IP.Options && !v6:
					return Violation("IPv4 header with options other than a security label (IHL above 5): Homa sockets set no IP options, so the IP layer writes a 20-byte header or one with its security module's label")
				case e.IP.Fragment:
					return Violation("IP fragment of a Homa packet: the IP layer sends Homa packets whole, each within the MTU (HomaModule sizes segments by it), so none is fragmented")
				case e.IP.LengthPastFrame:
					return Violation("the IP header claims more bytes than the frame holds (not cut by the snap length): the IP layer writes the packet's own length, and a receiver's drops a packet shorter than its header says")
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-013", Level: Must,
			Facts:     []string{"WIRE-03"},
			Statement: "A DATA segment carries at most max_seg_data bytes, mtu minus the IP header minus the 56-byte DATA header (1424 over IPv4, 1404 over IPv6 at MTU 1500); only a TCP-hijacked TSO batch, seen on its sending host before the NIC cuts it, is longer in one frame.",
			Source:    "HomaModule homa_outgoing.c homa_message_out_fill (max_seg_data from dst_mtu; segs_per_gso segments per skb), homa_tx_data_pkt_alloc (several segments only with doff 13 and interleaved seg headers, or hijacked with gso_size max_seg_data), homa_resend_data (one segment per retransmitted packet)",
			Capture:   "a GSO frame (doff 0xD0, interleaved seg headers) is judged segment by segment, wherever it was seen (such a frame itself shows a capture on its sending host); a hijacked frame longer than one segment is legal where the capture is on its sender's host (host:ADDR, sent) and inconclusive elsewhere (a tap on the sending host can pass for one between the hosts); an MTU above 1500 needs --param mtu",
			Property: Each{Types: data, Usual: Usual{FactSegFits, Passed}, Check: func(c *Ctx, e *Event) Result {
				v6 := e.IPv6()
				seg := maxSegData(c.P.MTU, v6)
				if e.Length <= int(seg) {
					return Pass()
				}
				if e.Hijacked {
					if c.Net.CapturePoint().AtSender(e) {
						return Pass()
					}
					return Unsure("hijacked DATA at offset %d carries %d bytes in one frame, more than max_seg_data %d: a TSO batch as its sender handed it to the NIC, which a capture on %v would show (--capture-point host:%v)",
						e.Offset, e.Length, seg, e.Src, e.Src)
				}
				return Violation("DATA segment at offset %d carries %d bytes, more than max_seg_data %d (mtu %d - %d-byte IP header - 56; HomaModule cuts every message into segments of at most that, and a frame holding more than one carries interleaved seg headers with doff 0xD0); if the hosts' MTU is larger, pass --param mtu=N",
					e.Offset, e.Length, seg, c.P.MTU, ipHeaderLen(v6))
			}},
		},
		{
			ID: "HOMA-WIRE-014", Level: Must,
			Facts:     []string{"RTX-06", "RTX-09"},
			Statement: "Every copy of a message's bytes carries the same data: a retransmission, a restarted request or a packet sent again holds at each offset the bytes the message's first copy held there.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (a retransmitted segment is copied from the message's own skb by homa_skb_append_from_skb), homa_message_out_fill (the message is copied once from the sender's buffer); homa_incoming.c homa_rpc_unknown_pkt (a restart resends the same skbs)",
			Capture:   "only captured bytes are compared: copies that start at the same offset over the prefix both hold, others over the aligned 128-byte blocks both hold (a snap length that cuts the payload leaves fewer bytes, or none, to compare); copies of different incarnations of the RPC (across an ACK or RPC_UNKNOWN) are not compared, except a request restarted after the server's RPC_UNKNOWN, the same message sent again (homa_rpc_unknown_pkt); a copy damaged on a link fails its frame check and is dropped, so nothing between the capture point and a host explains different bytes",
			Property: Each{Types: data, Payload: true, Check: func(c *Ctx, e *Event) Result {
				if len(e.Payload) == 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip // the RPC's first packet: Apply logs it
				}
				n, d, ok := c.T.comparePayload(e, r.Msg(e.Packet.Role()))
				switch {
				case !ok && d.frame > 0:
					return Violation("bytes [%d, %d) of the message differ from the copy of those bytes in frame %d (retransmit %d): every copy of a byte range must carry the message's own data",
						d.off, d.end, d.frame, e.Packet.Data().Retransmit()).With(d.frame)
				case !ok:
					return Violation("bytes [%d, %d) of the message differ from an earlier copy of those bytes (retransmit %d): every copy of a byte range must carry the message's own data",
						d.off, d.end, e.Packet.Data().Retransmit())
				case n == 0:
					return Skip
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-016", Level: Should,
			Facts:     []string{"UNS-02", "WIRE-03"},
			Statement: "A sender cuts a message into segments of one size: its first-transmission DATA segments all carry the same number of bytes (max_seg_data), but those that end at U (where a packet boundary is forced) or at the message's end, which may carry fewer, as may one a sender stops at its grant horizon or at a multiple of the segment size (HomaModule never does either: it sends whole segments past its horizon, and cuts the scheduled part from U). SHOULD: a receiver takes segments of any size, so another sender's cuts break no exchange.",
			Source:    "HomaModule homa_outgoing.c homa_message_out_fill (every skb holds max_gso_data bytes, segs_per_gso segments of max_seg_data, but the one cut at msgout.unscheduled and the message's last; upstream has no cut at U), homa_tx_data_pkt_alloc (an skb's segments are max_seg_data bytes, its last one the rest)",
			Capture:   "the message's segment size is the length of the first of its first transmissions the capture shows that ends at neither U nor the message's end (a hijacked TSO batch, or a frame past --param mtu, sets none and is not judged), so where sizes differ the later size is the one reported; a shorter segment ending at a GRANT offset the capture shows (the latest nine), the highest RESEND end or a horizon kept from the receiver's earlier incarnation passes (a segment stopped at a GRANT the capture missed is reported), and so does one ending at a multiple of the segment size (a sender whose segments keep the grid from offset 0 across U); U is unsched_bytes or the packet's own incoming; retransmissions are not judged (homa_resend_data copies the original segments)",
			Property: Each{Types: data, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip // the RPC's first packet: nothing to hold it against
				}
				m := r.Msg(e.Packet.Role())
				length := e.Packet.Data().MessageLength()
				n := uint32(e.Length)
				if m.SegSize == 0 || length != m.Length || n > maxSegData(c.P.MTU, e.IPv6()) {
					return Skip
				}
				switch {
				case n == m.SegSize, n < m.SegSize && (endsAtCut(c.P, e) || endsAtHorizon(m, e.End()) || e.End()%m.SegSize == 0):
					return Pass()
				case n > m.SegSize:
					return Violation("first-transmission DATA [%d, %d) carries %d bytes, more than the %d of the message's earlier segments: HomaModule cuts a message into segments of max_seg_data bytes, fewer only where it forces a boundary at U and at the end",
						e.Offset, e.End(), n, m.SegSize)
				}
				return Violation("first-transmission DATA [%d, %d) carries %d bytes, fewer than the %d of the message's earlier segments, and ends neither at U (%d) nor at the message's end (%d): HomaModule cuts a message into segments of max_seg_data bytes, fewer only where it forces a boundary at U and at the end",
					e.Offset, e.End(), n, m.SegSize, c.P.Unsched(length), length)
			}},
		},
	}
}

// endsAtCut reports whether DATA e ends where a sender cuts a message
// short of a full segment: at its end, or at U (unsched_bytes, or the
// packet's own incoming; upstream, whose incoming is 0, cuts only at
// the end).
func endsAtCut(p *Params, e *Event) bool {
	d := e.Packet.Data()
	length, end := d.MessageLength(), e.End()
	return end == length || end == p.Unsched(length) || end == d.Incoming()
}

// endsAtHorizon reports whether end is a horizon m's sender was given: a
// GRANT offset (the latest, or one of the 8 before it), the highest
// RESEND end or the horizon it kept from an earlier incarnation of its
// receiver. HomaModule sends whole segments past its horizon, but a
// sender that stops a segment at it sends no byte it was not granted
// (the conformance testers do).
func endsAtHorizon(m *Message, end uint32) bool {
	if end == m.Granted || end == m.ResendEnd || end == m.KeptHorizon {
		return true
	}
	for _, g := range m.RecentGrants {
		if g.Offset == end {
			return true
		}
	}
	return false
}

// ipHeaderLen is the IP header HomaModule reserves: 20 bytes for IPv4, 40
// for IPv6 (homa_sock ip_header_length).
func ipHeaderLen(v6 bool) uint32 {
	if v6 {
		return 40
	}
	return 20
}

// maxSegData returns max_seg_data at MTU mtu: mtu - IP header - 56 bytes
// (homa_message_out_fill); at MTU 1500, wire.MaxSegDataIPv4 and
// wire.MaxSegDataIPv6.
func maxSegData(mtu uint32, v6 bool) uint32 {
	h := ipHeaderLen(v6) + wire.DataHeaderLen
	if mtu <= h {
		return 1
	}
	return mtu - h
}
