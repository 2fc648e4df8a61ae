package netem

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TCObjects are the kernel objects the tc backend builds for one
// interface, in the order they are added: the root HTB qdisc, its classes
// (1:1 at the link rate, then one class 1:(0x10+q) per priority queue q,
// where a higher queue has a higher HTB priority), a leaf qdisc per queue
// class (netem when the config needs it and the kernel has it, else pfifo)
// and u32 filters that send each Homa priority (IPv4 TOS>>5, IPv6 traffic
// class>>5) to its queue's class. A leaf is a *RawQdisc where the netlink
// library cannot say what it needs: bfifo limited to BufferBytes (when no
// netem leaf is needed), netem with a Gilbert-Elliott loss model.
//
// BufferBytes applies to each priority queue's leaf: the kernel has no
// buffer shared by several qdiscs, so with n queues up to n*BufferBytes
// can wait in the port (with one queue the limit is exact). netem leaves
// take the limit in packets (BufferBytes/1514).
type TCObjects struct {
	Root    netlink.Qdisc
	Classes []netlink.Class
	Leaves  []netlink.Qdisc
	Filters []netlink.Filter
}

// unlimitedRate stands in for "no rate limit" in HTB, which needs a rate.
const unlimitedRate = 100 * Gbit

// htbBurst is the HTB bucket depth in time at the link rate: how late the
// kernel's dequeue (HTB's watchdog timer, then the NET_TX softirq) may run
// without the link losing rate, since tokens beyond the bucket are lost.
// The netlink library's default (rate/Hz() + 1600 bytes, where Hz() is
// 1e9 on a high-resolution-timer kernel, so 1600 bytes at any rate) is 13
// µs at 1 Gbit/s: measured -33% with 9014-byte frames. The cost: after an
// idle period up to this much goes out back to back.
const htbBurst = time.Millisecond

// htbBucket returns the HTB bucket in bytes for rate (bit/s): htbBurst at
// rate, at least 1600 bytes (one full frame, the library's default).
func htbBucket(rate uint64) uint32 {
	return uint32(max(1600, rate/8*uint64(htbBurst)/uint64(time.Second)))
}

// minClassRate is each priority class's guaranteed rate; the rest of the
// link is lent in strict priority order (HTB prio).
const minClassRate = 100 * Kbit

// BuildTC builds (without applying) the objects for cfg on the interface
// with index linkIndex, for a kernel with features k. It fails with one
// line per feature when k.Missing(cfg) is not empty.
func BuildTC(linkIndex int, cfg LinkConfig, k KernelFeatures) (*TCObjects, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m := k.Missing(cfg); len(m) > 0 {
		return nil, &UnsupportedError{Lines: m}
	}
	rate := uint64(cfg.Rate)
	if rate == 0 {
		rate = uint64(unlimitedRate)
	}
	o := &TCObjects{}
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: linkIndex, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	root.Defcls = 0x10 + uint32(cfg.Queue(0))
	o.Root = root
	o.Classes = append(o.Classes, netlink.NewHtbClass(
		netlink.ClassAttrs{LinkIndex: linkIndex, Parent: netlink.MakeHandle(1, 0), Handle: netlink.MakeHandle(1, 1)},
		netlink.HtbClassAttrs{Rate: rate, Ceil: rate, Buffer: htbBucket(rate), Cbuffer: htbBucket(rate)}))
	n := cfg.Queues()
	limit := uint32(max(1, cfg.buffer()/1514))
	for q := range n {
		minor := uint16(0x10 + q)
		o.Classes = append(o.Classes, netlink.NewHtbClass(
			netlink.ClassAttrs{LinkIndex: linkIndex, Parent: netlink.MakeHandle(1, 1), Handle: netlink.MakeHandle(1, minor)},
			netlink.HtbClassAttrs{Rate: uint64(min(minClassRate, BitRate(rate)/BitRate(n))), Ceil: rate, Cbuffer: htbBucket(rate), Prio: uint32(n - 1 - q), Quantum: 1514}))
		leaf := netlink.QdiscAttrs{LinkIndex: linkIndex, Parent: netlink.MakeHandle(1, minor), Handle: netlink.MakeHandle(minor, 0)}
		switch {
		case needsNetem(cfg, k):
			n := netlink.NewNetem(leaf, netlink.NetemQdiscAttrs{
				Latency: uint32(cfg.Delay.Microseconds()), Jitter: uint32(cfg.Jitter.Microseconds()),
				Loss: float32(cfg.Loss.Probability * 100), Duplicate: float32(cfg.Duplicate * 100),
				ReorderProb: float32(cfg.Reorder.Probability * 100), Gap: uint32(cfg.Reorder.Gap),
				CorruptProb: float32(cfg.Corrupt * 100), Limit: limit})
			if cfg.Loss.isGE() {
				o.Leaves = append(o.Leaves, netemGELeaf(n, cfg.Loss))
			} else {
				o.Leaves = append(o.Leaves, n)
			}
		case cfg.BufferBytes > 0:
			o.Leaves = append(o.Leaves, bfifoLeaf(leaf, cfg.BufferBytes))
		default:
			o.Leaves = append(o.Leaves, &netlink.GenericQdisc{QdiscAttrs: leaf, QdiscType: "pfifo"})
		}
	}
	for p := range uint8(MaxPriorities) {
		cls := netlink.MakeHandle(1, uint16(0x10+cfg.Queue(p)))
		o.Filters = append(o.Filters, tosFilter(linkIndex, p, cls, false), tosFilter(linkIndex, p, cls, true))
	}
	return o, nil
}

