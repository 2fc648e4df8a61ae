package cli

// The fault catalog: one scenario per wire-visible fault class of
// docs/homa-faults.md (BR-nn). Each scenario builds the frames of a faulty
// exchange as HomaModule would put them on the wire, writes them to a pcapng
// file and runs "homatest check" on it with the full rule set; the test
// asserts exit code 1 and, for every rule the capture violates, the frame of
// its first violation (the fault itself and the collateral it causes). The
// clean twin of each scenario (the same exchange done right) must pass with
// exit code 0. A fault the checker cannot see is kept with the reason
// (missed): its capture must then pass, which documents the gap.
//
// go test -run TestFaults -update also writes the faulty captures to
// testdata/faults/<id>-<slug>.pcapng (see testdata/faults/README.md); without
// -update the committed copies are checked too. HOMATEST_FAULTS_OUT=dir
// keeps both captures of every scenario in dir for inspection.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

const faultsDir = "testdata/faults"

// Hosts and ports as in the real captures of pcap/testdata/real: clients
// 10.0.0.11-13 (fd00::11) on their first default port, the server
// 10.0.0.1 (fd00::1) on port 4000.
var (
	hostC  = netip.MustParseAddr("10.0.0.11")
	hostC2 = netip.MustParseAddr("10.0.0.12")
	hostC3 = netip.MustParseAddr("10.0.0.13")
	hostS  = netip.MustParseAddr("10.0.0.1")
	hostC6 = netip.MustParseAddr("fd00::11")
	hostS6 = netip.MustParseAddr("fd00::1")
)

const (
	portC = 32768
	portS = 4000
)

// homaCutoffs are HomaModule's default unsched_cutoffs (version 1): a
// 100-byte message goes at level 7, 10 KB at 5, 100 KB at 4.
var homaCutoffs = [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}

func us(x float64) time.Duration { return time.Duration(math.Round(x * float64(time.Microsecond))) }
func ms(x float64) time.Duration { return time.Duration(math.Round(x * float64(time.Millisecond))) }

// fpkt is one frame of a scenario.
type fpkt struct {
	t        time.Duration // since the start of the capture
	src, dst netip.Addr
	prio     uint8 // Homa priority level, written into TOS / traffic class
	f        wire.Fields
	raw      bool   // encode without FixLengths: doff and num_acks as given
	note     string // pcapng packet comment (marks the injected fault)
}

// capb builds one capture.
type capb struct {
	wire wire.Version
	pkts []fpkt
	// hijack sends every packet as IP protocol 6 (TCP hijacking).
	hijack bool
	// tos, when set, computes the IPv4 TOS byte from the level instead of
	// level<<5 (BR-01).
	tos func(level uint8) uint8
	// v6shift is the IPv6 traffic-class shift (0: by wire version);
	// v6zero writes traffic class 0 on every IPv6 packet (BR-02, 2022).
	v6shift uint8
	v6zero  bool
	// ipv4, when set, rewrites the IPv4 header of frame i (its 20 bytes);
	// the header checksum is recomputed after it (HOMA-WIRE-015).
	ipv4 func(i int, ip []byte)
	// extra frames that are not Homa (ICMP), already serialized.
	extra []rawFrame
}

type rawFrame struct {
	t    time.Duration
	data []byte
}

func newCap(v wire.Version) *capb { return &capb{wire: v} }

// add appends a frame and returns its index in b.pkts.
func (b *capb) add(t time.Duration, src, dst netip.Addr, prio uint8, f wire.Fields) int {
	b.pkts = append(b.pkts, fpkt{t: t, src: src, dst: dst, prio: prio, f: f})
	return len(b.pkts) - 1
}

// mark sets the comment of frame i and returns i.
func (b *capb) mark(i int, note string) int { b.pkts[i].note = note; return i }

// ends names the two sockets of an RPC and its client id.
type ends struct {
	c, s         netip.Addr
	cport, sport uint16
	id           uint64 // even
}

func rpcOf(c, s netip.Addr, id uint64) ends {
	return ends{c: c, s: s, cport: portC, sport: portS, id: id}
}

// common returns the common header of a packet sent by the client
// (fromClient) or the server of r.
func (r ends) common(fromClient bool) wire.CommonFields {
	if fromClient {
		return wire.CommonFields{Sport: r.cport, Dport: r.sport, SenderID: r.id}
	}
	return wire.CommonFields{Sport: r.sport, Dport: r.cport, SenderID: r.id | 1}
}

func (r ends) addrs(fromClient bool) (netip.Addr, netip.Addr) {
	if fromClient {
		return r.c, r.s
	}
	return r.s, r.c
}

// data returns a first transmission (retx false) or a retransmission of
// [off, off+n) of a length-byte message.
func (b *capb) dataF(r ends, fromClient bool, length, off, n, incoming uint32, cv uint16, retx bool) *wire.DataFields {
	c := r.common(fromClient)
	c.Sequence = off
	d := &wire.DataFields{Common: c, MessageLength: length, Incoming: incoming, CutoffVersion: cv, Payload: make([]byte, n)}
	if retx {
		d.Retransmit, d.SegOffset = 1, off
	} else {
		// A single-segment first transmission (doff 0xE0): the offset is in
		// sequence (homa_tx_data_pkt_alloc, main and linux_6.1.38 alike).
		d.SegOffset = wire.SegOffsetInSequence
	}
	return d
}

// data adds a DATA frame and returns its index.
func (b *capb) data(t time.Duration, r ends, fromClient bool, prio uint8, length, off, n, incoming uint32, cv uint16, retx bool) int {
	src, dst := r.addrs(fromClient)
	return b.add(t, src, dst, prio, b.dataF(r, fromClient, length, off, n, incoming, cv, retx))
}

// ctl adds a control packet of RPC r at the top level (7).
func (b *capb) ctl(t time.Duration, r ends, fromClient bool, f wire.Fields) int {
	*f.CommonFields() = r.common(fromClient)
	src, dst := r.addrs(fromClient)
	return b.add(t, src, dst, 7, f)
}

func (b *capb) grant(t time.Duration, r ends, toClient bool, off uint32, prio uint8) int {
	return b.ctl(t, r, !toClient, &wire.GrantFields{Offset: off, Priority: prio})
}

func (b *capb) resend(t time.Duration, r ends, fromClient bool, off, n uint32) int {
	return b.ctl(t, r, fromClient, &wire.ResendFields{Offset: off, Length: n, Priority: 7})
}

func (b *capb) busy(t time.Duration, r ends, fromClient bool) int {
	return b.ctl(t, r, fromClient, &wire.BusyFields{})
}

func (b *capb) unknown(t time.Duration, r ends, fromClient bool) int {
	return b.ctl(t, r, fromClient, &wire.RPCUnknownFields{})
}

func (b *capb) cutoffs(t time.Duration, r ends, fromClient bool) int {
	return b.ctl(t, r, fromClient, &wire.CutoffsFields{UnschedCutoffs: homaCutoffs, CutoffVersion: 1})
}

func (b *capb) needAck(t time.Duration, r ends) int { return b.ctl(t, r, false, &wire.NeedAckFields{}) }

// ack adds the ACK a client sends for RPC r (header and one entry).
func (b *capb) ack(t time.Duration, r ends) int {
	e := wire.AckEntry{ClientID: r.id, ServerPort: r.sport}
	if b.wire == wire.Version2024 {
		e.ClientPort = r.cport
	}
	return b.ctl(t, r, true, &wire.AckFields{Acks: []wire.AckEntry{e}})
}

// pigAck is the piggy-backed ack of RPC r in a DATA header.
func (b *capb) pigAck(r ends) wire.AckEntry {
	e := wire.AckEntry{ClientID: r.id, ServerPort: r.sport}
	if b.wire == wire.Version2024 {
		e.ClientPort = r.cport
	}
	return e
}

func (b *capb) seg(r ends) uint32 {
	if r.c.Is6() {
		return wire.MaxSegDataIPv6
	}
	return wire.MaxSegDataIPv4
}

// msgOpts describe one message and its receiver's granting.
type msgOpts struct {
	length   uint32
	unsched  uint32 // the sender's unscheduled bytes (0: the wire version's default)
	incoming uint32 // DATA.incoming (0: min(length, unsched))
	uprio    uint8  // priority of the unscheduled packets
	cv       uint16 // cutoff_version in the DATA
	ack      wire.AckEntry
	// The receiver grants min(received+window, length) at most once per
	// batch of DATA packets (and when the sender has sent all it may);
	// window 0: it never grants.
	window uint32
	gprio  uint8
	batch  int
	gap    time.Duration // between DATA packets of the sender (1µs)
	rtt    time.Duration // a GRANT shows rtt/2 after the DATA that triggered it and reaches the sender rtt/2 later (10µs)
	// grantCap: the receiver never grants more than this (0: length).
	grantCap uint32
	// grantHold: no GRANT before this time (the receiver is busy with
	// messages outside the capture).
	grantHold time.Duration
	// noFromGrant: with from set, the receiver sends no GRANT before
	// the DATA that continue from there arrive (nothing raised its
	// granted offset in the meantime).
	noFromGrant bool
	// repeatFinal: once it granted the whole message the receiver repeats
	// GRANT(length) after every batch (BR-07).
	repeatFinal bool
	// stopAt: the sender stops its first transmissions at this offset
	// (0: none) and resumes at resumeAt (never if resumeAt is 0).
	stopAt   uint32
	resumeAt time.Duration
	// from: the sender has already sent [0, from) and the receiver has
	// it (a continuation); granted: the horizon so far (0: U). With from
	// set the receiver grants at once if its window allows.
	from, granted uint32
	// lost: offsets whose first transmission is lost before the receiver
	// (they are in the capture, taken on the sender's side: see capLost).
	lost map[uint32]bool
	// capLost: lost packets are not in the capture either (lost before
	// the capture point).
	capLost bool
}

// msgOut is what send returns: the time of its last frame and the indexes
// of the first-transmission DATA (by offset) and GRANT frames.
type msgOut struct {
	end    time.Duration
	data   map[uint32]int
	offs   []uint32
	grants []int
}

