package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homatest/homatest/internal/childproc"
)

// Config is one lab run.
type Config struct {
	// Kernel is the kernel to boot; Kernel.Modules, when set, supplies
	// TestbedModules (those it has).
	Kernel Kernel
	// Insmod are extra module files (e.g. homa.ko) loaded after the
	// testbed modules, in order; their dependencies come from
	// Kernel.Modules.
	Insmod []string
	// Sysctls are applied after the modules are loaded.
	Sysctls []Sysctl
	// Command runs in Dir inside the guest (PATH holds busybox, homatest
	// and Tools).
	Command []string
	// Env are NAME=VALUE pairs exported for the command.
	Env []string
	// Dir is the host folder shared with the guest over 9p, mounted at the
	// same path (default: the working folder).
	Dir string
	// Homatest is a statically linked homatest (default: this executable,
	// if it is static).
	Homatest string
	// Busybox is a statically linked busybox (default /bin/busybox).
	Busybox string
	// Tools are host executables copied into the guest with their
	// libraries (default: DefaultTools found on this host).
	Tools []string
	// QEMU is the emulator (default qemu-system-x86_64).
	QEMU string
	// Accel is "kvm", "tcg" (software emulation) or "auto" (default): KVM
	// when /dev/kvm can be opened, and TCG when KVM fails to run the guest
	// (nested virtualisation that opens but cannot emulate).
	Accel string
	// CPUs and MemoryMiB size the guest (default 2 and 2048).
	CPUs, MemoryMiB int
	// Timeout, when positive, bounds the guest's run: QEMU is killed this
	// long after it starts (the guest's boot included; the initramfs
	// built before it is not), and Run returns ErrGuestTimeout. A boot
	// tried again (KVM failing, a crash under software emulation) gets
	// the whole Timeout anew.
	Timeout time.Duration
	// Stdout and Stderr receive the command's output (nil: discard).
	Stdout, Stderr io.Writer
	// Console receives the guest's console line by line (nil: discard):
	// the kernel's log from boot on (loglevel 7), the init's own error
	// output, and its markers and notes (from the control port, merged
	// in as they come). The last lines are also in a failed run's error.
	Console io.Writer
}

// DefaultTools are copied into the guest when this host has them: Debian's
// tc and ip (iproute2), to compare what homatest configures with what the
// kernel's own tools show.
var DefaultTools = []string{"/usr/sbin/tc", "/usr/sbin/ip", "/sbin/tc", "/sbin/ip"}

// Result is what a run measured.
type Result struct {
	// ExitCode is the command's exit status in the guest (125: the guest
	// failed before the command; 127: command not found).
	ExitCode int
	// Boot is the time from starting QEMU to starting the command.
	Boot time.Duration
	// Total is the time from starting QEMU to its exit.
	Total time.Duration
	// KVM is set when the guest ran with KVM (else software emulation).
	KVM bool
	// Notes are the guest init's messages, e.g. why it failed before the
	// command ("insmod homa", "sysctl net.homa.x=1 (no /proc/sys/net/homa/x?)").
	Notes []string
}

// ErrNoQEMU is returned by Run when the emulator cannot be found.
var ErrNoQEMU = errors.New("lab: qemu-system-x86_64 not found (Debian: apt-get install qemu-system-x86)")

