package lab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary stand in for QEMU (HOMATEST_FAKE_QEMU
// names a folder): it connects to the console and control sockets QEMU
// would, and either crashes before the init's start marker (the first N
// boots, N in the folder's "crashes" file) or starts and exits 0. With a "kvmabort"
// file it aborts as QEMU 7.2 does under a nested KVM that refuses
// MSR_IA32_ARCH_CAPABILITIES: whenever -accel kvm runs a CPU model that
// sets it ("all" in the file: any model under KVM). A guest that starts
// writes the folder's "payload" file (if any) to the command's stdout file
// on the output share in 64 KiB pieces and "oops" to its stderr, and sends
// the sums of both, with "sums" in the folder: that many bytes more
// claimed for stdout (bytes the host never got), "none": no sums.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HOMATEST_FAKE_QEMU"); dir != "" {
		os.Exit(fakeQEMU(dir))
	}
	os.Exit(m.Run())
}

func fakeQEMU(dir string) int {
	var con, ctl, accel, cpu, out string
	for i, a := range os.Args[:len(os.Args)-1] {
		switch next := os.Args[i+1]; {
		case a == "-chardev" && strings.HasPrefix(next, "socket,id=con,path="):
			con = strings.TrimPrefix(next, "socket,id=con,path=")
		case a == "-chardev" && strings.HasPrefix(next, "socket,id=ctl,path="):
			ctl = strings.TrimPrefix(next, "socket,id=ctl,path=")
		case a == "-fsdev" && strings.HasPrefix(next, "local,id=out,"):
			_, out, _ = strings.Cut(next, ",path=")
		case a == "-accel":
			accel = next
		case a == "-cpu":
			cpu = next
		}
	}
	f, _ := os.OpenFile(filepath.Join(dir, "runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fmt.Fprintf(f, "%s %s\n", accel, cpu)
	f.Close()
	if b, err := os.ReadFile(filepath.Join(dir, "kvmabort")); err == nil && accel == "kvm" &&
		(strings.TrimSpace(string(b)) == "all" || !strings.Contains(cpu, "arch-capabilities=off")) {
		fmt.Fprintf(os.Stderr, "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\nqemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed.\n")
		return 134 // QEMU's abort: 128+SIGABRT from a shell's view
	}
	c, err := net.Dial("unix", con)
	if err != nil {
		return 1
	}
	defer c.Close()
	if _, err := os.Stat(filepath.Join(dir, "kvmhang")); err == nil && accel == "kvm" {
		// A PVM host's nested KVM running Debian's 6.1 kernel: the boot
		// loader's line, then nothing, until killed.
		c.Write([]byte("Probing EDD (edd=off to disable)... ok\n"))
		select {}
	}
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
	k, err := net.Dial("unix", ctl)
	if err != nil {
		return 1
	}
	defer k.Close()
	c.Write([]byte("[    2.132665] Run /init as init process\n"))
	k.Write([]byte(markStart + "\n"))
	payload, _ := os.ReadFile(filepath.Join(dir, "payload"))
	extra, _ := os.ReadFile(filepath.Join(dir, "sums"))
	for name, data := range map[string][]byte{"stdout": payload, "stderr": []byte("oops\n")} {
		f, err := os.OpenFile(filepath.Join(out, name), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return 1
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 64<<10)
			f.Write(p[:n])
			p = p[n:]
			time.Sleep(time.Millisecond)
		}
		f.Close()
		more, _ := strconv.Atoi(string(extra))
		if name == "stderr" {
			more = 0
		}
		if string(extra) != "none" {
			fmt.Fprintf(k, "%s%s %d %x\n", markOutput, name, len(data)+more, sha256.Sum256(data))
		}
	}
	k.Write([]byte(markExit + "0\n"))
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

// TestKVMAbortFallsBack: QEMU that aborts under KVM before the guest
// boots (a nested KVM refusing an MSR of the "max" CPU model) is started
// again under KVM without that feature, and the result notes why; when
// every KVM attempt aborts, -accel kvm is an errKVMFailed that quotes
// QEMU.
func TestKVMAbortFallsBack(t *testing.T) {
	if ok, err := IsStatic("/bin/busybox"); err != nil || !ok {
		t.Skip("no static /bin/busybox (Debian: busybox-static)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		abort, runs string
		ok          bool
	}{
		{"", "kvm max\n", true},
		{"max", "kvm max\nkvm max,arch-capabilities=off\n", true},
		{"all", "kvm max\nkvm max,arch-capabilities=off\n", false},
	} {
		dir := t.TempDir()
		if c.abort != "" {
			os.WriteFile(filepath.Join(dir, "kvmabort"), []byte(c.abort), 0o644)
		}
		image := filepath.Join(dir, "vmlinuz")
		os.WriteFile(image, []byte("not a kernel"), 0o644)
		t.Setenv("HOMATEST_FAKE_QEMU", dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := Run(ctx, Config{Kernel: Kernel{Image: image}, QEMU: self, Accel: "kvm", Busybox: "/bin/busybox",
			Homatest: "/bin/busybox", Tools: []string{}, Dir: dir, Command: []string{"true"}})
		cancel()
		runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
		if string(runs) != c.runs {
			t.Errorf("abort %q: QEMU ran as %q, want %q", c.abort, runs, c.runs)
		}
		noted := len(res.Notes) > 0 && strings.Contains(res.Notes[0], "failed to set MSR 0x10a")
		switch {
		case c.ok && (err != nil || res.ExitCode != 0 || !res.KVM || noted != (c.abort != "")):
			t.Errorf("abort %q: exit %d, KVM %v, notes %q, %v; want exit 0 under KVM, a note iff KVM aborted", c.abort, res.ExitCode, res.KVM, res.Notes, err)
		case !c.ok && (!errors.Is(err, errKVMFailed) || !strings.Contains(err.Error(), "kvm_buf_set_msrs")):
			t.Errorf("abort %q: %v, want errKVMFailed quoting QEMU", c.abort, err)
		}
	}
}

// TestKVMHangFallsBack: a guest that neither fails nor starts its command
// under KVM (a PVM host's nested KVM booting Debian's 6.1 kernel: nothing
// after the boot loader's "Probing EDD", until the 40-minute --timeout
// killed it) is given up kvmStartLimit after QEMU's start, and auto boots
// it under software emulation at once, noting why; with --accel kvm the
// hang is an errKVMFailed. Before, Run waited out Timeout (here 20 s) and
// returned ErrGuestTimeout.
func TestKVMHangFallsBack(t *testing.T) {
	if ok, err := IsStatic("/bin/busybox"); err != nil || !ok {
		t.Skip("no static /bin/busybox (Debian: busybox-static)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	defer func(l time.Duration, u func() bool) { kvmStartLimit, kvmUsable = l, u }(kvmStartLimit, kvmUsable)
	kvmStartLimit = time.Second
	kvmUsable = func() bool { return true }
	for _, c := range []struct {
		accel, runs string
		ok          bool
	}{
		{"auto", "kvm max\ntcg,thread=multi max\n", true},
		{"kvm", "kvm max\nkvm max,arch-capabilities=off\n", false},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "kvmhang"), nil, 0o644)
		image := filepath.Join(dir, "vmlinuz")
		os.WriteFile(image, []byte("not a kernel"), 0o644)
		t.Setenv("HOMATEST_FAKE_QEMU", dir)
		var console bytes.Buffer
		start := time.Now()
		res, err := Run(context.Background(), Config{Kernel: Kernel{Image: image}, QEMU: self, Accel: c.accel, Busybox: "/bin/busybox",
			Homatest: "/bin/busybox", Tools: []string{}, Dir: dir, Command: []string{"true"}, Timeout: 20 * time.Second, Console: &console})
		took := time.Since(start)
		runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
		if string(runs) != c.runs {
			t.Errorf("%s: QEMU ran as %q, want %q", c.accel, runs, c.runs)
		}
		if took >= 15*time.Second {
			t.Errorf("%s: Run took %v, want the hang given up after kvmStartLimit (1s) a boot", c.accel, took)
		}
		noted := len(res.Notes) > 0 && strings.Contains(res.Notes[0], "hung under KVM")
		switch {
		case c.ok && (err != nil || res.ExitCode != 0 || res.KVM || !noted || !strings.Contains(console.String(), "trying software emulation")):
			t.Errorf("%s: exit %d, KVM %v, notes %q, %v; want exit 0 under software emulation, noting the hang", c.accel, res.ExitCode, res.KVM, res.Notes, err)
		case !c.ok && (!errors.Is(err, errKVMFailed) || !errors.Is(err, errKVMHung) || !strings.Contains(err.Error(), "Probing EDD")):
			t.Errorf("%s: %v, want errKVMFailed for a hang, quoting the console", c.accel, err)
		}
	}
}

// TestVMAttempts: auto tries KVM (then KVM without the MSR QEMU's "max"
// model sets, then software emulation) only when /dev/kvm opens.
func TestVMAttempts(t *testing.T) {
	for _, c := range []struct {
		accel string
		kvm   bool
		want  string
	}{
		{"auto", true, "KVM with -cpu max, KVM with -cpu max,arch-capabilities=off, software emulation"},
		{"auto", false, "software emulation"},
		{"kvm", false, "KVM with -cpu max, KVM with -cpu max,arch-capabilities=off"},
		{"tcg", true, "software emulation"},
	} {
		var got []string
		for _, a := range vmAttempts(c.accel, c.kvm) {
			got = append(got, a.String())
		}
		if s := strings.Join(got, ", "); s != c.want {
			t.Errorf("vmAttempts(%q, %v) = %s, want %s", c.accel, c.kvm, s, c.want)
		}
	}
}

// slowWriter takes each write after a pause (a reader behind on a loaded
// machine: the old virtconsole transport lost bytes then), failing once
// it has taken limit bytes when limit is positive (a reader that closed).
type slowWriter struct {
	bytes.Buffer
	limit int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	if w.limit > 0 && w.Len()+len(p) > w.limit {
		return 0, errors.New("broken pipe")
	}
	return w.Buffer.Write(p)
}

// TestOutputRelayed: the command's output reaches Stdout and Stderr
// whole, byte for byte (no "\r" added), through a slow reader; output
// the host did not get whole (the guest's sums claim more, a reader that
// closed early, no sums) is an error naming the stream, never a silent
// exit 0.
func TestOutputRelayed(t *testing.T) {
	if ok, err := IsStatic("/bin/busybox"); err != nil || !ok {
		t.Skip("no static /bin/busybox (Debian: busybox-static)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var payload bytes.Buffer
	for i := 0; payload.Len() < 3<<20; i++ {
		fmt.Fprintf(&payload, "{\"spec\":\"S-%d\",\"verdict\":\"pass\"}\n", i)
	}
	for _, c := range []struct {
		name, sums string
		limit      int
		want       string
	}{
		{"whole", "", 0, ""},
		{"bytes lost", "7", 0, fmt.Sprintf("lab: COMMAND's stdout came corrupted: the guest wrote %d bytes", payload.Len()+7)},
		{"reader closed", "", 1 << 20, "lab: COMMAND's stdout was not relayed whole: broken pipe after"},
		{"no sums", "none", 0, "lab: the guest never said how much COMMAND wrote to its stdout"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "payload"), payload.Bytes(), 0o644)
		if c.sums != "" {
			os.WriteFile(filepath.Join(dir, "sums"), []byte(c.sums), 0o644)
		}
		image := filepath.Join(dir, "vmlinuz")
		os.WriteFile(image, []byte("not a kernel"), 0o644)
		t.Setenv("HOMATEST_FAKE_QEMU", dir)
		stdout, stderr := &slowWriter{limit: c.limit}, &slowWriter{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := Run(ctx, Config{Kernel: Kernel{Image: image}, QEMU: self, Accel: "tcg", Busybox: "/bin/busybox",
			Homatest: "/bin/busybox", Tools: []string{}, Dir: dir, Command: []string{"true"}, Stdout: stdout, Stderr: stderr})
		cancel()
		if c.want == "" {
			if err != nil || res.ExitCode != 0 || !bytes.Equal(stdout.Bytes(), payload.Bytes()) || stderr.String() != "oops\n" {
				t.Errorf("%s: exit %d, %v; stdout %d bytes (equal %v), stderr %q; want exit 0, the %d bytes, \"oops\\n\"",
					c.name, res.ExitCode, err, stdout.Len(), bytes.Equal(stdout.Bytes(), payload.Bytes()), stderr.String(), payload.Len())
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line starting %q", c.name, err, c.want)
		}
	}
}
