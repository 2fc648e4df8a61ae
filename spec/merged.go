package spec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Merged is the checker's diagnosis that a capture interleaves the
// traffic of two module instances of one host: two captures merged with
// overlapping times (mergecap without -a), or one capture of two
// testbeds that reuse addresses. One instance never does what it shows:
// a host allocates each RPC id once (HomaModule homa_rpc_alloc_client
// takes them from one counter) and sends each byte of a message once as
// a first transmission, retransmit=0 (homa_xmit_data moves next_xmit
// forward; homa_resend_data marks every later copy retransmit=1), so a
// message that starts twice is two messages under one id; and it is
// two instances' doing, not one faulty sender's, when both streams go on
// interleaved, or when the two starts carry different message lengths (or
// several requests start again) and the first instance shows it goes on
// while the second begins the old ids again (its client begins requests
// above its newest id before the restart, and after that begins more ids
// again: two counters at once; a host whose id counter wraps, or whose
// module was reloaded, begins the old ids again up to past its old newest
// and none again after it) or the timestamps stepped back (captures
// joined end to end). A
// capture merged with a time-shifted copy of itself (mergecap of it and
// its editcap -t copy) shows it too: messages start again byte for byte,
// each exactly as long after its first start as the capture's first
// packet comes again.
type Merged struct {
	// Frame is the frame that showed it; Host the host that sent it.
	Frame int    `json:"frame"`
	Host  string `json:"host"`
	// Why says what the frames show, one line.
	Why string `json:"why"`
}

// CauseMerged: not the network but the capture: it interleaves two
// module instances of a host (Report.Merged), so what a rule relates
// across packets may pair packets of different instances.
const CauseMerged Cause = "capture merges two captures"

// mergedSwitches is how many times the two streams of one message must
// take turns before the checker calls them two instances' (unless the
// first resumes below the second's end): a faulty sender that repeats a
// message from offset 0 without retransmit=1 and then goes on switches
// twice; two interleaved captures switch on and on.
const mergedSwitches = 3

// mergedGeneration bounds mergeTracker's memory: when the current
// generation holds this many messages the older one is dropped.
const mergedGeneration = 1 << 15

// msgID is msgKey as mergeTracker files it (idOf): the client's id; the
// client's and server's IPv4 addresses, or else their numbers in
// mergeTracker.hosts, as client<<32 | server; and cport<<16 | sport with
// fromClientPorts (the client sends the message) and v4Bit (hosts holds
// addresses) above. At 24 bytes against msgKey's 64 it keeps two
// generations of messages about a third of the size (a generation of
// 32,768 messages is 1.3M packets of 100 KB requests).
type msgID struct {
	clientID, hosts, ports uint64
}

// msgKey is one message: its RPC, the client's and server's Homa ports,
// and whether the client sends it. The ports part one host's sockets: a
// host that gives two of its sockets the same id is one instance's fault
// (HOMA-WIRE-011), while two instances of a testbed reuse the ports too.
type msgKey struct {
	rpc          RPCKey
	cport, sport uint16
	fromClient   bool
}

// who names k's message, sent by e's sender, for a diagnosis.
func (k *msgKey) who(e *Event) string {
	msg := "response"
	if k.fromClient {
		msg = "request"
	}
	return fmt.Sprintf("%s (%v's %s)", k.rpc.Label(), e.Src, msg)
}

// keyOf fills k from e, a packet of an RPC; fromClient says which side
// sends the message meant (not necessarily e's sender).
func (k *msgKey) keyOf(e *Event, fromClient bool) {
	keyInto(&k.rpc, e)
	c := e.Packet.Common()
	k.cport, k.sport = c.Sport(), c.Dport()
	if !e.FromClient() {
		k.cport, k.sport = k.sport, k.cport
	}
	k.fromClient = fromClient
}

