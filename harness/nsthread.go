package harness

import (
	"fmt"
	"github.com/homatest/homatest/internal/nsexec"
	"os"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces are bind-mounted.
const netnsDir = nsexec.NetnsDir

// nsInode returns the inode of the namespace behind handle h.
func nsInode(h netns.NsHandle) (uint64, bool) {
	if !h.IsOpen() {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(h), &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// sysctl writes value to /proc/sys/<key with dots as slashes> in the
// calling thread's network namespace (the net.* tree is per namespace).
func sysctl(key, value string) error {
	p := "/proc/sys/" + dotsToSlashes(key)
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

func dotsToSlashes(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '.' {
			b[i] = '/'
		}
	}
	return string(b)
}
