package lab

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"
)

func TestParseSysctl(t *testing.T) {
	s, err := ParseSysctl("net.homa.resend_ticks=50")
	if err != nil || s.Name != "net.homa.resend_ticks" || s.Value != "50" {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, bad := range []string{"net.homa.resend_ticks", "=5", "net/homa/x=1", "net..x=1", "a b=1"} {
		if _, err := ParseSysctl(bad); err == nil || !strings.Contains(err.Error(), "want NAME=VALUE") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestInitScript(t *testing.T) {
	s := initScript("/home/me/homa test", []Sysctl{{"net.homa.resend_ticks", "50"}}, []string{"HOMATEST_TIME_SCALE=10"},
		[]string{"homatest", "run", "--focus", "it's", "a b"})
	for _, want := range []string{
		"mkdir -p '/home/me/homa test' && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share '/home/me/homa test'",
		"echo 50 > /proc/sys/net/homa/resend_ticks ||",
		"export HOMATEST_TIME_SCALE=10",
		`homatest run --focus 'it'\''s' 'a b' </dev/null >/lab/out/stdout 2>/lab/out/stderr`,
		"mkdir -p /lab/out && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 labout /lab/out ||",
		`for f in stdout stderr; do echo "` + markOutput + `$f $(wc -c </lab/out/$f) $(sha256sum </lab/out/$f | cut -d' ' -f1)" >$ctl; done` + "\n" +
			`echo "` + markExit + `$rc" >$ctl`,
		"ctl=/dev/ttyS1\n",
		"[ -e /sys/class/tty/ttyS1 ] || ctl=/dev/console\n",
		"echo '" + markStart + "' >$ctl\n",
		`echo "` + markExit + `$rc" >$ctl` + "\n",
		`fail() { echo "` + markNote + `$*" >$ctl; echo '` + markExit + `125' >$ctl;`,
		"insmod /lib/modules/lab/$m.ko",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("init script lacks %q:\n%s", want, s)
		}
	}
}

// TestConsoleMarkers: the markers are read from either stream (the
// control port, or the console of a kernel without one), lines arrive
// whole in the console copy without their "\r" however the writes cut
// them, and a run without an exit marker is exit -1 with the console's
// last lines kept.
func TestConsoleMarkers(t *testing.T) {
	var out bytes.Buffer
	c := &console{w: &out, start: time.Now()}
	con, ctl := c.stream(), c.stream()
	con.Write([]byte("[    1.0] kernel line\r\n[    1.1] a kernel li"))
	ctl.Write([]byte(markStart + "\r\n"))
	con.Write([]byte("ne in two writes\r\n"))
	ctl.Write([]byte(markExit + "3\r\n"))
	con.Write([]byte("[    9.0] reboot: Power down"))
	con.flush()
	ctl.flush()
	c.finish()
	if c.exit != 3 || c.boot <= 0 {
		t.Errorf("exit %d boot %v", c.exit, c.boot)
	}
	want := "[    1.0] kernel line\n" + markStart + "\n[    1.1] a kernel line in two writes\n" + markExit + "3\n[    9.0] reboot: Power down\n"
	if out.String() != want {
		t.Errorf("console copy %q; want %q", out.String(), want)
	}
	failed := &console{}
	s := failed.stream()
	s.Write([]byte("homatest-lab: insmod homa\n" + markExit + "125\n"))
	failed.finish()
	if failed.exit != 125 || len(failed.notes) != 1 || failed.notes[0] != "insmod homa" {
		t.Errorf("failed step: exit %d notes %q", failed.exit, failed.notes)
	}
	none := &console{}
	s = none.stream()
	s.Write([]byte("Kernel panic - not syncing\n"))
	s.flush()
	none.finish()
	if none.exit != -1 || !strings.Contains(none.last(), "Kernel panic") {
		t.Errorf("no marker: exit %d, last %q", none.exit, none.last())
	}
}

// TestQEMUArgs: the kernel logs to the first serial port at loglevel 7
// (its boot messages, not only errors: "loglevel=4" kept --console empty
// but for the markers), the markers have the second port, and each
// stream's socket is wired to its device in guestStreams' order.
func TestQEMUArgs(t *testing.T) {
	cfg := Config{Kernel: Kernel{Image: "/k/vmlinuz"}, Dir: "/w", CPUs: 2, MemoryMiB: 2048}
	args := cfg.qemuArgs(vmAttempt{"tcg", "max"}, "/t/initramfs.cpio", "/t/out", [2]string{"/t/console.sock", "/t/control.sock"})
	line := strings.Join(args, " ")
	for _, want := range []string{
		"-chardev socket,id=con,path=/t/console.sock -serial chardev:con -chardev socket,id=ctl,path=/t/control.sock -serial chardev:ctl ",
		"-fsdev local,id=out,security_model=none,path=/t/out -device virtio-9p-pci,fsdev=out,mount_tag=labout ",
		"-accel tcg,thread=multi -cpu max -smp 2 -m 2048 ",
		"-kernel /k/vmlinuz -initrd /t/initramfs.cpio ",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU's arguments lack %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "virtconsole") {
		t.Errorf("a virtconsole device (QEMU drops what its chardev cannot take at once):\n%s", line)
	}
	if n := strings.Count(line, "-serial "); n != 2 {
		t.Errorf("%d serial ports, want 2 (ttyS0 the console, ttyS1 the control port):\n%s", n, line)
	}
	if args[len(args)-2] != "-append" {
		t.Fatalf("no -append last: %q", args)
	}
	cmdline := " " + args[len(args)-1] + " "
	for _, want := range []string{" console=ttyS0 ", " loglevel=7 ", " panic=-1 ", " rdinit=/init "} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("kernel command line %q lacks %q", cmdline, want)
		}
	}
	if strings.Contains(cmdline, " quiet ") || strings.Count(cmdline, "loglevel=") != 1 || strings.Count(cmdline, "console=") != 1 {
		t.Errorf("kernel command line %q: want one console=ttyS0, loglevel=7 and no quiet", cmdline)
	}
	if controlPort != "/dev/ttyS1" || guestStreams[1] != "control" {
		t.Errorf("the init writes its markers to %s, stream %q; want /dev/ttyS1, the second -serial", controlPort, guestStreams[1])
	}
}

