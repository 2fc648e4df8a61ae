package netem

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// NetemQdisc is what the kernel reports for one netem qdisc (its
// TCA_OPTIONS: struct tc_netem_qopt and the TCA_NETEM_* attributes of
// include/uapi/linux/pkt_sched.h), in real units: times in ns,
// probabilities as percentages (the kernel's u32 scaled by 100/2^32-1, as
// tc prints them).
type NetemQdisc struct {
	Handle string `json:"handle"`
	Parent string `json:"parent"`
	Limit  uint32 `json:"limit"`
	// DelayNS and JitterNS are TCA_NETEM_LATENCY64 and JITTER64 (or the
	// 32-bit tick values converted when the kernel sends no 64-bit ones).
	DelayNS  int64 `json:"delay_ns"`
	JitterNS int64 `json:"jitter_ns"`
	// LossPct is random loss; GE is set for the Gilbert-Elliott model
	// (TCA_NETEM_LOSS / NETEM_LOSS_GE).
	LossPct      float64    `json:"loss_pct"`
	GE           *NetemGE   `json:"gemodel,omitempty"`
	DuplicatePct float64    `json:"duplicate_pct"`
	ReorderPct   float64    `json:"reorder_pct"`
	ReorderCorr  float64    `json:"reorder_corr_pct"`
	CorruptPct   float64    `json:"corrupt_pct"`
	Gap          uint32     `json:"gap"`
	RateBytes    uint64     `json:"rate_bytes_per_s,omitempty"`
	raw          netemQopt  // the 32-bit fields as read
	attrs        []netemTLV // attributes as read
}

// NetemGE is netem's Gilbert-Elliott loss model as tc names it: p and r
// the transition probabilities, 1-h the loss in the bad state, 1-k the
// loss in the good state (percentages).
type NetemGE struct {
	P     float64 `json:"p_pct"`
	R     float64 `json:"r_pct"`
	OneMH float64 `json:"one_minus_h_pct"`
	OneMK float64 `json:"one_minus_k_pct"`
}

type netemQopt struct{ latency, limit, loss, gap, duplicate, jitter uint32 }

type netemTLV struct {
	typ uint16
	val []byte
}

// TCA_NETEM_* attribute types (pkt_sched.h) and NETEM_LOSS_GE.
const (
	tcaNetemCorr      = 1
	tcaNetemReorder   = 3
	tcaNetemCorrupt   = 4
	tcaNetemLoss      = 5
	tcaNetemRate      = 6
	tcaNetemRate64    = 8
	tcaNetemLatency64 = 10
	tcaNetemJitter64  = 11
	netemLossGEAttr   = 2
	netemQoptLen      = 24
)

// pct converts a netem probability (u32, 2^32-1 = certain) to a
// percentage.
func pct(v uint32) float64 { return 100 * float64(v) / math.MaxUint32 }

// ParseNetemOptions decodes a netem qdisc's TCA_OPTIONS payload. tickNS
// converts the 32-bit latency and jitter (psched ticks) when the 64-bit
// attributes are absent (kernels before 4.15). It never panics; a short
// payload is an error.
func ParseNetemOptions(b []byte, tickNS float64) (NetemQdisc, error) {
	var q NetemQdisc
	if len(b) < netemQoptLen {
		return q, fmt.Errorf("netem options: %d bytes, want at least %d (struct tc_netem_qopt)", len(b), netemQoptLen)
	}
	u := func(i int) uint32 { return binary.NativeEndian.Uint32(b[4*i:]) }
	q.raw = netemQopt{u(0), u(1), u(2), u(3), u(4), u(5)}
	q.Limit, q.Gap = q.raw.limit, q.raw.gap
	q.LossPct, q.DuplicatePct = pct(q.raw.loss), pct(q.raw.duplicate)
	q.DelayNS = int64(math.Round(float64(q.raw.latency) * tickNS))
	q.JitterNS = int64(math.Round(float64(q.raw.jitter) * tickNS))
	q.attrs = parseTLVs(b[netemQoptLen:])
	for _, a := range q.attrs {
		switch a.typ {
		case tcaNetemLatency64:
			if len(a.val) >= 8 {
				q.DelayNS = int64(binary.NativeEndian.Uint64(a.val))
			}
		case tcaNetemJitter64:
			if len(a.val) >= 8 {
				q.JitterNS = int64(binary.NativeEndian.Uint64(a.val))
			}
		case tcaNetemReorder:
			if len(a.val) >= 8 {
				q.ReorderPct = pct(binary.NativeEndian.Uint32(a.val))
				q.ReorderCorr = pct(binary.NativeEndian.Uint32(a.val[4:]))
			}
		case tcaNetemCorrupt:
			if len(a.val) >= 4 {
				q.CorruptPct = pct(binary.NativeEndian.Uint32(a.val))
			}
		case tcaNetemRate:
			if len(a.val) >= 4 && q.RateBytes == 0 {
				q.RateBytes = uint64(binary.NativeEndian.Uint32(a.val))
			}
		case tcaNetemRate64:
			if len(a.val) >= 8 {
				q.RateBytes = binary.NativeEndian.Uint64(a.val)
			}
		case tcaNetemLoss:
			for _, l := range parseTLVs(a.val) {
				if l.typ == netemLossGEAttr && len(l.val) >= 16 {
					v := func(i int) uint32 { return binary.NativeEndian.Uint32(l.val[4*i:]) }
					q.GE = &NetemGE{P: pct(v(0)), R: pct(v(1)), OneMH: pct(math.MaxUint32 - v(2)), OneMK: pct(v(3))}
				}
			}
		}
	}
	return q, nil
}