// msgStreams is what mergeTracker knows of one message's first
// transmissions (retransmit=0 DATA): the message_length and frame of its
// start at offset 0 (from0: seen), the end of the bytes sent, and, once
// the message started again at offset 0, the same for the second start
// (frame2 > 0); last is the stream (1 or 2) of the latest packet and
// switches how often that changed (at and at2: where each stream's
// latest packet began); asked is set once its receiver sent
// a RESEND or RPC_UNKNOWN for the RPC, which a faulty sender may answer
// with a first transmission, so that no restart of it is evidence.
type msgStreams struct {
	length, len2 uint32
	hi, hi2      uint32
	// at and at2 are the offsets of each stream's latest packet.
	at, at2 uint32
	// frame and frame2 are frame numbers (frame32: at most 2^32-1).
	frame, frame2 uint32
	from0, asked  bool
	last          uint8
	// switches saturates at 255 (mergedSwitches is far below).
	switches uint8
	// start and sum are the time (Unix ns: a time.Time is three times
	// the size, in a map of every message) and fingerprint (maphash of the
	// header and payload bytes) of the packet that started the message at
	// offset 0.
	start int64
	sum   uint64
	// copyAt is how long after start the message started again byte
	// for byte (0: it did not).
	copyAt time.Duration
}

// mergeTracker looks for the signature of interleaved module instances
// (Merged) in a section of a capture.
type mergeTracker struct {
	// cur and old are the current generation of messages and the one
	// before it (entry).
	cur, old mergeGen
	// hosts numbers the addresses of messages' hosts for msgID (a capture
	// has few hosts and many messages); hostCache caches its entries.
	hosts     map[netip.Addr]uint32
	hostCache [64]hostIndex
	// newest is each client host's highest id whose request it began,
	// again the ids whose request a host began a second time after a
	// newer one (for the diagnosis: the first two).
	newest map[netip.Addr]uint64
	again  map[netip.Addr][]uint64
	// hostRuns is, per client host, what the requests it begins again
	// show (hostRun): one instance restarted, or two at once.
	hostRuns map[netip.Addr]*hostRun
	// prev is the latest event's time; steppedBack is set once a
	// timestamp came more than mergedStepBack before it (captures joined
	// end to end within TimeJump): that alone shows two captures, so an
	// id's second start needs no more evidence.
	prev        time.Time
	steppedBack bool
	// copies maps a time shift to the messages that started again
	// exactly that long after their first start with the same bytes (see
	// shifted).
	copies map[time.Duration]*shiftCopies
	// first is the bytes (header and payload) of the section's first
	// packet, firstAt its time, and firstCopies the shifts at which the
	// same bytes came again (at most mergedCopies).
	first       []byte
	firstAt     time.Time
	firstCopies map[time.Duration]bool
}

// mergedCopies bounds mergeTracker.copies: past it the shifts seen are
// forgotten (a capture with that many different ones shows no copy).
const mergedCopies = 1 << 10

// startSeed keys the fingerprints of message starts.
var startSeed = maphash.MakeSeed()

// noteFirst keeps the section's first packet and the shifts at which its
// bytes come again (for shifted and copied).
func (t *mergeTracker) noteFirst(e *Event) {
	b := e.Packet.Bytes()
	if t.first == nil {
		t.first, t.firstAt = bytes.Clone(b), e.Time
		return
	}
	if len(b) != len(t.first) || !bytes.Equal(b, t.first) {
		return
	}
	if d := subTime(e.Time, t.firstAt); d > 0 {
		if t.firstCopies == nil || len(t.firstCopies) >= mergedCopies {
			t.firstCopies = map[time.Duration]bool{}
		}
		t.firstCopies[d] = true
	}
}

// shiftCopies is what mergeTracker knows of one time shift: how many
// messages started again byte for byte that long after their first
// start, the first of them, and the frame of the latest.
type shiftCopies struct {
	n     int
	first string
	frame int
}