// send simulates one message from the client (fromClient) or server of r,
// starting at t0: the unscheduled bytes back to back, then scheduled bytes
// as GRANTs come, segments of max_seg_data (1424 bytes over IPv4) with a
// boundary at U.
func (b *capb) send(r ends, fromClient bool, t0 time.Duration, o msgOpts) msgOut {
	if o.unsched == 0 {
		o.unsched = 40000
		if b.wire == wire.Version2024 {
			o.unsched = 10000
		}
	}
	if o.batch == 0 {
		o.batch = 8
	}
	if o.gap == 0 {
		o.gap = us(1)
	}
	if o.rtt == 0 {
		o.rtt = us(10)
	}
	L := o.length
	U := min(L, o.unsched)
	inc := o.incoming
	if inc == 0 {
		inc = U
	}
	gcap := L
	if o.grantCap != 0 {
		gcap = o.grantCap
	}
	seg := b.seg(r)
	out := msgOut{data: map[uint32]int{}}
	type pend struct {
		at   time.Duration
		off  uint32
		prio uint8
	}
	var pending []pend
	sent, hz, recv := o.from, max(U, o.granted), o.from
	granted := max(min(inc, L), o.granted) // the receiver's view
	prio := o.gprio
	t, n := t0, 0
	stopped := false
	if o.from > 0 && o.window > 0 && !o.noFromGrant {
		if ng := min(recv+o.window, L, gcap); ng > granted {
			out.grants = append(out.grants, b.grant(t, r, fromClient, ng, o.gprio))
			granted = ng
			pending = append(pending, pend{t + o.rtt/2, ng, o.gprio})
			t += o.rtt / 2
		}
	}
	for sent < L {
		for len(pending) > 0 && pending[0].at <= t {
			hz, prio = max(hz, pending[0].off), pending[0].prio
			pending = pending[1:]
		}
		if o.stopAt != 0 && sent >= o.stopAt && !stopped {
			if o.resumeAt == 0 {
				break
			}
			stopped = true
			t = max(t, o.resumeAt)
			continue
		}
		if sent >= hz {
			if len(pending) > 0 {
				t = pending[0].at
				continue
			}
			break
		}
		size := min(seg, L-sent)
		if sent < U && sent+size > U {
			size = U - sent
		}
		p := prio
		if sent < U {
			p = o.uprio
		}
		d := b.dataF(r, fromClient, L, sent, size, inc, o.cv, false)
		if sent == 0 {
			d.Ack = o.ack
		}
		if !(o.lost[sent] && o.capLost) {
			src, dst := r.addrs(fromClient)
			i := b.add(t, src, dst, p, d)
			out.data[sent] = i
			out.offs = append(out.offs, sent)
			out.end = max(out.end, t)
		}
		if !o.lost[sent] {
			recv += size
		}
		sent += size
		n++
		if o.window > 0 && L > U && (n >= o.batch || sent >= hz || sent == L || (o.stopAt != 0 && sent == o.stopAt)) {
			n = 0
			ng := min(recv+o.window, L, gcap)
			tg := max(t+o.rtt/2, o.grantHold)
			switch {
			case t+o.rtt/2 < o.grantHold && sent < hz:
				// Holding grants: decide when the sender has to stop.
			case ng > granted:
				i := b.grant(tg, r, fromClient, ng, o.gprio)
				out.grants = append(out.grants, i)
				out.end = max(out.end, tg)
				granted = ng
				pending = append(pending, pend{tg + o.rtt/2, ng, o.gprio})
			case o.repeatFinal && granted == L && sent < L:
				i := b.grant(tg, r, fromClient, L, o.gprio)
				out.grants = append(out.grants, i)
			}
		}
		t += o.gap
	}
	return out
}

// warmup adds a 100-byte RPC (id 2) between peers that have not met: its
// DATA go at level 6 with cutoff_version 0, each side answers with CUTOFFS
// (as in the real captures), so later messages use level 4 (100 KB) and 7
// (100 bytes), cutoff_version 1. It returns the end time.
func (b *capb) warmup(c, s netip.Addr, t0 time.Duration) time.Duration {
	r := rpcOf(c, s, 2)
	b.data(t0, r, true, 6, 100, 0, 100, 100, 0, false)
	b.cutoffs(t0+us(20), r, false)
	b.data(t0+us(40), r, false, 6, 100, 0, 100, 100, 0, false)
	b.cutoffs(t0+us(60), r, true)
	return t0 + us(60)
}

