package harness

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// BridgeFabric is the built-in Fabric: a Linux kernel bridge in the switch
// namespace with every port enslaved, STP off, forward delay 0 and
// multicast snooping off (multicast, e.g. IPv6 neighbour solicitations, is
// flooded like broadcast). With STP off a port forwards as soon as it is
// up. Its zero value is not usable; call NewBridgeFabric.
type BridgeFabric struct {
	name string
	h    *netlink.Handle
}

// NewBridgeFabric returns a kernel-bridge fabric whose bridge device is
// called name inside the switch namespace (Build passes RunID.BridgeIf).
func NewBridgeFabric(name string) *BridgeFabric { return &BridgeFabric{name: name} }

// Start creates the bridge in ns, enslaves ports and brings it up.
func (b *BridgeFabric) Start(ctx context.Context, ns netns.NsHandle, ports []string) error {
	h, err := netlink.NewHandleAt(ns, netlinkRoute)
	if err != nil {
		return fmt.Errorf("netlink handle in switch namespace: %w", err)
	}
	b.h = h
	off := false
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: b.name}, MulticastSnooping: &off}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s: %w", b.name, err)
	}
	link, err := h.LinkByName(b.name)
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", b.name, err)
	}
	if err := bridgeNoSTP(ns, link.Attrs().Index); err != nil {
		return fmt.Errorf("bridge %s: stp off, forward delay 0: %w", b.name, err)
	}
	for _, p := range ports {
		if err := ctx.Err(); err != nil {
			return err
		}
		pl, err := h.LinkByName(p)
		if err != nil {
			return fmt.Errorf("find port %s: %w", p, err)
		}
		if err := h.LinkSetMaster(pl, link); err != nil {
			return fmt.Errorf("enslave %s to %s: %w", p, b.name, err)
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring up bridge %s: %w", b.name, err)
	}
	return nil
}

// Close deletes the bridge (the ports stay; they go with their namespace).
func (b *BridgeFabric) Close() error {
	if b.h == nil {
		return nil
	}
	h := b.h
	b.h = nil
	defer h.Close()
	link, err := h.LinkByName(b.name)
	if err != nil {
		return nil // never created, or already gone
	}
	return h.LinkDel(link)
}
