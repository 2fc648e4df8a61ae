package nsexec

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

func TestDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace")
	}
	var ns netns.NsHandle
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // NewNamed-free: New switches this thread, which then dies locked
		var err error
		ns, err = netns.New()
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	var inside netns.NsHandle
	if err := Do(ns, func() (err error) { inside, err = netns.Get(); return err }); err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(ns) {
		t.Errorf("f ran in %v, want the namespace %v", inside, ns)
	}
	if inside.Equal(orig) {
		t.Error("f ran in the caller's namespace")
	}
	boom := errors.New("boom")
	if err := Do(ns, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Do returned %v, want f's error", err)
	}
	if err := Do(netns.NsHandle(-1), func() error { t.Error("f ran without entering"); return nil }); err == nil {
		t.Error("Do entered an invalid namespace handle")
	}
}
