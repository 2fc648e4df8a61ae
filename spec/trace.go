package spec

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// RPCKey identifies an RPC as an observer of the wire sees it: client and
// server addresses and the client's (even) id. HomaModule main keys server
// RPCs by (client address, id); the server address is added so that one
// capture can hold several servers.
type RPCKey struct {
	Client   netip.Addr `json:"client"`
	Server   netip.Addr `json:"server"`
	ClientID uint64     `json:"client_id"`
}

// Label names k for a finding line: "rpc 2 (client 198.18.0.1, server
// 198.18.0.2)". The roles are named, not an arrow, which would read as
// the direction of the finding's packet (a server's packet goes the other
// way).
func (k RPCKey) Label() string {
	return fmt.Sprintf("rpc %d (client %v, server %v)", k.ClientID, k.Client, k.Server)
}

// GrantSeen is one GRANT observed for a message.
type GrantSeen struct {
	Time     time.Time
	Frame    int
	Priority uint8
	// FIFO: it may be a FIFO grant (mayBeFIFOGrant).
	FIFO   bool
	Offset uint32
	// HBefore is the sender's horizon as far as the capture shows just
	// before this GRANT: max(U, earlier GRANT offsets, RESEND ends).
	HBefore uint32
	// Received is the message's distinct bytes the capture had seen just
	// before this GRANT (Message.Received): a GRANT below Received +
	// window was cut short (HOMA-GRANT-024).
	Received uint32
}

// Message is what an observer knows about one message (request or
// response) of an RPC. Byte counts are in bytes; times are capture times.
type Message struct {
	// Length is message_length from the first DATA seen (0: none seen).
	Length uint32
	// MinIncoming and MaxIncoming are the smallest nonzero and the largest
	// incoming of any DATA of the message (0: none seen). A receiver starts
	// its granted offset at the incoming of the first packet it gets
	// (homa_message_in_init, homa_grant_init_rpc), which may be a
	// retransmission carrying another one: the end of the range
	// homa_resend_data resends, the bytes sent so far (tx_end) when a
	// client restarts its request after RPC_UNKNOWN (homa_rpc_unknown_pkt),
	// which can be below U.
	MinIncoming, MaxIncoming uint32
	// SegSize is the length of the message's first full-looking first
	// transmission (retransmit=0, at most max_seg_data bytes, ending at
	// neither U nor the message's end): the size its sender cuts it at
	// (HOMA-WIRE-016); 0 until one is seen.
	SegSize uint32
	// Seen holds the distinct byte ranges observed in DATA in the
	// receiver's current incarnation; Earlier those observed before the
	// receiver last discarded its RPC (nil: it never did), so that the
	// capture's view of the network (Network.observe) spans both.
	Seen, Earlier byteranges.Set
	// SentEnd is the highest end of a first transmission (retransmit=0).
	SentEnd uint32
	// cutPhase is 1 + the one phase other than 0 (offset modulo
	// max_seg_data) at which the capture saw a first-transmitted segment
	// of the message begin (0: none), and cutOdd (below) is set once it
	// saw segment starts of two such phases or a first transmission whose
	// cut it cannot read (a GSO or TSO batch, an IP fragment): what
	// HOMA-RESEND-029 knows of where the sender cut the message.
	// HomaModule's cut begins segments at phase 0 and, from U on, at U's
	// phase. Both belong with FirstSent and are kept and cleared with it.
	cutPhase uint32
	// AllSentTime and AllSentFrame are the time and frame of the first
	// transmission that brought SentEnd to Length: the sender's tx_end
	// reached the message length (homa_timer_check_rpc starts counting
	// towards NEED_ACK then).
	AllSentTime  time.Time
	AllSentFrame int
	// FirstSent holds the byte ranges sent with retransmit=0; ResentAhead
	// the ranges sent with retransmit=1 at or beyond SentEnd at the time:
	// bytes retransmitted before the sender (which sends a message's new
	// bytes in offset order) had sent them once, as far as the capture
	// shows. Both belong to the current incarnation of the sender's RPC and
	// are cleared when RPC_UNKNOWN shows that a side lost it (a later
	// packet with the same id belongs to new state), the response's and
	// the request's ResentAhead also when the RPC is acknowledged (the
	// client's FirstSent stays: it does not send its request anew).
	FirstSent, ResentAhead byteranges.Set
	// Granted is the highest GRANT offset seen (0: no GRANT) in the
	// receiver's current incarnation; KeptHorizon is the sender's horizon
	// from the receiver's earlier incarnations (a client that restarts its
	// request after the server's RPC_UNKNOWN keeps the grants it had:
	// homa_rpc_unknown_pkt only retransmits).
	Granted, KeptHorizon uint32
	// Grants counts GRANTs in the receiver's current incarnation (the
	// capture's count is RPC.Packets). GrantPriorities is a bit set of the
	// priorities of all the message's GRANTs, earlier incarnations included.
	Grants          int
	GrantPriorities uint16
	// Priorities is a bit set of the IP priorities DATA used.
	Priorities uint16
	// busyCredit counts the RESENDs for the message that let its sender
	// answer BUSY (busyLetting), less the BUSYs it sent (HOMA-RESEND-028);
	// an int32 in a padding hole: RPC stays within 1792 bytes.
	busyCredit int32
	// GrantTime and GrantFrame are the time and frame of the latest GRANT
	// that raised the receiver's horizon; GrantedBefore is that horizon
	// (max of U and earlier GRANT offsets) just before it.
	GrantTime     time.Time
	GrantFrame    int
	GrantedBefore uint32
	// frameMax bounds the data bytes of the message's largest DATA frame
	// seen (a GSO frame's segments at max_seg_data each): the most one
	// skb its receiver gets can hold, as far as the capture shows
	// (HOMA-GRANT-024). In a padding hole: RPC stays within 2048 bytes.
	frameMax uint32
	// TriggerUsed is the index (see Trace.triggers) of the grant-triggering
	// packet the latest non-FIFO GRANT of this message was matched with:
	// the next one needs a later packet (0: none yet).
	TriggerUsed int
	// RecentGrants are the latest GRANTs (at most 8), oldest first.
	RecentGrants []GrantSeen
	// recvLog samples the bytes seen over the last slack (ReceivedBy).
	recvLog []recvSample
	// GrantLog holds the GRANTs from the latest one the sender is known to
	// have received (when Known is set, GrantLog[0]) to the latest, oldest
	// first. The sender is known to have received a GRANT (or a later one)
	// once it sent a first transmission that no earlier GRANT or RESEND
	// could have authorised (see Trace.Apply); GRANTs lost between the
	// capture point and the sender leave it unknown.
	GrantLog []GrantSeen
	Known    bool
	cutOdd   bool // see cutPhase
	// ResendEnd is the highest end of a RESEND range seen (RTX-08 raises
	// the sender's horizon); ResendAll is set by a RESEND of length -1.
	ResendEnd uint32
	ResendAll bool
	// LastResendPriority is the priority field of the latest RESEND.
	LastResendPriority uint8
	// busyLets counts the RESENDs for the message that let its sender
	// BUSY and busies the BUSYs it sent (HOMA-RESEND-028: only a copy the
	// network made of a letting RESEND draws another BUSY); both saturate.
	busyLets, busies uint16
	// resendsOpen counts the RESENDs for the message its sender has not
	// answered as far as the capture shows: less one per BUSY or
	// RPC_UNKNOWN, none after a retransmission (saturates).
	resendsOpen uint16
	// Resends counts RESENDs for the message; RetxBytes the bytes of DATA
	// with retransmit=1. Answers counts the BUSY and RPC_UNKNOWN packets
	// the message's sender sent for its RPC (HOMA-RESEND-023: at most one
	// per RESEND); it starts negative in an RPC that replaced one whose
	// RESENDs were not all answered (the answers still owed).
	Resends   int
	RetxBytes uint64
	Answers   int
	// retx logs the RESENDs of the current incarnation and the
	// retransmissions they drew (HOMA-RESEND-021); nil for a message never
	// asked for, which is most of them: behind a pointer to keep an RPC
	// within Go's 1792-byte size class.
	retx *retxLog
	// Asked holds the ranges the RESENDs of the
	// current incarnation asked for (length -1: up to SentEnd), and the
	// whole message for a GRANT with resend_all (wire formats before
	// 2025-07: the sender retransmits all it has sent).
	Asked byteranges.Set
	// resend is what the RESENDs of the current incarnation left: the
	// latest, the latest timer round and the BUSYs they allow (see
	// resendState). Nil until the message's first RESEND, which most
	// messages never see: behind a pointer so that an RPC fits Go's
	// 1792-byte size class, not 2048 (the trace's largest share of the
	// checker's peak memory, issue 17). Read it through res; write it
	// through resW.
	resend *resendState
	// WakeupTime is the time of the latest buffer-wakeup RESEND for the
	// message (GRANT-10: the receiver held its silence count at 0 while it
	// waited for buffer space).
	WakeupTime time.Time
	// FirstData and LastData are the times of the first and latest DATA.
	FirstData, LastData time.Time
	// Complete is set once every byte of [0, Length) was seen, at
	// CompleteTime in frame CompleteFrame.
	Complete      bool
	CompleteTime  time.Time
	CompleteFrame int
	// payload holds hashes of the payload seen (Trace.payloads only; nil
	// until the first DATA with captured bytes), for HOMA-WIRE-014.
	payload *payloadLog
	// pair caches the Trace.pairs entry of the message's last DATA (one
	// map lookup per message, not per packet; entries are never removed).
	pair *pairData
	// inGranting and inLong say whether the message is in its receiver's
	// Trace.granting and Trace.longIn sets; doneFiled whether it has an
	// entry in the receiver's Trace.longDone heap.
	inGranting, inLong, doneFiled bool
	// whole is set when the receiver shows it holds the whole message
	// though the capture did not see every byte (Complete unset): the
	// client acknowledged the RPC, or (the request) the server sent
	// response DATA, which it does only once it has the whole request
	// (homa_rpc_acked; the application replies to complete messages
	// only). The message then neither is granted nor adds to the
	// receiver's outstanding bytes (homa_grant_update_incoming counts a
	// message only while bytes of it are missing).
	whole bool
	// acc is the receiver's outstanding sum (set when the message is
	// first filed in Trace.granting or Trace.longIn, both under its
	// receiver), and outVal what the message adds to it now, 0 when it
	// is in neither set (refreshOutstanding). outInG says outVal is also
	// counted in acc.granted (the message is in the granting set),
	// outHeld that the message is counted in acc.held.
	outInG, outHeld bool
	acc             *outstandingSum
	outVal          int64
	// trig caches the receiver's Trace.triggers entry (entries are never
	// removed), so that counting a trigger costs no map lookup.
	trig *triggerLog
	// lossCounted is set once a retransmission brought bytes of the
	// message the capture never saw (Network.observeFirstLoss counts the
	// message's loss episode once).
	lossCounted bool
	// lossPath caches the Network's tally of the message's path (entries
	// are never removed), so that counting a DATA packet costs no map
	// lookup.
	lossPath *pathLoss
}

// resendState is what a message's RESENDs of the current incarnation
// left (Message.resend): cleared with the receiver's view of the message
// (restartReceiver).
type resendState struct {
	// LastResend is the latest RESEND for the message, with the
	// message's SentEnd when it was seen.
	LastResend ResendSeen
	// BusyAllowed counts the RESENDs for the message, of those that came
	// less than a tick apart up to the latest, that a BUSY may answer (a
	// Repeat, or one asking for nothing sent yet) not yet answered by one:
	// a BUSY answers one of the RESENDs that arrived before it, not
	// necessarily the latest.
	BusyAllowed int
	// RoundStart and RoundFrame are the time and frame of the first RESEND
	// of the latest timer RESEND round for the message (homa_request_retrans
	// sends one RESEND per gap, in ascending order, in one timer pass);
	// RoundOffset is the offset of the round's latest RESEND and RoundAll
	// is set when the round was a single RESEND {0, -1}.
	RoundStart  time.Time
	RoundFrame  int
	RoundOffset uint32
	RoundAll    bool
	// RoundHeardType and RoundHeard are the type and time of the latest
	// DATA, GRANT or BUSY the round's sender had heard from its peer when
	// the round began (zero: none): the silence its timer pass judged.
	RoundHeardType wire.PacketType
	RoundHeard     time.Time
}

// res returns a copy of m's RESEND state (the zero one before its first
// RESEND).
func (m *Message) res() resendState {
	if m.resend == nil {
		return resendState{}
	}
	return *m.resend
}

// resW returns m's RESEND state to update, allocating it at the first
// RESEND.
func (m *Message) resW() *resendState {
	if m.resend == nil {
		m.resend = &resendState{}
	}
	return m.resend
}

// noteGrantUse updates GrantLog with first transmission e of the message:
// a segment starting at or past H + (skb data − one segment), where H is
// the horizon before GRANT g and the RESENDs seen so far, cannot come from
// an skb that an earlier authorisation allowed (homa_xmit_data sends whole
// skbs that start below the horizon), so the sender had received g or a
// later GRANT.
func (m *Message) noteGrantUse(p *Params, e *Event) {
	reach := eventSkb(p, e) - segData(p.MTU, e)
	for i := len(m.GrantLog) - 1; i >= 0; i-- {
		g := m.GrantLog[i]
		if i == 0 && m.Known {
			return
		}
		if uint64(e.Offset) >= uint64(max(g.HBefore, m.ResendEnd))+uint64(reach) {
			m.GrantLog = append(m.GrantLog[:0], m.GrantLog[i:]...)
			m.Known = true
			return
		}
	}
}

// segData is one full segment's data bytes (max_seg_data) at MTU mtu for
// e's address family.
func segData(mtu uint32, e *Event) uint32 {
	return maxSegData(mtu, e.IPv6())
}

// LastGrant returns the latest GRANT seen for the message, if any.
func (m *Message) LastGrant() (GrantSeen, bool) {
	if len(m.RecentGrants) == 0 {
		return GrantSeen{}, false
	}
	return m.RecentGrants[len(m.RecentGrants)-1], true
}

// captured reports whether the capture saw every byte of [s, e) in DATA
// of the message, in any incarnation of its receiver.
func (m *Message) captured(s, e uint32) bool {
	if m.Seen.Covers(s, e) {
		return true
	}
	if m.Earlier == nil {
		return false
	}
	return m.everSeen().Covers(s, e)
}

// everSeen returns the byte ranges seen in DATA of the message in any
// incarnation of its receiver: Seen itself when there was no earlier one
// (do not change it), otherwise a new set.
func (m *Message) everSeen() byteranges.Set {
	if m.Earlier == nil {
		return m.Seen
	}
	all := slices.Clone(m.Earlier)
	for _, x := range m.Seen {
		all.Add(x.Start, x.End)
	}
	return all
}

// Received returns the number of distinct bytes seen.
func (m *Message) Received() uint32 { return m.Seen.Total() }

// recvSample is how many bytes of a message the capture had seen at a
// time.
type recvSample struct {
	t time.Time
	n uint32
}

// noteReceived records that n bytes had been seen at t, keeping the
// samples ReceivedBy needs for times down to keep before t.
func (m *Message) noteReceived(t time.Time, n uint32, keep time.Duration) {
	if m.recvLog == nil {
		m.recvLog = make([]recvSample, 0, 4)
	}
	m.recvLog = append(m.recvLog, recvSample{t, n})
	cut := t.Add(-keep)
	i := 0
	for i+1 < len(m.recvLog) && !m.recvLog[i+1].t.After(cut) {
		i++
	}
	if i > 0 {
		// Move the samples kept to the front, so appends reuse the array
		// (one or two of them, as a rule: element by element costs less
		// than copy's call).
		k := len(m.recvLog) - i
		for j := range k {
			m.recvLog[j] = m.recvLog[i+j]
		}
		m.recvLog = m.recvLog[:k]
	}
}