// shifted notes that message k (streams m), sent by e's sender, starts
// again at e with the same bytes as its first start m.start.
func (t *mergeTracker) shifted(e *Event, k *msgKey, m *msgStreams) {
	d := time.Duration(e.Time.UnixNano() - m.start)
	if d <= 0 || !t.firstCopies[d] {
		return
	}
	m.copyAt = d
	c := t.copies[d]
	if c == nil {
		if t.copies == nil || len(t.copies) >= mergedCopies {
			t.copies = map[time.Duration]*shiftCopies{}
		}
		c = &shiftCopies{first: k.who(e)}
		t.copies[d] = c
	}
	c.n++
	c.frame = e.Frame
}

// mergedStepBack is how far a timestamp may lie before the previous one
// in one capture (interfaces of a pcapng stamped by different clocks)
// before the checker takes it for captures joined end to end.
const mergedStepBack = 10 * time.Millisecond

// hostRun is one client host's run of requests begun again: ids it had
// begun before, up to hi, begun again after a newer request,
// which one instance restarted (its module reloaded, its id counter
// reset: ids start low again and grow past the old ones) shows as well
// as two instances at once. What tells them apart is whether the first
// instance goes on: while the run goes on up through the old ids, the
// host also begins requests above its newest id before the run (its old
// counter runs on). A restarted counter passes the old newest only at
// the run's end (HomaModule homa_rpc_alloc_client: one counter per host,
// +2 per RPC), so it begins no id again once above it; a local disorder
// (concurrent senders: an id taken before another whose first packet
// went out first) puts at most one begun-again id after it.
type hostRun struct {
	// oldNewest is the host's newest id when the run began; hi the
	// highest id the run began again.
	oldNewest, hi uint64
	// above is the first request begun above oldNewest during the run
	// (0: none yet), aboveFrame its frame; after counts the ids begun
	// again after it.
	above      uint64
	aboveFrame int
	after      int
	// pending is the diagnosis the run's second starts suggested (a
	// message started with two lengths, or requests begun again after
	// newer ones), kept until the run shows two instances or ends.
	pending *Merged
}

// mergedInterleaves is how many ids a host must begin again, up the
// run, after it began a request above its newest id before the run,
// before the checker calls it two instances at once: one may be a
// restarted counter's id whose first packet went out late (a concurrent
// sender), several are two counters running at once.
const mergedInterleaves = 2

// restarted notes that client host a began the request of RPC id again
// (a first transmission from offset 0 of an id it had begun before),
// and returns the host's pending diagnosis once the run shows two
// instances at once. An id at or below the run's highest starts a new
// run (a restart of the restarted: the module reloaded again), whose
// evidence starts afresh.
func (t *mergeTracker) restarted(a netip.Addr, id uint64, frame int) *Merged {
	r := t.hostRuns[a]
	if r == nil || id <= r.hi {
		if t.hostRuns == nil {
			t.hostRuns = map[netip.Addr]*hostRun{}
		}
		r = &hostRun{oldNewest: t.newest[a]}
		t.hostRuns[a] = r
	}
	r.hi = id
	if r.above == 0 {
		return nil
	}
	r.after++
	if r.after < mergedInterleaves || r.pending == nil {
		return nil
	}
	return r.pending.because(fmt.Sprintf("while it begins ids again (RPC %d at frame %d) it goes on beginning RPCs above %d, the newest id it had used before (RPC %d at frame %d): two id counters run at once", id, frame, r.oldNewest, r.above, r.aboveFrame))
}

// because returns a copy of the pending diagnosis m confirmed by what
// evidence says.
func (m *Merged) because(evidence string) *Merged {
	c := *m
	c.Why += "; and " + evidence + ", so these are two instances of it"
	return &c
}

// steppedBackWhy is the evidence timestamps stepping back give.
const steppedBackWhy = "the timestamps step back (captures joined end to end)"

