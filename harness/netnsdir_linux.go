//go:build linux

package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

var netnsMountMu sync.Mutex

// ensureNetnsMount makes /run/netns a shared mount point before a named
// namespace is bind-mounted in it, as iproute2's "ip netns add" does. If
// it were a plain directory, the first later "ip netns add" (any tool)
// would bind-mount /run/netns over itself and hide our namespace mounts
// underneath: their names would stay listed but could no longer be
// unmounted, leaking the namespaces until reboot. The check runs under an
// flock so concurrent harness processes do not stack two bind mounts.
func ensureNetnsMount() error {
	netnsMountMu.Lock()
	defer netnsMountMu.Unlock()
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(LockDir, "netns-mount.lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	bound := false
	for {
		err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", netnsDir, err)
		}
		// Not a mount point yet: bind it onto itself, then share it.
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s onto itself: %w", netnsDir, err)
		}
		bound = true
	}
}
