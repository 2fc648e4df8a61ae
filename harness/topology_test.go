package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/homatest/homatest/internal/nsexec"
	"github.com/vishvananda/netlink"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

func TestBuildTeardown20(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	var buildTime, closeTime time.Duration
	const rounds = 20
	for i := 0; i < rounds; i++ {
		t0 := time.Now()
		topo := build(t, Config{Hosts: 4})
		t1 := time.Now()
		p, err := topo.Hosts[i%4].Start(ProcSpec{Path: "sleep", Args: []string{"60"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := topo.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		closeTime += time.Since(t1)
		buildTime += t1.Sub(t0)
		select {
		case <-p.Done():
		default:
			t.Fatalf("round %d: process %d still running after Close", i, p.Pid())
		}
		if processAlive(p.Pid()) {
			t.Errorf("round %d: pid %d still in /proc", i, p.Pid())
		}
		if left := leftovers(t, topo.ID); len(left) > 0 {
			t.Fatalf("round %d: left after Close: %v", i, left)
		}
		if err := topo.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	t.Logf("%d × 4-host build+teardown in %v: build %v, close %v per round", rounds, time.Since(start).Round(time.Millisecond),
		(buildTime / rounds).Round(time.Microsecond), (closeTime / rounds).Round(time.Microsecond))
}

func TestTopologyShape(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 3, MTU: 9000})
	if !topo.ID.Valid() {
		t.Fatalf("run id %q not 6 hex digits", topo.ID)
	}
	for i, h := range topo.Hosts {
		n := i + 1
		if want := fmt.Sprintf("ht%s-h%d", topo.ID, n); h.NS != want || h.Ifname != want {
			t.Errorf("host %d: NS %q Ifname %q, want %q", n, h.NS, h.Ifname, want)
		}
		if want := netip.MustParseAddr(fmt.Sprintf("198.18.0.%d", n)); h.Addr4 != want {
			t.Errorf("Addr4 = %v, want %v", h.Addr4, want)
		}
		if want := netip.MustParseAddr(fmt.Sprintf("fd00::%d", n)); h.Addr6 != want {
			t.Errorf("Addr6 = %v, want %v", h.Addr6, want)
		}
		if len(h.MAC) != 6 || h.MAC[0] != 0x02 || h.MAC[5] != byte(n) {
			t.Errorf("MAC = %v", h.MAC)
		}
		err := h.Do(func() error {
			ifc, err := net.InterfaceByName(h.Ifname)
			if err != nil {
				return err
			}
			if ifc.MTU != 9000 {
				return fmt.Errorf("MTU %d, want 9000", ifc.MTU)
			}
			if on, err := ethtoolTxCsum(h.Ifname, nil); err != nil || on {
				return fmt.Errorf("tx checksum offload on=%v err=%v, want off", on, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
	}
	// Every host has a permanent neighbour entry for every other host's
	// addresses (Config.ARP false): 2 peers x 2 families.
	for _, h := range topo.Hosts {
		nh, err := netlink.NewHandleAt(h.Netns)
		if err != nil {
			t.Fatal(err)
		}
		neighs, err := nh.NeighList(0, netlink.FAMILY_ALL)
		nh.Close()
		if err != nil {
			t.Fatal(err)
		}
		perm := map[netip.Addr]string{}
		for _, n := range neighs {
			if n.State&netlink.NUD_PERMANENT != 0 {
				a, _ := netip.AddrFromSlice(n.IP)
				perm[a.Unmap()] = n.HardwareAddr.String()
			}
		}
		for _, o := range topo.Hosts {
			for _, a := range []netip.Addr{o.Addr4, o.Addr6} {
				if got, want := perm[a], o.MAC.String(); o != h && got != want {
					t.Errorf("%s: permanent neighbour %v is %q, want %s", h.Name, a, got, want)
				}
			}
		}
		if len(perm) != 4 {
			t.Errorf("%s: %d permanent neighbours %v, want 4", h.Name, len(perm), perm)
		}
	}
	var d Description
	if b, err := os.ReadFile(topo.Artifacts.Path("topology.json")); err != nil || json.Unmarshal(b, &d) != nil {
		t.Fatalf("topology.json: %v", err)
	}
	if d.Run != topo.ID || len(d.Hosts) != 3 || d.Hosts[2].Addr6 != topo.Hosts[2].Addr6 || d.Fabric != "*harness.BridgeFabric" || d.MTU != 9000 {
		t.Errorf("topology.json = %+v", d)
	}
	err := nsexec.Do(topo.Switch, func() error {
		for _, p := range topo.Ports {
			if on, err := ethtoolTxCsum(p, nil); err != nil || on {
				return fmt.Errorf("%s: tx checksum offload on=%v err=%v, want off", p, on, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// exchange sends msg from src to dst over UDP and returns what dst read.
func exchange(t *testing.T, src, dst *Host, network string, to netip.Addr) {
	t.Helper()
	var rc net.PacketConn
	if err := dst.Do(func() (err error) {
		rc, err = net.ListenPacket(network, ":7146")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var sc net.PacketConn
	if err := src.Do(func() (err error) {
		sc, err = net.ListenPacket(network, ":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	msg := []byte(fmt.Sprintf("hello %s from %s over %s", dst.Name, src.Name, network))
	buf := make([]byte, 2048)
	// The first datagram may wait on neighbour resolution; resend until one
	// arrives or the deadline passes.
	deadline := time.Now().Add(scaled(5 * time.Second))
	for {
		if _, err := sc.WriteTo(msg, net.UDPAddrFromAddrPort(netip.AddrPortFrom(to, 7146))); err != nil {
			t.Fatal(err)
		}
		rc.SetReadDeadline(time.Now().Add(scaled(200 * time.Millisecond)))
		n, from, err := rc.ReadFrom(buf)
		if err == nil {
			if string(buf[:n]) != string(msg) {
				t.Fatalf("got %q, want %q", buf[:n], msg)
			}
			if got := from.(*net.UDPAddr).AddrPort().Addr().Unmap(); got != src.Addr4 && got != src.Addr6 {
				t.Fatalf("from %v, want %v or %v", got, src.Addr4, src.Addr6)
			}
			return
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || time.Now().After(deadline) {
			t.Fatalf("%s %s→%s: %v", network, src.Name, dst.Name, err)
		}
	}
}

func TestTrafficThroughBridge(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 3})
	h1, h2, h3 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	for _, c := range []struct {
		src, dst *Host
		network  string
		to       netip.Addr
	}{{h1, h2, "udp4", h2.Addr4}, {h2, h1, "udp4", h1.Addr4}, {h1, h2, "udp6", h2.Addr6}, {h3, h1, "udp6", h1.Addr6}} {
		t0 := time.Now()
		exchange(t, c.src, c.dst, c.network, c.to)
		t.Logf("%s %s→%s delivered in %v", c.network, c.src.Name, c.dst.Name, time.Since(t0).Round(time.Microsecond))
	}
}

func TestTwoTopologiesAtOnce(t *testing.T) {
	requireRoot(t)
	a := build(t, Config{Hosts: 2})
	b := build(t, Config{Hosts: 2})
	if a.ID == b.ID {
		t.Fatalf("both runs got id %s", a.ID)
	}
	// Same addresses, different namespaces: both work at the same time.
	exchange(t, a.Hosts[0], a.Hosts[1], "udp4", a.Hosts[1].Addr4)
	exchange(t, b.Hosts[0], b.Hosts[1], "udp4", b.Hosts[1].Addr4)
	if _, err := Build(t.Context(), Config{Hosts: 1, RunID: a.ID, Artifacts: a.Artifacts}); err == nil {
		t.Fatalf("Build with the live run id %s succeeded", a.ID)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, a.ID); len(left) > 0 {
		t.Fatalf("left after closing a: %v", left)
	}
	exchange(t, b.Hosts[1], b.Hosts[0], "udp6", b.Hosts[0].Addr6)
}