// Run boots cfg.Kernel in QEMU with an initramfs built from cfg, runs the
// command and returns its exit code. The VM is killed when ctx ends, and
// when this process dies (Pdeathsig). An error means the command's exit
// code is unknown (QEMU failed, the guest crashed or ctx ended); it quotes
// the last console lines.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if len(cfg.Command) == 0 {
		return res, errors.New("lab: no command")
	}
	if err := cfg.defaults(); err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp("", "homatest-lab-")
	if err != nil {
		return res, fmt.Errorf("lab: %w", err)
	}
	defer os.RemoveAll(tmp)
	initrd := filepath.Join(tmp, "initramfs.cpio")
	if err := cfg.writeInitramfs(initrd); err != nil {
		return res, err
	}
	// The command's output files, shared with the guest over 9p (see
	// outputTag).
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return res, fmt.Errorf("lab: %w", err)
	}
	// The guest's streams come over unix sockets QEMU connects to, in
	// guestStreams' order.
	var lns [len(guestStreams)]*net.UnixListener
	names := guestStreams[:]
	for i, n := range names {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(tmp, n+".sock"), Net: "unix"})
		if err != nil {
			return res, fmt.Errorf("lab: %w", err)
		}
		defer l.Close()
		lns[i] = l
	}
	attempts := vmAttempts(cfg.Accel, kvmUsable())
	var err2 error
	rebooted := false
	var kvmNotes []string
	for i := 0; i < len(attempts); i++ {
		a := attempts[i]
		res, err2 = cfg.boot(ctx, a, initrd, out, lns)
		switch {
		case errors.Is(err2, errBootCrashed) && a.accel == "tcg" && !rebooted:
			// A stock kernel that crashes before its init starts the
			// command under software emulation (seen once in ~40 loaded
			// runs: a jump-label text poke racing a vCPU in QEMU's
			// multi-threaded TCG) says nothing about the command: boot
			// once more, and say so. A second crash is the error.
			rebooted = true
			i--
			if cfg.Console != nil {
				fmt.Fprintf(cfg.Console, "homatest-lab: the guest crashed before the command started; booting again\n")
			}
		case errors.Is(err2, errKVMFailed) && i < len(attempts)-1:
			if errors.Is(err2, errKVMHung) {
				// A guest that hung under KVM hung with either CPU
				// model (a PVM host's nested KVM, Debian's 6.1): go
				// straight to the last way (software emulation, under
				// auto) rather than wait kvmStartLimit once more.
				i = len(attempts) - 2
			}
			next := attempts[i+1]
			note := fmt.Sprintf("KVM with -cpu %s failed (%s); trying %s", a.cpu, strings.TrimPrefix(firstLine(err2), errKVMFailed.Error()+": "), next)
			kvmNotes = append(kvmNotes, note)
			if cfg.Console != nil {
				fmt.Fprintf(cfg.Console, "homatest-lab: %s\n", note)
			}
		default:
			if rebooted {
				res.Notes = append([]string{"the guest crashed before the command started and was booted again"}, res.Notes...)
			}
			res.Notes = append(kvmNotes, res.Notes...)
			return res, err2
		}
		// QEMU connected to the sockets once; listen anew.
		for j := range lns {
			lns[j].Close()
			if lns[j], err = net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(tmp, names[j]+".sock"), Net: "unix"}); err != nil {
				return res, fmt.Errorf("lab: %w", err)
			}
			defer lns[j].Close()
		}
	}
	return res, err2
}

// errKVMFailed is returned by boot when QEMU under KVM reported a KVM
// internal error, or exited with an error before the guest's command
// started: KVM opens but cannot run this CPU model here.
var errKVMFailed = errors.New("lab: KVM cannot run the guest")

// errKVMHung is wrapped with errKVMFailed by boot when a guest under KVM
// had not started its command kvmStartLimit after QEMU's start: a nested
// KVM that cannot run the kernel may neither fail nor print (Debian's
// 6.1.0-57 kernel under a PVM host's KVM stopped after the boot loader's
// "Probing EDD" with no kernel message; 6.12.117 got a KVM internal
// error there), and the guest would wait out the whole --timeout.
var errKVMHung = errors.New("the guest hung under KVM")

// kvmStartLimit bounds a KVM guest's boot to its command: under KVM the
// guest starts it in 2-10 s even beside other jobs (software emulation,
// 12-60 s, is never bounded so).
var kvmStartLimit = 60 * time.Second

// vmAttempt is one way to start QEMU: an accelerator and a CPU model.
type vmAttempt struct {
	accel, cpu string
}

func (a vmAttempt) String() string {
	if a.accel == "tcg" {
		return "software emulation"
	}
	return "KVM with -cpu " + a.cpu
}

// vmAttempts lists the ways Run tries to start QEMU for accel ("auto",
// "kvm" or "tcg"), each tried when the one before failed with
// errKVMFailed. Under nested virtualisation KVM may open yet refuse an
// MSR that QEMU's "max" CPU model sets (seen: MSR_IA32_ARCH_CAPABILITIES,
// 0x10a, where QEMU 7.2 aborts in kvm_buf_set_msrs), so KVM is tried
// again without that feature before falling back to software emulation.
func vmAttempts(accel string, kvm bool) []vmAttempt {
	kvmTries := []vmAttempt{{"kvm", "max"}, {"kvm", "max,arch-capabilities=off"}}
	tcg := vmAttempt{"tcg", "max"}
	switch {
	case accel == "tcg" || accel == "auto" && !kvm:
		return []vmAttempt{tcg}
	case accel == "kvm":
		return kvmTries
	}
	return append(kvmTries, tcg)
}

// firstLine is err's text up to its first newline.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// errBootCrashed is returned by boot when the guest stopped before its
// init started the command (a kernel panic while booting).
// ErrGuestTimeout is wrapped by Run's error when the guest ran for
// Config.Timeout and was killed.
var ErrGuestTimeout = errors.New("lab: the guest was killed at its timeout")

