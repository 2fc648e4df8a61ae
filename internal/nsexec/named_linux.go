//go:build linux

package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces are bind-mounted (iproute2's
// and vishvananda/netns's convention), so "ip netns exec NAME" works.
const NetnsDir = "/run/netns"

// MountLock is the file whose flock serialises making NetnsDir a shared
// mount point across processes.
const MountLock = "/run/homatest/netns-mount.lock"

var mountMu sync.Mutex

// ensureMount makes NetnsDir a shared mount point before a named namespace
// is bind-mounted in it, as iproute2's "ip netns add" does. Were it a plain
// directory, the first later "ip netns add" (or any process doing the same)
// would bind-mount NetnsDir over itself and hide the namespace mounts made
// before: their names would stay listed but could no longer be unmounted,
// and the namespaces would leak until reboot. Runs under an flock so that
// concurrent processes do not stack two bind mounts.
func ensureMount() error {
	mountMu.Lock()
	defer mountMu.Unlock()
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(MountLock), 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(MountLock, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	bound := false
	for {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", NetnsDir, err)
		}
		// Not a mount point yet: bind it onto itself, then share it.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s onto itself: %w", NetnsDir, err)
		}
		bound = true
	}
}

// NewNamed creates the named network namespace NetnsDir/name (as "ip netns
// add" does, NetnsDir made a shared mount point first) and returns a handle
// to it, without moving the calling goroutine's thread (netns.NewNamed
// switches the thread it runs on; it runs on a throwaway locked goroutine
// here). Remove it with netns.DeleteNamed. Errors: the mount, the creation,
// or restoring the helper thread's namespace.
func NewNamed(name string) (netns.NsHandle, error) {
	if err := ensureMount(); err != nil {
		return netns.None(), fmt.Errorf("create namespace %s: %w", name, err)
	}
	type res struct {
		h   netns.NsHandle
		err error
	}
	c := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			c <- res{netns.None(), err}
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if serr := netns.Set(orig); serr != nil {
			if err == nil {
				h.Close()
				err = serr
			}
			c <- res{netns.None(), fmt.Errorf("restore namespace after creating %s: %w", name, err)}
			return // thread stays locked and is discarded
		}
		runtime.UnlockOSThread()
		c <- res{h, err}
	}()
	r := <-c
	if r.err != nil {
		return netns.None(), fmt.Errorf("create namespace %s: %w", name, r.err)
	}
	return r.h, nil
}