// began notes that client host a began the request of RPC id for the
// first time the section shows.
func (t *mergeTracker) began(a netip.Addr, id uint64, frame int) {
	if r := t.hostRuns[a]; r != nil && r.above == 0 && id > r.oldNewest {
		r.above, r.aboveFrame = id, frame
	}
}

// suspect returns m, the diagnosis the second start of message k
// suggests, when the section's timestamps stepped back; else it keeps m
// as the pending diagnosis of k's client's run (its first) until the run
// shows two instances at once (restarted), and returns nil. A host
// without a run (a response begun again with another length, its
// request not) gets one.
func (t *mergeTracker) suspect(k *msgKey, m *Merged) *Merged {
	if t.steppedBack {
		return m.because(steppedBackWhy)
	}
	r := t.hostRuns[k.rpc.Client]
	if r == nil {
		if t.hostRuns == nil {
			t.hostRuns = map[netip.Addr]*hostRun{}
		}
		r = &hostRun{oldNewest: t.newest[k.rpc.Client], hi: k.rpc.ClientID}
		t.hostRuns[k.rpc.Client] = r
	}
	if r.pending == nil {
		r.pending = m
	}
	return nil
}

// firstPending returns the pending diagnosis of the earliest frame, of
// any host, or nil.
func (t *mergeTracker) firstPending() *Merged {
	var first *Merged
	for _, r := range t.hostRuns {
		if p := r.pending; p != nil && (first == nil || p.Frame < first.Frame) {
			first = p
		}
	}
	return first
}

// copied returns, at the end of a section, the diagnosis that it holds
// a copy of itself shifted in time (mergecap of a capture and its
// editcap -t copy), else nil: for one shift d, the section's first packet
// came again byte for byte d after it, and every message the section saw
// start at offset 0 (at least two) started again byte for byte d after
// its first start. A sender that repeats an exchange (an id reused,
// HOMA-ID-004; a message sent twice, HOMA-RESEND-010) repeats some
// messages, not every one at one delay to the timestamp's last digit.
func (t *mergeTracker) copied() *Merged {
	for d, c := range t.copies {
		if c.n < 2 {
			continue
		}
		all := true
		for _, gen := range []mergeGen{t.cur, t.old} {
			for i := range gen.s {
				m := &gen.s[i]
				if m.from0 && m.copyAt != d {
					all = false
					break
				}
			}
		}
		if all {
			return &Merged{Frame: c.frame, Why: fmt.Sprintf("all %d messages that start in it (the first %s) start again byte for byte exactly %v after their first start, as does its first packet (the last at frame %d): the capture holds a copy of itself shifted in time (mergecap of a capture and a time-shifted copy, editcap -t)", c.n, c.first, d, c.frame)}
		}
	}
	return nil
}

// mergeGen is one generation of mergeTracker's messages: each message's
// id and streams in s, found through slots, an open-addressing table
// probed linearly, at most half full, that only grows (a generation is
// dropped whole). A slot holds the top bits of its id's hash (tag) and
// its index in s plus one (0: empty), so a probe reads 8 bytes of slots
// and then the one entry that is its message's. A Go map keyed by msgID
// hashed each 24-byte key with its seeded hash and probed its groups, a
// fifth of the detector's time on a busy capture, where nearly every
// DATA packet is another message's than the packet before.
type mergeGen struct {
	s     []msgEntry
	slots []msgSlot
}

// msgEntry is one message of a generation.
type msgEntry struct {
	id msgID
	msgStreams
}

// msgSlot is one slot of mergeGen's table.
type msgSlot struct {
	tag uint32
	i   int32
}

// msgHash mixes id's words into a hash whose low bits pick a slot and
// whose top 32 are the slot's tag.
func msgHash(id *msgID) uint64 {
	h := (id.clientID ^ id.hosts*0x9e3779b97f4a7c15 ^ id.ports*0xc2b2ae3d27d4eb4f) * 0xff51afd7ed558ccd
	return h ^ h>>29
}

