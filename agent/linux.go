package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// LinuxOptions configure ServeLinux.
type LinuxOptions struct {
	// Version is reported in hello (default "dev").
	Version string
	// Logger receives the agent's log lines (nil: discard).
	Logger *slog.Logger
	// SysctlDir holds HomaModule's sysctls (default /proc/sys/net/homa):
	// hello reports them as the parameters in effect and writes overrides
	// there.
	SysctlDir string
	// SysctlNS is the network namespace whose SysctlDir is read and
	// written (default /proc/1/ns/net, the initial namespace, the only one
	// where HomaModule registers its sysctls; "-" for the agent's own).
	SysctlNS string
	// Socket opens a socket (default: the socket system call); tests use
	// it to play a kernel without Homa.
	Socket func(domain, typ, proto int) (int, error)
	// calls replaces setsockopt and bind (tests: a model of HomaModule).
	calls *homaCalls
}

// homaCalls are the system calls the linux agent makes on a socket besides
// socket(2) (setsockopt, and bind to a port of either family); tests
// replace them with a model of HomaModule.
type homaCalls struct {
	setsockopt func(fd, level, opt int, val []byte) error
	bind       func(fd int, port uint16, v6 bool) error
}

// inSysctlNS runs f on a thread in the namespace SysctlNS names (directly
// when that is "-" or the agent's own namespace).
func (o LinuxOptions) inSysctlNS(f func() error) error {
	if o.SysctlNS == "-" {
		return f()
	}
	return inNetns(o.SysctlNS, f)
}

// ServeLinux runs the linux agent: the protocol on r and w with the Linux
// kernel's Homa sockets behind it, through raw system calls (HomaModule main
// API: socket(AF_INET or AF_INET6, SOCK_DGRAM, IPPROTO_HOMA=146), a receive
// buffer region installed with SO_HOMA_RCVBUF, sendmsg with struct
// homa_sendmsg_args, recvmsg with struct homa_recvmsg_args and buffer-page
// offsets), or, when the kernel's Homa is IPPROTO_HOMA 253, the API of
// HomaModule's linux_6.1.38 branch (abi2024; hello says wire "2024"). On
// a kernel without Homa its hello carries "unsupported" with
// the reason and every later op except stats and shutdown gets an error.
// Parameters are HomaModule's sysctls (capability "params" when the
// sysctl directory is writable); it has no fault knobs. Returns as
// ServeRef.
func ServeLinux(ctx context.Context, r io.Reader, w io.Writer, opts LinuxOptions) error {
	log := agentDefaults(opts.Logger, &opts.Version)
	if opts.SysctlDir == "" {
		opts.SysctlDir = "/proc/sys/net/homa"
	}
	if opts.SysctlNS == "" {
		opts.SysctlNS = "/proc/1/ns/net"
	}
	if opts.Socket == nil {
		opts.Socket = defaultSocket
	}
	cnt := &counters{}
	return serve(ctx, r, w, newLinuxBackend(opts, cnt, log), cnt, log)
}

// errUnsupported is returned for ops after an unsupported hello.
type errUnsupported string

func (e errUnsupported) Error() string { return "unsupported: " + string(e) }

// readSysctls returns every integer or integer-list sysctl in dir.
func readSysctls(dir string) (Params, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := Params{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // write-only or unreadable
		}
		fields := strings.Fields(string(b))
		var vals []int64
		for _, f := range fields {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		switch {
		case len(vals) == 1:
			p[e.Name()] = vals[0]
		case len(vals) > 1:
			p[e.Name()] = vals
		}
	}
	return p, nil
}

// writeSysctls writes the overrides in over into dir; unknown names (no
// such file) are an error naming the known ones.
func writeSysctls(dir string, over Params) error {
	names := make([]string, 0, len(over))
	for n := range over {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var text string
		if list, ok := over.Ints(name); ok {
			parts := make([]string, len(list))
			for i, v := range list {
				parts[i] = strconv.FormatInt(v, 10)
			}
			text = strings.Join(parts, " ")
		} else if v, ok := over.Int(name); ok {
			text = strconv.FormatInt(v, 10)
		} else {
			return fmt.Errorf("params: %s %v: want an integer or a list of integers", name, over[name])
		}
		path := filepath.Join(dir, filepath.Base(name))
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("params: unknown parameter %q (no %s)", name, path)
		}
		if err := os.WriteFile(path, []byte(text+"\n"), 0o644); err != nil {
			return fmt.Errorf("params: write %s: %v", path, errors.Unwrap(err))
		}
	}
	return nil
}