// ReceivedBy returns how many of the message's bytes the capture had seen
// by time t (t at most slack before the latest DATA; earlier times get
// the oldest sample kept, or 0).
func (m *Message) ReceivedBy(t time.Time) uint32 {
	var n uint32
	for _, s := range m.recvLog {
		if s.t.After(t) {
			break
		}
		n = s.n
	}
	return n
}

// Horizon returns the sender's grant horizon as far as the capture shows:
// max(U, highest GRANT offset, highest RESEND end, the horizon kept from
// the receiver's earlier incarnations), capped at the length.
func (m *Message) Horizon(p *Params) uint32 {
	h := max(p.Unsched(m.Length), m.Granted, m.ResendEnd, m.KeptHorizon)
	if m.Length > 0 {
		h = min(h, m.Length)
	}
	return h
}

// ResendSeen is one RESEND observed for a message.
type ResendSeen struct {
	Seen
	Offset, Length uint32
	// SentEnd is the message's SentEnd when the RESEND was seen: its
	// sender had transmitted at least that much when it got the RESEND.
	SentEnd uint32
	// Repeat: an earlier RESEND of the message's current incarnation had
	// asked for the byte at Offset, and the message's previous RESEND came
	// less than a tick before (the same timer pass, or a copy the network
	// duplicated): what the earlier one asked for may still wait in the
	// sender's queue.
	Repeat bool
	// First: no earlier RESEND of the message's current incarnation had
	// asked for the byte at Offset, so retransmissions of it that follow
	// answer this RESEND.
	First bool
}

// End is the end of the range the RESEND asked for (length -1: up to
// the SentEnd it was seen with), saturated at 2^32-1.
func (rs ResendSeen) End() uint32 { return rangeEnd(rs.Offset, rs.Length, rs.SentEnd) }

// resendEnd is the end of the range RESEND rs asks for (length -1: up to
// sentEnd), saturated at 2^32-1.
func resendEnd(rs wire.Resend, sentEnd uint32) uint32 {
	return rangeEnd(rs.Offset(), rs.Length(), sentEnd)
}

// rangeEnd is the end of a RESEND's range from offset and length (length
// -1: up to sentEnd), saturated at 2^32-1.
func rangeEnd(offset, length, sentEnd uint32) uint32 {
	if length == wire.ResendAll {
		return sentEnd
	}
	return uint32(min(uint64(offset)+uint64(length), 1<<32-1))
}

// RPC is what an observer knows about one RPC.
type RPC struct {
	Key RPCKey
	// after caches the Checker's After slots of the RPC's keys
	// (Checker.findA).
	after []afterSlot
	// ClientPort and ServerPort are the Homa ports.
	ClientPort, ServerPort uint16
	// Unknown is set when either side answered RPC_UNKNOWN, at UnknownTime;
	// UnknownFromClient when the latest came from the client. (Beside the
	// ports, and Acked beside FirstIsStart, where they cost no padding:
	// RPC stays within 1792 bytes.)
	Unknown, UnknownFromClient bool
	// First and Last are the times of the first and latest packet; FirstFrame
	// the frame of the first.
	First, Last time.Time
	FirstFrame  int
	// SeenFromStart: the RPC's history is in the capture (see
	// Trace.seenFromStart); otherwise a violation that may depend on it
	// is downgraded (CauseCaptureStart).
	SeenFromStart bool
	// FirstFromClient: the client sent the first packet (First).
	// FirstIsStart: that packet is the request's first transmission of
	// offset 0, so the RPC is no older at either end: its server creates
	// it when a request packet arrives, and its client's timer counts
	// only once its granted request bytes have left (homa_timer_check_rpc).
	FirstFromClient, FirstIsStart bool
	// Acked is set when the client acknowledged the RPC (ACK header, ACK
	// entry or piggy-backed DATA ack), at AckTime in frame AckFrame.
	Acked bool
	// quietEnd is when QuietFromServer's silence ended, in µs after First
	// (clientGaveUp; 32 bits in padding keep RPC within Go's 1792-byte size
	// class).
	quietEnd int32
	// Request is sent by the client, Response by the server.
	Request, Response Message
	// Packets counts packets by type (index type-0x10), both directions.
	Packets [9]int
	// HeardFromClient and HeardFromServer are the times of the latest DATA,
	// GRANT or BUSY each side sent: the packets that reset the other side's
	// silent_ticks (HomaModule homa_timer.c).
	HeardFromClient, HeardFromServer time.Time
	// HeardTypeFromClient/Server are those packets' types.
	HeardTypeFromClient, HeardTypeFromServer wire.PacketType
	// clientRounds counts the client's RESEND rounds (RESENDs a tick or
	// more apart) since the silence began (clientSilenceStart: heard
	// resets it): clientRoundsDone. 16 bits in padding.
	clientRounds uint16
	// heardBeforeFromClient and heardBeforeFromServer are the times (Unix
	// ns; 0: none) of the such packet before the latest: the latest may
	// not have reached the other side yet when its timer decided
	// (heardBefore).
	heardBeforeFromClient, heardBeforeFromServer int64
	// QuietFromServer is the longest interval the capture shows between
	// the RPC's first packet or a DATA, GRANT or BUSY from the server and
	// the next such packet: a client whose silent_ticks reach
	// timeout_ticks aborts the RPC without a packet (homa_timer.c
	// homa_timer_check_rpc), so a silence that long may have ended it.
	QuietFromServer time.Duration
	// resends holds the times of the client's and the server's latest
	// RESEND (nil: neither sent one, as in most RPCs): behind a pointer
	// so that an RPC fits Go's 1792-byte size class. Read it through
	// LastResendFromClient and LastResendFromServer.
	resends *[2]time.Time
	// UnknownTime is when the latest RPC_UNKNOWN came (RPC.Unknown).
	// ForgotTime is when the client first answered RPC_UNKNOWN (zero:
	// never): it no longer has the RPC and never restarts it.
	UnknownTime time.Time
	ForgotTime  time.Time
	// RecreatedTime is when a request packet reaching the server after
	// the client's ack re-created the RPC there (zero: never).
	RecreatedTime time.Time
	// LostLastData is the time of the latest request DATA the capture saw
	// before the server's latest RPC_UNKNOWN (zero: none, or no such
	// RPC_UNKNOWN): a byte seen well before it was in the incarnation the
	// server had lost (homa_resend_pkt answers RPC_UNKNOWN only when it
	// finds no RPC), so its next incarnation holds only later bytes.
	LostLastData time.Time
	// ServerTimeout is the latest request DATA that reached the server
	// after a silence in which the server's timer may have aborted the
	// RPC (nil: none; see ServerTimeout). Rare: behind a pointer.
	ServerTimeout *ServerTimeout
	// serverCountFrom is the time (Unix ns; 0: none) of the server's
	// latest GRANT for the request sent while it held every byte it had
	// granted (Message.heldGranted): its timer held silent_ticks at 0 until then, and a GRANT
	// sent while bytes were still due does not restart the count
	// (homa_timer_check_rpc; only DATA, GRANT or BUSY received reset it,
	// homa_dispatch_pkts). An int64, not a time.Time: RPC stays within
	// 1792 bytes.
	serverCountFrom int64
	// AckTime and AckFrame are when the client acknowledged the RPC
	// (RPC.Acked).
	AckTime  time.Time
	AckFrame int
	// ackEntry is the first ack entry naming the RPC (HOMA-ACK-004), nil
	// before one is seen.
	ackEntry *ackEntry
	// NeedAcks counts NEED_ACK packets; NeedAckTime is the latest one's
	// time, NeedAckFirst the first one's.
	NeedAcks     int
	NeedAckTime  time.Time
	NeedAckFirst time.Time
	// needAckAnswer is the time (Unix ns; 0: none) of the client's first
	// RESEND answering the latest NEED_ACK (see answersNeedAck).
	// needAckAnswerOff is the offset of the latest RESEND taken for an
	// answer: one homa_request_retrans call asks in ascending order, so
	// one at or below it is another call. needAckPending counts the
	// NEED_ACKs not yet answered by such a call (capped at 255).
	needAckAnswer    int64
	needAckAnswerOff uint32
	needAckPending   uint8
	// maybeRound is the time (Unix ns; 0: none) of the client's latest
	// RESEND that answersNeedAck took for an answer, though it began
	// another call with no NEED_ACK pending: the answer to a copy of a
	// NEED_ACK, or one reordered, or the timer's round, whose phase is
	// unrelated to the server's (helper-141). HOMA-RESEND-014 counts it as
	// a round; rules that need a round to be sure (HOMA-RESEND-008) do not.
	maybeRound int64
	// AckPkts counts the ACK packets naming the RPC in their header that
	// answer a NEED_ACK (fewer than max_acks_per_pkt acks).
	AckPkts int
	// HeldLast is the time of the server's latest BUSY, GRANT, RESEND,
	// response DATA or NEED_ACK in the RPC's current incarnation: the server held the RPC
	// then (zero: no such packet since the RPC began, or since it was
	// acknowledged, until late request DATA re-created it, or ended by
	// RPC_UNKNOWN). ReqLast is the time of the
	// client's latest request DATA, which may have created the RPC at the
	// server (HOMA-RESEND-019).
	HeldLast, ReqLast time.Time
	// quietAfterHeld is the longest silence from the client (from its
	// latest DATA, GRANT or BUSY, or the RPC's first packet) that ended
	// with such a packet after HeldLast: the server's timer may have
	// aborted the RPC in it, and a packet arriving after that resets
	// nothing (HOMA-RESEND-019).
	quietAfterHeld time.Duration
	// serverQuietMax is the longest silence the server's timer may have
	// counted (serverSilence) that ended with the client's GRANT or BUSY
	// since its latest request DATA: the timer may have aborted the RPC
	// then, and a BUSY arriving after the abort resets nothing, so the
	// next request DATA may find no RPC (helper-145).
	serverQuietMax time.Duration
	// filed is the deadline the RPC is filed under in Trace.idle, at
	// position idleAt (-1: not filed); gone is set once the trace forgot
	// it.
	filed  time.Time
	idleAt int
	gone   bool
	// idLatest is set while Trace.byClientID files the RPC under its
	// client id, so that a packet of it costs no map access there.
	idLatest bool
	// twoSided is set once both sides sent a packet naming it (spoke);
	// Trace.Answered counts such RPCs. spoken holds spokeClient and
	// spokeServer for the sides heard so far.
	twoSided bool
	spoken   uint8
	// dupLast caches the Network's latest frames between the RPC's hosts
	// (Network.lastOf).
	dupLast *pairFrames
}

// LastResendFromClient is the time of the client's latest RESEND of r
// (zero: none).
func (r *RPC) LastResendFromClient() time.Time {
	if r.resends == nil {
		return time.Time{}
	}
	return r.resends[0]
}

// LastResendFromServer is the time of the server's latest RESEND of r
// (zero: none).
func (r *RPC) LastResendFromServer() time.Time {
	if r.resends == nil {
		return time.Time{}
	}
	return r.resends[1]
}

// ServerTimeout is the trace's inference that request DATA reached the
// server of an RPC after a silence in which the server's timer may have
// aborted it, its request still incomplete (RTX-10: homa_timer_check_rpc
// ends the RPC and sends nothing), so that this DATA created it anew
// (RTX-11: homa_dispatch_pkts allocates a server RPC for any DATA). See
// Trace.serverTimedOut.
type ServerTimeout struct {
	// Seen is the request DATA.
	Seen
	// Sure is set when the silence passed timeout_ticks ticks plus slack:
	// the trace started the server's side afresh there. Otherwise it kept
	// the old one: within RTX-10's tolerance (Held zero) what rests on it
	// is inconclusive.
	Sure bool
	// Quiet is the silence as the capture shows it: from the latest
	// packet that reset the server's count.
	Quiet time.Duration
	// Held, when positive, is how much earlier than the capture saw it
	// the server's own latest GRANT (of frame GrantFrame, sent while it
	// held every byte it had granted, which restarts its count) must have
	// left the server for its timer to have reached RTX-10's tolerance:
	// counted from the client's last DATA, GRANT or BUSY (Since) the
	// silence reached it. A host that decided the GRANT, then stalled
	// before sending it, shows exactly this (a loaded ref held a GRANT
	// and 20 RESENDs for 0.67 s, aborted the RPC meanwhile and granted
	// the late DATA afresh). The trace keeps the old incarnation; a
	// finding that rests on it is a timing one, late Held, over the
	// silence from Since.
	Held       time.Duration
	Since      time.Time
	GrantFrame int
	// Recreated, on one that is not Sure, is the latest Sure one before
	// it (nil: none): the trace's state of the server, and so what a
	// finding rests on, may still come from that re-creation.
	Recreated *ServerTimeout
}

// unsure reports whether st (nil: none) leaves the abort open: a silence
// within RTX-10's tolerance of timeout_ticks, neither Sure nor resting on
// the server's own GRANT (Held), so the trace kept the old incarnation
// and what rests on it is inconclusive.
func (st *ServerTimeout) unsure() bool { return st != nil && !st.Sure && st.Held == 0 }

// evictAt returns when the trace may forget r: EvictAfter after its last
// packet once it is finished (acked, answered RPC_UNKNOWN, or with its
// response complete), IdleEvictAfter after it otherwise.
func (r *RPC) evictAt() time.Time {
	if r.Acked || r.Unknown || r.Response.Complete {
		return r.Last.Add(EvictAfter)
	}
	return r.Last.Add(IdleEvictAfter)
}

// Msg returns the message sent by side role.
func (r *RPC) Msg(role wire.Role) *Message {
	if role == wire.RoleClient {
		return &r.Request
	}
	return &r.Response
}

// CutoffsState is what a sender knows of a receiver's cutoffs: the latest
// CUTOFFS the receiver sent it.
type CutoffsState struct {
	Cutoffs [8]uint32
	Version uint16
	// SenderID is the CUTOFFS' sender_id: the RPC whose stale DATA it
	// answers (homa_data_pkt sends it with homa_xmit_control for that RPC).
	SenderID uint64
	Time     time.Time
	Frame    int
}

// senderMsg is a message a receiver granted and its RPC (Trace.sameSender).
type senderMsg struct {
	m *Message
	r *RPC
}

// forgotten reports whether the message is a request whose client said,
// before t, that it no longer knows the RPC (RPC_UNKNOWN): the server
// frees the RPC on it (linux_6.1.38 homa_unknown_pkt, HomaModule
// homa_rpc_unknown_pkt), so the message has left its grantable set.
func (g senderMsg) forgotten(t time.Time) bool {
	return g.r != nil && g.m == &g.r.Request && !g.r.ForgotTime.IsZero() && !g.r.ForgotTime.After(t)
}

type hostPair struct{ from, to netip.Addr }

