package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary stand in for QEMU (HOMATEST_FAKE_QEMU
// names a folder): it connects to the console socket QEMU would, and
// either crashes before the init's start marker (the first N boots, N in
// the folder's "crashes" file) or starts and exits 0.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HOMATEST_FAKE_QEMU"); dir != "" {
		os.Exit(fakeQEMU(dir))
	}
	os.Exit(m.Run())
}

func fakeQEMU(dir string) int {
	var con string
	for i, a := range os.Args {
		if a == "-chardev" && i+1 < len(os.Args) && strings.HasPrefix(os.Args[i+1], "socket,id=con,path=") {
			con = strings.TrimPrefix(os.Args[i+1], "socket,id=con,path=")
		}
	}
	c, err := net.Dial("unix", con)
	if err != nil {
		return 1
	}
	defer c.Close()
	boots := 0
	if b, err := os.ReadFile(filepath.Join(dir, "boots")); err == nil {
		boots, _ = strconv.Atoi(string(b))
	}
	boots++
	os.WriteFile(filepath.Join(dir, "boots"), []byte(strconv.Itoa(boots)), 0o644)
	b, _ := os.ReadFile(filepath.Join(dir, "crashes"))
	crashes, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if boots <= crashes {
		c.Write([]byte("[    2.132665] RIP: 0010:hrtimer_start_range_ns+0x1cb/0x440\n[    2.140000] Kernel panic - not syncing: Fatal exception\n"))
		return 0 // QEMU with -no-reboot and panic=-1 exits 0
	}
	c.Write([]byte(markStart + "\n" + markExit + "0\n"))
	return 0
}

// TestBootCrashRebootedOnce: a guest that crashes before its init starts
// the command under software emulation is booted once more and the
// result says so; a second crash is the error.
func TestBootCrashRebootedOnce(t *testing.T) {
	if ok, err := IsStatic("/bin/busybox"); err != nil || !ok {
		t.Skip("no static /bin/busybox (Debian: busybox-static)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		crashes, boots int
		ok             bool
	}{{0, 1, true}, {1, 2, true}, {2, 2, false}} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "crashes"), []byte(strconv.Itoa(c.crashes)), 0o644)
		image := filepath.Join(dir, "vmlinuz")
		os.WriteFile(image, []byte("not a kernel"), 0o644)
		t.Setenv("HOMATEST_FAKE_QEMU", dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := Run(ctx, Config{Kernel: Kernel{Image: image}, QEMU: self, Accel: "tcg", Busybox: "/bin/busybox",
			Homatest: "/bin/busybox", Tools: []string{}, Dir: dir, Command: []string{"true"}})
		cancel()
		b, _ := os.ReadFile(filepath.Join(dir, "boots"))
		if string(b) != strconv.Itoa(c.boots) {
			t.Errorf("%d crashes: %s boots, want %d", c.crashes, b, c.boots)
		}
		noted := len(res.Notes) > 0 && strings.Contains(res.Notes[0], "booted again")
		switch {
		case c.ok && (err != nil || res.ExitCode != 0 || noted != (c.crashes > 0)):
			t.Errorf("%d crashes: exit %d, notes %q, %v; want exit 0, a note iff it crashed", c.crashes, res.ExitCode, res.Notes, err)
		case !c.ok && !errors.Is(err, errBootCrashed):
			t.Errorf("%d crashes: %v, want errBootCrashed", c.crashes, err)
		}
	}
}