var errBootCrashed = errors.New("lab: the guest stopped before the command started (kernel panic?)")

// guestStreams names the guest's serial streams, each a unix socket QEMU
// connects to: the console ttyS0 (the kernel's log) and ttyS1 (the init's
// markers and notes). The command's output comes as files (outputTag).
var guestStreams = [...]string{"console", "control"}

// kernelCmdline is the guest kernel's command line: its console on the
// first serial port at loglevel 7, every message but debug (the boot log
// a developer debugging the guest reads in --console: drivers, modules
// loaded, warnings; "quiet"'s loglevel 4 keeps errors only), reboot on a
// panic (which -no-reboot turns into QEMU's exit), and the initramfs's
// /init.
const kernelCmdline = "console=ttyS0 loglevel=7 panic=-1 rdinit=/init"

// qemuArgs is QEMU's command line for one boot as a says: socks are the
// unix sockets of guestStreams, in order, and out the host folder for the
// command's output files (outputTag).
func (cfg *Config) qemuArgs(a vmAttempt, initrd, out string, socks [len(guestStreams)]string) []string {
	accel := a.accel
	if accel == "tcg" {
		accel = "tcg,thread=multi"
	}
	return []string{
		"-name", "homatest-lab", "-accel", accel, "-cpu", a.cpu, "-smp", strconv.Itoa(cfg.CPUs), "-m", strconv.Itoa(cfg.MemoryMiB),
		"-display", "none", "-monitor", "none", "-nic", "none", "-no-reboot",
		"-chardev", "socket,id=con,path=" + socks[0],
		"-serial", "chardev:con", // ttyS0
		"-chardev", "socket,id=ctl,path=" + socks[1],
		"-serial", "chardev:ctl", // ttyS1
		"-fsdev", "local,id=share,security_model=none,path=" + cfg.Dir,
		"-device", "virtio-9p-pci,fsdev=share,mount_tag=share",
		"-fsdev", "local,id=out,security_model=none,path=" + out,
		"-device", "virtio-9p-pci,fsdev=out,mount_tag=" + outputTag,
		"-kernel", cfg.Kernel.Image, "-initrd", initrd,
		"-append", kernelCmdline,
	}
}

// boot runs QEMU once as a says, relaying the command's output files in
// out (made anew, empty) to cfg.Stdout and cfg.Stderr and checking them
// against the guest's sums.
func (cfg *Config) boot(ctx context.Context, a vmAttempt, initrd, out string, lns [len(guestStreams)]*net.UnixListener) (Result, error) {
	res := Result{KVM: a.accel == "kvm"}
	var socks [len(guestStreams)]string
	for i, l := range lns {
		socks[i] = l.Addr().String()
	}
	var relays [len(outputNames)]*relay
	var wmu sync.Mutex
	for i, w := range []io.Writer{cfg.Stdout, cfg.Stderr} {
		p := filepath.Join(out, outputNames[i])
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return res, fmt.Errorf("lab: %w", err)
		}
		relays[i] = newRelay(p, orDiscard(w), &wmu)
	}
	args := cfg.qemuArgs(a, initrd, out, socks)
	start := time.Now()
	vmCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Timeout > 0 {
		// The guest's clock starts with QEMU (cancel still ends it all).
		var stop context.CancelFunc
		vmCtx, stop = context.WithTimeoutCause(vmCtx, cfg.Timeout, ErrGuestTimeout)
		defer stop()
	}
	stderrQ := tail{watch: "KVM internal error", hit: cancel}
	con := &console{w: cfg.Console, start: start}
	var hung atomic.Bool
	if a.accel == "kvm" {
		watchdog := time.AfterFunc(kvmStartLimit, func() {
			if !con.started() {
				hung.Store(true)
				cancel()
			}
		})
		defer watchdog.Stop()
	}
	// QEMU dies with this process (Pdeathsig), in its own process group.
	cmd := exec.CommandContext(vmCtx, cfg.QEMU, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout = &stderrQ
	cmd.Stderr = &stderrQ
	cmd.WaitDelay = 5 * time.Second
	exited, err := childproc.StartDying(cmd, syscall.SIGKILL)
	if err != nil {
		return res, fmt.Errorf("lab: start %s: %w", cfg.QEMU, err)
	}
	var wg sync.WaitGroup
	serial := []*consoleStream{con.stream(), con.stream()}
	outs := []io.Writer{serial[0], serial[1]}
	guestDone := make(chan struct{})
	for _, r := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(guestDone)
		}()
	}
	for i := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := acceptCtx(vmCtx, lns[i])
			if err != nil {
				return
			}
			defer c.Close()
			io.Copy(outs[i], c)
		}()
	}
	werr := <-exited
	res.Total = time.Since(start)
	close(guestDone) // the relays copy what is left and stop
	cancel()         // unblock accepts QEMU never made
	wg.Wait()
	for _, s := range serial {
		s.flush()
	}
	con.finish()
	res.Boot, res.Notes = con.boot, con.notes
	if con.exit >= 0 {
		res.ExitCode = con.exit
		if con.boot == 0 {
			return res, nil // the init failed before the command: no output
		}
		for i, r := range relays {
			sum, ok := con.sums[outputNames[i]]
			if err := r.check(outputNames[i], sum, ok); err != nil {
				return res, fmt.Errorf("%w (COMMAND exited %d)", err, res.ExitCode)
			}
		}
		return res, nil
	}
	switch {
	case hung.Load() && ctx.Err() == nil:
		return res, fmt.Errorf("%w: %w: its command had not started %v after QEMU's start\nconsole ended with:\n%s", errKVMFailed, errKVMHung, kvmStartLimit, con.last())
	case context.Cause(vmCtx) == ErrGuestTimeout:
		return res, fmt.Errorf("%w: %v from QEMU's start (boot included: %s); console ended with:\n%s", ErrGuestTimeout, cfg.Timeout, bootTook(con.boot), con.last())
	case stderrQ.fired(), res.KVM && werr != nil && con.boot == 0 && ctx.Err() == nil:
		return res, fmt.Errorf("%w: %s: %v: %s", errKVMFailed, cfg.QEMU, werr, strings.TrimSpace(stderrQ.String()))
	case ctx.Err() != nil:
		return res, fmt.Errorf("lab: %w after %v; console ended with:\n%s", ctx.Err(), res.Total.Round(time.Second), con.last())
	case werr != nil && stderrQ.String() != "":
		return res, fmt.Errorf("lab: %s: %v: %s", cfg.QEMU, werr, strings.TrimSpace(stderrQ.String()))
	}
	if con.boot == 0 {
		return res, fmt.Errorf("%w; console ended with:\n%s", errBootCrashed, con.last())
	}
	return res, fmt.Errorf("lab: the guest stopped before the command finished (kernel panic?); console ended with:\n%s", con.last())
}