// smallRPC adds a complete 100-byte RPC between warm peers: request,
// response 50µs later, NEED_ACK 2.5ms after it and the ACK.
func (b *capb) smallRPC(r ends, t0 time.Duration, ack wire.AckEntry) time.Duration {
	i := b.data(t0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.pkts[i].f.(*wire.DataFields).Ack = ack
	b.data(t0+us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	b.needAck(t0+us(50)+ms(2.5), r)
	b.ack(t0+us(50)+ms(2.52), r)
	return t0 + us(50) + ms(2.52)
}

// respondAndAck adds a 100-byte response at t, the NEED_ACK 2.5 ms later
// and the client's ACK. It returns the ACK's time.
func (b *capb) respondAndAck(r ends, t time.Duration) time.Duration {
	b.data(t, r, false, 7, 100, 0, 100, 100, 1, false)
	b.needAck(t+ms(2.5), r)
	b.ack(t+ms(2.52), r)
	return t + ms(2.52)
}

// rpc100k is the base exchange: warm-up RPC 2, then RPC 4 with a
// 100000-byte request (40000 unscheduled bytes at level 4, then granted
// in steps of about 20000 bytes at GRANT priority 0; the first DATA
// carries the ack of RPC 2) and a 100-byte response, NEED_ACK and ACK.
func rpc100k(b *capb, o msgOpts, c, s netip.Addr) (ends, msgOut) {
	t := b.warmup(c, s, 0)
	r := rpcOf(c, s, 4)
	if o.length == 0 {
		o.length = 100000
	}
	if o.window == 0 {
		o.window = 20000
	}
	o.uprio, o.cv = 4, 1
	o.ack = b.pigAck(rpcOf(c, s, 2))
	m := b.send(r, true, t+us(40), o)
	return r, m
}

// ---------------------------------------------------------------------------
// Writing and checking captures.

// write writes b to path as pcapng with snap length 128 (headers and the
// first bytes of payload; original lengths are kept). It returns the
// comments of the marked frames by frame number.
func (b *capb) write(path, desc string) (map[int]string, error) {
	snap := uint32(128) // Ethernet + IPv4 + the largest Homa header (ACK, 80 bytes) is 114
	for _, p := range b.pkts {
		if p.src.Is6() {
			snap = 160 // IPv6 ACK frames are 134 bytes
		}
	}
	fw, err := pcap.Create(path, pcap.Interface{Name: "br0", Description: desc, SnapLen: snap})
	if err != nil {
		return nil, err
	}
	type frame struct {
		t    time.Duration
		data []byte
		len  int
		note string
	}
	var frames []frame
	o := wire.EncodeOptions{Version: b.wire, SetMarks: true}
	for i, p := range b.pkts {
		o.FixLengths = !p.raw
		fs := pcap.FrameSpec{Src: p.src, Dst: p.dst, Priority: p.prio, IPv6Shift: b.v6shift}
		if b.hijack {
			fs.IPProto = 6
		}
		if b.v6zero && p.src.Is6() {
			fs.Priority = 0
		}
		buf := gopacket.NewSerializeBuffer()
		fr, err := pcap.BuildFrame(buf, fs, p.f, o)
		if err != nil {
			return nil, fmt.Errorf("packet %d: %w", i, err)
		}
		if b.tos != nil && p.src.Is4() {
			setIPv4TOS(fr, b.tos(p.prio))
		}
		if b.ipv4 != nil && p.src.Is4() {
			rewriteIPv4(fr, func(ip []byte) { b.ipv4(i, ip) })
		}
		frames = append(frames, frame{p.t, append([]byte(nil), fr...), len(fr), p.note})
	}
	for _, x := range b.extra {
		frames = append(frames, frame{x.t, x.data, len(x.data), ""})
	}
	sort.SliceStable(frames, func(i, j int) bool { return frames[i].t < frames[j].t })
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	notes := map[int]string{}
	for i, f := range frames {
		if err := fw.WritePacket(0, t0.Add(f.t), f.data[:min(len(f.data), int(snap))], f.len, f.note); err != nil {
			return nil, err
		}
		if f.note != "" {
			notes[i+1] = f.note
		}
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return notes, os.Chmod(path, 0o644)
}

// setIPv4TOS rewrites the TOS byte of an untagged Ethernet/IPv4 frame and
// its header checksum.
func setIPv4TOS(fr []byte, tos uint8) { rewriteIPv4(fr, func(ip []byte) { ip[1] = tos }) }

// rewriteIPv4 lets set change the IPv4 header of an untagged Ethernet/IPv4
// frame, then recomputes the header checksum.
func rewriteIPv4(fr []byte, set func(ip []byte)) {
	ip := fr[14:34]
	set(ip)
	ip[10], ip[11] = 0, 0
	cs := wire.IPv4HeaderChecksum(ip)
	ip[10], ip[11] = byte(cs>>8), byte(cs)
}

// icmpUnreachable returns an ICMP port-unreachable frame from "from" to
// "to" quoting the first 28 bytes of IP packet quoted (an IPv4 Homa frame
// without its Ethernet header).
func icmpUnreachable(from, to netip.Addr, quoted []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xc0, TTL: 64, Protocol: layers.IPProtocolICMPv4,
		SrcIP: from.AsSlice(), DstIP: to.AsSlice()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort)}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, icmp, gopacket.Payload(quoted[:min(len(quoted), 28)])); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// unreachable adds, at t, the ICMP port unreachable that packet i's
// destination host answers it with (quoting its IP header and the first 8
// bytes of Homa).
func (b *capb) unreachable(i int, t time.Duration) {
	p := b.pkts[i]
	buf := gopacket.NewSerializeBuffer()
	fr, err := pcap.BuildFrame(buf, pcap.FrameSpec{Src: p.src, Dst: p.dst, Priority: p.prio}, p.f, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		panic(err)
	}
	b.extra = append(b.extra, rawFrame{t, icmpUnreachable(p.dst, p.src, fr[14:])})
}

// hit is a rule and the frame of its first violation.
type hit struct {
	rule  string
	frame int
}

// checked is what check -o json reports for one file.
type checked struct {
	code       int
	first      map[string]int // rule -> frame of its first violation
	count      map[string]int // rule -> violations listed
	profile    string
	incRules   []string
	violations []string
}

// summary lists the first violation of each rule and how many there are.
func (c checked) summary() string {
	var lines []string
	seen := map[string]bool{}
	for _, v := range c.violations {
		r, _, _ := strings.Cut(v, " ")
		if !seen[r] {
			seen[r] = true
			lines = append(lines, fmt.Sprintf("%s (%d in all)", v, c.count[r]))
		}
	}
	return strings.Join(lines, "\n")
}

func checkCapture(t *testing.T, path string, args ...string) checked {
	t.Helper()
	out, _, code := run(t, append(append([]string{"check", "-o", "json"}, args...), path)...)
	var js struct {
		Files []struct {
			Error  string `json:"error"`
			Report struct {
				Profile    string `json:"profile"`
				Violations []struct {
					Rule  string `json:"rule"`
					Frame int    `json:"frame"`
					Why   string `json:"why"`
				} `json:"violations"`
				Inconclusive []struct {
					Rule  string `json:"rule"`
					Frame int    `json:"frame"`
				} `json:"inconclusive"`
			} `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("check %s: exit %d, output not one file's JSON (%v):\n%s", path, code, err, out)
	}
	if js.Files[0].Error != "" {
		t.Fatalf("check %s: %s", path, js.Files[0].Error)
	}
	c := checked{code: code, first: map[string]int{}, count: map[string]int{}, profile: js.Files[0].Report.Profile}
	for _, v := range js.Files[0].Report.Violations {
		if f, ok := c.first[v.Rule]; !ok || v.Frame < f {
			c.first[v.Rule] = v.Frame
		}
		c.count[v.Rule]++
		c.violations = append(c.violations, fmt.Sprintf("%s frame %d: %s", v.Rule, v.Frame, v.Why))
	}
	seen := map[string]bool{}
	for _, v := range js.Files[0].Report.Inconclusive {
		if !seen[v.Rule] {
			seen[v.Rule] = true
			c.incRules = append(c.incRules, fmt.Sprintf("%s@%d", v.Rule, v.Frame))
		}
	}
	return c
}

// ---------------------------------------------------------------------------
// The catalog.

type faultCase struct {
	id, slug string
	// what the faulty capture shows (one line, for the README and the
	// capture's interface description).
	what string
	// build returns the faulty (fault true) or clean capture.
	build func(fault bool) *capb
	// args are extra check flags for both captures (parameters of the run).
	args []string
	// want lists every rule the faulty capture violates with the frame of
	// its first violation; the first entry is the fault itself.
	want []hit
	// missed, if set, says why no rule can flag this fault: the faulty
	// capture then passes too.
	missed string
	// twinFalseAlarms are violations the checker reports on the clean
	// twin although it is correct (checker bugs, see twinWhy); the test
	// asserts them exactly so that it fails once they are fixed.
	twinFalseAlarms []hit
	twinWhy         string
}

func (fc faultCase) file() string { return fc.id + "-" + fc.slug + ".pcapng" }

func faultCases() []faultCase {
	return append(append(brFaultCases(), ruleFaultCases()...), redteam8FaultCases()...)
}

// faultCaseByID is the fault case with id (the test fails without one).
func faultCaseByID(t *testing.T, id string) faultCase {
	t.Helper()
	for _, fc := range faultCases() {
		if fc.id == id {
			return fc
		}
	}
	t.Fatalf("no fault case %s", id)
	return faultCase{}
}

// brFaultCases are the scenarios of docs/homa-faults.md (and two extra
// ones from before the facts' rules).
func brFaultCases() []faultCase {
	return []faultCase{
		{
			id: "BR-01", slug: "ipv4-tos-shift3",
			what: "IPv4 TOS = level<<3 instead of level<<5 on every packet: precedence (TOS>>5) is 1 for levels 4-7, 0 below",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				rpc100k(b, msgOpts{}, hostC, hostS)
				b.respondAndAck(rpcOf(hostC, hostS, 4), b.lastTime()+us(30))
				if fault {
					b.tos = func(level uint8) uint8 { return level << 3 }
					b.pkts[0].note = "BR-01: every TOS is level<<3 (here 6<<3 = 0x30: precedence 1)"
				}
				return b
			},
			// Frame 1 is the warm-up request at level 6 (read as 1),
			// frame 2 the first control packet (CUTOFFS, level 7 read as 1).
			// The TOS bits below the priority are set too (WIRE-012, SHOULD).
			want: []hit{{"HOMA-PRIO-002", 1}, {"HOMA-PRIO-001", 2}, {"HOMA-WIRE-012", 1}},
		},
		{
			id: "BR-02", slug: "ipv6-tc-zero",
			what: "IPv6 Homa packets all leave with traffic class 0 (first IPv6 support, before 2022-11): control packets at level 0",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				rpc100k(b, msgOpts{}, hostC6, hostS6)
				b.respondAndAck(rpcOf(hostC6, hostS6, 4), b.lastTime()+us(30))
				if fault {
					b.v6zero = true
					b.pkts[0].note = "BR-02: traffic class 0 (level 6 intended)"
				}
				return b
			},
			want: []hit{{"HOMA-PRIO-002", 1}, {"HOMA-PRIO-001", 2}},
		},
		{
			id: "BR-02", slug: "ipv6-tc-shift4",
			what: "IPv6 traffic class = level<<4 (2022-11 to 2025-11) in a capture of a main build: control packets at TC 0x70 instead of 0xE0",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				rpc100k(b, msgOpts{}, hostC6, hostS6)
				b.respondAndAck(rpcOf(hostC6, hostS6, 4), b.lastTime()+us(30))
				if fault {
					b.v6shift = 4
					b.pkts[1].note = "BR-02: traffic class 0x70 (level 7 << 4)"
				}
				return b
			},
			// The build is declared: main since 548056f writes
			// priority<<5. Frame 1 (level 6: 0x60) fits either shift;
			// frame 2, the first control packet (0x70), does not.
			args: []string{"--param", "ipv6_prio_shift=5"},
			want: []hit{{"HOMA-PRIO-004", 2}},
		},
		{
			id: "BR-06", slug: "grant-after-complete",
			what: "receiver's grants stop short of the length (99900); the sender's last packet completes the message anyway; GRANT(100000) follows 3 ms later when the next request arrives",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				o := msgOpts{}
				if fault {
					o.grantCap = 99900
				}
				r, _ := rpc100k(b, o, hostC, hostS)
				tc := b.lastTime()
				b.data(tc+ms(1), r, false, 7, 100, 0, 100, 100, 1, false)
				// The client's next request 2 ms later acks RPC 4.
				r6 := rpcOf(hostC, hostS, 6)
				b.smallRPC(r6, tc+ms(3), b.pigAck(r))
				if fault {
					b.mark(b.grant(tc+ms(3)+us(5), r, true, 100000, 0), "BR-06: GRANT 3 ms after the message completed")
				}
				return b
			},
			want: []hit{{"HOMA-GRANT-004", 86}},
		},
		{
			id: "BR-07", slug: "repeated-full-grant-2024",
			what: "linux_6.1.38 receiver repeats GRANT(length) after every batch of DATA once the message is fully granted",
			build: func(fault bool) *capb {
				b := newCap(wire.Version2024)
				t := b.warmup(hostC, hostS, 0)
				r := rpcOf(hostC, hostS, 4)
				m := b.send(r, true, t+us(40), msgOpts{length: 60000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
					window: 10000, batch: 2, repeatFinal: fault})
				if fault {
					full := 0
					for _, i := range m.grants {
						if b.pkts[i].f.(*wire.GrantFields).Offset == 60000 {
							// The first repeat, an identical copy less than
							// jitter after the first, may be the network's.
							if full++; full == 3 {
								b.mark(i, "BR-07: GRANT repeats the message length again")
							}
						}
					}
				}
				b.respondAndAck(r, m.end+us(30))
				return b
			},
			// On main the same capture passes: there a repeat of exactly
			// the message length is legal.
			want: []hit{{"HOMA-GRANT-003", 69}},
		},
		{
			id: "BR-09", slug: "no-grants",
			what: "receiver never grants (max_incoming 0): 40000 unscheduled bytes of a 100000-byte request, then only the client's RESEND / server's BUSY every 5 ms",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				if !fault {
					r, _ := rpc100k(b, msgOpts{}, hostC, hostS)
					b.respondAndAck(r, b.lastTime()+us(30))
					return b
				}
				t := b.warmup(hostC, hostS, 0)
				r := rpcOf(hostC, hostS, 4)
				m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2))})
				b.mark(m.data[m.offs[len(m.offs)-1]], "BR-09: all unscheduled bytes are in; no GRANT ever follows")
				for k := 1; k <= 5; k++ {
					at := m.end + ms(5.2*float64(k))
					i := b.resend(at, r, true, 0, wire.ResendAll)
					if k == 1 {
						b.mark(i, "BR-09: the client asks for its response; the server never granted the request")
					}
					b.busy(at+us(20), r, false)
				}
				return b
			},
			// The obligation starts at the DATA that completes the
			// unscheduled bytes (frame 33).
			want: []hit{{"HOMA-GRANT-010", 33}},
		},
		{
			id: "BR-10", slug: "grant-outside-active-set",
			what: "with max_overcommit 2, the receiver also grants a third message (outside the active set) at priority 2, above both active ones, while both are still granted short of their ends",
			args: []string{"--param", "max_overcommit=2"},
			build: func(fault bool) *capb {
				return overcommit(fault)
			},
			// Priority 2 also exceeds what two messages allow (GRANT-015).
			want: []hit{{"HOMA-GRANT-006", 90}, {"HOMA-GRANT-015", 90}},
		},
		{
			id: "BR-12", slug: "no-regrant-after-delete",
			what:  "max_overcommit 1: the granted request's client aborts (RPC_UNKNOWN), the receiver never grants the waiting request of another client, which RESENDs and gets BUSY",
			args:  []string{"--param", "max_overcommit=1"},
			build: func(fault bool) *capb { return regrant(fault) },
			// Judged at the waiting request's last unscheduled byte
			// (frame 58) while the only slot is taken: inconclusive;
			// judged again when client 1's RPC_UNKNOWN frees the slot.
			want: []hit{{"HOMA-GRANT-010", 78}},
		},
		{
			id: "BR-14", slug: "unsched-rounded-up",
			what: "sender rounds its unscheduled bytes up to whole GSO batches: 42720 bytes (5 x 8544) before any GRANT, incoming 42720",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				o := msgOpts{}
				if fault {
					o.unsched, o.incoming = 42720, 42720
				}
				r, m := rpc100k(b, o, hostC, hostS)
				if fault {
					b.mark(m.data[0], "BR-14: incoming 42720, above unsched_bytes 40000")
					b.mark(m.data[39872], "BR-14: first-transmission packet [39872, 41296) straddles U = 40000")
				}
				b.respondAndAck(r, b.lastTime()+us(30))
				return b
			},
			// The receiver's first GRANT passes the capture point
			// before the sender's burst ends, so UNSCHED-001 (bytes
			// beyond U before any GRANT was seen) does not fire; the
			// packet [41296, 42720) past U at the unscheduled level
			// breaks GRANT-008 instead.
			want: []hit{{"HOMA-WIRE-007", 5}, {"HOMA-UNSCHED-002", 35}, {"HOMA-GRANT-008", 36}},
		},
		{
			id: "BR-18", slug: "resend-right-after-grant",
			what:  "receiver that had all granted bytes grants more after 8 ms and its timer sends a RESEND for exactly those bytes 2 µs later; the client retransmits them",
			build: func(fault bool) *capb { return resendAfterGrant(fault) },
			want:  []hit{{"HOMA-RESEND-001", 35}},
		},
		{
			id: "BR-19", slug: "early-resend-double-execution",
			what:  "client RESENDs 2 ms after its request; the server, which has not seen it yet, answers RPC_UNKNOWN; the client restarts; the server executes the request twice (two responses)",
			build: func(fault bool) *capb { return earlyResend(fault) },
			// The second response repeats bytes already sent with
			// retransmit=0 (RESEND-010): the request ran twice.
			want: []hit{{"HOMA-RESEND-001", 2}, {"HOMA-RESEND-010", 6}},
		},
		{
			id: "BR-21", slug: "client-ignores-resend",
			what:  "server RESENDs request bytes while the client receives the response; the client neither retransmits nor sends BUSY",
			build: func(fault bool) *capb { return clientIgnoresResend(fault) },
			// No retransmission covers the bytes asked for either.
			want: []hit{{"HOMA-RESEND-002", 12}, {"HOMA-RESEND-016", 12}},
		},
		{
			id: "BR-23", slug: "empty-resend-unanswered",
			what:  "server probes a stalled client with zero-length RESENDs, the client answers nothing, the server gives up on the RPC",
			build: func(fault bool) *capb { return emptyProbe(fault) },
			// Main never sends a zero-length RESEND (RESEND-012); its
			// round asks for every byte the receiver lacks (RESEND-026).
			want: []hit{{"HOMA-RESEND-002", 45}, {"HOMA-RESEND-012", 45}, {"HOMA-RESEND-026", 45}},
		},
		{
			id: "BR-24", slug: "resend-gap-after-100us",
			what:  "receiver with a 100 µs out-of-order window RESENDs a late packet's range while DATA keeps arriving; the late original and the retransmission both arrive",
			build: func(fault bool) *capb { return oooResend(fault) },
			want:  []hit{{"HOMA-RESEND-001", 74}},
		},
		{
			id: "BR-24", slug: "resend-storm",
			what:  "receiver-side capture: a scheduled packet was lost; the receiver RESENDs it every tick (1 ms) instead of every resend_interval (5 ticks) while the overloaded sender has not answered yet",
			build: func(fault bool) *capb { return resendStorm(fault) },
			want:  []hit{{"HOMA-RESEND-008", 84}},
		},
		{
			id: "BR-26", slug: "resent-then-sent-again",
			what:  "RESEND reaches into bytes the paced sender has not sent yet: it sends them as retransmissions and later again as first transmissions",
			build: func(fault bool) *capb { return sentTwice(fault) },
			args:  []string{"--capture-point", "host:10.0.0.11"}, // elsewhere a retransmission may overtake queued originals
			want:  []hit{{"HOMA-RESEND-011", 86}},
		},
		{
			id: "BR-28", slug: "retransmission-wrong-bytes",
			what:  "retransmitted DATA carries payload from the wrong buffer offset (differs from the first transmission at that offset)",
			build: func(fault bool) *capb { return wrongRetxPayload(fault) },
			// The 128-byte snap length leaves 38 payload bytes of each
			// frame: the prefixes of the copies at 68480 differ.
			want: []hit{{"HOMA-WIRE-014", 85}},
		},
		{
			id: "BR-30", slug: "timeout-kills-live-rpc",
			what:  "server answers BUSY for two long requests of one client, then (after an unrelated RPC of that client timed out) RPC_UNKNOWN for both, 5 ms after the last BUSY; the client restarts them and they run twice, while the server keeps serving another client's RPC on the same port",
			build: func(fault bool) *capb { return timeoutKillsOthers(fault) },
			want:  []hit{{"HOMA-RESEND-019", 17}},
		},
		{
			id: "BR-32", slug: "need-ack-ignored",
			what:  "client has the whole 10 KB response but the application has not read it: NEED_ACK every tick, no ACK for 24 ms",
			build: func(fault bool) *capb { return needAckIgnored(fault) },
			// The ACK that finally comes shows the client was there all
			// along (ACK-009, MUST); the repeated NEED_ACKs unanswered
			// are ACK-002's warning.
			want: []hit{{"HOMA-ACK-009", 10}, {"HOMA-ACK-002", 11}},
		},
		{
			id: "BR-34", slug: "frame-above-mtu",
			what:  "GSO geometry leaves a 2 x 1424-byte DATA frame unsegmented on the wire (2924 bytes of IP, above MTU 1500)",
			build: func(fault bool) *capb { return bigFrame(fault) },
			want:  []hit{{"HOMA-WIRE-013", 37}},
		},
		{
			id: "BR-35", slug: "only-retransmissions-arrive",
			what:  "five RPCs: the server's NIC drops every GSO frame, so each 30000-byte response arrives only in retransmissions after the client's RESEND at 5 ms, while the server's single-segment packets (retransmissions, NEED_ACK, 100-byte responses) arrive in between",
			build: func(fault bool) *capb { return tsoDropped(fault) },
			// A SHOULD rule: the finding is a warning, an error under
			// --strict. Each RPC alone is legal loss; the third loss
			// episode separated by arrivals makes the split between lost
			// first transmissions and arriving retransmissions improbable
			// under any loss that does not look at how a packet was sent.
			args: []string{"--strict"},
			want: []hit{{"HOMA-SEND-003", 63}},
		},
		{
			id: "BR-37", slug: "hijacked-ack-doff0",
			what:  "TCP-hijacked traffic: the client's ACKs answering NEED_ACK have doff 0, the receiving stack drops them, the server keeps sending NEED_ACK",
			build: func(fault bool) *capb { return hijackDoff0(fault) },
			// The checker sees the ACK the server's stack dropped, so
			// the NEED_ACKs that follow it break ACK-003.
			want: []hit{{"HOMA-WIRE-005", 4}, {"HOMA-ACK-003", 9}},
		},
		{
			id: "BR-39", slug: "data-length-overflow",
			what:  "injected DATA among normal RPCs: message_length 0x80000000, 2000000 and 0, and offset 0x7FFFFF00",
			build: func(fault bool) *capb { return lengthOverflow(fault) },
			want:  []hit{{"HOMA-WIRE-002", 5}, {"HOMA-UNSCHED-001", 7}},
		},
		{
			id: "BR-40", slug: "ack-num-acks-overflow",
			what:  "injected ACKs with num_acks 6 and 65535 toward a server with a live RPC",
			build: func(fault bool) *capb { return ackOverflow(fault) },
			// Both injected ACKs name RPC 300, which the capture never
			// saw: ACK-004 is inconclusive for both (an ACK creates no RPC).
			want: []hit{{"HOMA-WIRE-008", 2}},
		},
		{
			id: "BR-42", slug: "unbound-port-silent",
			what:  "request to a port with no socket: no ICMP port unreachable, the client RESENDs unanswered every 5 ms",
			build: func(fault bool) *capb { return unboundPort(fault) },
			want:  []hit{{"HOMA-RESEND-002", 2}},
		},
		{
			id: "BR-45", slug: "same-packet-repeated",
			what:  "after a GRANT the sender transmits the packet at 40000 eight times (retransmit=0) and skips 41424-51392 until the receiver RESENDs",
			build: func(fault bool) *capb { return repeatOnePacket(fault) },
			// Between the hosts the first repeat (frame 36) may be the
			// network's duplicate (inconclusive); the second is not.
			want: []hit{{"HOMA-RESEND-010", 37}},
		},
		{
			id: "BR-47", slug: "resend-ungranted-message",
			what:  "max_overcommit 1: receiver RESENDs bytes of a message it is deliberately not granting; the RESEND's range acts as a grant",
			args:  []string{"--param", "max_overcommit=1"},
			build: func(fault bool) *capb { return resendUngranted(fault) },
			// A RESEND asks only for bytes its sender authorised.
			want: []hit{{"HOMA-RESEND-012", 98}},
		},
		{
			id: "BR-48", slug: "resend-to-forgotten-rpc",
			what:  "sender dropped the RPC (ns-3 sender timeout); the receiver RESENDs every 5 ms for 170 ms and never gets an answer, not even RPC_UNKNOWN",
			build: func(fault bool) *capb { return resendForgotten(fault) },
			// RESENDs past timeout_ticks of silence, stretched by
			// timer_drift: RESEND-009.
			want: []hit{{"HOMA-RESEND-002", 54}, {"HOMA-RESEND-009", 84}},
		},
		{
			id: "BR-49", slug: "last-frame-padded",
			what: "hardware sender frames the short last packet at full size: DATA [99808, 101232) of a 100000-byte message",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				r, m := rpc100k(b, msgOpts{}, hostC, hostS)
				if fault {
					last := m.data[m.offs[len(m.offs)-1]]
					b.pkts[last].f.(*wire.DataFields).Payload = make([]byte, 1424)
					b.mark(last, "BR-49: last DATA padded to 1424 bytes, 1232 past message_length")
				}
				b.respondAndAck(r, b.lastTime()+us(30))
				return b
			},
			want: []hit{{"HOMA-WIRE-002", 83}},
		},
		{
			id: "BR-49", slug: "ports-from-addresses",
			what:  "hardware server fills sport/dport from the low 16 bits of the IP addresses: its response to 10.0.0.11:32768's request to port 4000 leaves port 1 for port 11; the client host answers ICMP port unreachable, RESENDs, and the retransmission comes back the same way",
			build: func(fault bool) *capb { return portsFromAddresses(fault) },
			want:  []hit{{"HOMA-WIRE-011", 2}, {"HOMA-ID-006", 5}},
		},
		{
			id: "BR-50", slug: "server-black-holed",
			what:  "nothing comes back from the server: the client RESENDs at 5 ms and every 5 ms after, then gives up at 100 ms",
			build: func(fault bool) *capb { return blackHole(fault) },
			want:  []hit{{"HOMA-RESEND-002", 2}},
		},
		{
			id: "grant-window", slug: "linux-2024",
			what: "extra fault: a linux_6.1.38 receiver (window 10000) grants a 60000-byte message in full as soon as its 10000 unscheduled bytes are in, 50000 bytes ahead",
			build: func(fault bool) *capb {
				b := newCap(wire.Version2024)
				t := b.warmup(hostC, hostS, 0)
				r := rpcOf(hostC, hostS, 4)
				o := msgOpts{length: 60000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)), window: 10000}
				if fault {
					o.window = 60000
				}
				m := b.send(r, true, t+us(40), o)
				if fault {
					b.mark(m.grants[0], "grant-window: GRANT 50000 bytes beyond what arrived, window 10000")
				}
				b.respondAndAck(r, m.end+us(30))
				return b
			},
			want: []hit{{"HOMA-GRANT-009", 13}},
		},
		{
			id: "need-ack", slug: "right-after-response",
			what: "extra fault: the server sends NEED_ACK 100 µs after the last response packet instead of after request_ack_ticks (2) ticks",
			build: func(fault bool) *capb {
				b := newCap(wire.VersionCurrent)
				r := rpcOf(hostC, hostS, 10)
				b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
				b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
				if fault {
					b.mark(b.needAck(us(150), r), "need-ack: NEED_ACK 100 µs after the response")
					b.ack(us(170), r)
				} else {
					b.needAck(us(50)+ms(2.5), r)
					b.ack(us(50)+ms(2.52), r)
				}
				return b
			},
			want: []hit{{"HOMA-ACK-005", 3}},
		},
	}
}

// lastTime returns the latest time of any frame so far.
func (b *capb) lastTime() time.Duration {
	var t time.Duration
	for _, p := range b.pkts {
		t = max(t, p.t)
	}
	return t
}

// overcommit (BR-10): three clients send 50000-byte requests at once
// (unscheduled packets interleaved at the switch). With max_overcommit 2
// the receiver grants the two oldest, at priorities 1 and 0 (two active
// messages); the third waits until the first completes. Faulty: the third
// is granted at once, at priority 2 (its rank -1 read as a level).
func overcommit(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	rs := []ends{rpcOf(hostC, hostS, 10), rpcOf(hostC2, hostS, 10), rpcOf(hostC3, hostS, 10)}
	// Each message gets two GRANTs: to G, then to its end L. A message
	// granted to its end leaves the active set (HomaModule
	// homa_grant_check_rpc, homa_grant_recalc: "messages completely
	// granted open opportunities to grant to additional messages"), so
	// the overcommitment is a third message granted while the first two
	// are still granted only to G, three packets past U (a sender cuts
	// whole packets, HOMA-WIRE-016).
	const L, G, U = 50000, 40000 + 3*1424, 40000
	t := time.Duration(0)
	for off := uint32(0); off < U; off += 1424 {
		for _, r := range rs {
			b.data(t, r, true, 4, L, off, min(1424, U-off), U, 1, false)
			t += us(1)
		}
	}
	// Grants after the receiver has all unscheduled bytes.
	g := []time.Duration{t + us(2), t + us(3), t + us(4)}
	b.grant(g[0], rs[0], true, G, 1)
	b.grant(g[1], rs[1], true, G, 0)
	if fault {
		b.mark(b.grant(g[2], rs[2], true, G, 2), "BR-10: third granted message with max_overcommit 2, at priority 2")
	}
	// Scheduled bytes [from, to) of the granted messages, round robin.
	send := func(t time.Duration, from, to uint32, rr []ends, prio []uint8) time.Duration {
		for off := from; off < to; off += 1424 {
			for i, r := range rr {
				b.data(t, r, true, prio[i], L, off, min(1424, to-off), U, 1, false)
				t += us(1)
			}
		}
		return t
	}
	// The rest of each message: a GRANT to its end, paid by the
	// scheduled packets that arrived, then the bytes.
	finish := func(t time.Duration, rr []ends, prio []uint8) time.Duration {
		for i, r := range rr {
			b.grant(t+us(float64(i)), r, true, L, prio[i])
		}
		return send(t+us(5), G, L, rr, prio)
	}
	if fault {
		t = send(g[2]+us(5), U, G, rs, []uint8{1, 0, 2})
		t = finish(t+us(5), rs, []uint8{1, 0, 2})
	} else {
		t = send(g[1]+us(5), U, G, rs[:2], []uint8{1, 0})
		t = finish(t+us(5), rs[:2], []uint8{1, 0})
		b.grant(t+us(5), rs[2], true, G, 0)
		t = send(t+us(10), U, G, rs[2:], []uint8{0})
		t = finish(t+us(5), rs[2:], []uint8{0})
	}
	for i, r := range rs {
		b.respondAndAck(r, t+us(100*float64(i+1)))
	}
	return b
}

// regrant (BR-12): with max_overcommit 1, the receiver grants client 1's
// request; client 2's waits. Client 1's application aborts (no packet);
// after 5 ms of silence the receiver RESENDs and client 1 answers
// RPC_UNKNOWN: the receiver drops the RPC. Clean: client 2 is granted at
// once. Faulty: never; client 2 RESENDs for its response and gets BUSY.
func regrant(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r1, r2 := rpcOf(hostC, hostS, 10), rpcOf(hostC2, hostS, 10)
	const L, U = 100000, 40000
	t := time.Duration(0)
	for off := uint32(0); off < U; off += 1424 {
		for _, r := range []ends{r1, r2} {
			b.data(t, r, true, 4, L, off, min(1424, U-off), U, 1, false)
			t += us(1)
		}
	}
	b.grant(t+us(2), r1, true, 60000, 0)
	t += us(10)
	// Client 1 sends the packets that start below the grant, [40000,
	// 61360); then its application aborts: nothing more comes from it.
	for off := uint32(U); off < 60000; off += 1424 {
		b.data(t, r1, true, 0, L, off, 1424, U, 1, false)
		t += us(1)
	}
	b.grant(t+us(2), r1, true, 80000, 0)
	last := t
	// The receiver's RESEND after 5 ticks of silence; client 1 no longer
	// knows the RPC.
	b.resend(last+ms(5.2), r1, false, 61360, 80000-61360)
	u := b.unknown(last+ms(5.22), r1, true)
	if !fault {
		// The receiver drops RPC 10 of client 1 and grants client 2 at once.
		b.send(r2, true, last+ms(5.23), msgOpts{length: L, uprio: 4, cv: 1, window: 20000, from: U})
		b.respondAndAck(r2, b.lastTime()+us(30))
		return b
	}
	b.mark(u, "BR-12: RPC_UNKNOWN ends client 1's RPC 10 and frees the only grant slot; client 2's waiting request is never granted")
	// Client 2 has sent all it may; from 5 ms after its last DATA it asks
	// for the response every 5 ms, and the server (request incomplete)
	// says BUSY.
	for k := 1; k <= 6; k++ {
		at := t + ms(5.2*float64(k))
		b.resend(at, r2, true, 0, wire.ResendAll)
		b.busy(at+us(20), r2, false)
	}
	return b
}

// resendAfterGrant (BR-18): the receiver holds its grants for 8 ms (it is
// granting messages of other clients). When it grants, its timer sends a
// RESEND for the bytes just granted 2 µs later: the sender retransmits what
// it had already sent.
func resendAfterGrant(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	hold := t + ms(8)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 20000, grantHold: hold})
	if fault {
		g := b.pkts[m.grants[0]]
		off := g.f.(*wire.GrantFields).Offset
		i := b.resend(g.t+us(2), r, false, 40000, off-40000)
		b.mark(i, "BR-18: RESEND 2 µs after the GRANT that authorised these bytes")
		// The client has handed the granted packets to the NIC when the
		// RESEND arrives: it retransmits every one of them at level 7.
		at := g.t + us(30)
		for _, o := range m.offs {
			if o >= 40000 && o < off {
				b.data(at, r, true, 7, 100000, o, min(1424, 100000-o), min(off, 100000), 1, true)
				at += us(1)
			}
		}
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// earlyResend (BR-19): a 100-byte request whose DATA is held up for 4 ms
// before the server (a capture on the client's side sees it leave). Faulty
// (2 ms resend threshold): the client's RESEND overtakes it, the server
// answers RPC_UNKNOWN, the client restarts, and the server executes both
// copies. Clean: the response comes after 4 ms, before any RESEND.
func earlyResend(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	if !fault {
		b.respondAndAck(r, ms(4.1))
		return b
	}
	b.mark(b.resend(ms(2), r, true, 0, wire.ResendAll), "BR-19: RESEND 2 ms after the request")
	b.unknown(ms(2.02), r, false)
	b.data(ms(2.03), r, true, 7, 100, 0, 100, 100, 1, true)
	b.data(ms(2.1), r, false, 7, 100, 0, 100, 100, 1, false)
	b.mark(b.data(ms(4.1), r, false, 7, 100, 0, 100, 100, 1, false), "BR-19: second response: the request ran twice")
	b.needAck(ms(6.6), r)
	b.ack(ms(6.62), r)
	return b
}

// clientIgnoresResend (BR-21): a 2000-byte request, the server computes
// for 6 ms and sends a 30000-byte response; while the client receives it
// the server RESENDs the request's bytes (the 2020 restart left it without
// them). Faulty: the client ignores the RESEND. Clean: it retransmits.
// A second RPC 25 ms later ends the capture after the deadline.
func clientIgnoresResend(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 6, 2000, 0, 1424, 2000, 1, false)
	b.data(us(1), r, true, 6, 2000, 1424, 576, 2000, 1, false)
	t := ms(6)
	var rs int
	for off := uint32(0); off < 30000; off += 1424 {
		b.data(t, r, false, 4, 30000, off, min(1424, 30000-off), 30000, 1, false)
		if off == 8*1424 {
			rs = b.resend(t+us(1), r, false, 0, 2000)
		}
		t += us(1)
	}
	if fault {
		b.mark(rs, "BR-21: the client, receiving the response, never answers this RESEND")
	} else {
		b.data(ms(6)+us(12), r, true, 7, 2000, 0, 1424, 2000, 1, true)
		b.data(ms(6)+us(13), r, true, 7, 2000, 1424, 576, 2000, 1, true)
	}
	b.needAck(t+ms(2.5), r)
	b.ack(t+ms(2.52), r)
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(30), wire.AckEntry{})
	return b
}

// emptyProbe (BR-23): the client's uplink is busy (other RPCs): after a
// GRANT it sends nothing for 35 ms. The server probes with RESEND of
// length 0 at 5 and 10 ms. Faulty: the client does not answer, the server
// gives up on the RPC (no more packets from it; the client's late DATA
// gets nothing). Clean: the client answers BUSY and the RPC completes.
func emptyProbe(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 20000, stopAt: 50000, resumeAt: t + ms(35)})
	// The server's silence counts from the GRANT the client has not
	// used yet; its probes name the first byte it lacks.
	var g time.Duration
	var horizon, recv uint32
	for _, i := range m.grants {
		if b.pkts[i].t < t+ms(1) {
			g = max(g, b.pkts[i].t)
			horizon = max(horizon, b.pkts[i].f.(*wire.GrantFields).Offset)
		}
	}
	for _, o := range m.offs {
		if d := b.pkts[m.data[o]]; d.t < t+ms(1) {
			recv = max(recv, o+uint32(len(d.f.(*wire.DataFields).Payload)))
		}
	}
	// The server probes every 5 ticks while the client is silent;
	// faulty, it gives up after two unanswered probes.
	for k := 1; g+ms(5.1*float64(k)) < t+ms(35); k++ {
		if fault && k > 2 {
			break
		}
		at := g + ms(5.1*float64(k))
		// Clean: main asks for the tail it granted, [recv, horizon), and
		// the client, which has not sent it yet, answers BUSY. Faulty: the
		// 2020 design's zero-length probe, which the client ignores.
		i := b.resend(at, r, false, recv, horizon-recv)
		if fault {
			b.pkts[i].f.(*wire.ResendFields).Length = 0
		}
		if fault && k == 1 {
			b.mark(i, "BR-23: zero-length RESEND probe, never answered")
		}
		if !fault {
			b.busy(at+us(20), r, true)
		}
	}
	if fault {
		// The server has freed the RPC: the client's late DATA (up to
		// its old horizon) gets no GRANT; the capture ends 30 ms later
		// with a new RPC.
		keep := b.pkts[:0]
		for _, p := range b.pkts {
			if _, ok := p.f.(*wire.GrantFields); ok && p.t > t+ms(30) {
				continue
			}
			if d, ok := p.f.(*wire.DataFields); ok && p.t > t+ms(30) && d.Common.Sequence >= horizon {
				continue
			}
			keep = append(keep, p)
		}
		b.pkts = keep
		b.smallRPC(rpcOf(hostC, hostS, 6), b.lastTime()+ms(30), wire.AckEntry{})
		return b
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// oooResend (BR-24, 2024 variant): capture on the receiver's side, a
// sender with packets 3 µs apart (a 10 Gb/s link shared with other
// traffic). The first scheduled packet takes a slower path and arrives
// 110 µs late; the
// receiver (100 µs out-of-order window) RESENDs its range while DATA keeps
// arriving; the late original arrives, then the retransmission: a
// duplicate. Clean: the late packet just arrives late.
func oooResend(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, m := rpc100k(b, msgOpts{gap: us(3)}, hostC, hostS)
	const late = 40000
	i := m.data[late]
	next := b.pkts[m.data[late+1424]].t
	b.pkts[i].t += us(110)
	if fault {
		rs := b.resend(next+us(100), r, false, late, 1424)
		b.mark(rs, "BR-24: RESEND 100 µs after a gap appeared, DATA still flowing")
		b.data(next+us(112), r, true, 7, 100000, late, 1424, late+1424, 1, true)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// resendStorm (BR-24, 2020 variant): capture on the receiver's side; a
// scheduled packet was lost before it. The receiver RESENDs it 5 ms after
// the last DATA and, faulty, again every tick; the overloaded sender
// answers only after 4 ms. Clean: one RESEND, answered the same way.
func resendStorm(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, m := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}, capLost: true}, hostC, hostS)
	first := m.end + ms(5.1)
	n := 1
	if fault {
		n = 5
	}
	for k := 0; k < n; k++ {
		i := b.resend(first+time.Duration(k)*ms(1.02), r, false, lost, 1424)
		if fault && k == 1 {
			b.mark(i, "BR-24: second RESEND round one tick after the first, nothing heard in between")
		}
	}
	b.data(first+ms(4.2), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// sentTwice (BR-26): the sender's pacer is held up by other RPCs after
// 70000 bytes (GRANTs reached 100000); one packet below was lost. After
// 5 ms of silence the receiver RESENDs the gap and [71360, 100000). The
// sender retransmits the gap; the tail it has not sent yet: faulty, it
// sends it as retransmissions and later again as first transmissions;
// clean, it answers BUSY and later sends it once.
func sentTwice(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const gap = 40000 + 5*1424
	const stop = 40000 + 22*1424 // 71328
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2)),
		window: 40000, stopAt: stop, resumeAt: t + ms(8), lost: map[uint32]bool{gap: true}})
	var last time.Duration
	for _, o := range m.offs {
		if o < stop {
			last = max(last, b.pkts[m.data[o]].t)
		}
	}
	at := last + ms(5.1)
	if at > t+ms(8) {
		panic("sentTwice: pacer resumes before the RESEND")
	}
	b.resend(at, r, false, gap, 1424)
	b.resend(at, r, false, stop, 100000-stop)
	b.data(at+us(20), r, true, 7, 100000, gap, 1424, gap+1424, 1, true)
	if fault {
		tt := at + us(21)
		for o := uint32(stop); o < 100000; o += 1424 {
			i := b.data(tt, r, true, 7, 100000, o, min(1424, 100000-o), 100000, 1, true)
			if o == stop {
				b.mark(i, "BR-26: bytes never sent before go out as retransmissions ...")
			}
			tt += us(1)
		}
		b.mark(m.data[stop], "BR-26: ... and again as first transmissions")
	} else {
		b.busy(at+us(21), r, true)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// wrongRetxPayload (BR-28): a lost packet is retransmitted after the
// receiver's RESEND; faulty, its bytes come from 20 bytes (the IP header)
// further in the buffer. The payload is a position pattern (byte i of the
// message = i mod 251).
func wrongRetxPayload(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const lost = 40000 + 20*1424
	r, m := rpc100k(b, msgOpts{lost: map[uint32]bool{lost: true}}, hostC, hostS)
	pattern := func(off uint32, n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte((off + uint32(i)) % 251)
		}
		return p
	}
	for _, o := range m.offs {
		d := b.pkts[m.data[o]].f.(*wire.DataFields)
		d.Payload = pattern(o, len(d.Payload))
	}
	at := m.end + ms(5.1)
	b.resend(at, r, false, lost, 1424)
	i := b.data(at+us(20), r, true, 7, 100000, lost, 1424, lost+1424, 1, true)
	shift := uint32(0)
	if fault {
		shift = 20
		b.mark(i, "BR-28: payload taken 20 bytes too far into the buffer")
	}
	b.pkts[i].f.(*wire.DataFields).Payload = pattern(lost+shift, 1424)
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// timeoutKillsOthers (BR-30): client 1's RPCs 12 and 14 and client 2's
// RPC 20, all to the same server port, are in service for about 20 ms:
// each client RESENDs every 5.2 ms and the server answers BUSY. Faulty: at
// 15.6 ms another RPC of client 1 times out on the server and takes every
// RPC of that client with it: the server answers RPC_UNKNOWN for 12 and
// 14, client 1 restarts both requests and the server executes them again,
// while it goes on serving client 2's RPC 20 (BUSY at 16.2 ms, the
// response at 21 ms): the socket was not closed. Clean: BUSY, then the
// responses.
func timeoutKillsOthers(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	rs := []ends{rpcOf(hostC, hostS, 12), rpcOf(hostC, hostS, 14), rpcOf(hostC2, hostS, 20)}
	for i, r := range rs {
		b.data(us(300*float64(i)), r, true, 7, 100, 0, 100, 100, 1, false)
	}
	for k := 1; k <= 3; k++ {
		for i, r := range rs {
			at := ms(5.2*float64(k)) + us(300*float64(i))
			b.resend(at, r, true, 0, wire.ResendAll)
			switch {
			case fault && k == 3 && i == 0:
				b.mark(b.unknown(at+us(20), r, false), "BR-30: RPC_UNKNOWN for a live RPC answered with BUSY 5 ms earlier; the server keeps serving client 2's RPC 20")
				b.data(at+us(30), r, true, 7, 100, 0, 100, 100, 1, true)
			case fault && k == 3 && i == 1:
				b.unknown(at+us(20), r, false)
				b.data(at+us(30), r, true, 7, 100, 0, 100, 100, 1, true)
			default:
				b.busy(at+us(20), r, false)
			}
		}
	}
	b.respondAndAck(rs[0], ms(20))
	b.respondAndAck(rs[1], ms(20.3))
	b.respondAndAck(rs[2], ms(21))
	return b
}

// needAckIgnored (BR-32): a 100-byte request and a 10000-byte response
// (level 5). The application reads the response only after 24 ms. Faulty:
// the client ignores NEED_ACK (sent every tick) until then. Clean: it ACKs
// the first one.
func needAckIgnored(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	t := us(50)
	for off := uint32(0); off < 10000; off += 1424 {
		b.data(t, r, false, 5, 10000, off, min(1424, 10000-off), 10000, 1, false)
		t += us(1)
	}
	if !fault {
		b.needAck(t+ms(2.5), r)
		b.ack(t+ms(2.52), r)
		return b
	}
	for k := 0; k < 24; k++ {
		i := b.needAck(t+ms(2.5+float64(k)), r)
		switch k {
		case 0:
			b.mark(i, "BR-32: NEED_ACK; the client holds the whole response and stays silent for 23 ms")
		case 1:
			b.mark(i, "BR-32: second NEED_ACK, still no ACK")
		}
	}
	b.ack(t+ms(2.5+23)+us(20), r)
	return b
}

// bigFrame (BR-34): one DATA frame carries two segments' worth of bytes.
func bigFrame(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, m := rpc100k(b, msgOpts{}, hostC, hostS)
	if fault {
		// Merge the packets at 41424 and 42848 into one 2848-byte frame.
		i, j := m.data[41424], m.data[42848]
		b.pkts[i].f.(*wire.DataFields).Payload = make([]byte, 2848)
		b.mark(i, "BR-34: 2848-byte DATA frame, above the 1500-byte MTU")
		b.pkts = append(b.pkts[:j], b.pkts[j+1:]...)
	}
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// tsoDropped (BR-35): five RPCs of one client, one after the other, each
// a 100-byte request and a 30000-byte response (22 segments, sent in GSO
// frames), each followed by a 100-byte RPC. Faulty: the server's NIC
// drops every GSO frame, so no first transmission of a 30000-byte
// response reaches the wire; the client RESENDs {0, -1} after resend_ticks
// and the server retransmits every segment (single-segment packets, which
// pass), then NEED_ACK and ACK end the RPC. The server's other packets
// (the retransmissions, NEED_ACK, the 100-byte responses) arrive between
// the losses, so they are not one outage. Clean: the responses arrive.
func tsoDropped(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	const L = 30000
	t := time.Duration(0)
	for i := 0; i < 5; i++ {
		r := rpcOf(hostC, hostS, uint64(10+4*i))
		b.data(t, r, true, 7, 100, 0, 100, 100, 1, false)
		at, prio, retx := t+us(50), uint8(4), false
		if fault {
			b.resend(t+ms(5.2), r, true, 0, wire.ResendAll)
			at, prio, retx = t+ms(5.2)+us(20), 7, true
		}
		for off := uint32(0); off < L; off += 1424 {
			i := b.data(at, r, false, prio, L, off, min(1424, L-off), L, 1, retx)
			if fault && off == 0 {
				b.mark(i, fmt.Sprintf("BR-35: RPC %d's response arrives only in retransmissions: its GSO frames were dropped", r.id))
			}
			at += us(1)
		}
		t = b.needAckThenAck(r, at+ms(2.5))
		t = b.smallRPC(rpcOf(hostC, hostS, uint64(12+4*i)), t+us(100), wire.AckEntry{}) + us(100)
	}
	return b
}

// needAckThenAck adds the server's NEED_ACK for RPC r at t and the
// client's ACK 20 µs later; it returns the ACK's time.
func (b *capb) needAckThenAck(r ends, t time.Duration) time.Duration {
	b.needAck(t, r)
	b.ack(t+us(20), r)
	return t + us(20)
}

// portsFromAddresses (BR-49): the server 10.0.0.1 is the hardware
// implementation, the client a correct host. Faulty: the server's packets
// carry the low 16 bits of its and the client's address as ports (1 and
// 11) instead of the request's ports swapped; no socket has port 11 on
// the client, whose host answers ICMP port unreachable, RESENDs the
// response after resend_ticks and gets the same misaddressed retransmission.
// Clean: the response comes from 4000 to 32768. (Between two hosts with
// the same fault every packet is consistent: a bound socket may use a
// port below 32768, so only this mixed pair shows it on the wire.)
func portsFromAddresses(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	if !fault {
		b.respondAndAck(r, us(50))
		return b
	}
	bad := r
	bad.cport, bad.sport = 11, 1
	i := b.data(us(50), bad, false, 7, 100, 0, 100, 100, 1, false)
	b.mark(i, "BR-49: response from port 1 to port 11 (the low 16 bits of 10.0.0.1 and 10.0.0.11), not from 4000 to 32768")
	b.unreachable(i, us(60))
	b.resend(ms(5.2), r, true, 0, 100)
	b.unreachable(b.data(ms(5.22), bad, false, 7, 100, 0, 100, 100, 1, true), ms(5.23))
	return b
}

// hijackDoff0 (BR-37): TCP-hijacked traffic; the client's ACKs have doff
// 0, so the server's stack drops them and NEED_ACK repeats every tick.
func hijackDoff0(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	b.hijack = true
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	b.data(us(50), r, false, 7, 100, 0, 100, 100, 1, false)
	n := 1
	if fault {
		n = 5
	}
	for k := 0; k < n; k++ {
		at := us(50) + ms(2.5+float64(k))
		b.needAck(at, r)
		i := b.ack(at+us(20), r)
		if fault {
			b.pkts[i].raw = true // doff stays 0
			b.pkts[i].f.(*wire.AckFields).NumAcks = 1
			if k > 0 {
				// The first ACK took RPC 10's pending ack
				// (homa_peer_get_acks): the later ones name it in
				// their header only.
				b.pkts[i].f.(*wire.AckFields).Acks, b.pkts[i].f.(*wire.AckFields).NumAcks = nil, 0
			}
			if k == 0 {
				b.mark(i, "BR-37: hijacked ACK with doff 0 (TCP data offset < 5): dropped by the server's stack")
			}
		}
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(10), wire.AckEntry{})
	return b
}

// lengthOverflow (BR-39): normal 100-byte RPCs with injected malformed
// DATA from the client's address to the live server port.
func lengthOverflow(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.smallRPC(rpcOf(hostC, hostS, 10), 0, wire.AckEntry{})
	if fault {
		inj := func(at time.Duration, id uint64, length, off, n, incoming uint32, prio uint8, note string) {
			r := rpcOf(hostC, hostS, id)
			b.mark(b.data(at, r, true, prio, length, off, n, incoming, 1, false), note)
		}
		inj(t+ms(1), 100, 0x80000000, 0, 1424, 40000, 0, "BR-39: message_length 0x80000000")
		inj(t+ms(2), 102, 2000000, 0, 1424, 40000, 0, "BR-39: message_length 2000000")
		inj(t+ms(3), 104, 0, 0, 100, 0, 7, "BR-39: message_length 0")
		inj(t+ms(4), 106, 100000, 0x7FFFFF00, 1424, 40000, 4, "BR-39: offset 0x7FFFFF00")
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), t+ms(5), wire.AckEntry{}) // RPC 10's ack went in its ACK
	return b
}

// ackOverflow (BR-40): a server with a live RPC (computing its response)
// gets injected ACKs with num_acks 6 and 65535.
func ackOverflow(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	if fault {
		for k, n := range []uint16{6, 65535} {
			a := &wire.AckFields{NumAcks: n, Acks: []wire.AckEntry{{ClientID: 200, ServerPort: portS}, {ClientID: 202, ServerPort: portS},
				{ClientID: 204, ServerPort: portS}, {ClientID: 206, ServerPort: portS}, {ClientID: 208, ServerPort: portS}}}
			i := b.ctl(ms(1+float64(k)), rpcOf(hostC, hostS, 300), true, a)
			b.pkts[i].raw = true
			a.Common.Doff = wire.DoffControl
			b.mark(i, fmt.Sprintf("BR-40: injected ACK with num_acks %d", n))
		}
	}
	b.respondAndAck(r, ms(3))
	return b
}

// unboundPort (BR-42): a request to port 4001, where no socket is bound.
// Faulty (before 2020-10): the server drops it silently; the client RESENDs
// every 5 ms and gives up at 100 ms... the capture shows 5 rounds. Clean:
// ICMP port unreachable comes back and the client aborts the RPC.
func unboundPort(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	r.sport = 4001
	i := b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	if !fault {
		b.unreachable(i, us(20))
		// Another RPC to the bound port goes on.
		b.smallRPC(rpcOf(hostC, hostS, 12), ms(1), wire.AckEntry{})
		return b
	}
	for k := 1; k <= 5; k++ {
		j := b.resend(ms(5.2*float64(k)), r, true, 0, wire.ResendAll)
		if k == 1 {
			b.mark(j, "BR-42: request to an unbound port: no ICMP, RESENDs go unanswered")
		}
	}
	b.smallRPC(rpcOf(hostC, hostS, 12), ms(27), wire.AckEntry{})
	return b
}

// repeatOnePacket (BR-45): the receiver grants 8 packets beyond the
// unscheduled bytes (to 51392). Faulty: the sender transmits the packet at
// 40000 eight times and skips the rest; after 5 ms the receiver RESENDs
// [41424, 51392), which the sender retransmits; then the exchange goes on.
// Clean: the 8 packets, and the exchange goes on.
func repeatOnePacket(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	t := b.warmup(hostC, hostS, 0)
	r := rpcOf(hostC, hostS, 4)
	m := b.send(r, true, t+us(40), msgOpts{length: 100000, uprio: 4, cv: 1, ack: b.pigAck(rpcOf(hostC, hostS, 2))})
	const granted = 40000 + 8*1424
	g := m.end + us(5)
	b.grant(g, r, true, granted, 0)
	at := g + us(5)
	for k := 0; k < 8; k++ {
		off := uint32(40000 + k*1424)
		if fault {
			off = 40000
		}
		i := b.data(at, r, true, 0, 100000, off, 1424, 40000, 1, false)
		switch {
		case fault && k == 1:
			b.mark(i, "BR-45: the packet at 40000 again as a first transmission (a network duplicate would look the same)")
		case fault && k == 2:
			b.mark(i, "BR-45: the packet at 40000 a third time: the sender repeats it; 41424-51392 never sent")
		}
		at += us(1)
	}
	if fault {
		rs := at + ms(5.1)
		b.resend(rs, r, false, 41424, granted-41424)
		at = rs + us(20)
		for o := uint32(41424); o < granted; o += 1424 {
			b.data(at, r, true, 7, 100000, o, 1424, granted, 1, true)
			at += us(1)
		}
	}
	b.send(r, true, at+us(5), msgOpts{length: 100000, uprio: 4, cv: 1, window: 20000, from: granted, granted: granted})
	b.respondAndAck(r, b.lastTime()+us(30))
	return b
}

// resendUngranted (BR-47): two clients send 100000-byte requests; with
// max_overcommit 1 the receiver grants client 1 only, whose uplink is busy
// (a packet every 150 µs), so client 2 waits about 7 ms for its first
// GRANT. Faulty: 5 ms after client 2's last DATA the receiver RESENDs
// [40000, 60000) to it although it is not granting it, and client 2 sends
// those bytes as new data (a RESEND's range raises the horizon). Both
// then get the rest of their grants in turn.
func resendUngranted(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r1, r2 := rpcOf(hostC, hostS, 10), rpcOf(hostC2, hostS, 10)
	const L, U = 100000, 40000
	t := time.Duration(0)
	for off := uint32(0); off < U; off += 1424 {
		for _, r := range []ends{r1, r2} {
			b.data(t, r, true, 4, L, off, min(1424, U-off), U, 1, false)
			t += us(1)
		}
	}
	last2 := t - us(1)
	m := b.send(r1, true, t+us(3), msgOpts{length: L, uprio: 4, cv: 1, window: 20000, from: U, gap: us(150)})
	from := uint32(U)
	if fault {
		b.mark(b.resend(last2+ms(5.1), r2, false, U, 20000), "BR-47: RESEND to a message outside the grant set (client 1 holds the only slot)")
		at := last2 + ms(5.1) + us(20)
		for off := uint32(U); off < 60000; off += 1424 {
			b.data(at, r2, true, 0, L, off, 1424, U, 1, false)
			at += us(1)
		}
		from = 61360
	}
	b.send(r2, true, m.end+us(10), msgOpts{length: L, uprio: 4, cv: 1, window: 20000, from: from, granted: from})
	end := b.lastTime()
	b.respondAndAck(r1, m.end+us(30))
	b.respondAndAck(r2, end+us(30))
	return b
}

// resendForgotten (BR-48): the client's sender timer expired and it
// dropped RPC 4 after the unscheduled bytes and part of the granted ones.
// Faulty (no RPC_UNKNOWN in the ns-3 model): the receiver RESENDs every
// 5 ms for 170 ms, unanswered. Clean (main): the client answers
// RPC_UNKNOWN and the receiver drops the RPC.
func resendForgotten(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r, _ := rpc100k(b, msgOpts{stopAt: 61360}, hostC, hostS)
	end := b.lastTime()
	var g uint32
	for _, p := range b.pkts {
		if gf, ok := p.f.(*wire.GrantFields); ok {
			g = max(g, gf.Offset)
		}
	}
	if !fault {
		b.resend(end+ms(5.1), r, false, 61360, g-61360)
		b.unknown(end+ms(5.12), r, true)
		b.smallRPC(rpcOf(hostC, hostS, 6), end+ms(30), wire.AckEntry{})
		return b
	}
	for k := 0; k < 34; k++ {
		i := b.resend(end+ms(5.1+5*float64(k)), r, false, 61360, g-61360)
		if k == 0 {
			b.mark(i, "BR-48: RESEND for an RPC the sender has dropped; never answered")
		}
	}
	return b
}

// blackHole (BR-50): nothing from the server reaches the capture (proto
// 146 dropped on the way back, or the server is dead). The client RESENDs
// at 5 ms and every 5 ms, and aborts at 100 ms (silent). Clean: the
// server computes for 27 ms, answering the RESENDs with BUSY.
func blackHole(fault bool) *capb {
	b := newCap(wire.VersionCurrent)
	r := rpcOf(hostC, hostS, 10)
	b.data(0, r, true, 7, 100, 0, 100, 100, 1, false)
	if fault {
		for k := 1; k <= 19; k++ {
			i := b.resend(ms(5.1*float64(k)), r, true, 0, wire.ResendAll)
			if k == 1 {
				b.mark(i, "BR-50: RESEND with no answer from the server (black-holed)")
			}
		}
		b.smallRPC(rpcOf(hostC2, hostS, 10), ms(120), wire.AckEntry{})
		return b
	}
	for k := 1; k <= 5; k++ {
		b.resend(ms(5.1*float64(k)), r, true, 0, wire.ResendAll)
		b.busy(ms(5.1*float64(k))+us(20), r, false)
	}
	b.respondAndAck(r, ms(27))
	return b
}

// ---------------------------------------------------------------------------

// TestFaults runs every scenario of the catalog: the faulty capture must
// give exactly the listed rules at the listed first frames (or pass, for a
// missed fault), the clean twin must pass.
func TestFaults(t *testing.T) {
	cases := faultCases()
	dir := t.TempDir()
	for _, fc := range cases {
		t.Run(fc.id+"-"+fc.slug, func(t *testing.T) {
			bad := filepath.Join(dir, fc.file())
			faulty := fc.build(true)
			profile := "linux"
			if faulty.wire == wire.Version2024 {
				profile = "linux-2024"
			}
			notes, err := faulty.write(bad, fc.id+": "+fc.what)
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) == 0 {
				t.Errorf("no frame of the faulty capture is marked")
			}
			if fc.missed == "" && notes[fc.want[0].frame] == "" {
				t.Errorf("frame %d (first %s) is not a marked fault frame; marked: %v", fc.want[0].frame, fc.want[0].rule, notes)
			}
			good := filepath.Join(dir, "clean-"+fc.file())
			if _, err := fc.build(false).write(good, fc.id+" clean twin"); err != nil {
				t.Fatal(err)
			}
			assertFault(t, fc, bad, profile)
			c := checkCapture(t, good, fc.args...)
			if c.profile != profile {
				t.Errorf("clean twin checked as profile %s, want %s", c.profile, profile)
			}
			if len(fc.twinFalseAlarms) > 0 {
				// Known false alarms: exactly these, nothing else.
				if !sameHits(c, fc.twinFalseAlarms) {
					t.Errorf("clean twin: known false alarms %v (%s) changed; now exit %d:\n%s", fc.twinFalseAlarms, fc.twinWhy, c.code, c.summary())
				}
			} else if c.code != 0 || len(c.violations) > 0 {
				t.Errorf("clean twin: exit %d, want 0; violations:\n%s", c.code, c.summary())
			}
			if len(c.incRules) > 0 {
				t.Logf("clean twin: inconclusive %v", c.incRules)
			}
			if d := os.Getenv("HOMATEST_FAULTS_OUT"); d != "" {
				// Keep both captures for inspection.
				fc.build(true).write(filepath.Join(d, fc.file()), fc.id+": "+fc.what)
				fc.build(false).write(filepath.Join(d, "clean-"+fc.file()), fc.id+" clean twin")
			}
			committed := filepath.Join(faultsDir, fc.file())
			if *update {
				if err := os.MkdirAll(faultsDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if _, err := fc.build(true).write(committed, fc.id+": "+fc.what); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(committed); err != nil {
				t.Fatalf("%v (run go test -run TestFaults -update)", err)
			}
			assertFault(t, fc, committed, profile)
		})
	}
}

// assertFault checks the faulty capture at path against fc.
func assertFault(t *testing.T, fc faultCase, path, profile string) {
	t.Helper()
	c := checkCapture(t, path, fc.args...)
	if c.profile != profile {
		t.Errorf("%s: checked as profile %s, want %s", path, c.profile, profile)
	}
	if fc.missed != "" {
		if c.code != 0 || len(c.violations) > 0 {
			t.Errorf("%s: marked missed but check found (exit %d):\n%s", path, c.code, c.summary())
		}
		return
	}
	if c.code != ExitViolations {
		t.Errorf("%s: exit %d, want 1", path, c.code)
	}
	want := map[string]int{}
	for _, h := range fc.want {
		want[h.rule] = h.frame
	}
	for _, h := range fc.want {
		if f, ok := c.first[h.rule]; !ok {
			t.Errorf("%s: %s not violated, want first violation at frame %d", path, h.rule, h.frame)
		} else if f != h.frame {
			t.Errorf("%s: %s first violated at frame %d, want %d", path, h.rule, f, h.frame)
		}
	}
	for r, f := range c.first {
		if _, ok := want[r]; !ok {
			t.Errorf("%s: unexpected %s violation, first at frame %d", path, r, f)
		}
	}
	if t.Failed() {
		t.Logf("violations:\n%s", c.summary())
	}
}

// sameHits reports whether c has exactly the rules of want, each first
// violated at the frame given.
func sameHits(c checked, want []hit) bool {
	if len(c.first) != len(want) {
		return false
	}
	for _, h := range want {
		if c.first[h.rule] != h.frame {
			return false
		}
	}
	return true
}

// readmeRow is the line of the README table for fc.
func (fc faultCase) readmeRow() string {
	flagged := ""
	if fc.missed != "" {
		flagged = "missed: " + fc.missed
	} else {
		var hs []string
		for _, h := range fc.want {
			hs = append(hs, fmt.Sprintf("%s (frame %d)", h.rule, h.frame))
		}
		flagged = strings.Join(hs, ", ")
	}
	if len(fc.args) > 0 {
		flagged += "; with `" + strings.Join(fc.args, " ") + "`"
	}
	entry := fc.id
	if !strings.HasPrefix(fc.id, "BR-") {
		entry = "-"
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s |", fc.file(), entry, fc.what, flagged)
}

// TestFaultsCatalogReadme: every scenario's capture is listed in the
// README of testdata/faults with its current rules and frames, and every
// committed capture is a scenario. HOMATEST_FAULTS_README=1 prints the
// table rows.
func TestFaultsCatalogReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(faultsDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	var rows []string
	for _, fc := range faultCases() {
		if files[fc.file()] {
			t.Errorf("two scenarios write %s", fc.file())
		}
		files[fc.file()] = true
		rows = append(rows, fc.readmeRow())
		if !strings.Contains(string(readme), fc.readmeRow()) {
			t.Errorf("README.md lacks the row (or it is stale):\n%s", fc.readmeRow())
		}
	}
	if os.Getenv("HOMATEST_FAULTS_README") != "" {
		t.Logf("rows:\n%s", strings.Join(rows, "\n"))
	}
	got, _ := filepath.Glob(filepath.Join(faultsDir, "*.pcapng"))
	for _, f := range got {
		if !files[filepath.Base(f)] {
			t.Errorf("%s is not a scenario of faults_test.go", f)
		}
	}
}