func TestModuleName(t *testing.T) {
	for file, want := range map[string]string{"sch_netem.ko.xz": "sch_netem", "9pnet-virtio.ko": "9pnet_virtio", "homa.ko.gz": "homa"} {
		if n, ok := moduleName(file); !ok || n != want {
			t.Errorf("%s: %q %v", file, n, ok)
		}
	}
	if _, ok := moduleName("modules.dep"); ok {
		t.Error("modules.dep taken for a module")
	}
}

func TestWriteInitramfs(t *testing.T) {
	dir := t.TempDir()
	bin := dir + "/static"
	// A file that is not ELF is refused as a tool; busybox and homatest
	// are read as they are.
	if err := writeFile(bin, "#!/bin/sh\n"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err := WriteInitramfs(&b, Image{Busybox: bin, Homatest: bin, Modules: []Module{{Name: "veth", Data: []byte("x")}}, Init: "#!/bin/busybox sh\n"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Name] = true
	}
	for _, want := range []string{"init", "bin/busybox", "bin/homatest", "lib/modules/lab/veth.ko", "lab/modules", "dev/console", "dev/ttyS1"} {
		if !have[want] {
			t.Errorf("initramfs lacks %s (has %v)", want, have)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o755) }

// fakeModule returns a relocatable x86-64 ELF whose only content is a
// .modinfo section holding the key=value pairs given, as a kernel
// module's.
func fakeModule(t *testing.T, kv ...string) []byte {
	t.Helper()
	info := []byte(strings.Join(kv, "\x00") + "\x00")
	names := []byte("\x00.modinfo\x00.shstrtab\x00")
	const hdr = 64
	shoff := hdr + len(info) + len(names)
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: uint64(shoff), Ehsize: hdr, Shentsize: 64, Shnum: 3, Shstrndx: 2}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	secs := []elf.Section64{{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC), Off: hdr, Size: uint64(len(info)), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: uint64(hdr + len(info)), Size: uint64(len(names)), Addralign: 1}}
	for _, part := range []any{h, info, names, secs} {
		if err := binary.Write(&b, binary.LittleEndian, part); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// fakeBzImage returns the first bytes of an x86 bzImage whose boot header
// points to version.
func fakeBzImage(version string) []byte {
	b := make([]byte, 0x1000)
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020f)
	binary.LittleEndian.PutUint16(b[0x20e:], 0x600-0x200)
	copy(b[0x600:], version+"\x00")
	return b
}

// TestImageRelease: the release is the first word of the version string
// the boot header points to (the lab's two Debian kernels' own strings);
// a file without the header, or a header pointing nowhere, is an error.
func TestImageRelease(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ version, want string }{
		{"6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)", "6.1.0-57-amd64"},
		{"6.12.117+deb12-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1~deb12u1", "6.12.117+deb12-amd64"},
	} {
		p := filepath.Join(dir, "vmlinuz")
		if err := os.WriteFile(p, fakeBzImage(c.version), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ImageRelease(p); got != c.want || err != nil {
			t.Errorf("%q: %q, %v; want %q", c.version, got, err, c.want)
		}
	}
	noHdr := filepath.Join(dir, "plain")
	os.WriteFile(noHdr, make([]byte, 0x1000), 0o644)
	if _, err := ImageRelease(noHdr); err == nil || !strings.Contains(err.Error(), "not an x86 bzImage") {
		t.Errorf("a file without a boot header: %v", err)
	}
	nowhere := fakeBzImage("")
	binary.LittleEndian.PutUint16(nowhere[0x20e:], 0)
	os.WriteFile(noHdr, nowhere, 0o644)
	if _, err := ImageRelease(noHdr); err == nil || !strings.Contains(err.Error(), "no version string") {
		t.Errorf("a header pointing to no version string: %v", err)
	}
}

// TestInsmodVermagic: a module built for another kernel release than the
// guest's is refused before the guest boots, in one line naming both
// releases and the --kernel-package that boots its kernel (Debian's), or
// --kernel for another's; one built for the guest's release, or a guest
// whose release is unknown, is taken.
func TestInsmodVermagic(t *testing.T) {
	dir := t.TempDir()
	ko := filepath.Join(dir, "homa.ko")
	if err := os.WriteFile(ko, fakeModule(t, "name=homa", "vermagic=6.1.0-57-amd64 SMP preempt mod_unload modversions "), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := insmodFile(ko, nil, "6.12.117+deb12-amd64")
	want := "lab: --insmod " + ko + " was built for kernel 6.1.0-57-amd64 (its vermagic), but the guest boots 6.12.117+deb12-amd64: " +
		"boot its kernel with --kernel-package linux-image-6.1.0-57-amd64-unsigned, or build the module against 6.12.117+deb12-amd64's headers"
	if err == nil || err.Error() != want {
		t.Errorf("a 6.1 module in a 6.12 guest: %v\nwant %s", err, want)
	}
	for _, rel := range []string{"6.1.0-57-amd64", ""} {
		if mods, err := insmodFile(ko, nil, rel); err != nil || len(mods) != 1 || mods[0].Name != "homa" {
			t.Errorf("guest release %q: %v, %v; want the module homa", rel, mods, err)
		}
	}
	custom := filepath.Join(dir, "custom.ko")
	os.WriteFile(custom, fakeModule(t, "name=homa", "vermagic=6.13.9-homa SMP mod_unload "), 0o644)
	if _, err := insmodFile(custom, nil, "6.12.117+deb12-amd64"); err == nil || !strings.Contains(err.Error(), "boot its kernel with --kernel IMAGE --modules DIR of kernel 6.13.9-homa,") {
		t.Errorf("a module of a custom kernel: %v", err)
	}
	// Through the initramfs: refused before the file is made.
	img := filepath.Join(dir, "vmlinuz")
	os.WriteFile(img, fakeBzImage("6.12.117+deb12-amd64 (debian-kernel@lists.debian.org) #1 SMP"), 0o644)
	cfg := Config{Kernel: Kernel{Image: img}, Insmod: []string{ko}}
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := cfg.writeInitramfs(initrd); err == nil || err.Error() != want {
		t.Errorf("writeInitramfs: %v; want %s", err, want)
	}
	if _, err := os.Stat(initrd); !os.IsNotExist(err) {
		t.Errorf("the refused initramfs was made: %v", err)
	}
}
