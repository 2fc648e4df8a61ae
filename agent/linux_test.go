package agent

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLinuxAgentWithoutHoma(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the socket errnos are Linux's")
	}
	ctx := t.Context()
	c, done := PipeLinux(ctx, LinuxOptions{Socket: func(int, int, int) (int, error) { return -1, unix.EAFNOSUPPORT }}, ClientOptions{})
	defer c.Close()
	h, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("fd00::1")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Linux kernel has no Homa (socket(AF_INET6, SOCK_DGRAM, 146): address family not supported by protocol); load homa.ko"; h.Unsupported != want || h.Impl != "linux" {
		t.Errorf("hello = %+v, want unsupported %q", h, want)
	}
	var aerr *AgentError
	if err := c.Listen(ctx, 4000); !errors.As(err, &aerr) || !strings.HasPrefix(aerr.Message, "unsupported: Linux kernel has no Homa") {
		t.Errorf("listen after unsupported hello: %v", err)
	}
	if err := c.Call(ctx, Call{ID: 1, Dst: addrB, Port: 4000, Request: 20, Response: 20}); !errors.As(err, &aerr) {
		t.Errorf("call after unsupported hello: %v", err)
	}
	if st, err := c.Stats(ctx); err != nil || st.Calls != 0 {
		t.Errorf("stats: %+v, %v", st, err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("ServeLinux: %v", err)
	}
	// Faults are refused: the linux agent has no knobs.
	c2, _ := PipeLinux(ctx, LinuxOptions{}, ClientOptions{})
	defer c2.Close()
	if _, err := c2.Hello(ctx, HelloRequest{Addrs: []netip.Addr{addrA}, Faults: []string{"no-grants"}}); !errors.As(err, &aerr) || !strings.Contains(aerr.Message, "no fault knobs") {
		t.Errorf("faults: %v", err)
	}
}

// TestLinuxAgentThisKernel runs the linux agent against the running kernel:
// without Homa (this CI machine) hello must say so; with Homa a call over
// the loopback interface must complete.
func TestLinuxAgentThisKernel(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	ctx := t.Context()
	c, _ := PipeLinux(ctx, LinuxOptions{}, ClientOptions{})
	defer c.Close()
	lo := netip.MustParseAddr("127.0.0.1")
	h, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{lo}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Unsupported != "" {
		want := "Linux kernel has no Homa (socket(AF_INET, SOCK_DGRAM, 146): protocol not supported); load homa.ko"
		if h.Unsupported != want {
			t.Errorf("unsupported = %q, want %q", h.Unsupported, want)
		}
		return
	}
	t.Logf("this kernel has Homa: params %v", h.Params)
	if err := c.Listen(ctx, 4000); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{1, 100, 70000, 1000000} {
		if err := c.Call(ctx, Call{ID: uint64(i + 1), Dst: lo, Port: 4000, Request: n, Response: n}); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, c, 4)
	for id, comp := range got {
		if comp.Error != "" {
			t.Errorf("call %d: %s", id, comp.Error)
		}
	}
}

// TestLinuxAgentSocketOptionRefused gives the linux agent a socket that is
// not Homa (UDP): the probe passes, installing the receive buffer region
// fails, and hello reports it (the mmap, setsockopt and release paths run).
func TestLinuxAgentSocketOptionRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux")
	}
	ctx := t.Context()
	udp := func(domain, typ, _ int) (int, error) { return unix.Socket(domain, typ, 0) }
	c, _ := PipeLinux(ctx, LinuxOptions{Socket: udp, SysctlDir: t.TempDir()}, ClientOptions{})
	defer c.Close()
	_, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	var aerr *AgentError
	if !errors.As(err, &aerr) || !strings.Contains(aerr.Message, "setsockopt(SO_HOMA_RCVBUF, 67108864 bytes)") {
		t.Errorf("hello over UDP: %v; want the SO_HOMA_RCVBUF error", err)
	}
}

func TestLinuxSysctls(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"resend_ticks": "5\n", "unsched_cutoffs": "0 0 0 0 1000000 15000 2800 200\n", "action": "0\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSysctls(dir, Params{"resend_ticks": 9, "unsched_cutoffs": []any{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
		t.Fatal(err)
	}
	p, err := readSysctls(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Int("resend_ticks"); v != 9 {
		t.Errorf("resend_ticks = %v", p["resend_ticks"])
	}
	if cut, _ := p.Ints("unsched_cutoffs"); len(cut) != 8 || cut[7] != 8 {
		t.Errorf("unsched_cutoffs = %v", p["unsched_cutoffs"])
	}
	if err := writeSysctls(dir, Params{"resend_tick": 9}); err == nil || !strings.Contains(err.Error(), `unknown parameter "resend_tick"`) {
		t.Errorf("unknown sysctl: %v", err)
	}
}
