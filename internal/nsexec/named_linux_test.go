//go:build linux

package nsexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// TestNewNamed creates a named namespace: it is usable by name, NetnsDir is
// a shared mount point (so a later "ip netns add" cannot hide it), and it
// is removed by name.
func TestNewNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a named network namespace")
	}
	name := fmt.Sprintf("htx%d", os.Getpid())
	t.Cleanup(func() { netns.DeleteNamed(name) })
	h, err := NewNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	byName, err := netns.GetFromName(name)
	if err != nil {
		t.Fatalf("namespace %s not found by name: %v", name, err)
	}
	defer byName.Close()
	if !byName.Equal(h) {
		t.Error("the named namespace is not the one returned")
	}
	cur, _ := netns.Get()
	defer cur.Close()
	if cur.Equal(h) {
		t.Error("NewNamed moved the calling thread into the new namespace")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	shared := false
	for _, l := range strings.Split(string(mi), "\n") {
		f := strings.Fields(l)
		if len(f) > 6 && f[4] == NetnsDir && strings.Contains(l, " shared:") {
			shared = true
		}
	}
	if !shared {
		t.Errorf("%s is not a shared mount point", NetnsDir)
	}
	if err := netns.DeleteNamed(name); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	if _, err := os.Stat(filepath.Join(NetnsDir, name)); !os.IsNotExist(err) {
		t.Errorf("%s still exists after delete: %v", name, err)
	}
}