// find returns id's index in g.s (ok: filed).
func (g *mergeGen) find(id *msgID) (int32, bool) {
	if len(g.s) == 0 {
		return 0, false
	}
	h := msgHash(id)
	mask, tag := uint64(len(g.slots)-1), uint32(h>>32)
	for j := h & mask; ; j = (j + 1) & mask {
		sl := g.slots[j]
		if sl.i == 0 {
			return 0, false
		}
		if sl.tag == tag && g.s[sl.i-1].id == *id {
			return sl.i - 1, true
		}
	}
}

// add files id, which g does not hold, with streams m and returns them.
func (g *mergeGen) add(id *msgID, m msgStreams) *msgStreams {
	if 2*(len(g.s)+1) > len(g.slots) {
		g.slots = make([]msgSlot, max(1024, 2*len(g.slots)))
		for i := range g.s {
			g.slot(&g.s[i].id, int32(i))
		}
	}
	g.slot(id, int32(len(g.s)))
	g.s = append(g.s, msgEntry{id: *id, msgStreams: m})
	return &g.s[len(g.s)-1].msgStreams
}

// slot files index i under id in g's table, in its first free slot.
func (g *mergeGen) slot(id *msgID, i int32) {
	h := msgHash(id)
	mask := uint64(len(g.slots) - 1)
	j := h & mask
	for g.slots[j].i != 0 {
		j = (j + 1) & mask
	}
	g.slots[j] = msgSlot{tag: uint32(h >> 32), i: i + 1}
}

// frame32 returns frame f as msgStreams keeps it: a capture of more than
// 2^32-1 frames names the later ones as its last (only diagnoses print
// them; frame 0 never comes: frames count from 1).
func frame32(f int) uint32 {
	if uint64(f) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(f)
}

// hostIndex is an address and its number in mergeTracker.hosts plus one
// (0: an empty slot).
type hostIndex struct {
	addr netip.Addr
	n    uint32
}

// host returns a's number in t.hosts, numbering it if new, through
// t.hostCache (slot by the address's last byte, as Checker.epochOf: a
// map lookup of an address per packet cost the detector a third more).
func (t *mergeTracker) host(a netip.Addr) uint32 {
	b := a.As16()
	slot := &t.hostCache[int(b[15])&(len(t.hostCache)-1)]
	if slot.n != 0 && slot.addr == a {
		return slot.n - 1
	}
	if t.hosts == nil {
		t.hosts = map[netip.Addr]uint32{}
	}
	n, ok := t.hosts[a]
	if !ok {
		n = uint32(len(t.hosts))
		t.hosts[a] = n
	}
	*slot = hostIndex{addr: a, n: n + 1}
	return n
}

// idOf returns k's msgID. Two IPv4 hosts stand for themselves, their
// addresses in hosts (v4Bit in ports says so); others go by their
// numbers in t.hosts.
func (t *mergeTracker) idOf(k *msgKey) msgID {
	ports := uint64(k.cport)<<16 | uint64(k.sport)
	if k.fromClient {
		ports |= fromClientPorts
	}
	if k.rpc.Client.Is4() && k.rpc.Server.Is4() {
		c, s := k.rpc.Client.As4(), k.rpc.Server.As4()
		return msgID{clientID: k.rpc.ClientID, hosts: uint64(binary.BigEndian.Uint32(c[:]))<<32 | uint64(binary.BigEndian.Uint32(s[:])), ports: ports | v4Bit}
	}
	return msgID{clientID: k.rpc.ClientID, hosts: uint64(t.host(k.rpc.Client))<<32 | uint64(t.host(k.rpc.Server)), ports: ports}
}

// fromClientPorts marks a message the client sends in msgID.ports; v4Bit
// a msgID whose hosts are two IPv4 addresses (above the two ports).
const (
	fromClientPorts = 1 << 32
	v4Bit           = 1 << 33
)

