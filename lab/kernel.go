package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultPackage is the kernel the lab boots when none is given: Debian
// bookworm's stock 6.12 kernel, the one HomaModule's linux_6.13.9 branch
// was built against in the lab (docs: README "Kernel lab"). Pinned so that
// CI boots the same kernel every time; it has sch_netem, sch_prio, sch_htb,
// nf_tables, veth, bridge and 9p as modules.
const DefaultPackage = "linux-image-6.12.117+deb12-amd64-unsigned"

// Kernel is an unpacked kernel: the image QEMU boots and the folder holding
// its modules (lib/modules/VERSION).
type Kernel struct {
	// Package is the Debian package it came from ("" for a user's image).
	Package string
	// Image is the bzImage (boot/vmlinuz-VERSION).
	Image string
	// Modules is the kernel's module tree (lib/modules/VERSION), "" if
	// none is known.
	Modules string
}

// CacheDir is where Fetch keeps unpacked packages: $HOMATEST_LAB_CACHE,
// else the user cache folder's homatest/lab (~/.cache/homatest/lab).
func CacheDir() (string, error) {
	if d := os.Getenv("HOMATEST_LAB_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("lab: no cache folder (set HOMATEST_LAB_CACHE): %w", err)
	}
	return filepath.Join(d, "homatest", "lab"), nil
}

// Fetch returns the kernel of Debian package pkg (DefaultPackage when
// empty), unpacked under cache (CacheDir when empty). The first call runs
// `apt-get download PKG` and `dpkg-deb -x` (Debian hosts; the package lists
// must be current: `apt-get update`); later calls find it in the cache.
// Errors say which step failed and how to get the kernel another way
// (--kernel and --modules).
func Fetch(ctx context.Context, pkg, cache string) (Kernel, error) {
	if pkg == "" {
		pkg = DefaultPackage
	}
	if strings.ContainsAny(pkg, "/ \t") {
		return Kernel{}, fmt.Errorf("lab: %q is not a Debian package name", pkg)
	}
	if cache == "" {
		var err error
		if cache, err = CacheDir(); err != nil {
			return Kernel{}, err
		}
	}
	dir := filepath.Join(cache, pkg)
	if k, err := findKernel(dir, pkg); err == nil {
		return k, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Kernel{}, fmt.Errorf("lab: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, ".fetch-")
	if err != nil {
		return Kernel{}, fmt.Errorf("lab: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Kernel{}, fmt.Errorf("lab: %s not found: fetching %s needs a Debian host; pass --kernel IMAGE --modules DIR instead", tool, pkg)
		}
	}
	dl := exec.CommandContext(ctx, "apt-get", "download", pkg)
	dl.Dir = tmp
	if out, err := dl.CombinedOutput(); err != nil {
		return Kernel{}, fmt.Errorf("lab: apt-get download %s: %v: %s (run apt-get update; apt-cache search linux-image lists the kernel packages; or pass --kernel IMAGE --modules DIR)", pkg, err, lastLine(out))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return Kernel{}, fmt.Errorf("lab: apt-get download %s left %d .deb files", pkg, len(debs))
	}
	root := filepath.Join(tmp, "root")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return Kernel{}, fmt.Errorf("lab: dpkg-deb -x %s: %v: %s", filepath.Base(debs[0]), err, lastLine(out))
	}
	if _, err := findKernel(root, pkg); err != nil {
		return Kernel{}, err
	}
	if err := os.Rename(root, dir); err != nil && !errors.Is(err, os.ErrExist) {
		// Another fetch may have won the race; use its copy.
		if k, err2 := findKernel(dir, pkg); err2 == nil {
			return k, nil
		}
		return Kernel{}, fmt.Errorf("lab: %w", err)
	}
	return findKernel(dir, pkg)
}

// findKernel finds boot/vmlinuz-* and lib/modules/* in an unpacked package.
func findKernel(root, pkg string) (Kernel, error) {
	imgs, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(imgs) != 1 {
		return Kernel{}, fmt.Errorf("lab: %s: want one boot/vmlinuz-*, found %d", root, len(imgs))
	}
	k := Kernel{Package: pkg, Image: imgs[0]}
	ver := strings.TrimPrefix(filepath.Base(imgs[0]), "vmlinuz-")
	for _, base := range []string{"lib", "usr/lib"} {
		m := filepath.Join(root, base, "modules", ver)
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			k.Modules = m
			break
		}
	}
	return k, nil
}

// ImageRelease returns the release (uname -r) of the kernel in an x86
// bzImage: the first word of the version string its boot header points
// to (Documentation/arch/x86/boot.rst: "HdrS" at 0x202, protocol 2.00 or
// later at 0x206, kernel_version at 0x20e, an offset from 0x200), e.g.
// "6.1.0-57-amd64" of "6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1
// SMP ...". An error says why it cannot be read (not a bzImage, no
// version string).
func ImageRelease(image string) (string, error) {
	f, err := os.Open(image)
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	// The setup code holding the string is at most 64 sectors (32 KiB)
	// past the boot sector; kernel_version is a 16-bit offset anyway.
	b := make([]byte, 0x200+0x10000)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("lab: %s: %w", image, err)
	}
	b = b[:n]
	if len(b) < 0x210 || string(b[0x202:0x206]) != "HdrS" || binary.LittleEndian.Uint16(b[0x206:]) < 0x200 {
		return "", fmt.Errorf("lab: %s: not an x86 bzImage (no boot header)", image)
	}
	off := 0x200 + int(binary.LittleEndian.Uint16(b[0x20e:]))
	if off == 0x200 || off >= len(b) {
		return "", fmt.Errorf("lab: %s: its boot header points to no version string", image)
	}
	v := b[off:]
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	rel, _, _ := strings.Cut(string(v), " ")
	if rel == "" {
		return "", fmt.Errorf("lab: %s: empty version string", image)
	}
	return rel, nil
}

// lastLine returns the last non-empty line of b (a tool's error message).
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