// needsNetem reports whether c needs netem leaves on a kernel with k
// (random loss goes to nftables when the kernel has no netem).
func needsNetem(c LinkConfig, k KernelFeatures) bool {
	loss := c.Loss.Model != "" && c.Loss.Model != "none" && !k.lossByNFT(c)
	return c.Delay > 0 || c.Jitter > 0 || loss || c.Duplicate > 0 || c.Reorder.Probability > 0 || c.Corrupt > 0
}

// tosFilter is a u32 filter sending Homa priority p to class cls: for IPv4
// it matches TOS & 0xe0 == p<<5 (the second byte of the header), for IPv6
// traffic class & 0xe0 == p<<5 (bits 25..27 of the first word). Keys are in
// host order; the netlink library converts them.
func tosFilter(linkIndex int, p uint8, cls uint32, v6 bool) *netlink.U32 {
	proto, prio, key := uint16(unix.ETH_P_IP), uint16(1), netlink.TcU32Key{Mask: 0x00e00000, Val: uint32(p) << 21}
	if v6 {
		proto, prio, key = unix.ETH_P_IPV6, 2, netlink.TcU32Key{Mask: 0x0e000000, Val: uint32(p) << 25}
	}
	return &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: linkIndex, Parent: netlink.MakeHandle(1, 0), Priority: prio, Protocol: proto},
		ClassId:     cls,
		Sel:         &netlink.TcU32Sel{Flags: netlink.TC_U32_TERMINAL, Keys: []netlink.TcU32Key{key}},
	}
}

// ApplyTC replaces the root qdisc of interface dev in namespace ns with
// the objects BuildTC makes for cfg. It checks the kernel first and
// changes nothing when a feature is missing (*UnsupportedError).
func ApplyTC(ns netns.NsHandle, dev string, cfg LinkConfig) error {
	k, err := ProbeKernel()
	if err != nil {
		return err
	}
	h, link, err := tcLink(ns, dev)
	if err != nil {
		return err
	}
	defer h.Close()
	o, err := BuildTC(link.Attrs().Index, cfg, k)
	if err != nil {
		return err
	}
	if err := errors.Join(resetTC(h, link), resetNFTLoss(ns, dev)); err != nil {
		return err
	}
	if err := h.QdiscAdd(o.Root); err != nil {
		return fmt.Errorf("netem: %s: add root htb: %w", dev, err)
	}
	for _, c := range o.Classes {
		if err := h.ClassAdd(c); err != nil {
			return errors.Join(fmt.Errorf("netem: %s: add class %s: %w", dev, netlink.HandleStr(c.Attrs().Handle), err), resetTC(h, link))
		}
	}
	for _, q := range o.Leaves {
		add := h.QdiscAdd
		if r, ok := q.(*RawQdisc); ok {
			add = func(netlink.Qdisc) error { return addRawQdisc(ns, r) }
		}
		if err := add(q); err != nil {
			return errors.Join(fmt.Errorf("netem: %s: add %s leaf %s: %w", dev, q.Type(), netlink.HandleStr(q.Attrs().Handle), err), resetTC(h, link))
		}
	}
	for _, f := range o.Filters {
		if err := h.FilterAdd(f); err != nil {
			return errors.Join(fmt.Errorf("netem: %s: add u32 filter: %w", dev, err), resetTC(h, link))
		}
	}
	if k.lossByNFT(cfg) {
		if err := applyNFTLoss(ns, dev, cfg.Loss.Probability); err != nil {
			return errors.Join(err, resetTC(h, link))
		}
	}
	return nil
}