// mergedRestarts is how many of a host's requests must begin a second
// time, each after a newer request of the host began, before the checker
// calls it two instances: one such copy may be the network's duplicate
// held back, several at different RPCs are ids allocated twice.
const mergedRestarts = 2

// entry returns k's streams as filed in the current generation (ok:
// known before), filing them there first if they are not: a copy of the
// old generation's entry, or zero streams. When the current generation
// holds mergedGeneration messages, a new one begins and the old one is
// dropped. The pointer is good until the next entry.
func (t *mergeTracker) entry(k *msgKey) (m *msgStreams, ok bool) {
	id := t.idOf(k)
	if i, in := t.cur.find(&id); in {
		return &t.cur.s[i].msgStreams, true
	}
	var was msgStreams
	if i, in := t.old.find(&id); in {
		was, ok = t.old.s[i].msgStreams, true
	}
	if len(t.cur.s) >= mergedGeneration {
		// The generation dropped lends its arrays, grown to a
		// generation's size, to the next one (no growth and copies).
		next := mergeGen{s: t.old.s[:0], slots: t.old.slots}
		clear(next.slots)
		t.old, t.cur = t.cur, next
	}
	return t.cur.add(&id, was), ok
}

// feed notes e (well-formed, applied in a section) and returns the
// diagnosis when e completes the signature, else nil.
func (t *mergeTracker) feed(e *Event) *Merged {
	if e.Err != nil || e.ICMP != nil {
		return nil
	}
	t.noteFirst(e)
	if subTime(t.prev, e.Time) > mergedStepBack && !t.steppedBack {
		// Captures joined end to end: that alone shows two captures,
		// so a diagnosis pending for more evidence needs none.
		t.steppedBack = true
		if p := t.firstPending(); p != nil {
			return p.because(steppedBackWhy)
		}
	}
	t.prev = e.Time
	switch e.Type() {
	case wire.TypeResend, wire.TypeRPCUnknown:
		// The receiver of the message asks: the sender is the other side.
		var k msgKey
		k.keyOf(e, !e.FromClient())
		m, _ := t.entry(&k)
		m.asked = true
		return nil
	case wire.TypeData:
	default:
		return nil
	}
	if e.Retransmit() {
		return nil
	}
	var k msgKey
	k.keyOf(e, e.FromClient())
	d := e.Packet.Data()
	n := d.MessageLength()
	m, ok := t.entry(&k)
	return t.data(e, &k, m, ok, n)
}