// Trace is the observer's state while a capture is streamed through it:
// RPCs by key and per host pair the CUTOFFS exchanged. Memory grows with
// the RPCs alive in the capture: RPCs idle for longer than Params.Evict
// after they were acked or reported unknown are forgotten.
type Trace struct {
	P *Params
	// unusual counts the changes to an RPC a packet of it makes beyond
	// its own bytes (a new incarnation, a retired RPC, a server timeout
	// assumed): Checker's DATA memos hold only while it stays the same.
	unusual uint32
	// Now is the time of the latest event.
	Now time.Time
	// Start is the time of the capture's first packet: state older than
	// it is not in the capture.
	Start time.Time
	rpcs  map[RPCKey]*RPC
	// onEvict, if set, is told of each RPC evict forgets (the Checker
	// forgets its After keys with it).
	onEvict func(*RPC)
	// started holds the RPCs another view of the capture saw start
	// (Checker.SetStarted), nil if none; only those at or after
	// startedFrom count (a section begun by a restart: what started
	// before it is not the section's).
	started     map[RPCKey]time.Time
	startedFrom time.Time
	// carried holds the RPCs the sections before this trace's held when
	// they ended (Checker.newSection): their packets here are no start.
	carried map[RPCKey]bool
	// partialReq holds the RPCs a request DATA whose header the snap
	// length cut was seen of (notePartial): its retransmit byte may be
	// unread, so heldWhole takes none of their request bytes as seen
	// once. nil until the first.
	partialReq map[RPCKey]struct{}
	// rpcCache caches rpcs by client id (rpcSlot), direct-mapped: the
	// RPC lookup of every event (begin) mostly costs a compare of keys
	// instead of hashing a 56-byte one. An entry is always an RPC that
	// rpcs holds under its Key (filled on insert and lookup, cleared on
	// delete).
	rpcCache *[rpcCacheSize]*RPC
	// cutoffs[{S,R}] is what S knows of R's cutoffs (R sent them to S).
	cutoffs map[hostPair]*CutoffsState
	// versions[{S,R}] are all cutoff versions R has sent to S, with times.
	versions map[hostPair][]CutoffsState
	done     []*RPC
	keepDone bool
	// payFree holds request payload logs whose RPC's response began
	// (freePayload), for the next messages' logs to reuse: a 100 KB
	// request's log holds a 1.5 KB array.
	payFree []*payloadLog
	created int
	// answered counts the RPCs heard from both sides (Answered).
	answered int
	// granting[R] holds the incomplete messages R has granted.
	granting map[netip.Addr]map[*Message]*RPC
	applied  int
	// unreachable[{H, P}] is the latest ICMP port unreachable host H sent
	// about its port P.
	unreachable map[HostPort]Unreachable
	// hostUnreachable[{H, A}] is when host H last got an ICMP unreachable
	// other than port unreachable about a packet it sent to address A:
	// HomaModule then aborts every RPC H has with A (homa_err_handler_v4,
	// homa_err_handler_v6 → homa_abort_rpcs), sending nothing.
	hostUnreachable map[hostPair]time.Time
	// sawUnknown: some RPC has received RPC_UNKNOWN (RPC.Unknown).
	sawUnknown bool
	// acked[C] is what client host C's acks showed (HOMA-ID-004).
	acked map[netip.Addr]*ackHistory
	// byClientID[{C, id}] is the latest RPC to which client C sent DATA,
	// GRANT, RESEND or BUSY under client id id (HOMA-WIRE-011: one id, one
	// server).
	byClientID map[clientIDKey]*RPC
	// newest[C] is the RPC with the highest client id that client host C
	// began in the capture with a request of at most defer_min_bytes (its
	// first byte seen): ids only grow (homa_rpc_alloc_client), and such a
	// request goes out as sendmsg allocates its id, never parked in the
	// pacer (homa_xmit_data), so an RPC with a higher id began later
	// (HOMA-ACK-004).
	newest map[netip.Addr]newestRPC
	// forgotMax[C] is the highest client id of client host C among the
	// RPCs the trace forgot (retire): an ack naming an id at or below it
	// may be of one of them, handed out late (HOMA-ACK-004).
	forgotMax map[netip.Addr]uint64
	// clientUnknown[{C, id}] is when client C first said RPC_UNKNOWN for
	// its id id, kept when a later packet starts a new incarnation of the
	// RPC (HOMA-RESEND-022).
	clientUnknown map[clientIDKey]Seen
	// longIn[R] holds the messages longer than unsched_bytes sent to R
	// that were incomplete when last seen (R's grantable messages, as far
	// as the capture shows).
	longIn map[netip.Addr]map[*Message]*RPC
	// grantedBuf and peerBuf are waiting's scratch slices, reused so that
	// judging a freed grant slot allocates nothing.
	grantedBuf []grantedMsg
	peerBuf    []*Message
	// outstanding[R] is what incomingOutstanding would sum over R's
	// granting and longIn sets, kept up to date as messages change
	// (refreshOutstanding), so that asking costs no scan.
	outstanding map[netip.Addr]*outstandingSum
	// missed counts the DATA packets the capture shows it missed (see
	// heldWhole), ev the first evidence.
	missed struct {
		n  uint64
		ev Evidence
	}
	// triggers[R] are the recent packets to R of an RPC whose message to
	// R was grantable (Trace.grantable) and incomplete before it: packets
	// whose processing runs R's grant decision (homa_dispatch_pkts calls
	// homa_grant_check_rpc for a grantable RPC).
	triggers map[netip.Addr]*triggerLog
	// sameSender[{R, S}] are the last two distinct messages from S that R
	// sent a non-FIFO GRANT for, latest first, with their RPCs.
	sameSender map[hostPair][2]senderMsg
	// crowded[R] is when the capture last saw R with more than one
	// message longer than unsched_bytes incoming (its longIn set), at a
	// DATA to R: since then R's grant window has been that of one active
	// message (HOMA-GRANT-024).
	crowded map[netip.Addr]*time.Time
	// lastSRPT[R] is R's latest non-FIFO GRANT.
	lastSRPT map[netip.Addr]Seen
	// lastFIFO[R] are R's latest two GRANTs that may be FIFO grants
	// (mayBeFIFOGrant), latest first: the messages its cached FIFO choice
	// may hold (HOMA-GRANT-022; homa_grant_check_fifo keeps oldest_rpc).
	lastFIFO map[netip.Addr][2]fifoSeen
	// fifoPace[R] holds the times of R's latest FIFO GRANTs that raised
	// their message's GRANT offset, where FIFO GRANTs have a level of
	// their own (HOMA-GRANT-023).
	fifoPace map[netip.Addr]*fifoTimes
	// pairs[{S, R}] is what the DATA from S to R showed of the cutoff
	// versions S used; cutoffsPaid[{R, S}] counts the CUTOFFS from R to S
	// each of which one stale DATA paid for (HOMA-CUTOFF-003).
	pairs       map[hostPair]*pairData
	cutoffsPaid map[hostPair]int
	// longDone[R] files the complete messages of longIn[R] by
	// CompleteTime, so that Grantable forgets those complete for longer
	// than slack without a scan.
	longDone map[netip.Addr]*minHeap[*Message]
	// longEnded[R] holds, oldest first, when RPC_UNKNOWN ended messages of
	// longIn[R] within the last slack (RecentlyEnded).
	longEnded map[netip.Addr][]time.Time
	// longGone[R] keeps when R's latest long messages stopped counting in
	// Grantable or RecentlyEnded (endedLate), goneKeep of them at most.
	longGone map[netip.Addr]*goneTimes
	// idle files every RPC (once) by a time no later than its evictAt, so
	// that evict visits only RPCs that are due (or whose deadline moved
	// on); a forgotten RPC leaves it.
	idle minHeap[*RPC]
	// cur is the event between begin and Apply, with its RPC key and RPC
	// (looked up once for every rule).
	cur    *Event
	curKey RPCKey
	curRPC *RPC
	// payloads makes the trace keep payload hashes (a rule reads them,
	// Each.Payload); payDone is the event whose payload a rule has
	// already logged (Trace.comparePayload).
	payloads bool
	payDone  *Event
}

// pairData is what the DATA from one host to another showed of cutoff
// versions.
type pairData struct {
	// hp is the pair, so that a Message's cached pointer can be checked.
	hp hostPair
	// verCount[v] counts the DATA packets with cutoff_version v, but for
	// the version of the latest one (hotVer, if hot), counted in hotN: a
	// pair's DATA rarely changes version, so most packets cost no map
	// access.
	verCount map[uint16]int
	hot      bool
	hotVer   uint16
	hotN     int
	// hotPrios has bit p set once verPrio holds {hotVer, p}.
	hotPrios uint64
	// verPrio[{v, p}] is the first DATA with cutoff_version v at
	// priority p.
	verPrio map[[2]uint16]Seen
	// recent holds the latest DATA of each of the last few distinct RPCs
	// of the pair, latest first (HOMA-CUTOFF-005: stale DATA of several
	// RPCs may be handled on several cores at once).
	recent [4]rpcData
	// recv caches hp's receiver's entries of Trace.granting and
	// Trace.crowded (noteCrowded): a set once made is never replaced and
	// crowded's entry is a pointer, so the pair's DATA find them without
	// hashing the address.
	recv recvCache
}

// recvCache is a receiver's granting and longIn sets, longDone heap and
// crowded entry, each nil until the trace makes it (and then never
// replaced).
type recvCache struct {
	granting, longIn map[*Message]*RPC
	longDone         *minHeap[*Message]
	crowded          *time.Time
}

// noteCrowded sets crowded[R] to now when R, the receiver of pd's DATA,
// has more than one message in its granting set or more than one
// message longer than unsched_bytes incoming. Messages complete for
// longer than slack no longer count (Grantable forgets them, at every
// DATA): kept, they made a receiver that had once had two long messages
// look crowded for the rest of the capture, and HOMA-GRANT-024 judged
// nothing in a whole conformance pass's capture.
func (t *Trace) noteCrowded(pd *pairData, now time.Time) {
	rc := &pd.recv
	if rc.granting == nil {
		rc.granting = t.granting[pd.hp.to]
	}
	if len(rc.granting) <= 1 {
		// Grantable without hashing the address at every DATA.
		if rc.longDone == nil {
			rc.longDone = t.longDone[pd.hp.to]
		}
		t.forgetDone(pd.hp.to, rc.longDone, now)
		if rc.longIn == nil {
			rc.longIn = t.longIn[pd.hp.to]
		}
		if len(rc.longIn) <= 1 {
			return
		}
	}
	if rc.crowded == nil {
		if rc.crowded = t.crowded[pd.hp.to]; rc.crowded == nil {
			rc.crowded = new(time.Time)
			t.crowded[pd.hp.to] = rc.crowded
		}
	}
	*rc.crowded = now
}

// rpcData is the latest DATA of one RPC (by sender_id) of a host pair.
type rpcData struct {
	id  uint64
	ver uint16
	Seen
}

// noteRPC records DATA of the RPC with sender_id id carrying
// cutoff_version ver, seen at s.
func (pd *pairData) noteRPC(id uint64, ver uint16, s Seen) {
	i := 0
	for i < len(pd.recent)-1 && pd.recent[i].id != id && pd.recent[i].id != 0 {
		i++
	}
	// i holds id, is free, or is the oldest entry, which goes.
	copy(pd.recent[1:i+1], pd.recent[:i])
	pd.recent[0] = rpcData{id, ver, s}
}

// staleRPCs returns how many distinct RPCs (at most 4) of peer's DATA to h
// that the capture saw since from carried a cutoff_version other than v,
// and the frames of the latest two.
func (t *Trace) staleRPCs(h, peer netip.Addr, v uint16, from time.Time) (n int, frames [2]int) {
	pd := t.pairs[hostPair{peer, h}]
	if pd == nil {
		return 0, frames
	}
	for _, x := range pd.recent {
		if x.id != 0 && x.ver != v && !x.Time.Before(from) {
			if n < 2 {
				frames[n] = x.Frame
			}
			n++
		}
	}
	return n, frames
}

// countVersion counts a DATA packet with cutoff_version v.
func (pd *pairData) countVersion(v uint16) {
	if pd.hot && pd.hotVer == v {
		pd.hotN++
		return
	}
	if pd.hot {
		pd.verCount[pd.hotVer] = pd.hotN
	}
	pd.hot, pd.hotVer, pd.hotN, pd.hotPrios = true, v, pd.verCount[v]+1, 0
	delete(pd.verCount, v)
}

// Seen is a moment of the capture: a time and a frame.
type Seen struct {
	Time  time.Time
	Frame int
}

type ackedID struct {
	id    uint64
	time  time.Time
	frame int
}

// ackHistory is what one client host's acks showed, for HOMA-ID-004:
// its largest acked id, and the ids acked lately (a new RPC with one of
// them reuses it, even once the trace has let the acked RPC go).
type ackHistory struct {
	// max is the largest id acked, with its ack.
	max ackedID
	// recent are the last maxRecentAcks distinct ids acked in ack
	// entries, a ring (next: where the next goes).
	recent []ackedID
	next   int
}

// maxRecentAcks bounds ackHistory.recent: a reuse of an id acked longer
// ago than the last this many acks of its host (and let go by the trace)
// is judged by the largest id alone.
const maxRecentAcks = 256

// note files an ack of id at e; entry marks one the client handed out of
// its pending list (homa_peer_add_ack: an RPC it completed), which alone
// goes into recent: an ACK header may answer NEED_ACK for an RPC the
// client no longer has or never had (homa_need_ack_pkt; a module loaded
// again answers its predecessor's server), an id it may yet use.
func (h *ackHistory) note(id uint64, e *Event, entry bool) {
	a := ackedID{id, e.Time, e.Frame}
	if id > h.max.id {
		h.max = a
	}
	if !entry {
		return
	}
	n := len(h.recent)
	for i := 1; i <= min(4, n); i++ {
		if h.recent[(h.next-i+n)%n].id == id {
			return // piggy-backed on several packets in a row
		}
	}
	if n < maxRecentAcks {
		h.recent = append(h.recent, a)
	} else {
		h.recent[h.next] = a
	}
	h.next = (h.next + 1) % maxRecentAcks
}

// ackOf returns the lately remembered ack of id (ok false: none).
func (h *ackHistory) ackOf(id uint64) (ackedID, bool) {
	for _, a := range h.recent {
		if a.id == id {
			return a, true
		}
	}
	return ackedID{}, false
}

// HostPort is a host address and a Homa port.
type HostPort struct {
	Addr netip.Addr
	Port uint16
}

// String returns hp as ADDR:PORT, an IPv6 address in brackets
// ("[fd00::1]:32768", as net.JoinHostPort writes it and decode prints
// endpoints): without them the port reads as the address's last group.
func (hp HostPort) String() string { return netip.AddrPortFrom(hp.Addr, hp.Port).String() }

// Unreachable is an ICMP port unreachable seen in the capture: the host
// that sent it said it has no socket for the quoted port.
type Unreachable struct {
	Time  time.Time
	Frame int
	// To is the host the ICMP message went to (the quoted packet's sender).
	To netip.Addr
	// SenderID is the quoted packet's sender_id (0 if the quote is short).
	SenderID uint64
}

// NewTrace returns an empty trace judged against p.
func NewTrace(p *Params) *Trace {
	return &Trace{P: p, rpcs: map[RPCKey]*RPC{}, rpcCache: new([rpcCacheSize]*RPC), cutoffs: map[hostPair]*CutoffsState{}, versions: map[hostPair][]CutoffsState{},
		granting: map[netip.Addr]map[*Message]*RPC{}, unreachable: map[HostPort]Unreachable{}, hostUnreachable: map[hostPair]time.Time{}, acked: map[netip.Addr]*ackHistory{},
		longIn: map[netip.Addr]map[*Message]*RPC{}, triggers: map[netip.Addr]*triggerLog{}, sameSender: map[hostPair][2]senderMsg{}, lastSRPT: map[netip.Addr]Seen{}, crowded: map[netip.Addr]*time.Time{}, lastFIFO: map[netip.Addr][2]fifoSeen{}, fifoPace: map[netip.Addr]*fifoTimes{},
		pairs: map[hostPair]*pairData{}, cutoffsPaid: map[hostPair]int{}, longDone: map[netip.Addr]*minHeap[*Message]{}, longEnded: map[netip.Addr][]time.Time{}, longGone: map[netip.Addr]*goneTimes{}, byClientID: map[clientIDKey]*RPC{}, newest: map[netip.Addr]newestRPC{}, forgotMax: map[netip.Addr]uint64{},
		clientUnknown: map[clientIDKey]Seen{}, outstanding: map[netip.Addr]*outstandingSum{},
		idle: minHeap[*RPC]{less: func(a, b *RPC) bool { return a.filed.Before(b.filed) }, at: func(r *RPC, i int) { r.idleAt = i }}}
}

