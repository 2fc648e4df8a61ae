package homa_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// drain takes every packet m may send at now.
func drain(m *homa.Machine, now time.Duration) []homa.Transmit {
	var out []homa.Transmit
	for {
		t, ok := m.PollTransmit(now)
		if !ok {
			return out
		}
		out = append(out, t)
	}
}

func decode(t *testing.T, pkt []byte) wire.Packet {
	t.Helper()
	p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMachineSilentServer drives a client machine by hand against a
// server that never answers: the request leaves at once, the first RESEND
// comes at the resend_ticks-th tick, one more every resend_interval ticks,
// and the call ends with ErrTimeout at the timeout_ticks-th tick, each at
// the exact tick (Deadline names every one of them).
func TestMachineSilentServer(t *testing.T) {
	p := homa.DefaultParams()
	m, err := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := m.Dial()
	id, err := m.Call(0, port, netip.AddrPortFrom(peerAddr, 4000), make([]byte, 100))
	if err != nil {
		t.Fatal(err)
	}
	if out := drain(m, 0); len(out) != 1 || decode(t, out[0].Packet).Type() != wire.TypeData || out[0].Dst != peerAddr {
		t.Fatalf("at 0: %d packets, want the request's DATA", len(out))
	}
	var resends []int
	for {
		d, ok := m.Deadline()
		if !ok {
			t.Fatal("no deadline while the call waits")
		}
		if d%p.Tick != 0 {
			t.Fatalf("deadline %v is not a tick", d)
		}
		m.HandleTimeout(d)
		for _, tr := range drain(m, d) {
			if pk := decode(t, tr.Packet); pk.Type() == wire.TypeResend {
				resends = append(resends, int(d/p.Tick))
			}
		}
		if e, ok := m.PollEvent(); ok {
			if e.Kind != homa.EventCallDone || e.ID != id || !errors.Is(e.Err, homa.ErrTimeout) {
				t.Fatalf("event %+v, want the call's timeout", e)
			}
			if tick := int(d / p.Tick); tick != p.TimeoutTicks {
				t.Errorf("timed out at tick %d, want %d (timeout_ticks)", tick, p.TimeoutTicks)
			}
			break
		}
	}
	want := []int{}
	for k := p.ResendTicks; k < p.TimeoutTicks; k += p.ResendInterval {
		want = append(want, k)
	}
	if len(resends) != len(want) {
		t.Fatalf("RESENDs at ticks %v, want %v", resends, want)
	}
	for i := range want {
		if resends[i] != want[i] {
			t.Fatalf("RESENDs at ticks %v, want %v", resends, want)
		}
	}
}

// TestMachinePacer: with LinkRate set, PollTransmit hands out DATA while
// the link time handed out ends at most the pacer backlog after now, then
// Deadline names the time the next packet may go; following the
// deadlines sends the whole message at the link rate.
func TestMachinePacer(t *testing.T) {
	p := homa.DefaultParams()
	p.UnschedBytes, p.LinkRate = 1000000, 100e6
	p.DeferMinBytes = 0 // the last 320 bytes would leave past the pacer (TestMachineDeferMinBytes)
	backlog := 20 * time.Microsecond
	m, _ := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p, PacerBacklog: backlog}, 0)
	port, _ := m.Dial()
	if _, err := m.Call(0, port, netip.AddrPortFrom(peerAddr, 4000), make([]byte, 100000)); err != nil {
		t.Fatal(err)
	}
	pktTime := time.Duration((1424 + 14 + 20 + wire.DataHeaderLen) * 8 * int64(time.Second) / p.LinkRate) // 121.12 µs
	now, sent, handed := time.Duration(0), 0, time.Duration(0)
	for sent < 100000 {
		out := drain(m, now)
		for _, tr := range out {
			sent += decode(t, tr.Packet).Data().DataLen()
		}
		if len(out) > 0 {
			// The link was busy from the start: the pacer's estimate of
			// when it frees is the link time handed out so far.
			handed += time.Duration(len(out)) * pktTime
			if ahead := handed - now; ahead > backlog+pktTime {
				t.Fatalf("at %v the pacer handed out %v of link time, %v ahead (backlog %v)", now, handed, ahead, backlog)
			}
		}
		d, _ := m.Deadline()
		if next := handed - backlog; sent < 100000 && d != next && d != (now/p.Tick+1)*p.Tick {
			t.Fatalf("at %v with %d bytes left the deadline is %v, want the pacer's %v or the next tick", now, 100000-sent, d, next)
		}
		if d <= now {
			t.Fatalf("deadline %v at %v: no progress", d, now)
		}
		now = d
		m.HandleTimeout(now)
	}
	// 71 packets: the last goes when the first 70 are on the link, less
	// the backlog.
	if min := 70*pktTime - backlog - pktTime; now < min {
		t.Errorf("100,000 bytes left by %v, want not before %v at 100 Mbit/s", now, min)
	}
}

