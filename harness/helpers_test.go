package harness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// requireRoot skips tb when not root.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: network namespaces, veths and AF_PACKET sockets need CAP_SYS_ADMIN and CAP_NET_ADMIN")
	}
}

// scaled multiplies d by HOMATEST_TIME_SCALE (default 1).
func scaled(d time.Duration) time.Duration {
	if s, err := strconv.ParseFloat(os.Getenv("HOMATEST_TIME_SCALE"), 64); err == nil && s > 0 {
		return time.Duration(float64(d) * s)
	}
	return d
}

// build builds a topology whose Close is registered with t.Cleanup (the
// teardown of everything Build creates is registered inside Build before
// each thing exists, so a failing Build leaves nothing either).
func build(t *testing.T, cfg Config) *Topology {
	t.Helper()
	if cfg.Artifacts == nil {
		a, err := NewArtifacts(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Artifacts = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	topo, err := Build(ctx, cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return topo
}

// leftovers lists what run id still has: namespaces in /run/netns, links
// in the root namespace, the lock file.
func leftovers(t *testing.T, id RunID) []string {
	t.Helper()
	var left []string
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), id.Prefix()+"-") {
			left = append(left, "netns "+e.Name())
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, id.Prefix()) {
			left = append(left, "link "+l.Attrs().Name)
		}
	}
	if _, err := os.Stat(filepath.Join(LockDir, id.Prefix()+".lock")); err == nil {
		left = append(left, "lock "+id.Prefix())
	}
	return left
}

// eventually polls cond every 10 ms until it holds or d (scaled) passes.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(scaled(d))
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
