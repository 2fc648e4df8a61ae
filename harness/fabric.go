package harness

import (
	"context"
	"io"

	"github.com/vishvananda/netns"
)

// Fabric forwards Ethernet frames between the switch ports of a topology.
// Build calls Start once, after every port exists and is up, with the
// switch namespace and the port interface names inside it (in host order:
// ports[i] leads to host i+1); Topology.Close calls Close before the
// namespaces are deleted. Start must return only when frames are forwarded
// (no learning or listening delay); ctx bounds the start only, not the
// fabric's lifetime. Close must be idempotent.
//
// The built-in fabric is the kernel bridge (NewBridgeFabric). netem's
// user-space switch plugs in by wrapping netem.StartSwitch in a Fabric.
type Fabric interface {
	Start(ctx context.Context, ns netns.NsHandle, ports []string) error
	Close() error
}

// FabricFunc adapts a start function that returns its own closer to a
// Fabric, e.g. for netem's switch:
//
//	harness.FabricFunc(func(ctx context.Context, ns netns.NsHandle, ports []string) (io.Closer, error) {
//		return netem.StartSwitch(ctx, ns, cfgFor(ports))
//	}).Fabric()
type FabricFunc func(ctx context.Context, ns netns.NsHandle, ports []string) (io.Closer, error)

// Fabric returns a Fabric that calls f on Start and the returned closer on
// Close.
func (f FabricFunc) Fabric() Fabric { return &funcFabric{start: f} }

type funcFabric struct {
	start  FabricFunc
	closer io.Closer
}

func (f *funcFabric) Start(ctx context.Context, ns netns.NsHandle, ports []string) error {
	c, err := f.start(ctx, ns, ports)
	if err != nil {
		return err
	}
	f.closer = c
	return nil
}

func (f *funcFabric) Close() error {
	c := f.closer
	f.closer = nil
	if c == nil {
		return nil
	}
	return c.Close()
}