// TestMachineRestartAtOnce: a client told RPC_UNKNOWN restarts its request
// at once from the handler, past the pacer (HomaModule
// homa_rpc_unknown_pkt calls homa_resend_data): every packet sent so far
// leaves with retransmit=1 at the unscheduled level of the cutoffs it
// carries (a new peer's table, version 0), before the pacer sends anything
// else (facts RTX-09, CUT-02, CUT-03). Queued behind new data, a restart
// could come after response_timeout, or never once the response had
// completed the RPC (HOMA-RESEND-007, found by a false-positive hunt). A
// RESEND for restarted bytes is answered again at its own priority.
func TestMachineRestartAtOnce(t *testing.T) {
	m, p, common, restart, step, now := restartedCall(t)
	if len(restart) != 2 {
		t.Fatalf("restart in %d packets at once, want both", len(restart))
	}
	for i, tr := range restart {
		d := decode(t, tr.Packet).Data()
		if d.Retransmit() != 1 || d.Offset() != uint32(i*1424) || d.CutoffVersion() != 0 || tr.Prio != uint8(p.NumPriorities-2) {
			t.Errorf("restart packet %d: offset %d retransmit %d cutoff_version %d priority %d, want offset %d, 1, 0, %d",
				i, d.Offset(), d.Retransmit(), d.CutoffVersion(), tr.Prio, i*1424, p.NumPriorities-2)
		}
	}
	resend, _ := (&wire.ResendFields{Common: common, Offset: 1424, Length: 1384, Priority: 7}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	m.HandlePacket(*now, peerAddr, 7, resend)
	answer := append(drain(m, *now), step()...)
	if len(answer) != 1 || decode(t, answer[0].Packet).Data().Offset() != 1424 || answer[0].Prio != 7 {
		t.Fatalf("the RESEND was answered with %d packets, want the one at offset 1424 at priority 7", len(answer))
	}
}

// restartedCall sets up a paced client (1 Gbit/s: a restart's packets
// leave one by one) whose 2808-byte request (two packets) went out and
// which then got RPC_UNKNOWN from the server. It returns the machine, the
// request's common header as the server sends it, what the machine sent
// at once on RPC_UNKNOWN (the restart), and step, which runs the machine's timers
// for as long as they come within 50 µs of each other and returns what it
// sent, and the machine's clock.
func restartedCall(t *testing.T) (m *homa.Machine, p homa.Params, common wire.CommonFields, first []homa.Transmit, step func() []homa.Transmit, now *time.Duration) {
	t.Helper()
	p = homa.DefaultParams()
	p.LinkRate = 1e9
	m, err := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p, PacerBacklog: homa.HomaBacklog}, 0)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := m.Dial()
	const n = 2808 // two packets; level 6 by a new peer's table, 5 by the default cutoffs (2800 < n <= 15000)
	id, err := m.Call(0, port, netip.AddrPortFrom(peerAddr, 4000), make([]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	now = new(time.Duration)
	step = func() []homa.Transmit {
		var out []homa.Transmit
		for range 100 {
			out = append(out, drain(m, *now)...)
			d, ok := m.Deadline()
			if !ok || d > *now+50*time.Microsecond {
				return out
			}
			*now = d
			m.HandleTimeout(d)
		}
		return out
	}
	if out := step(); len(out) != 2 {
		t.Fatalf("the request left in %d packets, want 2", len(out))
	}
	common = wire.CommonFields{Sport: 4000, Dport: port, SenderID: id + 1}
	unknown, _ := (&wire.RPCUnknownFields{Common: common}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	m.HandlePacket(*now, peerAddr, 7, unknown)
	return m, p, common, drain(m, *now), step, now
}

// TestMachineGrantsMessageRecreatedShort: a request re-created at the
// server by a retransmission (incoming = the end of the RESEND's range,
// 1424 of 2048 bytes: the server had aborted the RPC) is grantable
// although it is shorter than unsched_bytes (HomaModule
// homa_grant_init_rpc: grantable when incoming < length), so the server
// GRANTs the rest. Before, it waited for its own GRANT forever, answering
// the client's RESENDs with BUSY (an RPC silent for 10 s in an overloaded
// 8-host simulation).
func TestMachineGrantsMessageRecreatedShort(t *testing.T) {
	p := homa.DefaultParams()
	m := listeningMachine(t, p)
	common := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}
	data, _ := (&wire.DataFields{Common: common, MessageLength: 2048, Incoming: 1424, SegOffset: 0, Retransmit: 1,
		Payload: make([]byte, 1424)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	m.HandlePacket(0, peerAddr, 7, data)
	var out []homa.Transmit
	for now := time.Duration(0); now <= 3*p.Tick; now += p.Tick {
		m.HandleTimeout(now)
		out = append(out, drain(m, now)...)
	}
	for _, tr := range out {
		if pk := decode(t, tr.Packet); pk.Type() == wire.TypeGrant && pk.Grant().Offset() == 2048 {
			return
		}
	}
	t.Errorf("no GRANT to offset 2048 for a 2048-byte request created with incoming 1424 (sent %d packets)", len(out))
}

// TestMachineDeferMinBytes: behind a backlogged link (a 100,000-byte
// request paced at 100 Mbit/s), a request of at most defer_min_bytes
// leaves at once, past the pacer (homa_xmit_data checks the NIC queue only
// for messages with more bytes left), while a longer one waits for the
// pacer like the first.
func TestMachineDeferMinBytes(t *testing.T) {
	p := homa.DefaultParams()
	p.UnschedBytes, p.LinkRate = 1000000, 100e6
	m, _ := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p, PacerBacklog: 20 * time.Microsecond}, 0)
	port, _ := m.Dial()
	dst := netip.AddrPortFrom(peerAddr, 4000)
	if _, err := m.Call(0, port, dst, make([]byte, 100000)); err != nil {
		t.Fatal(err)
	}
	drain(m, 0)
	lengths := func(out []homa.Transmit) []uint32 {
		var l []uint32
		for _, tr := range out {
			if pk := decode(t, tr.Packet); pk.Type() == wire.TypeData {
				l = append(l, pk.Data().MessageLength())
			}
		}
		return l
	}
	now := 10 * time.Microsecond
	if _, err := m.Call(now, port, dst, make([]byte, p.DeferMinBytes+1)); err != nil {
		t.Fatal(err)
	}
	if got := lengths(drain(m, now)); len(got) != 0 {
		t.Fatalf("a %d-byte request behind a backlogged link: DATA of lengths %v left at once, want none", p.DeferMinBytes+1, got)
	}
	if _, err := m.Call(now, port, dst, make([]byte, p.DeferMinBytes)); err != nil {
		t.Fatal(err)
	}
	if got := lengths(drain(m, now)); len(got) != 1 || got[0] != uint32(p.DeferMinBytes) {
		t.Fatalf("a %d-byte request behind a backlogged link: DATA of lengths %v left at once, want its one packet", p.DeferMinBytes, got)
	}
}

// listeningMachine returns a machine with parameters p serving port 4000.
func listeningMachine(t *testing.T, p homa.Params) *homa.Machine {
	t.Helper()
	m, err := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(4000); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMachineCutoffsOncePerJiffy: DATA with a stale cutoff_version draws
// CUTOFFS at most once per jiffy (1 ms) per peer, however short the timer's
// tick (homa_data_pkt compares jiffies): with tick_ns 100 µs, stale DATA at
// 0, 0.1, 0.5 and 0.99 ms draw one CUTOFFS, at 1.0 and 1.7 ms one more.
func TestMachineCutoffsOncePerJiffy(t *testing.T) {
	p := homa.DefaultParams()
	p.Tick = 100 * time.Microsecond
	m := listeningMachine(t, p)
	var at []time.Duration
	for i, now := range []time.Duration{0, 100 * time.Microsecond, 500 * time.Microsecond, 990 * time.Microsecond, time.Millisecond, 1700 * time.Microsecond} {
		common := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: uint64(100 + 2*i)}
		data, _ := (&wire.DataFields{Common: common, MessageLength: 100, Incoming: 100, CutoffVersion: p.CutoffVersion + 1,
			Payload: make([]byte, 100)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		m.HandleTimeout(now)
		m.HandlePacket(now, peerAddr, 7, data)
		for _, tr := range drain(m, now) {
			if decode(t, tr.Packet).Type() == wire.TypeCutoffs {
				at = append(at, now)
			}
		}
	}
	if len(at) != 2 || at[0] != 0 || at[1] != time.Millisecond {
		t.Errorf("CUTOFFS at %v, want at 0 and 1ms", at)
	}
}

// TestMachineNewPeerLevel: before a peer's CUTOFFS arrive its table is
// HomaModule's new-peer table {[7]=0, [6]=INT_MAX} (homa_peer_alloc), so
// with 7 or 8 priority levels a request's unscheduled DATA goes at level 6
// (homa_unsched_priority scans from num_priorities-1 down); with fewer,
// where HomaModule reads past the table, the ref uses num_priorities-2.
func TestMachineNewPeerLevel(t *testing.T) {
	for _, tc := range []struct {
		numPrio, sched int
		want           uint8
	}{{8, 3, 6}, {7, 3, 6}, {6, 3, 4}, {4, 0, 2}} {
		p := homa.DefaultParams()
		p.NumPriorities, p.MaxSchedPrio = tc.numPrio, tc.sched
		m, err := homa.NewMachine(homa.MachineConfig{Addr: iutAddr, Params: p}, 0)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := m.Dial()
		if _, err := m.Call(0, port, netip.AddrPortFrom(peerAddr, 4000), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		out := drain(m, 0)
		if len(out) != 1 {
			t.Fatalf("num_priorities %d: the request left in %d packets, want 1", tc.numPrio, len(out))
		}
		if out[0].Prio != tc.want {
			t.Errorf("num_priorities %d: request DATA at level %d, want %d", tc.numPrio, out[0].Prio, tc.want)
		}
	}
}

// TestMachineFirstNeedAck: a server whose five responses to one client
// stay unacknowledged repeats their NEED_ACKs every tick, up to
// MaxAcksPerPkt per client per tick; a sixth response to that client
// still gets its first NEED_ACK request_ack_ticks ticks after it is sent
// (homa_timer_check_rpc asks for every RPC on every pass): the cap did
// not hold it back for good.
func TestMachineFirstNeedAck(t *testing.T) {
	p := homa.DefaultParams()
	m := listeningMachine(t, p)
	now := time.Duration(0)
	serve := func(id uint64) {
		common := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: id}
		data, _ := (&wire.DataFields{Common: common, MessageLength: 100, Incoming: 100, CutoffVersion: p.CutoffVersion,
			Payload: make([]byte, 100)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		m.HandlePacket(now, peerAddr, 7, data)
		e, ok := m.PollEvent()
		if !ok || e.Kind != homa.EventRequest {
			t.Fatalf("request %d: event %+v, want the request", id, e)
		}
		if err := m.Reply(now, e.Request, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		drain(m, now)
	}
	// tick runs the timer passes up to n ticks on and returns the RPC
	// ids the NEED_ACKs named, pass by pass.
	tick := func(n int) [][]uint64 {
		var passes [][]uint64
		for range n {
			now += p.Tick
			m.HandleTimeout(now)
			var ids []uint64
			for _, tr := range drain(m, now) {
				if pk := decode(t, tr.Packet); pk.Type() == wire.TypeNeedAck {
					ids = append(ids, wire.ClientID(pk.SenderID()))
				}
			}
			passes = append(passes, ids)
		}
		return passes
	}
	for id := uint64(100); id < 110; id += 2 {
		serve(id)
	}
	if passes := tick(p.RequestAckTicks + 2); len(passes[len(passes)-1]) != wire.MaxAcksPerPkt {
		t.Fatalf("NEED_ACKs by pass %v, want %d in the last", passes, wire.MaxAcksPerPkt)
	}
	serve(110)
	for _, ids := range tick(p.RequestAckTicks + 1) {
		for _, id := range ids {
			if id == 110 {
				return
			}
		}
	}
	t.Errorf("no NEED_ACK for RPC 110 within %d ticks of its response", p.RequestAckTicks+1)
}