// bootTook says how long the guest took to boot to its command, for an
// error: boot is Result.Boot, 0 when the command never started.
func bootTook(boot time.Duration) string {
	if boot == 0 {
		return "the command had not started"
	}
	return "the command started after " + boot.Round(100*time.Millisecond).String()
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// acceptCtx accepts one connection on l, giving up when ctx ends.
func acceptCtx(ctx context.Context, l *net.UnixListener) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { l.SetDeadline(time.Now()) })
	defer stop()
	return l.Accept()
}

// kvmUsable reports whether /dev/kvm can be opened for reading and
// writing (a variable: tests stand in a host with KVM).
var kvmUsable = func() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// defaults checks cfg's kernel image and the rest (Check), filling in the
// defaults.
func (cfg *Config) defaults() error {
	if cfg.Kernel.Image == "" {
		return errors.New("lab: no kernel image")
	}
	if _, err := os.Stat(cfg.Kernel.Image); err != nil {
		return fmt.Errorf("lab: kernel image: %w", err)
	}
	return cfg.Check()
}

// Check checks everything of cfg but its kernel, filling in the defaults:
// QEMU on the PATH, a static busybox and homatest, the working folder and
// the accelerator. Run calls it; a caller about to fetch a kernel (Fetch
// downloads about 100 MB on first use) calls it first, so that a setup
// that cannot boot is refused before. Errors say what to install or pass.
func (cfg *Config) Check() error {
	if cfg.QEMU == "" {
		cfg.QEMU = "qemu-system-x86_64"
	}
	if p, err := exec.LookPath(cfg.QEMU); err != nil {
		if cfg.QEMU == "qemu-system-x86_64" {
			return ErrNoQEMU
		}
		return fmt.Errorf("lab: %s: %w", cfg.QEMU, err)
	} else {
		cfg.QEMU = p
	}
	if cfg.Busybox == "" {
		cfg.Busybox = "/bin/busybox"
	}
	if ok, err := IsStatic(cfg.Busybox); err != nil || !ok {
		return fmt.Errorf("lab: %s is not a static busybox (Debian: apt-get install busybox-static)", cfg.Busybox)
	}
	if cfg.Homatest == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		cfg.Homatest = self
	}
	if ok, err := IsStatic(cfg.Homatest); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("lab: %s is linked dynamically; the guest needs a static homatest: CGO_ENABLED=0 go build -o homatest ./cmd/homatest, or pass --homatest FILE", cfg.Homatest)
	}
	if cfg.Tools == nil {
		seen := map[string]bool{}
		for _, t := range DefaultTools {
			if _, err := os.Stat(t); err == nil && !seen[filepath.Base(t)] {
				seen[filepath.Base(t)] = true
				cfg.Tools = append(cfg.Tools, t)
			}
		}
	}
	if cfg.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		cfg.Dir = wd
	}
	if !filepath.IsAbs(cfg.Dir) {
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		cfg.Dir = abs
	}
	switch cfg.Accel {
	case "":
		cfg.Accel = "auto"
	case "auto", "kvm", "tcg":
	default:
		return fmt.Errorf("lab: accelerator (--accel) %q: want auto, kvm or tcg", cfg.Accel)
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 2
	}
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 2048
	}
	return nil
}

