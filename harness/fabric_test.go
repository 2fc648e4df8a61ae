package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/vishvananda/netns"
)

// TestFabricFunc: Build hands a custom fabric the switch namespace and the
// ports in host order, traffic flows through it, and Close closes it once.
func TestFabricFunc(t *testing.T) {
	requireRoot(t)
	var gotPorts []string
	closed := 0
	var br *BridgeFabric
	fab := FabricFunc(func(ctx context.Context, ns netns.NsHandle, ports []string) (io.Closer, error) {
		gotPorts = ports
		br = NewBridgeFabric("custom0")
		if err := br.Start(ctx, ns, ports); err != nil {
			return nil, err
		}
		return closerFunc(func() error { closed++; return br.Close() }), nil
	}).Fabric()
	topo := build(t, Config{Hosts: 2, Fabric: fab})
	if !slices.Equal(gotPorts, topo.Ports) || gotPorts[0] != topo.ID.PortIf(1) {
		t.Errorf("fabric got ports %v, want %v", gotPorts, topo.Ports)
	}
	exchange(t, topo.Hosts[0], topo.Hosts[1], "udp4", topo.Hosts[1].Addr4)
	topo.Close()
	topo.Close()
	if closed != 1 {
		t.Errorf("fabric closed %d times, want 1", closed)
	}
}

// randomRunID returns a random run id for a test that must name its run
// before Build (so parallel test runs do not collide).
func randomRunID(t *testing.T) RunID {
	var b [3]byte
	rand.Read(b[:])
	return RunID(hex.EncodeToString(b[:]))
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestBuildFailureLeavesNothing: a fabric that fails, and a cancelled
// context, make Build fail with everything it created removed.
func TestBuildFailureLeavesNothing(t *testing.T) {
	requireRoot(t)
	a, _ := NewArtifacts(t.TempDir())
	id := randomRunID(t)
	boom := errors.New("fabric refuses")
	fab := FabricFunc(func(ctx context.Context, ns netns.NsHandle, ports []string) (io.Closer, error) {
		return nil, boom
	}).Fabric()
	topo, err := Build(context.Background(), Config{Hosts: 3, Fabric: fab, Artifacts: a, RunID: id})
	if !errors.Is(err, boom) || topo != nil {
		t.Fatalf("Build = %v, %v; want the fabric's error", topo, err)
	}
	if l := leftovers(t, id); len(l) > 0 {
		t.Errorf("left after failed Build: %v", l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	id2 := randomRunID(t)
	if _, err := Build(ctx, Config{Hosts: 3, Artifacts: a, RunID: id2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context = %v", err)
	}
	if l := leftovers(t, id2); len(l) > 0 {
		t.Errorf("left after cancelled Build: %v", l)
	}
	for _, c := range []Config{{Hosts: 0}, {Hosts: 65}, {Hosts: 1, MTU: 67}, {Hosts: 1, MTU: 65536}} {
		if _, err := Build(context.Background(), c); err == nil {
			t.Errorf("Build(%+v) succeeded", c)
		}
	}
}
