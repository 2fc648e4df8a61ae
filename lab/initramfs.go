package lab

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/cpio"
)

// Image is what goes into a lab initramfs.
type Image struct {
	// Busybox is a statically linked busybox (Debian busybox-static:
	// /bin/busybox).
	Busybox string
	// Homatest is a statically linked homatest binary, installed as
	// /bin/homatest.
	Homatest string
	// Modules are loaded by insmod in this order before the command.
	Modules []Module
	// Tools are host executables copied with the shared libraries ldd
	// lists for them, at their host paths (e.g. /usr/sbin/tc).
	Tools []string
	// Init is the /init script.
	Init string
}

// WriteInitramfs writes img as an uncompressed newc cpio archive (the
// format the kernel unpacks into its initial root file system).
func WriteInitramfs(w io.Writer, img Image) error {
	var recs []cpio.Record
	file := func(name string, data []byte, perm uint64) {
		recs = append(recs, cpio.StaticRecord(data, cpio.Info{Name: name, Mode: cpio.S_IFREG | perm}))
	}
	for _, src := range []struct{ path, name string }{{img.Busybox, "bin/busybox"}, {img.Homatest, "bin/homatest"}} {
		b, err := os.ReadFile(src.path)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		file(src.name, b, 0o755)
	}
	var order []string
	for _, m := range img.Modules {
		file("lib/modules/lab/"+m.Name+".ko", m.Data, 0o644)
		order = append(order, m.Name)
	}
	file("lab/modules", []byte(strings.Join(order, "\n")+"\n"), 0o644)
	files := map[string]bool{}
	for _, t := range img.Tools {
		deps, err := sharedLibs(t)
		if err != nil {
			return err
		}
		for _, f := range append([]string{t}, deps...) {
			files[f] = true
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		file(strings.TrimPrefix(f, "/"), b, 0o755)
	}
	file("init", []byte(img.Init), 0o755)
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp", "root", "etc", "var"} {
		recs = append(recs, cpio.Directory(d, 0o755))
	}
	// /dev/console must exist before devtmpfs is mounted: the kernel opens
	// it for init's standard streams.
	recs = append(recs, cpio.CharDev("dev/console", 0o600, 5, 1))
	// The control port too: a step that fails before devtmpfs is
	// mounted says so there.
	recs = append(recs, cpio.CharDev(strings.TrimPrefix(controlPort, "/"), 0o600, 4, 65))
	recs = append(recs, cpio.StaticFile("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644))
	cw := cpio.NewDedupWriter(cpio.Newc.Writer(w))
	if err := cpio.WriteRecordsAndDirs(cw, recs); err != nil {
		return fmt.Errorf("lab: initramfs: %w", err)
	}
	if err := cpio.WriteTrailer(cw); err != nil {
		return fmt.Errorf("lab: initramfs: %w", err)
	}
	return nil
}

var lddPath = regexp.MustCompile(`(/\S+)\s+\(0x`)

// sharedLibs returns the shared libraries (and the dynamic loader) ldd
// lists for a dynamically linked executable; none for a static one.
func sharedLibs(path string) ([]string, error) {
	static, err := IsStatic(path)
	if err != nil || static {
		return nil, err
	}
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return nil, fmt.Errorf("lab: ldd %s: %w", path, err)
	}
	var libs []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		// Stored at the path ldd names (read through symlinks), where
		// the loader looks for it.
		libs = append(libs, m[1])
	}
	return libs, nil
}

// IsStatic reports whether the ELF executable at path has no program
// interpreter (PT_INTERP), i.e. runs without a dynamic loader (Go:
// CGO_ENABLED=0 go build).
func IsStatic(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("lab: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false, fmt.Errorf("lab: %s: not an ELF executable: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}
