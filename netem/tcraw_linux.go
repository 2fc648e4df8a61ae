package netem

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/nsexec"
)

// RawQdisc is a leaf qdisc whose options the netlink library cannot
// express (bfifo with a byte limit; netem with a Gilbert-Elliott loss
// model); ApplyTC adds it with its own RTM_NEWQDISC request.
type RawQdisc struct {
	netlink.QdiscAttrs
	// Kind is the qdisc kind (TCA_KIND): "bfifo" or "netem".
	Kind string
	// Options is the whole TCA_OPTIONS attribute (header included) as the
	// kernel parses it for Kind.
	Options []byte
}

// Attrs returns the qdisc's attributes.
func (q *RawQdisc) Attrs() *netlink.QdiscAttrs { return &q.QdiscAttrs }

// Type returns Kind.
func (q *RawQdisc) Type() string { return q.Kind }

// bfifoLeaf is a byte-limited FIFO (sch_fifo bfifo, struct tc_fifo_qopt:
// one u32 limit in bytes, host order).
func bfifoLeaf(a netlink.QdiscAttrs, limitBytes int) *RawQdisc {
	opt := binary.NativeEndian.AppendUint32(nil, uint32(limitBytes))
	return &RawQdisc{QdiscAttrs: a, Kind: "bfifo", Options: nl.NewRtAttr(nl.TCA_OPTIONS, opt).Serialize()}
}

// Netem attributes the netlink library does not name (linux
// include/uapi/linux/pkt_sched.h: TCA_NETEM_LOSS's nested NETEM_LOSS_GE
// carries struct tc_netem_gemodel {p, r, h, k1}, u32 probabilities scaled
// to 2^32-1).
const (
	netemLossGE = 2
)

// prob32 scales a probability to the kernel's u32 fixed point.
func prob32(p float64) uint32 { return uint32(math.Round(p * math.MaxUint32)) }

// netemGELeaf is a netem leaf with the options of n (as the netlink
// library serialises them) plus a Gilbert-Elliott loss model: p moves
// good to bad, r bad to good, a frame is lost with probability 1-h in the
// bad state and k1 in the good one (sch_netem.c loss_gilb_ell; tc's
// "loss gemodel p r 1-h 1-k"). So h = 1-LossBad and k1 = LossGood. netem
// moves the chain before it decides a frame's fate, the switch after;
// both give the same loss rate and burst lengths.
func netemGELeaf(n *netlink.Netem, l LossConfig) *RawQdisc {
	opt := nl.TcNetemQopt{Latency: n.Latency, Limit: n.Limit, Gap: n.Gap, Duplicate: n.Duplicate, Jitter: n.Jitter}
	options := nl.NewRtAttr(nl.TCA_OPTIONS, opt.Serialize())
	if n.CorruptProb > 0 {
		c := nl.TcNetemCorrupt{Probability: n.CorruptProb}
		options.AddRtAttr(nl.TCA_NETEM_CORRUPT, c.Serialize())
	}
	if n.ReorderProb > 0 {
		r := nl.TcNetemReorder{Probability: n.ReorderProb}
		options.AddRtAttr(nl.TCA_NETEM_REORDER, r.Serialize())
	}
	ge := make([]byte, 0, 16)
	for _, v := range []float64{l.P, l.R, 1 - l.LossBad, l.LossGood} {
		ge = binary.NativeEndian.AppendUint32(ge, prob32(v))
	}
	loss := options.AddRtAttr(nl.TCA_NETEM_LOSS|unix.NLA_F_NESTED, nil)
	loss.AddRtAttr(netemLossGE, ge)
	return &RawQdisc{QdiscAttrs: n.QdiscAttrs, Kind: "netem", Options: options.Serialize()}
}

// addRawQdisc adds q in namespace ns.
func addRawQdisc(ns netns.NsHandle, q *RawQdisc) error {
	return nsexec.Do(ns, func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(q.LinkIndex), Handle: q.Handle, Parent: q.Parent})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(q.Kind)))
		req.AddRawData(q.Options)
		if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
			return fmt.Errorf("add %s qdisc %s: %w", q.Kind, netlink.HandleStr(q.Handle), err)
		}
		return nil
	})
}