// KeyOf returns the RPC key of e (from sender_id's role bit and addresses).
func KeyOf(e *Event) (k RPCKey) {
	keyInto(&k, e)
	return k
}

// keyInto sets *k to KeyOf(e) in place (wire.KeyOf's rule): a 56-byte
// key is not kept in registers, and one returned by value is spilled and
// copied through the stack.
func keyInto(k *RPCKey, e *Event) {
	id := e.Packet.SenderID()
	if wire.RoleOf(id) == wire.RoleClient {
		k.Client, k.Server = e.Src, e.Dst
	} else {
		k.Client, k.Server = e.Dst, e.Src
	}
	k.ClientID = wire.ClientID(id)
}

// Lookup returns the RPC of e, or nil if no packet of it was seen yet.
// Between begin(e) and Apply(e) it costs no map lookup.
func (t *Trace) Lookup(e *Event) *RPC {
	if e == t.cur {
		return t.curRPC
	}
	k := KeyOf(e)
	return t.rpcOf(&k)
}

// rpcCacheSize is the number of rpcCache slots: a power of two above the
// number of RPCs a busy capture has in flight at once.
const rpcCacheSize = 4096

// rpcSlot is k's rpcCache slot: consecutive client ids (a client numbers
// its RPCs 2, 4, 6 …) take consecutive slots.
func rpcSlot(k *RPCKey) int { return int(k.ClientID>>1) & (rpcCacheSize - 1) }

// rpcOf returns the RPC under k, or nil: rpcs[k] through rpcCache.
func (t *Trace) rpcOf(k *RPCKey) *RPC {
	c := &t.rpcCache[rpcSlot(k)]
	if r := *c; r != nil && r.Key == *k {
		return r
	}
	r := t.rpcs[*k]
	if r != nil {
		*c = r
	}
	return r
}

// begin looks up e's RPC once for the rules that judge e before Apply(e)
// and returns its key. e must belong to an RPC (not ICMP, malformed,
// CUTOFFS or FREEZE); for other events it only clears the cache.
func (t *Trace) begin(e *Event) RPCKey {
	if t.Start.IsZero() {
		t.Start = e.Time
	}
	if !hasRPC(e) {
		t.cur = nil
		return RPCKey{}
	}
	t.cur = e
	keyInto(&t.curKey, e)
	t.curRPC = t.rpcOf(&t.curKey)
	return t.curKey
}

// seenFromStart reports whether an RPC whose first packet in the capture
// is e has its history in the capture: e is request DATA holding offset
// 0 sent as a first transmission (retransmit=0), or e comes more than
// timeout_ticks (as late as the timer can run) after the capture's
// start, since an RPC under way before it would have been silent that
// long and its hosts would have aborted it (homa_timer_check_rpc); its
// earlier packets were lost before the capture point, which the loss
// downgrades judge. A retransmission of offset 0 (a RESEND answered, or
// a request restarted after RPC_UNKNOWN: HomaModule homa_resend_data
// marks every copy retransmit=1) is no start: the first transmission,
// and whatever asked for the copy, came before the capture began. Nor is
// An RPC an earlier section held when it ended (Trace.carried: the
// checker judges afresh from a restart or a timestamp jump) is under way
// whenever it shows up, however long after the section began: it may
// have waited out a stall, or its packets lain in another stretch of
// the file. Nor is
// e's RPC older than the capture when another view of it showed that
// first transmission no later than e (Trace.started: a port's view of a
// request whose offset 0 was lost on its way to the port).
func (t *Trace) seenFromStart(e *Event) bool {
	if startsRequest(e) {
		return true
	}
	if t.carried[KeyOf(e)] {
		return false
	}
	if e.Time.Sub(t.Start) > t.P.LateTicks(t.P.TimeoutTicks) {
		return true
	}
	if t.started == nil {
		return false
	}
	at, ok := t.started[KeyOf(e)]
	return ok && !at.After(e.Time) && !at.Before(t.startedFrom)
}

// startsRequest reports whether e is the first transmission of a request's
// offset 0: the first packet its client sends of an RPC.
func startsRequest(e *Event) bool {
	return e.Type() == wire.TypeData && e.FromClient() && e.Offset == 0 && !e.Retransmit()
}

// Created returns how many RPCs the trace has seen start (an RPC whose
// state was evicted and that shows up again counts twice). Unlike a set of
// keys it costs no memory per RPC, so checking streams.
func (t *Trace) Created() int { return t.created }

// Answered returns how many RPCs both their client and their server
// sent a packet of (RPC.spoke): those whose exchange the rules could
// judge (an RPC seen from one side only shows no reaction).
func (t *Trace) Answered() int { return t.answered }

// KeepFinished makes the trace remember evicted RPCs, so that RPCs returns
// every RPC of the capture (for per-RPC summaries; memory then grows with
// the capture).
func (t *Trace) KeepFinished() { t.keepDone = true }

// RPCs returns the RPCs tracked (and, with KeepFinished, the evicted ones),
// in no particular order.
func (t *Trace) RPCs() []*RPC {
	out := make([]*RPC, 0, len(t.rpcs)+len(t.done))
	out = append(out, t.done...)
	for _, r := range t.rpcs {
		out = append(out, r)
	}
	return out
}

// CutoffsKnown returns what sender S knows of receiver R's cutoffs, or nil.
func (t *Trace) CutoffsKnown(s, r netip.Addr) *CutoffsState { return t.cutoffs[hostPair{s, r}] }

// seen returns the state gates (Each.Needs) the trace has reached: the
// states only ever appear, so a gate once seen stays open.
func (t *Trace) seen() Gate {
	var g Gate
	if len(t.unreachable) > 0 {
		g |= NeedsICMPSeen
	}
	if t.sawUnknown {
		g |= NeedsRPCUnknownSeen
	}
	if len(t.cutoffs) > 0 {
		g |= NeedsCutoffsSeen
	}
	return g
}

// CutoffVersions returns every CUTOFFS R sent to S so far, oldest first.
func (t *Trace) CutoffVersions(s, r netip.Addr) []CutoffsState { return t.versions[hostPair{s, r}] }

// MissedData returns how many DATA packets the capture shows it missed
// itself (at least one per stretch of bytes a receiver showed it held
// whole, in an RPC seen from its start, that no DATA in the capture
// carried) and the first evidence: a tap drops no packet between the
// hosts, so the capture lost them (HomaModule's receiver completes a
// message only with every byte: homa_data_pkt, homa_rpc_acked).
func (t *Trace) MissedData() (uint64, Evidence) { return t.missed.n, t.missed.ev }

