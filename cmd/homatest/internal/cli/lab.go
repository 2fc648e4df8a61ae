package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/lab"
)

// labTimeoutWant is what a value of lab's --timeout looks like.
const labTimeoutWant = "a duration such as 10m, or 0 for no limit"

func newLabCmd() *cobra.Command {
	var (
		kernel, modules, pkg, homatest, console, accel string
		insmod, sysctls, env                           []string
		cpus, mem                                      int
		timeout                                        time.Duration
		verbose                                        bool
	)
	cmd := &cobra.Command{
		Use:   "lab [flags] -- COMMAND [ARG...]",
		Short: "Run a command in a QEMU guest with another kernel (e.g. with HomaModule loaded)",
		Long: `Lab boots a Linux kernel in QEMU with a small initramfs (busybox, this
homatest as /bin/homatest, Debian's tc and ip when this host has them, the
modules the testbed needs: veth, bridge, sch_prio, sch_netem, sch_htb,
sch_tbf, cls_u32, nf_tables, nft_numgen, tun, xfrm_user, 9p and the virtio
drivers; then every --insmod module),
applies the --sysctl settings, shares the working folder with the guest at
the same path (run folders written there stay on the host), runs COMMAND
there and exits with its exit code. COMMAND's stdout and stderr are this
command's, byte for byte (files on a 9p share, relayed as they grow and
checked against the guest's sizes and SHA-256 sums after COMMAND: a
stream that did not arrive whole exits 2 with a line saying so); the kernel's console (its log from boot on, loglevel 7) goes
to --console (or stderr with -v), a file made when the guest starts and
kept however the run ends.

Default kernel: Debian's stock ` + lab.DefaultPackage + `,
fetched with apt-get download and unpacked into the cache folder
($HOMATEST_LAB_CACHE, else ~/.cache/homatest/lab) on first use. --kernel
boots another bzImage; --modules gives its lib/modules/VERSION folder.
An --insmod module built for another kernel release than the guest's (its
vermagic) is refused before the boot (exit 2), the line naming both and
the --kernel-package that boots its kernel.

QEMU (Debian: qemu-system-x86) uses KVM when /dev/kvm works, software
emulation (TCG) otherwise: then a boot takes 12-60 s and everything runs 10-50x
slower. A guest that fails under KVM, or has not started COMMAND 60 s after
QEMU's start there (a nested KVM that hangs the kernel), is booted again
under software emulation, and the console says why. The guest is a child of this process and dies with it.

--timeout bounds the guest's run: QEMU is killed that long after it
starts, the guest's boot (12-60 s under software emulation) and COMMAND
included; the kernel's download (first use) and the initramfs build
before it do not count. A guest so killed exits 2 with a line saying so
and the last console lines.

The homatest binary must be linked statically (CGO_ENABLED=0 go build);
--homatest names another one. Needs root only for what COMMAND does.

Exit codes: COMMAND's; 125 when the guest failed before COMMAND (a module
that does not load, a sysctl that does not exist); 2 for bad flags, when
QEMU or the kernel cannot be had, for an --insmod module of another
kernel release, when the guest was killed at --timeout,
when it stopped before COMMAND finished (a kernel panic), when --console
could not be written, or when COMMAND's output did not arrive whole; 130
interrupted (Ctrl-C, SIGINT or SIGTERM: the guest is killed).`,
		Example: `  # a static homatest, which the guest runs (from the repository's root)
  CGO_ENABLED=0 go build -o homatest ./cmd/homatest
  # the tc backend (sch_netem, sch_prio) on a stock kernel: a scenario whose
  # switch is tc's, 2 ms delay and 2 % loss; its run folder stays here
  ./homatest lab -- homatest scenario run scenario/testdata/tc-delay-loss.yaml
  # the suite against your Homa module, its timers and homatest's scaled x10
  # for the emulated guest (as README's kernel Homa section)
  ./homatest lab --insmod ~/HomaModule/homa.ko --sysctl net.homa.resend_ticks=50 --sysctl net.homa.resend_interval=50 \
    --sysctl net.homa.timeout_ticks=1000 --sysctl net.homa.request_ack_ticks=20 --env HOMATEST_TIME_SCALE=10 -- homatest run --impl linux`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(errors.New("lab wants a COMMAND to run in the guest: homatest lab [flags] -- COMMAND [ARG...], e.g. homatest lab -- homatest netem set --help (more examples: homatest lab --help)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return usageErr(errors.New("put COMMAND after --: homatest lab [flags] -- COMMAND [ARG...]"))
			}
			switch {
			case cpus < 1:
				return usageErr(fmt.Errorf("--cpus %d: want 1 or more guest CPUs (default 2)", cpus))
			case mem < 1:
				return usageErr(fmt.Errorf("--memory %d: want the guest's memory in MiB, 1 or more (default 2048)", mem))
			case timeout < 0:
				// One wording with pflag's for a value it cannot parse
				// (wantValue, flagValueError).
				return usageErr(fmt.Errorf("--timeout %q: want %s (see %s --help)", timeout.String(), labTimeoutWant, cmd.CommandPath()))
			}
			cfg := lab.Config{Command: args, Insmod: insmod, Env: env, Homatest: homatest, Accel: accel, CPUs: cpus, MemoryMiB: mem,
				Timeout: timeout, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
			for _, s := range sysctls {
				sc, err := lab.ParseSysctl(s)
				if err != nil {
					return usageErr(err)
				}
				cfg.Sysctls = append(cfg.Sysctls, sc)
			}
			for _, p := range insmod {
				if err := checkInputFile("--insmod", p, "give a module file built for the guest's kernel, e.g. HomaModule's homa.ko"); err != nil {
					return usageErr(err)
				}
			}
			if err := checkOutputFile("--console", console); err != nil {
				return usageErr(err)
			}
			if kernel != "" {
				if pkg != "" {
					return usageErr(errors.New("--kernel and --kernel-package: give one"))
				}
				if err := checkInputFile("--kernel", kernel, "give a bzImage file, or drop --kernel to boot Debian's "+lab.DefaultPackage); err != nil {
					return usageErr(err)
				}
			}
			if modules != "" {
				if st, err := os.Stat(modules); err != nil || !st.IsDir() {
					return usageErr(fmt.Errorf("--modules %s: not a folder (give the kernel's lib/modules/VERSION folder)", modules))
				}
			}
			// QEMU, busybox, a static homatest and --accel are checked
			// before a kernel is fetched (about 100 MB on first use).
			if err := cfg.Check(); err != nil {
				return usageErr(err)
			}
			ctx := cmd.Context()
			if kernel != "" {
				cfg.Kernel = lab.Kernel{Image: kernel, Modules: modules}
			} else {
				k, err := lab.Fetch(ctx, pkg, "")
				if err != nil {
					return labErr(ctx, err)
				}
				if modules != "" {
					k.Modules = modules
				}
				cfg.Kernel = k
			}
			var consoleW io.Writer
			var consoleF *consoleFile
			if console != "" {
				consoleF = &consoleFile{path: console}
				defer consoleF.Close()
				consoleW = consoleF
			}
			if verbose {
				if consoleW != nil {
					consoleW = io.MultiWriter(consoleW, cmd.ErrOrStderr())
				} else {
					consoleW = cmd.ErrOrStderr()
				}
			}
			cfg.Console = consoleW
			res, err := lab.Run(ctx, cfg)
			if consoleF != nil {
				if cerr := consoleF.Close(); cerr != nil {
					// The guest ran; its log is what went wrong.
					what := fmt.Sprintf("COMMAND exited %d", res.ExitCode)
					if err != nil {
						what = err.Error()
					}
					return usageErr(fmt.Errorf("%w (%s)", flagWriteErr("--console", console, cerr), what))
				}
			}
			if err != nil {
				return labErr(ctx, err)
			}
			if verbose {
				fmt.Fprintf(cmd.ErrOrStderr(), "homatest lab: %s: booted in %v, exit %d after %v (%s)\n", cfg.Kernel.Image,
					res.Boot.Round(100*time.Millisecond), res.ExitCode, res.Total.Round(100*time.Millisecond), map[bool]string{true: "KVM", false: "software emulation"}[res.KVM])
			}
			if res.ExitCode == 125 && len(res.Notes) > 0 {
				return &ExitError{Code: 125, Err: fmt.Errorf("lab: the guest failed before COMMAND: %s", strings.Join(res.Notes, "; "))}
			}
			if res.ExitCode != 0 {
				return &ExitError{Code: res.ExitCode, Err: errors.New("")}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kernel, "kernel", "", "bzImage to boot (default: Debian's "+lab.DefaultPackage+")")
	f.StringVar(&pkg, "kernel-package", "", "Debian linux-image package to fetch and boot instead of the default")
	f.StringVar(&modules, "modules", "", "the kernel's module folder (lib/modules/VERSION) for the testbed modules and --insmod dependencies")
	f.StringArrayVar(&insmod, "insmod", nil, "module file to load after the testbed modules (repeatable, in order), e.g. homa.ko")
	f.StringArrayVar(&sysctls, "sysctl", nil, "NAME=VALUE to set after loading the modules (repeatable), e.g. net.homa.resend_ticks=50")
	f.StringArrayVar(&env, "env", nil, "NAME=VALUE exported for COMMAND (repeatable)")
	f.StringVar(&homatest, "homatest", "", "static homatest binary for the guest (default: this one)")
	f.StringVar(&console, "console", "", "write the kernel's console (its log from boot on, and the lab's markers) to this file, kept when the run fails")
	f.StringVar(&accel, "accel", "auto", "auto (KVM when /dev/kvm works, else software emulation), kvm or tcg")
	f.IntVar(&cpus, "cpus", 2, "guest CPUs")
	f.IntVar(&mem, "memory", 2048, "guest memory in MiB")
	f.DurationVar(&timeout, "timeout", 0, "kill the guest this long after QEMU starts it: its boot and COMMAND, not the kernel fetch or the initramfs build before (0: no limit)")
	wantValue(f, "timeout", labTimeoutWant)
	f.BoolVarP(&verbose, "verbose", "v", false, "copy the kernel's console to stderr and print the boot time")
	return cmd
}

// consoleFile is --console's file, created (or emptied) at its first
// write, when the guest has started: a lab refused before (a kernel that
// cannot be had, modules that do not resolve) leaves no file, and a file
// of that name as it was. From then on it holds the guest's console as it
// comes, so it can be followed while the guest runs and keeps what came
// before a failure. Close returns the first error.
type consoleFile struct {
	path   string
	f      *os.File
	closed bool
	err    error
}

func (c *consoleFile) Write(p []byte) (int, error) {
	if c.closed {
		return 0, os.ErrClosed
	}
	if c.f == nil && c.err == nil {
		var pe *fs.PathError
		if c.f, c.err = os.Create(c.path); errors.As(c.err, &pe) {
			c.err = pe.Err // the flag's error names the path
		}
	}
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.f.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Close closes the file (if the guest wrote any) and returns the first
// error creating, writing or closing it; closing again returns it again.
func (c *consoleFile) Close() error {
	c.closed = true
	if c.f != nil {
		if err := c.f.Close(); err != nil && c.err == nil {
			c.err = err
		}
		c.f = nil
	}
	return c.err
}

// labErr is the error of a lab whose kernel fetch or guest ended in err:
// exit 130 when a signal ended ctx (Main's SIGINT or SIGTERM: the guest
// was killed, the fetch stopped), as every command exits when
// interrupted, else 2 (the guest's --timeout runs on a context of its
// own: lab.ErrGuestTimeout).
func labErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &ExitError{Code: 130, Err: fmt.Errorf("interrupted: %w", err)}
	}
	return usageErr(err)
}