// parseTLVs splits a netlink attribute stream (struct nlattr: u16 length
// including the 4-byte header, u16 type, value padded to 4 bytes); it
// stops at the first malformed attribute.
func parseTLVs(b []byte) []netemTLV {
	var out []netemTLV
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		t := binary.NativeEndian.Uint16(b[2:]) & 0x3fff // drop NLA_F_NESTED / NET_BYTEORDER
		if l < 4 || l > len(b) {
			break
		}
		out = append(out, netemTLV{typ: t, val: b[4:l]})
		b = b[min(len(b), (l+3)&^3):]
	}
	return out
}

// String prints q the way tc -s qdisc show prints a netem qdisc (iproute2
// q_netem.c; see TCTime and TCPercent):
// "netem 10: parent 1:10 limit 1000 delay 5ms  1ms loss 5% ...".
func (q NetemQdisc) String() string {
	var b strings.Builder
	if q.Parent == "root" {
		fmt.Fprintf(&b, "netem %s root limit %d", q.Handle, q.Limit)
	} else {
		fmt.Fprintf(&b, "netem %s parent %s limit %d", q.Handle, q.Parent, q.Limit)
	}
	if q.DelayNS != 0 {
		fmt.Fprintf(&b, " delay %s", TCTime(q.DelayNS))
		if q.JitterNS != 0 {
			fmt.Fprintf(&b, "  %s", TCTime(q.JitterNS))
		}
	}
	if q.GE != nil {
		fmt.Fprintf(&b, " loss gemodel p %s r %s 1-h %s 1-k %s", TCPercent(q.GE.P), TCPercent(q.GE.R), TCPercent(q.GE.OneMH), TCPercent(q.GE.OneMK))
	} else if q.raw.loss != 0 {
		fmt.Fprintf(&b, " loss %s", TCPercent(q.LossPct))
	}
	if q.raw.duplicate != 0 {
		fmt.Fprintf(&b, " duplicate %s", TCPercent(q.DuplicatePct))
	}
	if q.ReorderPct != 0 {
		fmt.Fprintf(&b, " reorder %s", TCPercent(q.ReorderPct))
		if q.ReorderCorr != 0 {
			fmt.Fprintf(&b, " %s", TCPercent(q.ReorderCorr))
		}
	}
	if q.CorruptPct != 0 {
		fmt.Fprintf(&b, " corrupt %s", TCPercent(q.CorruptPct))
	}
	if q.RateBytes != 0 {
		fmt.Fprintf(&b, " rate %v", BitRate(q.RateBytes*8))
	}
	if q.Gap != 0 {
		fmt.Fprintf(&b, " gap %d", q.Gap)
	}
	return b.String()
}

// TCTime formats ns as tc (iproute2 6.1) prints netem times: whole
// microseconds (truncated) below 1 ms, else milliseconds or seconds with 3
// significant digits ("%.3g"). Measured against Debian's tc in the lab:
// 960 ns prints "0us", 98968 ns "98us", 1234567 ns "1.23ms".
func TCTime(ns int64) string {
	us := ns / 1000
	switch {
	case us >= 1e6:
		return cG(float64(us)/1e6, 3) + "s"
	case us >= 1000:
		return cG(float64(us)/1e3, 3) + "ms"
	}
	return fmt.Sprintf("%dus", us)
}

// TCPercent formats a percentage as tc does ("%g%%", 6 significant digits).
func TCPercent(p float64) string { return cG(p, 6) + "%" }

// cG is C's "%.Ng" (Go's %g agrees with it: N significant digits, no
// trailing zeros).
func cG(v float64, n int) string { return fmt.Sprintf("%.*g", n, v) }
