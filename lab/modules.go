package lab

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ulikunitz/xz"
)

// TestbedModules are the modules the testbed needs, loaded in every lab
// guest when the kernel has them as modules (a built-in one is skipped):
// virtio_pci for QEMU's virtio devices (built in from Debian's 6.12 on; a
// module in its 6.1, whose 9p then found no device: "9pnet_virtio: no
// channels available"), 9p for the shared folders (the working folder and
// COMMAND's output; the guest has no virtio console), veth and bridge for
// topologies, the qdiscs and classifier of the tc backend (platform notes
// §9), nf_tables and its numgen expression (random loss, fault plans,
// tester silence), tun, and xfrm_user (vishvananda/netlink opens a
// NETLINK_XFRM socket in every handle).
var TestbedModules = []string{
	"virtio_pci", "9pnet_virtio", "9p", "veth", "bridge", "sch_prio", "sch_netem", "sch_htb", "sch_tbf",
	"cls_u32", "nf_tables", "nft_numgen", "tun", "xfrm_user",
}

// Module is one kernel module ready for insmod: its name and uncompressed
// ELF bytes.
type Module struct {
	Name string
	Data []byte
}

// ModuleTree indexes a kernel's module folder (lib/modules/VERSION) by
// module name ('-' read as '_', as the kernel does).
type ModuleTree struct {
	dir     string
	paths   map[string]string // name -> file
	builtin map[string]bool
}

// OpenModuleTree indexes the *.ko, *.ko.xz and *.ko.gz files under dir and
// its modules.builtin list.
func OpenModuleTree(dir string) (*ModuleTree, error) {
	t := &ModuleTree{dir: dir, paths: map[string]string{}, builtin: map[string]bool{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			if n, ok := moduleName(d.Name()); ok {
				t.paths[n] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lab: modules %s: %w", dir, err)
	}
	if len(t.paths) == 0 {
		return nil, fmt.Errorf("lab: modules %s: no *.ko files (want a lib/modules/VERSION folder)", dir)
	}
	if f, err := os.Open(filepath.Join(dir, "modules.builtin")); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if n, ok := moduleName(filepath.Base(s.Text())); ok {
				t.builtin[n] = true
			}
		}
		f.Close()
	}
	return t, nil
}

// moduleName returns the module name of a file name (sch_netem.ko.xz ->
// sch_netem) and whether it is a module file.
func moduleName(file string) (string, bool) {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.gz"} {
		if strings.HasSuffix(file, ext) {
			return strings.ReplaceAll(strings.TrimSuffix(file, ext), "-", "_"), true
		}
	}
	return "", false
}

// Resolve returns the modules named (and every module they depend on,
// from each module's .modinfo "depends"), decompressed, in an order insmod
// can load them (dependencies first, each once). Names the kernel has
// built in are skipped; with optional set, names the tree lacks are
// skipped too, else they are an error.
func (t *ModuleTree) Resolve(names []string, optional bool) ([]Module, error) {
	var out []Module
	seen := map[string]bool{}
	var visit func(name string, stack []string) error
	visit = func(name string, stack []string) error {
		name = strings.ReplaceAll(name, "-", "_")
		if seen[name] || t.builtin[name] {
			return nil
		}
		if slices.Contains(stack, name) {
			return fmt.Errorf("lab: module dependency cycle %s -> %s", strings.Join(stack, " -> "), name)
		}
		p, ok := t.paths[name]
		if !ok {
			if optional && len(stack) == 0 {
				return nil
			}
			return fmt.Errorf("lab: module %s not found under %s", name, t.dir)
		}
		data, err := ReadModule(p)
		if err != nil {
			return err
		}
		deps, err := ModuleDepends(data)
		if err != nil {
			return fmt.Errorf("lab: %s: %w", p, err)
		}
		// A "softdep=pre: X" module is one the kernel would ask modprobe
		// for at init (libcrc32c needs the crc32c algorithm); there is no
		// modprobe in the guest, so load it first: X, or the generic
		// implementation of a crypto algorithm (X_generic).
		for _, sd := range softdepsPre(data) {
			for _, cand := range []string{sd, sd + "_generic"} {
				if _, ok := t.paths[strings.ReplaceAll(cand, "-", "_")]; ok {
					deps = append([]string{cand}, deps...)
					break
				}
			}
		}
		for _, d := range deps {
			if err := visit(d, append(stack, name)); err != nil {
				return err
			}
		}
		seen[name] = true
		out = append(out, Module{Name: name, Data: data})
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReadModule reads a module file, decompressing .xz and .gz (busybox
// insmod loads only plain ELF).
func ReadModule(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(path, ".xz"):
		if r, err = xz.NewReader(f); err != nil {
			return nil, fmt.Errorf("lab: %s: %w", path, err)
		}
	case strings.HasSuffix(path, ".gz"):
		if r, err = gzip.NewReader(f); err != nil {
			return nil, fmt.Errorf("lab: %s: %w", path, err)
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	if !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
		return nil, fmt.Errorf("lab: %s: not an ELF kernel module", path)
	}
	return b, nil
}

// ModuleDepends returns the "depends=" list of a module's .modinfo
// section (names separated by commas; empty for none).
func ModuleDepends(ko []byte) ([]string, error) {
	info, err := modinfo(ko)
	if err != nil {
		return nil, err
	}
	d := info["depends"]
	if d == "" {
		return nil, nil
	}
	return strings.Split(d, ","), nil
}

// softdepsPre returns the "pre:" names of a module's softdep entries.
func softdepsPre(ko []byte) []string {
	info, err := modinfo(ko)
	if err != nil {
		return nil
	}
	var out []string
	for _, part := range strings.Split(info["softdep"], "post:") {
		if i := strings.Index(part, "pre:"); i >= 0 {
			out = append(out, strings.Fields(part[i+len("pre:"):])...)
		}
	}
	return out
}

// ModuleInfo returns the key=value pairs of a module's .modinfo section
// (name, vermagic, depends, ...; the last value of a repeated key).
func ModuleInfo(ko []byte) (map[string]string, error) { return modinfo(ko) }

func modinfo(ko []byte) (map[string]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, err
	}
	s := f.Section(".modinfo")
	if s == nil {
		return nil, errors.New("no .modinfo section: not a kernel module")
	}
	b, err := s.Data()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			m[k] = v
		}
	}
	return m, nil
}
