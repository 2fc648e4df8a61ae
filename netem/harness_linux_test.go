package netem_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
)

// TestSwitchFabricInHarness: the harness builds two hosts around a switch
// namespace and netem's switch forwards between its ports; TCP (the
// hardest case for a user-space forwarder: checksum offload) crosses a
// 100 Mbit/s, 1 ms link.
func TestSwitchFabricInHarness(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the harness creates network namespaces and veths")
	}
	art, err := harness.NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fab := &netem.SwitchFabric{Link: netem.LinkConfig{Rate: 100 * netem.Mbit, Delay: time.Millisecond}}
	topo, err := harness.Build(context.Background(), harness.Config{Hosts: 2, Fabric: fab, Artifacts: art})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	var ln net.Listener
	if err := h2.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(h2.Addr4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	var c net.Conn
	if err := h1.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), timescale.D(3*time.Second))
		return err
	}); err != nil {
		t.Fatalf("TCP through netem's switch in a harness topology: %v (stats %+v)", err, fab.Stats().Ports)
	}
	const size = 1 << 20
	start := time.Now()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case n := <-got:
		t.Logf("TCP h1 -> h2: %d bytes in %v; switch stats %+v", n, time.Since(start), fab.Stats().Drops)
		if n != size {
			t.Errorf("received %d of %d bytes", n, size)
		}
	case <-time.After(timescale.D(10 * time.Second)):
		t.Fatal("TCP transfer did not finish")
	}
}