// Granting returns the messages host r has sent at least one GRANT for and
// that are not complete, in no particular order (it varies run to run:
// a caller that names one must choose it by its own order). It costs
// O(those messages).
func (t *Trace) Granting(r netip.Addr) []*Message {
	set := t.granting[r]
	out := make([]*Message, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	return out
}

// trackLong keeps the longIn index of message m (sent to host to): a
// message longer than unsched_bytes stays in it until it is complete for
// longer than slack (see Grantable).
func (t *Trace) trackLong(to netip.Addr, m *Message, r *RPC) {
	if m.Length <= t.P.UnschedBytes {
		return
	}
	if !m.inLong {
		addMsg(t.longIn, to, m, r)
		m.inLong = true
		if m.acc == nil {
			m.acc = t.outstandingOf(to)
		}
	}
	t.refreshOutstanding(m)
	if m.Complete && !m.doneFiled {
		h := t.longDone[to]
		if h == nil {
			h = &minHeap[*Message]{less: func(a, b *Message) bool { return a.CompleteTime.Before(b.CompleteTime) }}
			t.longDone[to] = h
		}
		if h.Len() > 2*len(t.longIn[to])+64 {
			// Drop the entries of messages no longer in the set
			// (forgotten with their RPC, or ended by RPC_UNKNOWN), so
			// the heap stays within a constant factor of the set.
			h.Keep(func(x *Message) bool {
				x.doneFiled = x.inLong
				return x.inLong
			})
		}
		m.doneFiled = true
		h.Push(m)
	}
}

// addMsg adds message m (of RPC r) to host h's set in sets.
func addMsg(sets map[netip.Addr]map[*Message]*RPC, h netip.Addr, m *Message, r *RPC) {
	set := sets[h]
	if set == nil {
		set = map[*Message]*RPC{}
		sets[h] = set
	}
	set[m] = r
}

// dropLong takes message m out of host h's longIn set.
func (t *Trace) dropLong(h netip.Addr, m *Message) {
	if m.inLong {
		delete(t.longIn[h], m)
		m.inLong = false
		t.refreshOutstanding(m)
	}
}

// dropGranting takes message m out of host h's granting set.
func (t *Trace) dropGranting(h netip.Addr, m *Message) {
	if m.inGranting {
		delete(t.granting[h], m)
		m.inGranting = false
		t.refreshOutstanding(m)
	}
}

// outstandingSum is the bytes a receiver has authorised and not received
// (incomingOutstanding), kept as a sum over its messages (n). granted is
// the part of n of the messages in the receiver's granting set (each
// max(0, Granted - Received)), held how many of those have granted bytes
// not received and are not granted to their end: upper bounds of what
// HOMA-GRANT-013 and HOMA-GRANT-006 count by scanning the set, which
// those rules test first (grantBounds). mixed is set when a message of
// another receiver's sum entered this receiver's granting set: the
// bounds are then not used.
type outstandingSum struct {
	n, granted int64
	held       int32
	mixed      bool
}

// outstandingOf returns host h's outstanding sum, made on first use.
func (t *Trace) outstandingOf(h netip.Addr) *outstandingSum {
	s := t.outstanding[h]
	if s == nil {
		s = &outstandingSum{}
		t.outstanding[h] = s
	}
	return s
}

// outstandingPart returns what message m adds to its receiver's
// outstanding bytes: for a message being granted, granted and not
// received; for another incomplete long message, authorised and not
// received; else 0 (see incomingOutstanding).
func (t *Trace) outstandingPart(m *Message) int64 {
	switch {
	case m.whole:
		return 0
	case m.inGranting:
		return max(0, int64(m.Granted)-int64(m.Received()))
	case m.inLong && !m.Complete:
		return max(0, int64(m.authorised(t.P))-int64(m.Received()))
	}
	return 0
}

// refreshOutstanding moves m's part of its receiver's outstanding sum to
// what m's state says now. Every change to what outstandingPart reads
// (the sets m is in, Granted, Seen, Complete, Length, MaxIncoming) is
// followed by it.
func (t *Trace) refreshOutstanding(m *Message) {
	if m.acc == nil {
		return // never filed: adds nothing
	}
	v := t.outstandingPart(m)
	a := m.acc
	a.n += v - m.outVal
	if m.outInG {
		a.granted -= m.outVal
	}
	if m.outHeld {
		a.held--
	}
	g := m.inGranting && !m.whole
	h := g && v > 0 && (m.Length == 0 || m.Granted < m.Length)
	if g {
		a.granted += v
	}
	if h {
		a.held++
	}
	m.outVal, m.outInG, m.outHeld = v, g, h
}

// triggerLog counts a host's grant-triggering packets; the n-th has index
// n (from 1).
type triggerLog struct {
	n int
}

// add counts one more trigger.
func (l *triggerLog) add() { l.n++ }

// grantable reports whether a receiver may grant a message of length
// bytes whose DATA carried incoming as low as minIncoming (0: none seen):
// one longer than unsched_bytes, or one whose receiver may have created
// its RPC from a retransmission carrying incoming short of the length
// (homa_grant_init_rpc: granted starts at the first packet's incoming;
// homa_resend_data writes the end of the range it resends there), as
// HOMA-GRANT-001 allows.
func (t *Trace) grantable(length, minIncoming uint32) bool {
	return length > t.P.UnschedBytes || minIncoming > 0 && minIncoming < length
}

// grantTrigger returns the packet that can pay for a non-FIFO GRANT of
// message m that host r sends now: the grant-triggering packet to r right
// after the one m's previous GRANT used. A receiver processes packets in
// order and each run of its grant decision grants a message at most once,
// however far behind its link it runs (emulated hosts lag tens of
// milliseconds), so the GRANTs of a message can be matched, in order, to
// distinct earlier packets. ok is false when none is left.
// firstDataWith returns the first DATA from s to r carrying cutoff
// version v at priority p (ok false: none yet).
func (t *Trace) firstDataWith(s, r netip.Addr, v uint16, p uint8) (Seen, bool) {
	pd := t.pairs[hostPair{s, r}]
	if pd == nil {
		return Seen{}, false
	}
	x, ok := pd.verPrio[[2]uint16{v, uint16(p)}]
	return x, ok
}

// unpaidStale returns how many DATA packets from peer to h carried a
// cutoff_version other than v and have not yet paid for a CUTOFFS from h
// to peer.
func (t *Trace) unpaidStale(h, peer netip.Addr, v uint16) int {
	n := 0
	if pd := t.pairs[hostPair{peer, h}]; pd != nil {
		for ver, k := range pd.verCount {
			if ver != v {
				n += k
			}
		}
		if pd.hot && pd.hotVer != v {
			n += pd.hotN
		}
	}
	return n - t.cutoffsPaid[hostPair{h, peer}]
}

func (t *Trace) grantTrigger(r netip.Addr, m *Message) (int, bool) {
	l := m.trig
	if l == nil {
		l = t.triggers[r]
	}
	if l == nil || m.TriggerUsed >= l.n {
		return 0, false
	}
	return m.TriggerUsed + 1, true
}

// Grantable returns how many messages longer than unsched_bytes host h
// may be granting at time now, as far as the capture shows: those
// incomplete when last seen (even if RPC_UNKNOWN or an ack ended them: a
// restart may have brought them back), plus
// those completed less than slack before now (their last bytes may still
// be on their way to h). Messages silent for long (h may have aborted
// them) count too: the number errs high.
//
// It forgets the messages complete for longer than slack (they never
// count again unless more of their DATA shows up), in O(log n) each.
func (t *Trace) Grantable(h netip.Addr, now time.Time) int {
	t.forgetDone(h, t.longDone[h], now)
	return len(t.longIn[h])
}

// forgetDone drops from h's longIn the messages of d, h's longDone heap
// (nil: none), complete for longer than slack before now.
func (t *Trace) forgetDone(h netip.Addr, d *minHeap[*Message], now time.Time) {
	for d != nil && d.Len() > 0 && now.Sub(d.Min().CompleteTime) > t.P.Slack {
		m := d.Pop()
		m.doneFiled = false
		if m.Complete && m.inLong {
			t.dropLong(h, m)
			t.noteGone(h, m.CompleteTime)
		}
	}
}

// goneKeep is how many ends goneTimes keeps per receiver: a GRANT's level
// is at most max_sched_prio (below num_priorities, at most 8) and needs
// that many more messages being granted than one, so no finding looks
// further back.
const goneKeep = 8

// goneTimes holds the latest goneKeep times at which a receiver's long
// messages stopped counting as ones it may be granting (Grantable,
// RecentlyEnded): their last byte, the RPC_UNKNOWN that ended them, or
// the trace forgetting their RPC. A fixed array: no growth with the
// capture's length.
type goneTimes struct {
	at [goneKeep]time.Time
	n  int
}

// add notes an end at t, keeping the latest goneKeep.
func (g *goneTimes) add(t time.Time) {
	if g.n < goneKeep {
		g.at[g.n] = t
		g.n++
		return
	}
	old := 0
	for i := 1; i < goneKeep; i++ {
		if g.at[i].Before(g.at[old]) {
			old = i
		}
	}
	if t.After(g.at[old]) {
		g.at[old] = t
	}
}

// latest returns the kth latest end noted (k from 1), false when fewer
// were (g may be nil).
func (g *goneTimes) latest(k int) (time.Time, bool) {
	if g == nil || k < 1 || k > g.n {
		return time.Time{}, false
	}
	s := g.at
	x := s[:g.n]
	slices.SortFunc(x, func(a, b time.Time) int { return b.Compare(a) })
	return x[k-1], true
}

// noteGone notes that one of receiver h's long messages stopped counting
// (Grantable, RecentlyEnded) as of at.
func (t *Trace) noteGone(h netip.Addr, at time.Time) {
	g := t.longGone[h]
	if g == nil {
		g = &goneTimes{}
		t.longGone[h] = g
	}
	g.add(at)
}

// retireLong takes message m of a retired RPC out of receiver h's longIn
// set, noting when it stopped counting: its completion if the trace had
// filed it (Grantable forgets it slack after that), or now.
func (t *Trace) retireLong(h netip.Addr, m *Message) {
	if !m.inLong {
		return
	}
	t.dropLong(h, m)
	if m.Complete && m.doneFiled {
		t.noteGone(h, m.CompleteTime)
	} else {
		t.noteGone(h, t.Now)
	}
}

// endedLate returns how far past slack a GRANT receiver h sent at now
// came after the kth latest end of its long messages (goneTimes; the
// capture's start when fewer ended in it: those ended before it), and
// that end's time: a receiver counting k more messages being granted than
// the trace does (Grantable plus RecentlyEnded) had not yet processed
// those k ends, the GRANT being due without them only until slack after
// the kth latest. (0, zero time) for k <= 0.
func (t *Trace) endedLate(h netip.Addr, k int, now time.Time) (time.Duration, time.Time) {
	if k <= 0 {
		return 0, time.Time{}
	}
	at, ok := t.longGone[h].latest(k)
	if !ok {
		at = t.Start
	}
	return now.Sub(at) - t.P.Slack, at
}

// RecentlyEnded returns how many of host h's long messages (longIn) an
// RPC_UNKNOWN ended less than slack before now: h may have sent a GRANT
// ranking them before it processed the RPC_UNKNOWN, which the capture
// shows first (the simulator stamps a host's output after the inputs of
// the same instant; explore found HOMA-GRANT-015 charged so at
// unsched_bytes 1, helper-161).
func (t *Trace) RecentlyEnded(h netip.Addr, now time.Time) int {
	return len(t.pruneEnded(h, now))
}

// pruneEnded drops from longEnded[h] the ends older than slack before now
// and returns what is left.
func (t *Trace) pruneEnded(h netip.Addr, now time.Time) []time.Time {
	ts := t.longEnded[h]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > t.P.Slack {
		t.noteGone(h, ts[i])
		i++
	}
	switch {
	case i == len(ts) && ts != nil:
		delete(t.longEnded, h)
		return nil
	case i > 0:
		ts = append(ts[:0], ts[i:]...)
		t.longEnded[h] = ts
	}
	return ts
}

// heldWhole notes that host h, receiver of message m of RPC r, shows at
// event e that it holds m whole (see Message.whole): m leaves h's
// granting set and its outstanding sum.
//
// When r's history is in the capture (RPC.SeenFromStart), the bytes of m
// the capture never saw below bytes it saw reached h all the same: the
// sender sent them (first transmissions go in offset order,
// homa_xmit_data), and neither they nor a retransmission of them are in
// the capture, so it missed a packet itself; each such stretch counts one
// (Trace.MissedData). Bytes missing at the end are not counted: a sender
// that never sent them and an early ack or response look the same.
func (t *Trace) heldWhole(h netip.Addr, m *Message, r *RPC, e *Event) {
	if m.Complete || m.whole {
		return
	}
	if r.SeenFromStart && m.Length > 0 {
		all := m.everSeen()
		var at uint32
		gaps := 0
		for _, x := range all {
			if x.Start > at {
				gaps++
			}
			at = max(at, x.End)
		}
		if gaps > 0 && t.missed.n == 0 {
			t.missed.ev = Evidence{e.Frame, fmt.Sprintf("%v holds RPC %d's %d-byte %s whole, but the capture never saw %d bytes of it below bytes it saw, sent or retransmitted", h, r.Key.ClientID, m.Length, msgName(m == &r.Request), at-min(at, all.Total()))}
		}
		t.missed.n += uint64(gaps)
	}
	m.whole = true
	t.dropGranting(h, m)
	t.refreshOutstanding(m)
}

// trackIncoming keeps the granting index of message m (sent
// to host to) up to date. A request whose client said RPC_UNKNOWN is
// granted no more: the server ended the RPC on it (homa_rpc_unknown_pkt
// calls homa_rpc_end), so a GRANT it had decided before and sent after
// files nothing (it had filed the message in the outstanding sum for
// good, HOMA-GRANT-013 counting an ended RPC's grants).
func (t *Trace) trackIncoming(to netip.Addr, m *Message, r *RPC) {
	ended := m == &r.Request && r.Unknown && r.UnknownFromClient
	switch want := m.Grants > 0 && !m.Complete && !m.whole && !ended; {
	case want && !m.inGranting:
		addMsg(t.granting, to, m, r)
		m.inGranting = true
		if m.acc == nil {
			m.acc = t.outstandingOf(to)
		} else if s := t.outstandingOf(to); m.acc != s {
			s.mixed = true // its part goes to another sum: no bounds here
		}
	case !want:
		t.dropGranting(to, m)
	}
	t.refreshOutstanding(m)
}

// notePartial records what a packet whose header the snap length cut
// still shows: request DATA from the client (its common header names
// the RPC), which may have created the RPC anew at the server
// (RPC.ReqLast; HOMA-RESEND-019, -022 then take no absence of request
// DATA for granted).
func (t *Trace) notePartial(e *Event) {
	if e.Packet.Type() != wire.TypeData || !e.FromClient() {
		return
	}
	if t.partialReq == nil {
		t.partialReq = map[RPCKey]struct{}{}
	}
	t.partialReq[KeyOf(e)] = struct{}{}
	if r := t.rpcs[KeyOf(e)]; r != nil && e.Time.After(r.ReqLast) {
		r.ReqLast = e.Time
	}
}

// PortUnreachable returns the latest ICMP port unreachable host h sent
// about its port, if any.
func (t *Trace) PortUnreachable(h netip.Addr, port uint16) (Unreachable, bool) {
	u, ok := t.unreachable[HostPort{h, port}]
	return u, ok
}

// Apply updates the trace with e. Rules see the trace before Apply. Like
// HomaModule's homa_dispatch_pkts it finds the RPC, then hands the packet
// to one function per type (applyData, applyGrant ...).
func (t *Trace) Apply(e *Event) {
	cached := t.cur == e
	t.cur = nil
	t.Now = e.Time
	if e.ICMP != nil {
		t.applyICMP(e)
		return
	}
	if e.Err != nil {
		return
	}
	p := e.Packet
	typ := p.Type()
	switch typ {
	case wire.TypeCutoffs:
		t.applyCutoffs(e)
	case wire.TypeFreeze:
		return
	}
	var k RPCKey
	var r *RPC
	var owed [2]int // answers the RESENDs of a retired RPC still owe (≤ 0)
	if cached {
		k, r = t.curKey, t.curRPC
	} else {
		k = KeyOf(e)
		r = t.rpcOf(&k)
	}
	if r.reusedBy(e, t.P) {
		// A new request with the id of an RPC acknowledged long ago: the
		// client reused the id (HOMA-ID-004 judges that); track it as a
		// new RPC.
		t.retire(r)
		r = nil
	}
	if r != nil && r.Acked && typ == wire.TypeData && e.FromClient() && e.Time.After(r.AckTime) && !r.RecreatedTime.After(r.AckTime) {
		// The client's ack made the server free the RPC (homa_rpc_acked,
		// homa_rpc_end): a request packet the network held up behind the
		// ack (a low-priority queue under overload) creates it anew there
		// (homa_dispatch_pkts allocates a server RPC for any DATA; facts
		// AMO-01), whose grants, RESENDs and response start from nothing,
		// while the client's side is as it was.
		r.RecreatedTime = e.Time
		t.newIncarnation(r, true)
	} else if r != nil && r.Acked && typ == wire.TypeData && e.FromClient() && r.RecreatedTime.After(r.AckTime) && r.HeldLast.IsZero() &&
		e.Time.Sub(r.HeardFromClient) >= t.P.Ticks(t.P.TimeoutTicks-2)-t.P.Slack {
		// The server never showed the incarnation those late packets
		// re-created (no packet of it since), for as long as its timer
		// takes to abort an RPC: it may hold none (a server that
		// remembers acknowledged ids discards them, as if lost; the
		// timer aborts an incomplete one, RTX-10), so this packet may
		// create it anew, holding only what arrives from now on (an
		// overloaded switch's low-priority queue releases one packet
		// tens of ms after the last).
		r.RecreatedTime = e.Time
		t.newIncarnation(r, true)
	}
	if r != nil && typ == wire.TypeData && e.FromClient() && !r.Acked && r.ForgotTime.IsZero() {
		if st := t.serverTimedOut(r, e); st != nil {
			// The server's timer may have aborted the RPC, which sends no
			// packet (RTX-10: homa_timer_check_rpc calls homa_rpc_abort,
			// which ends a server RPC); this DATA then created it anew
			// (homa_dispatch_pkts allocates a server RPC for any DATA,
			// RTX-11), holding only the bytes that arrive from now on: a
			// request packet held up in a saturated host's queue for
			// longer than the timeout does this.
			if prev := r.ServerTimeout; !st.Sure && prev != nil {
				st.Recreated = prev
				if !prev.Sure {
					st.Recreated = prev.Recreated
				}
			}
			r.ServerTimeout = st
			t.unusual++
			if st.Sure {
				t.newIncarnation(r, true)
			}
		}
	}
	if r != nil && !r.ForgotTime.IsZero() && typ == wire.TypeData && e.FromClient() && e.Time.After(r.ForgotTime) {
		// The client's RPC_UNKNOWN made the server discard the RPC
		// (homa_rpc_unknown_pkt): a request packet that reaches it
		// afterwards (one the network delayed or duplicated) creates the
		// RPC anew there (homa_dispatch_pkts; facts AMO-01), whose grants,
		// RESENDs and response start from nothing. Track it as a new RPC.
		// RESENDs of the old one not yet answered may be answered after
		// this packet (a loaded host answers late): the new RPC owes them
		// (HOMA-RESEND-023).
		t.retire(r)
		owed = [2]int{r.Request.owed(), r.Response.owed()}
		r = nil
	}
	if r == nil {
		if typ == wire.TypeAck && e.FromClient() {
			// An ACK for RPCs the capture never saw creates no RPC: it
			// only acknowledges (ACK-004 then judges later acks of that id
			// as unknown, consistently).
			a := p.Ack()
			for i := range a.ValidAcks() {
				en := a.Entry(i)
				t.ack(RPCKey{Client: e.Src, Server: e.Dst, ClientID: en.ClientID}, en.ServerPort, e, true)
			}
			return // not counted towards eviction (as before the per-type split)
		}
		if typ == wire.TypeCutoffs || typ == wire.TypeAck {
			return
		}
		start := startsRequest(e)
		r = &RPC{Key: k, First: e.Time, FirstFrame: e.Frame, FirstFromClient: e.FromClient(), idleAt: -1, SeenFromStart: t.seenFromStart(e), FirstIsStart: start}
		if start && k.ClientID > t.newest[k.Client].ID && p.Data().MessageLength() <= t.P.DeferMinBytes {
			t.newest[k.Client] = newestRPC{ID: k.ClientID, Seen: Seen{e.Time, e.Frame}}
		}
		r.Request.Answers, r.Response.Answers = owed[0], owed[1]
		t.created++
		t.rpcs[k] = r
		t.rpcCache[rpcSlot(&k)] = r
	}
	r.Last = e.Time
	// DATA names the sockets that hold the RPC; a control packet to or
	// from another port (a NEED_ACK to a socket without the RPC, say)
	// does not move it there.
	if r.ClientPort == 0 || typ == wire.TypeData {
		if e.FromClient() {
			r.ClientPort, r.ServerPort = p.Common().Sport(), p.Common().Dport()
		} else {
			r.ClientPort, r.ServerPort = p.Common().Dport(), p.Common().Sport()
		}
	}
	if e.FromClient() {
		if clientRPCPacket(typ) && !r.idLatest {
			ck := clientIDKey{k.Client, k.ClientID}
			if o := t.byClientID[ck]; o != nil {
				o.idLatest = false
			}
			t.byClientID[ck] = r
			r.idLatest = true
		}
	}
	if segmentCounts(e) {
		r.Packets[typ-wire.MinType]++
	}
	// The packet's receiver gets the message its sender's side sends.
	if in := r.Msg(e.Packet.Role()); in.Length > 0 && t.grantable(in.Length, in.MinIncoming) && !in.Complete ||
		in.Length == 0 && typ == wire.TypeData && t.grantable(e.Packet.Data().MessageLength(), e.Packet.Data().Incoming()) {
		if segmentCounts(e) {
			tl := in.trig
			if tl == nil {
				if tl = t.triggers[e.Dst]; tl == nil {
					tl = &triggerLog{}
					t.triggers[e.Dst] = tl
				}
				in.trig = tl
			}
			tl.add()
		}
	}
	if e.FromClient() && (typ == wire.TypeGrant || typ == wire.TypeBusy) && !r.Acked && r.ForgotTime.IsZero() {
		if _, start, ok := t.serverSilence(r); ok {
			r.serverQuietMax = max(r.serverQuietMax, e.Time.Sub(start))
		}
	}
	if typ != wire.TypeCutoffs && typ != wire.TypeAck {
		if r.spoke(e.FromClient()) {
			t.answered++
		}
	}
	switch typ {
	case wire.TypeData:
		r.heard(e, typ)
		if e.FromClient() {
			r.ReqLast = e.Time
			r.serverQuietMax = 0
		} else {
			r.held(e.Time, t.P.Slack)
		}
		t.applyData(e, r)
	case wire.TypeGrant:
		r.heard(e, typ)
		if !e.FromClient() {
			r.held(e.Time, t.P.Slack) // only a server holding the RPC grants its request
		}
		t.applyGrant(e, r)
	case wire.TypeBusy:
		r.heard(e, typ)
		if !e.FromClient() {
			r.held(e.Time, t.P.Slack)
		}
		m := r.Msg(p.Role())
		if rst := m.resend; rst != nil && rst.BusyAllowed > 0 {
			rst.BusyAllowed--
		}
		m.busyCredit = max(0, m.busyCredit-1) // one without credit is reported once (HOMA-RESEND-028)
		m.busies = min(m.busies+1, math.MaxUint16)
		m.resendsOpen = max(m.resendsOpen, 1) - 1
		m.Answers++
	case wire.TypeResend:
		if !e.FromClient() {
			r.held(e.Time, t.P.Slack) // homa_request_retrans, homa_pool_check_waiting: a server RPC still receiving its request
		}
		t.applyResend(e, r)
	case wire.TypeRPCUnknown:
		um := r.Msg(p.Role())
		um.Answers++
		um.resendsOpen = max(um.resendsOpen, 1) - 1
		r.Unknown, r.UnknownTime, r.UnknownFromClient = true, e.Time, e.FromClient()
		if !e.FromClient() {
			r.LostLastData = r.Request.LastData
		}
		t.sawUnknown = true
		t.newIncarnation(r, !e.FromClient())
		if e.FromClient() {
			if r.ForgotTime.IsZero() {
				r.ForgotTime = e.Time
			}
			if ck := (clientIDKey{k.Client, k.ClientID}); t.clientUnknown[ck].Time.IsZero() {
				t.clientUnknown[ck] = Seen{e.Time, e.Frame}
			}
			// The client does not know the RPC: the server discards it
			// (homa_rpc_unknown_pkt), so its request no longer occupies a
			// grant slot at the server.
			t.dropGranting(k.Server, &r.Request)
			if r.Request.inLong {
				t.longEnded[k.Server] = append(t.pruneEnded(k.Server, e.Time), e.Time)
			}
			t.dropLong(k.Server, &r.Request)
		}
	case wire.TypeNeedAck:
		r.held(e.Time, t.P.Slack)
		if r.NeedAcks == 0 {
			r.NeedAckFirst = e.Time
		}
		r.NeedAcks++
		r.NeedAckTime = e.Time
		r.needAckPending = min(r.needAckPending+1, 255)
	case wire.TypeAck:
		// The header names the RPC by its id on the sockets of its ports:
		// a client answering a NEED_ACK that reached another of its
		// sockets (no such RPC there, homa_need_ack_pkt) acks nothing of
		// r, which lives on r.ClientPort.
		if ackNamesRPC(p, r) {
			t.ack(k, 0, e, false)
		}
		a := p.Ack()
		if int(a.NumAcks()) < t.P.MaxAcksPerPkt {
			r.AckPkts++ // an answer to a NEED_ACK (HOMA-ACK-007)
		}
		for i := range a.ValidAcks() {
			en := a.Entry(i)
			t.ack(RPCKey{Client: e.Src, Server: e.Dst, ClientID: en.ClientID}, en.ServerPort, e, true)
		}
	}
	t.file(r)
	t.tick()
}

// tick counts an applied packet and evicts every 4096 of them.
func (t *Trace) tick() {
	t.applied++
	if t.applied%4096 == 0 {
		t.evict()
	}
}

// Sides of an RPC heard from (RPC.spoken).
const (
	spokeClient uint8 = 1 << iota
	spokeServer
)

// spoke notes a packet naming r from its client (fromClient) or its
// server, and reports whether r has now, for the first time, been heard
// from both sides. Every packet type names its RPC by the common header's
// sender_id (homa_wire.h): DATA, GRANT, BUSY, and the control packets
// RESEND (a host still waiting for bytes of r), NEED_ACK (a server
// holding r's response) and RPC_UNKNOWN (a host answering a packet of r
// it has no RPC for) each show the capture holds that host's direction
// for r. Not counted: CUTOFFS (the receiving host's priority cutoffs,
// sent for any DATA with a stale cutoff_version) and ACK (a client's
// ACK may carry acks of other RPCs; an RPC acked without ever being
// heard from its server showed no exchange).
func (r *RPC) spoke(fromClient bool) bool {
	side := spokeServer
	if fromClient {
		side = spokeClient
	}
	r.spoken |= side
	if r.twoSided || r.spoken != spokeClient|spokeServer {
		return false
	}
	r.twoSided = true
	return true
}

// ackNamesRPC reports whether the ACK p's header names r: it travels
// between r's ports (or r's ports are not known yet). A client answering a
// NEED_ACK that reached another of its sockets (no such RPC there,
// homa_need_ack_pkt) acks nothing of r, which lives on r.ClientPort.
func ackNamesRPC(p wire.Packet, r *RPC) bool {
	c := p.Common()
	return r.ClientPort == 0 || c.Sport() == r.ClientPort && c.Dport() == r.ServerPort
}

// heard notes that e (a DATA, GRANT or BUSY) reset the other side's
// silent_ticks.
func (r *RPC) heard(e *Event, typ wire.PacketType) {
	r.clientRounds = 0 // a new silence (clientSilenceStart)
	if e.FromClient() {
		if !r.HeldLast.IsZero() && e.Time.After(r.HeldLast) {
			r.quietAfterHeld = max(r.quietAfterHeld, subTime(e.Time, maxTime(r.First, r.HeardFromClient)))
		}
		if !r.HeardFromClient.IsZero() {
			r.heardBeforeFromClient = r.HeardFromClient.UnixNano()
		}
		r.HeardFromClient, r.HeardTypeFromClient = e.Time, typ
	} else {
		since := r.HeardFromServer
		if since.IsZero() {
			since = r.First
		}
		if d := subTime(e.Time, since); d > r.QuietFromServer {
			r.QuietFromServer, r.quietEnd = d, int32(min(subTime(e.Time, r.First)/time.Microsecond, math.MaxInt32))
		}
		if !r.HeardFromServer.IsZero() {
			r.heardBeforeFromServer = r.HeardFromServer.UnixNano()
		}
		r.HeardFromServer, r.HeardTypeFromServer = e.Time, typ
	}
}

// heardBefore returns the time of the DATA, GRANT or BUSY the client
// (fromClient) or the server sent before its latest (zero: none).
func (r *RPC) heardBefore(fromClient bool) time.Time {
	n := r.heardBeforeFromServer
	if fromClient {
		n = r.heardBeforeFromClient
	}
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// held notes a server packet at time at that shows the server holds r
// (BUSY, GRANT, RESEND, response DATA, NEED_ACK); one after an ack says nothing
// new, unless late request DATA re-created the RPC since (that
// incarnation's own).
func (r *RPC) held(at time.Time, slack time.Duration) {
	if !r.Acked || r.RecreatedTime.After(r.AckTime) {
		r.HeldLast, r.quietAfterHeld = at, 0
	}
	if subTime(at, r.HeardFromClient) > slack {
		// Sent after the client's latest packet reached the server
		// (slack covers a tap away from it): the server held the RPC
		// after any silence that packet ended, so its timer had not
		// aborted it then (helper-146).
		r.serverQuietMax = 0
	}
}

// applyICMP records an ICMP port unreachable, and when the other
// unreachables came (hostUnreachable).
func (t *Trace) applyICMP(e *Event) {
	if !e.ICMP.PortUnreachable {
		t.hostUnreachable[hostPair{e.Dst, e.ICMP.QDst}] = e.Time
	}
	if e.ICMP.PortUnreachable {
		u := Unreachable{Time: e.Time, Frame: e.Frame, To: e.Dst}
		if e.ICMP.HasID {
			u.SenderID = e.ICMP.QSenderID
		}
		t.unreachable[HostPort{e.Src, e.ICMP.QDport}] = u
	}
}

// applyCutoffs records what the CUTOFFS' receiver now knows of its
// sender's cutoffs.
func (t *Trace) applyCutoffs(e *Event) {
	c := e.Packet.Cutoffs()
	st := CutoffsState{Cutoffs: c.UnschedCutoffs(), Version: c.CutoffVersion(), SenderID: e.Packet.Common().SenderID(), Time: e.Time, Frame: e.Frame}
	k := hostPair{e.Dst, e.Src}
	t.cutoffs[k] = &st
	t.versions[k] = append(t.versions[k], st)
	if t.unpaidStale(e.Src, e.Dst, st.Version) > 0 {
		t.cutoffsPaid[hostPair{e.Src, e.Dst}]++
	}
}

// applyData records a DATA segment of r.
func (t *Trace) applyData(e *Event, r *RPC) {
	p := e.Packet
	m := r.Msg(p.Role())
	d := p.Data()
	hp := hostPair{e.Src, e.Dst}
	pd := m.pair
	if pd == nil || pd.hp != hp {
		if pd = t.pairs[hp]; pd == nil {
			pd = &pairData{hp: hp, verCount: map[uint16]int{}, verPrio: map[[2]uint16]Seen{}}
			t.pairs[hp] = pd
		}
		m.pair = pd
	}
	pd.countVersion(d.CutoffVersion())
	pd.noteRPC(p.SenderID(), d.CutoffVersion(), Seen{e.Time, e.Frame})
	if e.Priority >= 64 || pd.hotPrios&(1<<e.Priority) == 0 {
		if k := [2]uint16{d.CutoffVersion(), uint16(e.Priority)}; pd.verPrio[k].Time.IsZero() {
			pd.verPrio[k] = Seen{e.Time, e.Frame}
		}
		if e.Priority < 64 && !e.Time.IsZero() {
			pd.hotPrios |= 1 << e.Priority
		}
	}
	if d.Incoming() > m.MaxIncoming {
		m.MaxIncoming = d.Incoming()
	}
	if m.Length == 0 {
		m.Length = d.MessageLength()
		m.FirstData = e.Time
	}
	if inc := d.Incoming(); inc > 0 && (m.MinIncoming == 0 || inc < m.MinIncoming) {
		m.MinIncoming = inc
	}
	m.LastData = e.Time
	m.Priorities |= 1 << (e.Priority & 7)
	end := e.End()
	if m.Length > 0 && end > m.Length {
		end = m.Length
	}
	if t.payloads && t.payDone != e && len(e.Payload) > 0 {
		t.comparePayload(e, m)
	}
	// Forget e: a later event may come at the same address (readers
	// reuse their event slices), and must not pass for logged.
	t.payDone = nil
	if m == &r.Response {
		// The server responds: it had the whole request and asks for
		// none of it again (RTX-01), so no retransmission of it is
		// coming in this incarnation and its payload log can go.
		t.freePayload(r.Request.payload)
		r.Request.payload = nil
		t.heldWhole(r.Key.Server, &r.Request, r, e)
	}
	before := m.Seen.Total()
	m.Seen.Add(e.Offset, end)
	fm := uint32(e.Length)
	if e.Segment > 0 {
		fm = uint32(e.Segment+1) * maxSegData(t.P.MTU, e.IPv6())
	}
	m.frameMax = max(m.frameMax, fm)
	if !m.WakeupTime.IsZero() && m.retx != nil {
		m.retx.sinceWakeup.Add(e.Offset, end)
	}
	if n := m.Seen.Total(); n != before {
		m.noteReceived(e.Time, n, t.P.Slack)
	}
	if d.Retransmit() != 0 {
		m.RetxBytes += uint64(e.Length)
		m.resendsOpen = 0
		if m.retx != nil {
			if m.retx.copies == nil {
				m.retx.copies = map[uint32]int{}
			}
			m.retx.copies[e.Offset]++
			m.retx.last, m.retx.lastStart, m.retx.lastEnd = Seen{e.Time, e.Frame}, e.Offset, end
			if end > m.SentEnd && (m.retx.ahead.Frame == 0 || m.retx.aheadFrom != m.SentEnd) {
				m.retx.ahead, m.retx.aheadFrom = Seen{e.Time, e.Frame}, m.SentEnd
			}
		}
		m.ResentAhead.Add(max(e.Offset, m.SentEnd), end)
	} else {
		m.noteGrantUse(t.P, e)
		m.FirstSent.Add(e.Offset, end)
		m.noteCut(t.P, e)
		if m.SegSize == 0 && uint32(e.Length) <= maxSegData(t.P.MTU, e.IPv6()) && !endsAtCut(t.P, e) && !endsAtHorizon(m, e.End()) {
			m.SegSize = uint32(e.Length)
		}
		if e.End() > m.SentEnd {
			m.SentEnd = e.End()
			if m.AllSentTime.IsZero() && m.Length > 0 && m.SentEnd >= m.Length {
				m.AllSentTime, m.AllSentFrame = e.Time, e.Frame
			}
		}
	}
	if !m.Complete && m.Length > 0 && m.Seen.Covers(0, m.Length) {
		m.Complete, m.CompleteTime, m.CompleteFrame = true, e.Time, e.Frame
	}
	t.trackIncoming(e.Dst, m, r)
	if m.inLong || !malformedData(t.P, e) {
		// A message known only by malformed DATA (bytes past its
		// length, a length of 0 or past max_message_length, which
		// homa_message_in_init refuses) may not exist at its receiver,
		// which drops such packets (HOMA-WIRE-002): it waits for no
		// grant until a well-formed packet of it comes.
		t.trackLong(e.Dst, m, r)
	}
	t.noteCrowded(pd, e.Time)
	// Any DATA, request or response, carries the sender host's
	// pending acks for RPCs it was the client of (homa_outgoing.c
	// homa_tx_data_pkt_alloc; homa_data_pkt processes them).
	if id := d.AckClientID(); id != 0 {
		t.ack(RPCKey{Client: e.Src, Server: e.Dst, ClientID: id}, d.AckServerPort(), e, d.Retransmit() == 0 && e.Segment == 0)
	}
}

// applyGrant records a GRANT for the message r's other side sends.
func (t *Trace) applyGrant(e *Event, r *RPC) {
	p := e.Packet
	m := r.Msg(oppositeRole(p.Role()))
	g := p.Grant()
	fifo := mayBeFIFOGrant(t.P, g, m) // before this GRANT raises what m was authorised
	m.Grants++
	m.GrantPriorities |= 1 << (g.Priority() & 15)
	if len(m.RecentGrants) == 8 {
		copy(m.RecentGrants, m.RecentGrants[1:])
		m.RecentGrants = m.RecentGrants[:7]
	}
	if m.RecentGrants == nil && m.GrantLog == nil {
		// One array for both at the first GRANT, each part capped so
		// that an append past it moves only that slice.
		buf := make([]GrantSeen, 12)
		m.RecentGrants, m.GrantLog = buf[:0:8], buf[8:8:12]
	}
	gs := GrantSeen{Time: e.Time, Frame: e.Frame, Priority: g.Priority(), FIFO: fifo, Offset: g.Offset(), HBefore: m.Horizon(t.P), Received: m.Received()}
	m.RecentGrants = append(m.RecentGrants, gs)
	m.GrantLog = append(m.GrantLog, gs)
	if m == &r.Request && m.Received() >= m.heldGranted(t.P) {
		r.serverCountFrom = e.Time.UnixNano()
	}
	before := max(t.P.Unsched(m.Length), m.Granted)
	raises := g.Offset() > before
	if raises {
		m.GrantTime, m.GrantFrame, m.GrantedBefore = e.Time, e.Frame, before
	}
	m.Granted = max(m.Granted, g.Offset())
	if g.ResendAll() != 0 && m.Length > 0 {
		// homa_grant_pkt → homa_resend_data(0, next_xmit_offset): each
		// segment sent so far once more (HOMA-RESEND-021). What the
		// sender had sent when it got the GRANT may exceed what the
		// capture saw, so the whole message counts as asked.
		m.Asked.Add(0, m.Length)
		if m.retx == nil {
			m.retx = &retxLog{}
		}
		m.retx.asked = append(m.retx.asked, byteranges.Range{Start: 0, End: m.Length})
	}
	t.trackIncoming(e.Src, m, r)
	if !fifo {
		if i, ok := t.grantTrigger(e.Src, m); ok {
			m.TriggerUsed = i
		}
		t.lastSRPT[e.Src] = Seen{e.Time, e.Frame}
		k := hostPair{e.Src, e.Dst}
		if ss := t.sameSender[k]; ss[0].m != m {
			t.sameSender[k] = [2]senderMsg{{m, r}, ss[0]}
		}
	} else {
		lf := t.lastFIFO[e.Src]
		t.lastFIFO[e.Src] = [2]fifoSeen{{r.Key, p.Role(), e.Time}, lf[0]}
		if raises && !fifoLevelShared(t.P) {
			ft := t.fifoPace[e.Src]
			if ft == nil {
				ft = &fifoTimes{}
				t.fifoPace[e.Src] = ft
			}
			ft.add(e.Time, e.Frame)
		}
	}
}

// fifoTimes is a ring of the times (Unix ns) of a receiver's latest
// FIFO GRANTs, up to len(at).
type fifoTimes struct {
	at    [64]int64
	frame [64]int
	n     int // how many are held (at most len(at))
	next  int // where the next goes
}

// add notes a FIFO GRANT at t, frame fr.
func (f *fifoTimes) add(t time.Time, fr int) {
	f.at[f.next], f.frame[f.next] = t.UnixNano(), fr
	f.next = (f.next + 1) % len(f.at)
	f.n = min(f.n+1, len(f.at))
}

// back returns the time and frame of the k-th latest FIFO GRANT held (k
// from 1 to n).
func (f *fifoTimes) back(k int) (time.Time, int) {
	i := (f.next - k + 2*len(f.at)) % len(f.at)
	return time.Unix(0, f.at[i]), f.frame[i]
}

// fifoSeen is a GRANT that may be a FIFO grant: its RPC, the role of the
// GRANT's sender (the receiver of the message granted) and its time. The
// key and role name the message across the trace's incarnations of the RPC.
type fifoSeen struct {
	key  RPCKey
	role wire.Role
	at   time.Time
}

// owed returns minus the RESENDs for m its sender has not answered (with
// BUSY, RPC_UNKNOWN or a retransmission) as far as the capture shows.
func (m *Message) owed() int { return -min(max(0, m.Resends-m.Answers), int(m.resendsOpen)) }

// busyLetting reports whether RESEND rs, seen when message m's sender had
// transmitted m.SentEnd bytes of it for the first time and before rs's
// range joined m.Asked, may be answered with BUSY under p
// (HOMA-RESEND-028). homa_resend_pkt BUSYs for a server whose RPC is not
// yet RPC_OUTGOING (no response DATA seen: SentEnd 0 lets every RESEND
// below); since HomaModule be5081e (2025-06) when the offset is at or
// beyond tx_end, the bytes the sender had handed on (at least SentEnd),
// and since 2490a1a (2026-06) tx_end is the offset of a retransmission
// homa_qdisc holds (homa_qdisc_defer_homa sets qrpc.tx_left from it), so
// at or beyond any offset an earlier RESEND asked for (helper-147);
// linux_6.1.38, linux_6.10.6 and main before be5081e when next_xmit_offset
// is below granted (taken as possible while the capture shows the message
// not sent whole) or the RESEND asks for no bytes. The 2025 format spans
// both.
func busyLetting(p *Params, m *Message, rs wire.Resend) bool {
	v := p.Wire
	if v != wire.Version2024 && rs.Offset() >= m.SentEnd {
		return true
	}
	if v == wire.VersionCurrent && m.Length >= p.DeferMinBytes && m.Asked.Overlaps(0, rs.Offset()+1) {
		return true
	}
	if v == wire.Version2024 || v == wire.Version2025 {
		return rs.Length() == 0 || m.Length == 0 || m.SentEnd < m.Length
	}
	return false
}

// applyResend records a RESEND for the message r's other side sends.
func (t *Trace) applyResend(e *Event, r *RPC) {
	p := e.Packet
	m := r.Msg(oppositeRole(p.Role()))
	rs := p.Resend()
	m.Resends++
	m.resendsOpen = min(m.resendsOpen+1, math.MaxUint16)
	m.LastResendPriority = rs.Priority()
	rst := m.resW()
	if e.Time.Sub(rst.LastResend.Time) >= t.P.Tick {
		rst.BusyAllowed = 0 // a new round: the earlier ones were answered or lost
	}
	asked := m.Asked.Covers(rs.Offset(), rs.Offset()+1)
	lets := busyLetting(t.P, m, rs) // before rs's range joins m.Asked
	rst.LastResend = ResendSeen{Seen: Seen{e.Time, e.Frame}, Offset: rs.Offset(), Length: rs.Length(), SentEnd: m.SentEnd,
		Repeat: asked && e.Time.Sub(rst.LastResend.Time) < t.P.Tick, First: !asked}
	if end := resendEnd(rs, m.SentEnd); end > rs.Offset() {
		m.Asked.Add(rs.Offset(), end)
		if m.retx == nil {
			m.retx = &retxLog{}
		}
		m.retx.asked = append(m.retx.asked, byteranges.Range{Start: rs.Offset(), End: end})
	}
	if rst.LastResend.Repeat || rs.Offset() >= m.SentEnd {
		rst.BusyAllowed++
	}
	if rst.LastResend.Repeat || lets {
		m.busyCredit++
		m.busyLets = min(m.busyLets+1, math.MaxUint16)
	}
	if rs.IsResendAll() {
		m.ResendAll = true
	} else if end := uint64(rs.Offset()) + uint64(rs.Length()); end > uint64(m.ResendEnd) {
		m.ResendEnd = uint32(min(end, 1<<32-1))
	}
	if r.resends == nil {
		r.resends = new([2]time.Time)
	}
	if e.FromClient() {
		if r.clientRounds == 0 || e.Time.Sub(r.resends[0]) >= t.P.Tick {
			r.clientRounds = min(r.clientRounds+1, math.MaxUint16)
		}
		r.resends[0] = e.Time
	} else {
		r.resends[1] = e.Time
	}
	switch {
	case isBufferWakeup(t.P, rs):
		m.WakeupTime = e.Time
		if m.retx == nil {
			m.retx = &retxLog{}
		}
		m.retx.sinceWakeup = byteranges.Set{}
	case answersNeedAck(t.P, r, e):
		switch {
		case continuesAnswer(t.P, r, e):
		case r.needAckPending > 0:
			r.needAckPending--
			if r.needAckAnswer >= r.NeedAckTime.UnixNano() {
				// The latest NEED_ACK has its answer: this call answers an
				// older one, or is the timer's round come within half a
				// tick of that answer (a loaded client's NEED_ACK answers
				// lag, and the timer's phase is its own).
				r.maybeRound = e.Time.UnixNano()
			}
		default:
			r.maybeRound = e.Time.UnixNano()
		}
		if r.needAckAnswer < r.NeedAckTime.UnixNano() {
			r.needAckAnswer = e.Time.UnixNano()
		}
		r.needAckAnswerOff = rs.Offset()
	case m.inRound(t.P, e, rs):
		rst.RoundOffset = rs.Offset()
	case lateNeedAckAnswer(t.P, r, m, e):
		// Not a round: the next timer round counts from the last one.
		r.needAckAnswer = e.Time.UnixNano()
		r.needAckAnswerOff = rs.Offset()
	default:
		rst.RoundStart, rst.RoundFrame, rst.RoundOffset, rst.RoundAll = e.Time, e.Frame, rs.Offset(), rs.IsResendAll()
		if m.retx != nil { // set when the RESEND asked for bytes (above)
			m.retx.roundHeld = m.roundGranted(t.P, e.Time)
		}
		rst.RoundHeard, rst.RoundHeardType = r.HeardFromServer, r.HeardTypeFromServer
		if !e.FromClient() {
			rst.RoundHeard, rst.RoundHeardType = r.HeardFromClient, r.HeardTypeFromClient
		}
	}
}

// ack records that e acknowledges RPC k: an ACK header (serverPort 0: the
// packet's ports name the RPC), an ACK entry or a piggy-backed ack naming
// serverPort. entry marks an ack handed out of the client's pending list
// (an ACK entry, or a piggy-backed ack on a first transmission), which
// RPC.ackEntry records.
func (t *Trace) ack(k RPCKey, serverPort uint16, e *Event, entry bool) {
	h := t.acked[k.Client]
	if h == nil {
		h = &ackHistory{}
		t.acked[k.Client] = h
	}
	h.note(k.ClientID, e, entry)
	r := t.rpcs[k]
	if r != nil && entry && r.ackEntry == nil && (serverPort == 0 || r.ServerPort == 0 || serverPort == r.ServerPort) {
		r.ackEntry = &ackEntry{Seen: Seen{e.Time, e.Frame}}
		if e.Type() == wire.TypeData {
			r.ackEntry.carrier = fromSender(e)
		}
	}
	if r == nil || r.Acked || serverPort != 0 && r.ServerPort != 0 && serverPort != r.ServerPort {
		// An ack naming another server port reaches no socket holding
		// the RPC (homa_rpc_acked finds the socket by server_port): the
		// server keeps it (HOMA-ACK-004 judges the client).
		return
	}
	r.Acked, r.AckTime, r.AckFrame = true, e.Time, e.Frame
	// The client had the whole response and the server frees the RPC;
	// unless the client may have given the RPC up at timeout, whose ack
	// (HomaModule before main's 8400d1f) says nothing of its response.
	t.heldWhole(k.Server, &r.Request, r, e)
	if r.Response.Complete || !clientGaveUp(t.P, r, e.Time) {
		t.heldWhole(k.Client, &r.Response, r, e)
	}
	// The client's RPC ended, but its sending did not begin again: request
	// bytes it sends again with retransmit=0 repeat the first ones
	// (HOMA-RESEND-010), unless an offset-0 DATA response_timeout later
	// begins a new RPC with the id (Apply retires this one; HOMA-ID-004).
	sent, phase, odd := r.Request.FirstSent, r.Request.cutPhase, r.Request.cutOdd
	t.newIncarnation(r, false)
	r.Request.FirstSent, r.Request.cutPhase, r.Request.cutOdd = sent, phase, odd
	t.file(r) // acked: due earlier
}

// reusedBy reports whether client DATA e begins a new RPC with r's id: a
// first transmission at offset 0 more than response_timeout after r was
// acknowledged (a late packet of r itself would not start at its first
// byte that long after; HOMA-ID-004 judges the reuse). Apply then tracks
// e's RPC afresh. A nil r is reused by nothing.
func (r *RPC) reusedBy(e *Event, p *Params) bool {
	return r != nil && r.Acked && e.Type() == wire.TypeData && e.FromClient() && !e.Retransmit() && e.Offset == 0 &&
		e.Time.Sub(r.AckTime) > p.ResponseTimeout
}

// newIncarnation forgets which bytes were sent: the server's RPC is gone
// (acknowledged and freed, or one side answered RPC_UNKNOWN), so DATA with
// the same id afterwards comes from new state (a server re-created by a
// late request packet, facts AMO-01; a server that restarted and serves
// the client's restarted request, RTX-09).
//
// serverLost is set when the server lost its state for r (its
// RPC_UNKNOWN: homa_resend_pkt sends one only when it finds no RPC; a
// timeout; a late request packet re-creating it): its side starts afresh
// now, not at the next request packet as after a
// client's RPC_UNKNOWN (Apply replaces the whole RPC then, the client
// having forgotten it too). The request's receive side (bytes received,
// GRANTs, RESENDs) and the response's send side belong to the server's
// next incarnation, which the client's restarted request creates. At a
// capture away from the server a request packet seen up to slack before
// the RPC_UNKNOWN may reach the new incarnation: it is not counted there,
// so rules that need the server to lack bytes (HOMA-RESEND-012, GRANT-004)
// judge less, never more. The client's RPC lives on then, so the request
// bytes it sent with retransmit=0 stay sent: its restart resends them
// with retransmit=1 (homa_rpc_unknown_pkt calls homa_resend_data), and
// HOMA-RESEND-010 judges a restart that marks them fresh.
func (t *Trace) newIncarnation(r *RPC, serverLost bool) {
	t.unusual++
	if !serverLost {
		r.Request.FirstSent, r.Request.cutPhase, r.Request.cutOdd = nil, 0, false
	}
	r.Request.ResentAhead, r.Request.Asked = nil, nil
	r.Response.FirstSent, r.Response.ResentAhead, r.Response.Asked, r.Response.payload = nil, nil, nil, nil
	r.Response.cutPhase, r.Response.cutOdd = 0, false
	if !serverLost {
		// After the server's RPC_UNKNOWN the client restarts the same
		// request, its skbs unchanged (homa_rpc_unknown_pkt): its bytes
		// are still compared (HOMA-WIRE-014). Only the response may
		// differ: the server runs the request anew.
		r.Request.payload = nil
	}
	r.Request.retx, r.Response.retx = nil, nil
	r.HeldLast, r.quietAfterHeld, r.serverQuietMax = time.Time{}, 0, 0
	if serverLost {
		m := &r.Request
		t.dropGranting(r.Key.Server, m)
		if m.doneFiled {
			// Its completion time, the heap's key, goes: take it out of
			// the heap (rare: one scan of a bounded heap per RPC_UNKNOWN).
			// It stays among the server's long messages (Grantable: a
			// restart brings it back).
			t.longDone[r.Key.Server].Keep(func(x *Message) bool { return x != m })
			m.doneFiled = false
		}
		m.restartReceiver(t.P)
		t.refreshOutstanding(m)
		r.Response.SentEnd, r.Response.AllSentTime, r.Response.AllSentFrame = 0, time.Time{}, 0
	}
}

// serverTimedOut returns what the trace infers when request DATA e of r
// reaches its server (nil: no timeout possible). The server may have
// aborted the RPC by timeout before e, its request incomplete, if it held
// some of the request but fewer bytes than it had authorised (max(U, its
// GRANTs, the incoming of the DATA it got); with all of them its timer
// holds silent_ticks at 0), and went quiet long enough since the client's
// latest DATA, GRANT or BUSY (homa_dispatch_pkts resets silent_ticks only
// for those) and its latest GRANT sent while it held every byte it had
// granted (heldGranted), or its latest buffer wakeup (until which its
// timer may have held the count at 0; a GRANT sent while bytes were still
// due leaves the count running, so any earlier silence of timeout_ticks
// counts): at least timeout_ticks-2 ticks less slack (RTX-10's tolerance,
// as HOMA-RESEND-019 allows). Sure is set past timeout_ticks ticks plus
// slack, the bound HOMA-RESEND-009 holds the timer to. When only the
// server's own GRANT keeps the silence short of the tolerance, the result
// says how much earlier that GRANT must have left the server
// (ServerTimeout.Held).
func (t *Trace) serverTimedOut(r *RPC, e *Event) *ServerTimeout {
	tolerance := t.P.Ticks(t.P.TimeoutTicks-2) - t.P.Slack
	if r.serverQuietMax < tolerance && e.Time.Sub(r.HeardFromClient) < tolerance {
		// No silence reaches the tolerance: the silence counts from
		// serverSilence's heard (at or after HeardFromClient) or later.
		// Decided before the request's bytes are counted (most request
		// DATA comes here).
		return nil
	}
	heard, start, ok := t.serverSilence(r)
	if !ok {
		return nil
	}
	// A longer silence ended by the client's GRANT or BUSY since its last
	// request DATA counts too: the abort may have come then.
	quiet := max(e.Time.Sub(start), r.serverQuietMax)
	m := &r.Request
	if quiet >= tolerance {
		return &ServerTimeout{Seen: Seen{e.Time, e.Frame}, Sure: quiet > t.P.Ticks(t.P.TimeoutTicks)+t.P.Slack, Quiet: quiet}
	}
	if start == heard || e.Time.Sub(heard) < tolerance {
		return nil
	}
	st := &ServerTimeout{Seen: Seen{e.Time, e.Frame}, Quiet: quiet, Held: tolerance - quiet, Since: heard, GrantFrame: m.GrantFrame}
	for _, log := range [][]GrantSeen{m.GrantLog, m.RecentGrants} {
		for _, g := range log {
			if g.Time.UnixNano() == r.serverCountFrom {
				st.GrantFrame = g.Frame
			}
		}
	}
	return st
}

// serverSilence returns when the server's timer last had its silence
// count for r's request reset, as far as the capture shows: heard, the
// client's latest DATA, GRANT or BUSY (or the RPC's first packet, or the
// server's buffer wakeup), and start, that or the server's latest GRANT
// sent while it held every byte it had granted (serverCountFrom), if
// later. ok is false when the timer counts no silence: the request
// complete, or not begun, or every byte authorised held.
func (t *Trace) serverSilence(r *RPC) (heard, start time.Time, ok bool) {
	m := &r.Request
	got := m.Received()
	if m.Complete || got == 0 || got >= m.authorised(t.P) {
		return heard, start, false
	}
	heard = maxTime(maxTime(r.First, r.HeardFromClient), m.WakeupTime)
	start = heard
	if r.serverCountFrom != 0 {
		start = maxTime(start, time.Unix(0, r.serverCountFrom))
	}
	return heard, start, true
}

// authorised returns how many bytes of m its receiver authorised as far
// as the capture shows: max(U, its GRANT offsets, the incoming of the DATA
// it got) within the length (upstream, without GRANTs: the length).
func (m *Message) authorised(p *Params) uint32 {
	if p.Wire == wire.VersionUpstream {
		return m.Length
	}
	return min(m.Length, max(p.Unsched(m.Length), m.Granted, m.MaxIncoming))
}

// heldGranted returns the least the receiver's granted offset for m may
// be as far as the capture shows: its GRANT offsets and the incoming its
// RPC started from (homa_grant_init_rpc; the smallest incoming of the
// message's DATA, or U without one), within the length. A later DATA's
// larger incoming does not raise it (homa_data_pkt leaves granted alone),
// so its timer holds silent_ticks at 0 (homa_timer_check_rpc) once it has
// received this many bytes.
func (m *Message) heldGranted(p *Params) uint32 {
	return min(m.Length, max(m.Granted, m.startGranted(p)))
}

// startGranted is the granted offset the receiver's RPC started from
// (homa_grant_init_rpc): the smallest incoming of the message's DATA, or
// U without one.
func (m *Message) startGranted(p *Params) uint32 {
	if m.MinIncoming != 0 {
		return m.MinIncoming
	}
	return p.Unsched(m.Length)
}

// roundGranted is heldGranted for a RESEND round its receiver began at t,
// without the GRANTs seen less than jitter before t: homa_grant_send
// builds a GRANT outside the RPC's lock, from a granted offset raised just
// before, while the timer's homa_request_retrans reads it under the lock,
// so a GRANT decided after the round may pass the capture point first
// (helper-131). Where all the GRANTs kept (RecentGrants) are that recent,
// only the incoming the RPC started from counts: less, never more, than
// the receiver held.
func (m *Message) roundGranted(p *Params, t time.Time) uint32 {
	return m.grantedBefore(p, t, p.Jitter)
}

// grantedBefore is heldGranted without the GRANTs seen less than within
// before t (they may have been built after a decision the receiver made
// before t); where all the GRANTs kept (RecentGrants) are that recent,
// only the incoming the RPC started from counts.
func (m *Message) grantedBefore(p *Params, t time.Time, within time.Duration) uint32 {
	n := len(m.RecentGrants)
	if n == 0 || t.Sub(m.RecentGrants[n-1].Time) > within {
		return m.heldGranted(p)
	}
	g := m.startGranted(p)
	for _, x := range m.RecentGrants {
		if t.Sub(x.Time) > within {
			g = max(g, x.Offset)
		}
	}
	return min(m.Length, g)
}

// restartReceiver starts the receiver's view of m afresh (the receiver
// discarded its RPC), keeping what the sender keeps: the length, what it
// transmitted (SentEnd, FirstSent: its restart marks those bytes
// retransmitted), its grant horizon (KeptHorizon), the bytes the capture saw
// (Earlier), its payload log (the bytes are the same), and the counts and
// times that describe the whole capture. m must be in no granting set nor
// completion heap.
func (m *Message) restartReceiver(p *Params) {
	earlier := m.Earlier
	for _, x := range m.Seen {
		earlier.Add(x.Start, x.End)
	}
	*m = Message{
		Earlier: earlier,
		Length:  m.Length, SegSize: m.SegSize, SentEnd: m.SentEnd, FirstSent: m.FirstSent, cutPhase: m.cutPhase, cutOdd: m.cutOdd, AllSentTime: m.AllSentTime, AllSentFrame: m.AllSentFrame,
		KeptHorizon: m.Horizon(p), TriggerUsed: m.TriggerUsed,
		Resends: m.Resends, RetxBytes: m.RetxBytes, Answers: m.Answers, FirstData: m.FirstData, LastData: m.LastData, Priorities: m.Priorities,
		busyCredit: m.busyCredit, busyLets: m.busyLets, busies: m.busies, resendsOpen: m.resendsOpen, // BUSYs may answer the old incarnation's RESENDs (HOMA-RESEND-028)
		LastResendPriority: m.LastResendPriority, // the sender answers RESENDs of the old incarnation (helper-145)
		GrantPriorities:    m.GrantPriorities,
		inLong:             m.inLong,
		acc:                m.acc, outVal: m.outVal, outInG: m.outInG, outHeld: m.outHeld, trig: m.trig,
		payload: m.payload, // the sender's bytes are the same (HOMA-WIRE-014)
	}
}

// isBufferWakeup reports whether RESEND rs is the one a receiver sends when
// receive buffer space appears for a message it had to drop: {0, -1} at
// Params.HighPriority (homa_pool.c homa_pool_check_waiting; facts GRANT-10,
// RTX-04). It does not come from the timer. With one priority level every
// RESEND asks for level 0, so none is taken for a wakeup.
func isBufferWakeup(p *Params, rs wire.Resend) bool {
	return p.NumPriorities >= 2 && rs.IsResendAll() && rs.Offset() == 0 && int(rs.Priority()) == p.HighPriority()
}

// answersNeedAck reports whether RESEND e is a client's answer to a
// NEED_ACK that came at most slack earlier: on main (and upstream) a client
// that lacks part of the response calls homa_request_retrans at once
// (homa_incoming.c homa_need_ack_pkt), outside the timer's rounds;
// linux_6.1.38 ignores such a NEED_ACK. The answer is one call's RESENDs
// (one per gap, back to back), and a copy of the NEED_ACK the network made
// after the capture point gets another: a RESEND half a tick or more after
// the first answer to the same NEED_ACK is the timer's. One sooner that
// starts another call with no NEED_ACK pending may be either
// (RPC.maybeRound).
func answersNeedAck(p *Params, r *RPC, e *Event) bool {
	if r == nil || !e.FromClient() || p.Wire == wire.Version2024 || r.NeedAckTime.IsZero() {
		return false
	}
	if r.needAckAnswer >= r.NeedAckTime.UnixNano() && e.Time.UnixNano()-r.needAckAnswer >= int64(p.Tick/2) {
		return false
	}
	d := e.Time.Sub(r.NeedAckTime)
	return d >= 0 && d <= p.Slack
}

// lateNeedAckAnswer reports whether client RESEND e, asking for bytes of
// message m, may answer the latest NEED_ACK late rather than begin a timer
// round: on main (homa_need_ack_pkt), that NEED_ACK came after m's latest
// round and has no answer yet (answersNeedAck: not within slack), and e
// comes too soon after that round for the next (resend_interval ticks
// less one and jitter, as HOMA-RESEND-008 judges). A stall that held the
// client back between the two explains it (HOMA-RESEND-008 says how
// long); taken for a round, it made the client's next round look early.
func lateNeedAckAnswer(p *Params, r *RPC, m *Message, e *Event) bool {
	if r == nil {
		return false
	}
	na, rs := r.NeedAckTime, m.res()
	if !e.FromClient() || p.Wire == wire.Version2024 || rs.RoundStart.IsZero() || !na.After(rs.RoundStart) || na.After(e.Time) || r.needAckAnswer >= na.UnixNano() {
		return false
	}
	return e.Time.Sub(rs.RoundStart) < p.Ticks(p.ResendInterval-1)-p.Jitter
}

// continuesAnswer reports whether RESEND e continues the client's latest
// answer to a NEED_ACK: it asks for a higher offset than the answer's
// previous RESEND, within half a tick of its first.
func continuesAnswer(p *Params, r *RPC, e *Event) bool {
	return r.needAckAnswer != 0 && r.needAckAnswer >= r.NeedAckTime.UnixNano() && e.Time.UnixNano()-r.needAckAnswer < int64(p.Tick/2) &&
		e.Packet.Resend().Offset() > r.needAckAnswerOff
}

// inRound reports whether RESEND e continues the message's latest timer
// RESEND round: it comes within Params.RoundWindow of the round's first
// RESEND, asks for a higher offset than the round's previous one
// (homa_request_retrans lists the gaps in ascending order, then the tail),
// and neither it nor the round is a RESEND {0, -1} (sent alone).
func (m *Message) inRound(p *Params, e *Event, rs wire.Resend) bool {
	if m.res().RoundStart.IsZero() || m.res().RoundAll || rs.IsResendAll() {
		return false
	}
	d := e.Time.Sub(m.res().RoundStart)
	return d >= 0 && d < p.RoundWindow() && rs.Offset() > m.res().RoundOffset
}

// segmentCounts reports whether e is the first segment of its frame (so
// packet counts count frames, not segments).
func segmentCounts(e *Event) bool { return e.Segment == 0 }

func oppositeRole(r wire.Role) wire.Role {
	if r == wire.RoleClient {
		return wire.RoleServer
	}
	return wire.RoleClient
}

// EvictAfter is how long a finished RPC (acked, answered RPC_UNKNOWN, or
// with its response complete) stays in the trace after its last packet;
// any RPC idle for IdleEvictAfter is forgotten too. Later packets of a
// forgotten RPC are judged as packets of an RPC that started before the
// capture (inconclusive where history matters).
const (
	EvictAfter     = 10 * time.Second
	IdleEvictAfter = 60 * time.Second
)

// file keeps r filed in idle at or before its eviction deadline: an RPC
// whose deadline came closer (it finished, or its last packet's time
// stepped back) is filed again; one whose deadline moved on stays where
// it is and is refiled when that comes up (evict).
func (t *Trace) file(r *RPC) {
	switch d := r.evictAt(); {
	case r.gone:
	case r.idleAt < 0:
		r.filed = d
		t.idle.Push(r)
	case d.Before(r.filed):
		r.filed = d
		t.idle.Fix(r.idleAt)
	}
}

// evict forgets finished RPCs idle for EvictAfter (and any RPC idle for
// IdleEvictAfter), keeping them in done when KeepFinished was called. It
// visits only the RPCs filed under a deadline already passed: O(log n)
// per RPC and deadline, not a scan of every RPC.
func (t *Trace) evict() {
	for t.idle.Len() > 0 && t.idle.Min().filed.Before(t.Now) {
		r := t.idle.Pop()
		if d := r.evictAt(); !d.Before(t.Now) {
			r.filed = d
			t.idle.Push(r)
			continue
		}
		delete(t.rpcs, r.Key)
		if c := &t.rpcCache[rpcSlot(&r.Key)]; *c == r {
			*c = nil
		}
		t.retire(r)
		if t.onEvict != nil {
			t.onEvict(r)
		}
	}
}

// newestRPC is a client's RPC with the highest id the capture saw it
// begin: its id and its request's first packet (Trace.newest).
type newestRPC struct {
	ID uint64
	Seen
}

// beganAfterNewest reports whether client host client's id id began in
// the capture by its value alone: it is above the newest RPC the capture
// saw the client begin (Trace.newest), which began more than AnswerBound
// after the capture's start. Client ids only grow (homa_rpc_alloc_client)
// and that RPC's short request left as its id was allocated, so id was
// allocated later, while the capture ran, and every byte of its request
// would pass the capture point on its way to the server. id must also be
// above every id of the client's RPCs the trace forgot (forgotMax): one
// of those, seen and forgotten, may still be named, by an ack handed out
// long after its RPC ended (HomaModule keeps pending acks last in, first
// out: homa_peer_add_ack, homa_peer_get_acks). nw is that newest RPC
// (the evidence).
func (t *Trace) beganAfterNewest(client netip.Addr, id uint64) (nw newestRPC, ok bool) {
	nw = t.newest[client]
	return nw, id > nw.ID && nw.ID != 0 && nw.Time.Sub(t.Start) > t.P.AnswerBound() && id > t.forgotMax[client]
}

// clientIDKey names a client id of a host: HomaModule allocates ids from
// one counter per host (homa_rpc_alloc_client) and finds a client's RPCs by
// id alone (homa_rpc_find_client).
type clientIDKey struct {
	Client   netip.Addr
	ClientID uint64
}

// clientRPCPacket reports whether a client sends packets of type typ only
// from an RPC it holds (DATA, GRANT, RESEND, BUSY go out through the RPC,
// to its server), unlike ACK and RPC_UNKNOWN, which answer a server's
// packet whether or not the client still has the RPC.
func clientRPCPacket(typ wire.PacketType) bool {
	return typ == wire.TypeData || typ == wire.TypeGrant || typ == wire.TypeResend || typ == wire.TypeBusy
}

// SameIDElsewhere returns the RPC of another server to which e's client
// last sent DATA, GRANT, RESEND or BUSY under e's client id, or nil. e must
// be a packet from a client.
func (t *Trace) SameIDElsewhere(e *Event) *RPC {
	if e == t.cur && t.curRPC != nil && t.curRPC.idLatest {
		return nil // e's own RPC is the latest under its id
	}
	k := KeyOf(e)
	if o := t.byClientID[clientIDKey{k.Client, k.ClientID}]; o != nil && o.Key != k && !o.gone {
		return o
	}
	return nil
}

// ClientUnknown returns when (and in which frame) e's client first said
// RPC_UNKNOWN for e's client id (zero: never).
func (t *Trace) ClientUnknown(e *Event) Seen {
	k := KeyOf(e)
	return t.clientUnknown[clientIDKey{k.Client, k.ClientID}]
}

// retire forgets RPC r's state (evicted, or replaced under its key by a
// new RPC): out of the grant and long-message sets and the eviction heap,
// marked gone, kept in done when KeepFinished was called.
func (t *Trace) retire(r *RPC) {
	t.unusual++
	k := r.Key
	t.dropGranting(k.Server, &r.Request)
	t.dropGranting(k.Client, &r.Response)
	t.retireLong(k.Server, &r.Request)
	t.retireLong(k.Client, &r.Response)
	if r.idleAt >= 0 {
		t.idle.Remove(r.idleAt)
	}
	if r.idLatest {
		delete(t.byClientID, clientIDKey{k.Client, k.ClientID})
		r.idLatest = false
	}
	r.gone = true
	t.forgotMax[k.Client] = max(t.forgotMax[k.Client], k.ClientID)
	if t.keepDone {
		t.done = append(t.done, r)
	}
}

// retxLog is a message's record for HOMA-RESEND-021: asked lists the
// ranges the RESENDs of the current incarnation asked for, one per RESEND
// (length -1: up to SentEnd), and copies counts the retransmissions of
// each offset (a segment is retransmitted once per RESEND overlapping it).
type retxLog struct {
	asked  []byteranges.Range
	copies map[uint32]int
	// roundHeld is heldGranted when the message's latest RESEND round
	// began: the least offset below which that round asked for every
	// byte its sender lacked (HOMA-RESEND-025; 0: unknown).
	roundHeld uint32
	// last is the message's latest retransmitted DATA since the first
	// RESEND asked for bytes, covering [lastStart, lastEnd)
	// (HOMA-RESEND-027).
	last               Seen
	lastStart, lastEnd uint32
	// sinceWakeup holds the bytes of the message seen since its
	// receiver's latest buffer wakeup: before it the receiver had no
	// buffers and dropped what arrived (homa_data_pkt), so only these
	// show what it holds (HOMA-RESEND-012).
	sinceWakeup byteranges.Set
	// ahead is the first retransmission of bytes at or beyond SentEnd
	// since SentEnd was aheadFrom (HOMA-RESEND-011: the skb another core
	// was handing to the NIC when the RESEND came).
	ahead     Seen
	aheadFrom uint32
}

// ackEntry is the first ack entry naming an RPC: piggy-backed on a first
// transmission or listed in an ACK packet (not an ACK's header). The
// client hands each pending ack out once (HOMA-ACK-004). carrier is the
// message whose DATA carried it (the zero key for an ACK packet): every
// segment of one skb repeats its header.
type ackEntry struct {
	Seen
	carrier rpcMsgKey
}