func tcLink(ns netns.NsHandle, dev string) (*netlink.Handle, netlink.Link, error) {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, nil, fmt.Errorf("netem: netlink in namespace: %w", err)
	}
	link, err := h.LinkByName(dev)
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("netem: interface %s: %w", dev, err)
	}
	return h, link, nil
}

// ResetTC deletes the root qdisc of dev in ns (and with it every class,
// leaf and filter under it) and dev's nftables loss and plan chains (and
// the homatest_netem table once it is empty); the interface goes back to
// its default qdisc.
func ResetTC(ns netns.NsHandle, dev string) error {
	h, link, err := tcLink(ns, dev)
	if err != nil {
		return err
	}
	defer h.Close()
	return errors.Join(resetTC(h, link), resetNFTLoss(ns, dev), resetNFTChain(ns, planChain(dev)))
}

func resetTC(h *netlink.Handle, link netlink.Link) error {
	qs, err := h.QdiscList(link)
	if err != nil {
		return fmt.Errorf("netem: list qdiscs of %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle != 0 {
			if err := h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("netem: delete root qdisc of %s: %w", link.Attrs().Name, err)
			}
		}
	}
	return nil
}

// ShowTC lists the qdiscs, classes and filters of dev in ns.
func ShowTC(ns netns.NsHandle, dev string) (*TCState, error) {
	h, link, err := tcLink(ns, dev)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	st := &TCState{Dev: dev}
	qs, err := h.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("netem: list qdiscs of %s: %w", dev, err)
	}
	if st.Netem, err = netemQdiscs(ns, link.Attrs().Index); err != nil {
		return nil, err
	}
	for _, q := range qs {
		a := q.Attrs()
		s := fmt.Sprintf("%s %s parent %s", q.Type(), netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent))
		for _, n := range st.Netem {
			if q.Type() == "netem" && n.Handle == tcHandle(a.Handle) {
				s = n.String()
			}
		}
		st.Qdiscs = append(st.Qdiscs, s)
	}
	cs, err := h.ClassList(link, 0)
	if err != nil {
		return nil, fmt.Errorf("netem: list classes of %s: %w", dev, err)
	}
	for _, c := range cs {
		a := c.Attrs()
		s := fmt.Sprintf("class %s %s parent %s", c.Type(), netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent))
		if hc, ok := c.(*netlink.HtbClass); ok {
			s += fmt.Sprintf(" prio %d rate %v ceil %v", hc.Prio, BitRate(hc.Rate*8), BitRate(hc.Ceil*8))
		}
		st.Classes = append(st.Classes, s)
	}
	fs, err := h.FilterList(link, netlink.MakeHandle(1, 0))
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("netem: list filters of %s: %w", dev, err)
	}
	for _, f := range fs {
		a := f.Attrs()
		s := fmt.Sprintf("filter %s proto %#04x prio %d", f.Type(), a.Protocol, a.Priority)
		if u, ok := f.(*netlink.U32); ok {
			s += " -> " + netlink.HandleStr(u.ClassId)
			if u.Sel != nil {
				for _, k := range u.Sel.Keys {
					s += fmt.Sprintf(" match %08x/%08x at %d", k.Val, k.Mask, k.Off)
				}
			}
		}
		st.Filters = append(st.Filters, s)
	}
	if n, err := nftLossCounter(ns, dev); err == nil && n > 0 {
		st.NFTLossDrops = n
	}
	if st.PlanHits, err = TCPlanHits(ns, dev); err != nil {
		return nil, err
	}
	slices.Sort(st.Qdiscs)
	slices.Sort(st.Classes)
	return st, nil
}