// writeInitramfs resolves the modules and writes the initramfs to path.
func (cfg *Config) writeInitramfs(path string) error {
	// The guest kernel's release, to refuse a module built for another
	// before the guest boots; "" (nothing checked) when the image's boot
	// header cannot say.
	release, _ := ImageRelease(cfg.Kernel.Image)
	var mods []Module
	if cfg.Kernel.Modules != "" {
		tree, err := OpenModuleTree(cfg.Kernel.Modules)
		if err != nil {
			return err
		}
		if mods, err = tree.Resolve(TestbedModules, true); err != nil {
			return err
		}
		for _, p := range cfg.Insmod {
			extra, err := insmodFile(p, tree, release)
			if err != nil {
				return err
			}
			mods = appendNew(mods, extra...)
		}
	} else {
		for _, p := range cfg.Insmod {
			extra, err := insmodFile(p, nil, release)
			if err != nil {
				return err
			}
			mods = appendNew(mods, extra...)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	img := Image{Busybox: cfg.Busybox, Homatest: cfg.Homatest, Modules: mods, Tools: cfg.Tools,
		Init: initScript(cfg.Dir, cfg.Sysctls, cfg.Env, cfg.Command)}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = WriteInitramfs(bw, img)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("lab: %w", cerr)
	}
	return err
}

// insmodFile reads a user's module and the modules it depends on (from
// tree; without a tree it must depend on nothing the guest lacks). A
// module whose vermagic names a kernel release other than release (the
// guest's; "" checks nothing) is refused (vermagicError).
func insmodFile(path string, tree *ModuleTree, release string) ([]Module, error) {
	data, err := ReadModule(path)
	if err != nil {
		return nil, err
	}
	info, err := ModuleInfo(data)
	if err != nil {
		return nil, fmt.Errorf("lab: --insmod %s: %w", path, err)
	}
	if built, _, _ := strings.Cut(info["vermagic"], " "); release != "" && built != "" && built != release {
		return nil, vermagicError(path, built, release)
	}
	name := info["name"]
	if name == "" {
		name, _ = moduleName(filepath.Base(path))
	}
	var out []Module
	if d := info["depends"]; d != "" {
		if tree == nil {
			return nil, fmt.Errorf("lab: --insmod %s depends on %s: pass the kernel's modules with --modules DIR", path, d)
		}
		deps, err := tree.Resolve(strings.Split(d, ","), false)
		if err != nil {
			return nil, err
		}
		out = deps
	}
	return append(out, Module{Name: name, Data: data}), nil
}

// vermagicError says that module path, built for kernel release built
// (its vermagic's first word), cannot load in the guest's kernel release,
// and how to boot the kernel it was built for. The kernel would refuse it
// at insmod (a vermagic or, with modversions, a symbol version mismatch:
// "Invalid module format"), after the boot, with nothing naming the
// releases. A Debian release (NAME-amd64) is booted with its
// linux-image-NAME-unsigned package.
func vermagicError(path, built, release string) error {
	boot := "--kernel IMAGE --modules DIR of kernel " + built
	if strings.HasSuffix(built, "-amd64") {
		boot = "--kernel-package linux-image-" + built + "-unsigned"
	}
	return fmt.Errorf("lab: --insmod %s was built for kernel %s (its vermagic), but the guest boots %s: boot its kernel with %s, or build the module against %s's headers",
		path, built, release, boot, release)
}

// appendNew appends the modules of add not yet in mods (by name).
func appendNew(mods []Module, add ...Module) []Module {
	for _, m := range add {
		dup := false
		for _, o := range mods {
			dup = dup || o.Name == m.Name
		}
		if !dup {
			mods = append(mods, m)
		}
	}
	return mods
}
