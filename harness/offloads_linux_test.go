package harness

import (
	"testing"

	"github.com/homatest/homatest/internal/nsexec"
)

// TestBuildOffloads: with Config.Offloads the host veths keep tx checksum
// offload (and with it TSO and GSO) on, the switch ports still have it off.
func TestBuildOffloads(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 1, Offloads: true})
	h := topo.Hosts[0]
	var on bool
	if err := h.Do(func() (err error) { on, err = ethtoolTxCsum(h.Ifname, nil); return err }); err != nil || !on {
		t.Errorf("host veth tx checksum offload on=%v (%v), want on", on, err)
	}
	if err := nsexec.Do(topo.Switch, func() (err error) { on, err = ethtoolTxCsum(h.Port, nil); return err }); err != nil || on {
		t.Errorf("switch port tx checksum offload on=%v (%v), want off", on, err)
	}
}

// TestHostSetGRO: a host veth starts with GRO off (veth's default, which a
// kernel Homa stack cannot read its own wire format under: Host.SetGRO);
// SetGRO turns it on and off again, and GRO reads it back.
func TestHostSetGRO(t *testing.T) {
	requireRoot(t)
	h := build(t, Config{Hosts: 1}).Hosts[0]
	if on, err := h.GRO(); err != nil || on {
		t.Fatalf("GRO on=%v (%v) on a fresh host veth, want off", on, err)
	}
	for _, want := range []bool{true, false} {
		if err := h.SetGRO(want); err != nil {
			t.Fatal(err)
		}
		if on, err := h.GRO(); err != nil || on != want {
			t.Errorf("after SetGRO(%v): GRO on=%v (%v)", want, on, err)
		}
	}
}
