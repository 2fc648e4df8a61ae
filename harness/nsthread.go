package harness

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces are bind-mounted (iproute2's
// and vishvananda/netns's convention), so "ip netns exec NAME" works.
const netnsDir = "/run/netns"

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

// newNamedNetns creates the named network namespace /run/netns/name and
// returns a handle to it, without moving the calling goroutine's thread
// (netns.NewNamed switches the thread it runs on; it runs on a throwaway
// locked goroutine here).
func newNamedNetns(name string) (netns.NsHandle, error) {
	type res struct {
		h   netns.NsHandle
		err error
	}
	if err := ensureNetnsMount(); err != nil {
		return netns.None(), fmt.Errorf("create namespace %s: %w", name, err)
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
