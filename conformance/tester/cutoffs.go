package tester

import (
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// CutoffsHost is a tester host's side of the cutoff_version exchange: its
// unscheduled cutoffs and cutoff_version, and when it last sent CUTOFFS to
// each peer. A Peer given one (AnswerCutoffs) answers every DATA whose
// cutoff_version differs from Version with a CUTOFFS packet carrying Table
// and Version to the DATA's source, at most once per Tick per source, as a
// HomaModule receiver does (homa_incoming.c homa_data_pkt: on a version
// mismatch, unless the peer's last CUTOFFS went out in the current jiffy;
// facts CUT-01). The Peer keeps no RPC state, so it also answers the stale
// DATA HomaModule drops before that check (a message already complete, an
// RPC it no longer has): still one CUTOFFS per stale DATA at most, which
// HOMA-CUTOFF-003 allows. Share one CutoffsHost among the Peers of one
// tester host so the once-per-tick limit holds across them. Safe for
// concurrent use; create with NewCutoffsHost.
type CutoffsHost struct {
	mu       sync.Mutex
	table    [wire.NumCutoffs]uint32
	version  uint16
	priority uint8
	tick     time.Duration
	last     map[netip.Addr]int64 // jiffy of the last CUTOFFS to each peer
}

// NewCutoffsHost returns a host holding cutoffs table and version, sending
// its CUTOFFS at IP priority prio (HomaModule: num_priorities-1, the
// control level) at most once per tick per peer (HomaModule: one jiffy;
// tick <= 0 means 1 ms).
func NewCutoffsHost(table [wire.NumCutoffs]uint32, version uint16, prio uint8, tick time.Duration) *CutoffsHost {
	if tick <= 0 {
		tick = time.Millisecond
	}
	return &CutoffsHost{table: table, version: version, priority: prio, tick: tick, last: map[netip.Addr]int64{}}
}

// Set replaces the host's cutoffs and version (as a sysctl write of
// unsched_cutoffs does on a HomaModule host); later answers carry them.
func (h *CutoffsHost) Set(table [wire.NumCutoffs]uint32, version uint16) {
	h.mu.Lock()
	h.table, h.version = table, version
	h.mu.Unlock()
}

// answer returns the CUTOFFS to send for received packet r and its
// priority, or false when r owes none: not DATA, DATA carrying the host's
// version, or a CUTOFFS to r's source already sent in this tick (jiffy
// number r.At/tick, as HomaModule compares jiffies). The CUTOFFS names
// the DATA's RPC from the receiver's side (ports swapped, the sender_id's
// low bit flipped), as homa_xmit_control does.
func (h *CutoffsHost) answer(r *Packet) (*wire.CutoffsFields, uint8, bool) {
	if r.Sent || r.Pkt.Type() != wire.TypeData {
		return nil, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Pkt.Data().CutoffVersion() == h.version {
		return nil, 0, false
	}
	j := r.At.UnixNano() / int64(h.tick)
	if last, ok := h.last[r.Src]; ok && last == j {
		return nil, 0, false
	}
	h.last[r.Src] = j
	c := r.Pkt.Common()
	return &wire.CutoffsFields{Common: wire.CommonFields{Sport: c.Dport(), Dport: c.Sport(), SenderID: r.Pkt.SenderID() ^ 1},
		UnschedCutoffs: h.table, CutoffVersion: h.version}, h.priority, true
}

// AnswerCutoffs makes p answer stale DATA with CUTOFFS as host h does (see
// CutoffsHost); nil stops the answers. Without it a Peer sends only what
// its test sends.
func (p *Peer) AnswerCutoffs(h *CutoffsHost) {
	p.mu.Lock()
	p.cutoffs = h
	p.mu.Unlock()
}
