package lab

import (
	"fmt"
	"strings"
)

// Console markers: the guest's init prints them on its control port
// (controlPort), where Run finds the start of the command, its exit code
// and the init's notes, each line whole whatever the kernel prints on its
// console meanwhile.
const (
	markStart = "homatest-lab: start"
	markExit  = "homatest-lab: exit "
	// markNote starts the init script's own messages (a failed step).
	markNote = "homatest-lab: "
)

// controlPort is the guest's device for the init's markers and notes: the
// second serial port (guestStreams' "control"). A kernel without one (a
// custom kernel built with a single 8250 port) gets them on its console.
const controlPort = "/dev/ttyS1"

// Sysctl is one NAME=VALUE setting applied in the guest's initial network
// namespace after the modules are loaded (NAME in dotted form,
// net.homa.resend_ticks, written to /proc/sys/net/homa/resend_ticks).
type Sysctl struct{ Name, Value string }

// ParseSysctl parses NAME=VALUE.
func ParseSysctl(s string) (Sysctl, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.ContainsAny(name, "/ ") || strings.Contains(name, "..") {
		return Sysctl{}, fmt.Errorf("--sysctl %q: want NAME=VALUE, e.g. net.homa.resend_ticks=50", s)
	}
	return Sysctl{Name: name, Value: value}, nil
}

// quote returns s as one POSIX shell word.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// initScript is the guest's /init (busybox sh): mount the pseudo file
// systems and the shared folder at dir, load the modules, apply the
// sysctls, run the command in dir with stdout and stderr in files on the
// output share (outputTag), print their sizes and SHA-256 sums
// (markOutput) and the command's exit code on controlPort and power off. A step
// that fails before the command ends the run with exit code 125 and says
// which step (a note on controlPort); its own error output goes to the
// kernel's console, with the kernel's messages.
func initScript(dir string, sysctls []Sysctl, env, command []string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("#!/bin/busybox sh")
	w("/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin")
	w("/bin/busybox --install -s")
	w("export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb HOMATEST_LAB=1")
	w("ctl=%s", controlPort)
	w("fail() { echo \"%s$*\" >$ctl; echo '%s125' >$ctl; sync; poweroff -f; sleep 60; }", markNote, markExit)
	w("mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t devtmpfs dev /dev || fail 'mount /proc, /sys, /dev'")
	w("[ -e /sys/class/tty/%s ] || ctl=/dev/console", strings.TrimPrefix(controlPort, "/dev/"))
	w("mount -t tmpfs run /run && mount -t tmpfs tmp /tmp && ln -s /run /var/run 2>/dev/null")
	w("mkdir -p /var /sys/fs/bpf /dev/pts && mount -t devpts pts /dev/pts")
	w("for m in $(cat /lab/modules); do insmod /lib/modules/lab/$m.ko || fail \"insmod $m\"; done")
	// lo's addresses are the only ones the guest sets itself, and the
	// kernel installs ::1's local route as it adds the address (no DAD
	// work, as for other IPv6 addresses): nothing to wait for. Topologies
	// in the guest are harness.Build's, which waits for each host's.
	w("ip link set lo up")
	w("mkdir -p %s && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share %s || fail %s", quote(dir), quote(dir),
		quote("mount the shared folder "+dir+" over 9p (a kernel with 9p, 9pnet_virtio as modules needs --modules DIR)"))
	for _, s := range sysctls {
		path := "/proc/sys/" + strings.ReplaceAll(s.Name, ".", "/")
		w("echo %s > %s || fail %s", quote(s.Value), quote(path), quote("sysctl "+s.Name+"="+s.Value+" (no "+path+"?)"))
	}
	for _, e := range env {
		w("export %s", quote(e))
	}
	w("mkdir -p %s && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 %s %s || fail %s", outputDir, outputTag, outputDir,
		quote("mount the output folder over 9p"))
	w("cd %s || fail 'cd %s'", quote(dir), dir)
	w("echo '%s' >$ctl", markStart)
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = quote(a)
	}
	w("%s </dev/null >%s/stdout 2>%s/stderr", strings.Join(quoted, " "), outputDir, outputDir)
	w("rc=$?")
	w("sync")
	// Read back through 9p (no cache): the sums of the host's files.
	w("for f in %s; do echo \"%s$f $(wc -c <%s/$f) $(sha256sum <%s/$f | cut -d' ' -f1)\" >$ctl; done",
		strings.Join(outputNames[:], " "), markOutput, outputDir, outputDir)
	w("echo \"%s$rc\" >$ctl", markExit)
	w("poweroff -f")
	w("sleep 60")
	return b.String()
}
