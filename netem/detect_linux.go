package netem

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/homatest/homatest/internal/nsexec"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// ProbeKernel finds out which qdiscs and classifiers the running kernel
// has: from /proc/config.gz when it exists, otherwise by trying each qdisc
// on a veth in a scratch network namespace that is deleted afterwards
// (nothing the caller can see is changed).
func ProbeKernel() (KernelFeatures, error) {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if k, err := readKernelConfigGz(f); err == nil {
			return k, nil
		}
	}
	return probeScratch()
}

// Detect returns, one line per feature, what the tc backend cannot
// provide for cfg on the running kernel, before anything is changed.
func Detect(cfg LinkConfig) ([]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k, err := ProbeKernel()
	if err != nil {
		return nil, err
	}
	return k.Missing(cfg), nil
}

// probeScratch tries HTB, TBF, prio, netem and a u32 filter on a veth in
// a throwaway namespace.
func probeScratch() (KernelFeatures, error) {
	k := KernelFeatures{Source: "probe in a scratch namespace"}
	var b [4]byte
	rand.Read(b[:])
	name := "htnprobe" + hex.EncodeToString(b[:])[:6]
	ns, err := nsexec.NewNamed(name)
	if err != nil {
		return k, fmt.Errorf("netem: probe kernel qdiscs: create scratch namespace: %w", err)
	}
	defer netns.DeleteNamed(name)
	defer ns.Close()
	if err := probeIn(ns, &k); err != nil {
		return k, fmt.Errorf("netem: probe kernel qdiscs in a scratch namespace: %w", err)
	}
	return k, nil
}

// probeIn tries each qdisc on a veth created in ns.
func probeIn(ns netns.NsHandle, k *KernelFeatures) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "p0"}, PeerName: "p1"}); err != nil {
		return err
	}
	l, err := h.LinkByName("p0")
	if err != nil {
		return err
	}
	try := func(q netlink.Qdisc) bool {
		if err := h.QdiscAdd(q); err != nil {
			return false
		}
		_ = h.QdiscDel(q)
		return true
	}
	root := netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	k.TBF = try(&netlink.Tbf{QdiscAttrs: root, Rate: 1e6, Limit: 10000, Buffer: 10000})
	k.Prio = try(netlink.NewPrio(root))
	k.Netem = try(netlink.NewNetem(root, netlink.NetemQdiscAttrs{Latency: 1000}))
	k.HTB = h.QdiscAdd(netlink.NewHtb(root)) == nil
	if k.HTB {
		k.U32 = h.FilterAdd(tosFilter(l.Attrs().Index, 0, 0, false)) == nil
	}
	k.NFTLoss = applyNFTLoss(ns, "p0", 0.5) == nil
	return nil
}