// data is feed for e, a first transmission of message k of length n
// whose streams are m (ok: known before).
func (t *mergeTracker) data(e *Event, k *msgKey, m *msgStreams, ok bool, n uint32) *Merged {
	if !ok || m.hi == 0 && !m.from0 {
		m.length, m.hi, m.at, m.frame, m.from0, m.last = n, e.End(), e.Offset, frame32(e.Frame), e.Offset == 0, 1
		if e.Offset == 0 {
			m.start, m.sum = e.Time.UnixNano(), maphash.Bytes(startSeed, e.Packet.Bytes())
		}
		if k.fromClient && e.Offset == 0 {
			if t.newest == nil {
				t.newest = map[netip.Addr]uint64{}
			}
			t.began(e.Src, k.rpc.ClientID, e.Frame)
			t.newest[e.Src] = max(t.newest[e.Src], k.rpc.ClientID)
		}
		return nil
	}
	// Asked for or not, a start repeated byte for byte at the same shift
	// as another message's is the capture's doing (shifted), when no
	// other signature says more.
	again := m.frame2 == 0 && e.Offset == 0 && m.from0 && n == m.length && maphash.Bytes(startSeed, e.Packet.Bytes()) == m.sum
	switch {
	case m.frame2 == 0 && e.Offset == 0 && m.from0 && !m.asked:
		// The message starts again: one instance never sends byte 0
		// twice as a first transmission.
		m.len2, m.hi2, m.at2, m.frame2 = n, e.End(), e.Offset, frame32(e.Frame)
		m.switches = min(m.switches, 254) + 1
		m.last = 2
		var shown *Merged
		if k.fromClient {
			shown = t.restarted(e.Src, k.rpc.ClientID, e.Frame)
		}
		if n != m.length {
			if p := t.suspect(k, &Merged{Frame: e.Frame, Host: e.Src.String(), Why: fmt.Sprintf("%s starts twice with different message lengths, %d at frame %d and %d at frame %d: one host allocates an RPC id once", k.who(e), m.length, m.frame, n, e.Frame)}); p != nil {
				return p
			}
		}
		if shown != nil {
			return shown
		}
		if newest := t.newest[e.Src]; k.fromClient && newest > k.rpc.ClientID {
			if t.again == nil {
				t.again = map[netip.Addr][]uint64{}
			}
			ids := append(t.again[e.Src], k.rpc.ClientID)
			t.again[e.Src] = ids
			if len(ids) >= mergedRestarts {
				return t.suspect(k, &Merged{Frame: e.Frame, Host: e.Src.String(), Why: fmt.Sprintf("%v begins the requests of RPCs %d and %d a second time as first transmissions (the latter at frame %d), each after it had begun a newer RPC (up to id %d): a module allocates ids from one counter and sends a request's first bytes once", e.Src, ids[0], ids[1], e.Frame, newest)})
			}
		}
		if again {
			t.shifted(e, k, m)
		}
		return nil
	case m.frame2 == 0:
		if again {
			t.shifted(e, k, m)
		}
		m.hi = max(m.hi, e.End())
		m.at = e.Offset
		return nil
	}
	// A packet continues the stream whose end it starts at; where both
	// end there, the stream of the packet before (a batch goes on).
	one, two := e.Offset == m.hi && n == m.length, e.Offset == m.hi2 && n == m.len2
	s := m.last
	switch {
	case one && two:
	case one:
		s = 1
	case two:
		s = 2
	default:
		return nil
	}
	// A packet that repeats the other stream's latest packet is one
	// sender sending each packet twice (HOMA-RESEND-010's fault, the
	// ref's duplicate-data): the two "streams" go in lockstep, which two
	// independent instances do not keep up. It is no evidence either way.
	lockstep := s == 1 && e.Offset == m.at2 || s == 2 && e.Offset == m.at
	if s == 1 {
		m.at = e.Offset
	} else {
		m.at2 = e.Offset
	}
	if lockstep {
		if s == 1 {
			m.hi = e.End()
		} else {
			m.hi2 = e.End()
		}
		m.last = s
		return nil
	}
	if s == 1 {
		if e.Offset < m.hi2 {
			// The first stream resumes below bytes the second sent
			// already: each of the two sent the other's bytes, which no
			// single sender's go-back does.
			return &Merged{Frame: e.Frame, Host: e.Src.String(), Why: fmt.Sprintf("%s is sent twice as first transmissions: it started again from offset 0 at frame %d, and the stream begun at frame %d resumes at offset %d, which the other already sent: one instance sends each byte once, so these are two instances of the host", k.who(e), m.frame2, m.frame, e.Offset)}
		}
		m.hi = e.End()
	} else {
		m.hi2 = e.End()
	}
	if s != m.last {
		m.last = s
		m.switches = min(m.switches, 254) + 1
		if m.switches >= mergedSwitches {
			return &Merged{Frame: e.Frame, Host: e.Src.String(), Why: fmt.Sprintf("%s is sent twice at once as first transmissions, one from offset 0 at frame %d while the other, begun at frame %d, goes on (%d switches by frame %d): one instance sends each byte once, so these are two instances of the host", k.who(e), m.frame2, m.frame, m.switches, e.Frame)}
		}
	}
	return nil
}
