//go:build linux

package agent

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// homaModel plays HomaModule's socket layer for the linux agent's bind,
// params and hello logic (docs/homa-facts.md §2 and §6): one port table per
// network namespace for both families (homa_sock_bind: a second bind of a
// port fails with EADDRINUSE whatever the family), server ports below
// 32768 (else EINVAL), SO_HOMA_RCVBUF once per socket (else EINVAL). Its
// sockets are real UDP sockets, so the agent's receive loop blocks on them
// and shutdown wakes it.
type homaModel struct {
	// proto is the module's IPPROTO_HOMA: 146 (main) or 253
	// (linux_6.1.38, which has no SO_HOMA_SERVER: newHomaModel2024).
	proto  int
	opts   []int // the setsockopt options given, in order
	mu     sync.Mutex
	ports  map[uint16]int // port -> fd
	binds  []string       // "AF_INET 4000"
	rcvbuf map[int]bool
}

func newHomaModel() *homaModel {
	return &homaModel{proto: ipprotoHoma, ports: map[uint16]int{}, rcvbuf: map[int]bool{}}
}

// newHomaModel2024 plays linux_6.1.38's socket layer: IPPROTO_HOMA 253,
// SO_HOMA_SET_BUF (10) and no other option.
func newHomaModel2024() *homaModel {
	m := newHomaModel()
	m.proto = ipprotoHoma2024
	return m
}

func (m *homaModel) options(dir string) LinuxOptions {
	return LinuxOptions{
		SysctlDir: dir, SysctlNS: "-",
		Socket: func(domain, typ, proto int) (int, error) {
			if proto != m.proto || typ != unix.SOCK_DGRAM {
				return -1, unix.EPROTONOSUPPORT
			}
			return unix.Socket(domain, typ, 0)
		},
		calls: &homaCalls{
			setsockopt: func(fd, level, opt int, val []byte) error {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.opts = append(m.opts, opt)
				if level != m.proto {
					return unix.ENOPROTOOPT
				}
				switch {
				case opt == soHomaRcvbuf:
					if len(val) != rcvbufArgsLen || m.rcvbuf[fd] {
						return unix.EINVAL
					}
					m.rcvbuf[fd] = true
				case opt == soHomaServer && m.proto == ipprotoHoma:
					if len(val) != 4 {
						return unix.EINVAL
					}
				default:
					return unix.ENOPROTOOPT
				}
				return nil
			},
			bind: func(fd int, port uint16, v6 bool) error {
				m.mu.Lock()
				defer m.mu.Unlock()
				if port >= 32768 {
					return unix.EINVAL
				}
				if _, taken := m.ports[port]; taken {
					return unix.EADDRINUSE
				}
				m.ports[port] = fd
				fam := "AF_INET"
				if v6 {
					fam = "AF_INET6"
				}
				m.binds = append(m.binds, fam+" "+itoa(int(port)))
				return nil
			},
		},
	}
}

func itoa(n int) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// sysctlDir writes HomaModule's default sysctls (§3.1) into a folder.
func sysctlDir(t *testing.T) string {
	dir := t.TempDir()
	for name, v := range map[string]string{"resend_ticks": "5", "resend_interval": "5", "timeout_ticks": "100",
		"request_ack_ticks": "2", "unsched_bytes": "40000", "max_incoming": "400000", "num_priorities": "8",
		"unsched_cutoffs": "0 0 0 0 1000000 15000 2800 200", "cutoff_version": "1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLinuxAgentOnePortPerNamespace(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name  string
		addrs []netip.Addr
		want  string
		v6    string // the bind of a listen on 4001 with ListenOptions.IPv6 ("": refused)
	}{
		{"ipv4 only", []netip.Addr{netip.MustParseAddr("198.18.0.1")}, "AF_INET 4000", ""},
		{"both families", []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")}, "AF_INET 4000", "AF_INET6 4001"},
		{"ipv6 only", []netip.Addr{netip.MustParseAddr("fd00::1")}, "AF_INET6 4000", "AF_INET6 4001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newHomaModel()
			c, done := PipeLinux(ctx, m.options(sysctlDir(t)), ClientOptions{})
			defer c.Close()
			if _, err := c.Hello(ctx, HelloRequest{Addrs: tc.addrs}); err != nil {
				t.Fatal(err)
			}
			if err := c.Listen(ctx, 4000); err != nil {
				t.Fatalf("listen 4000: %v (HomaModule has one port table per namespace for both families)", err)
			}
			if len(m.binds) < 1 || m.binds[0] != tc.want {
				t.Errorf("binds %q, want %s first", m.binds, tc.want)
			}
			var aerr *AgentError
			// A port asked to serve IPv6 is AF_INET6 where the host
			// has an IPv6 address, refused where it has none.
			err := c.ListenWith(ctx, 4001, ListenOptions{IPv6: true})
			switch {
			case tc.v6 == "" && (!errors.As(err, &aerr) || !strings.Contains(aerr.Message, "no IPv6 address")):
				t.Errorf("listen 4001 ipv6 without an IPv6 address: %v, want refused", err)
			case tc.v6 != "" && (err != nil || len(m.binds) != 2 || m.binds[1] != tc.v6):
				t.Errorf("listen 4001 ipv6: %v, binds %q, want [%s %s]", err, m.binds, tc.want, tc.v6)
			}
			if err := c.Listen(ctx, 4000); !errors.As(err, &aerr) || !strings.Contains(aerr.Message, "address already in use") {
				t.Errorf("a second listen on 4000: %v, want EADDRINUSE", err)
			}
			if err := c.Listen(ctx, 40000); !errors.As(err, &aerr) || !strings.Contains(aerr.Message, "server ports are 1..32767") {
				t.Errorf("listen 40000: %v", err)
			}
			if err := c.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Errorf("ServeLinux: %v", err)
			}
		})
	}
}

func TestLinuxAgentParamsAndHello(t *testing.T) {
	ctx := t.Context()
	m := newHomaModel()
	dir := sysctlDir(t)
	opts := m.options(dir)
	opts.SysctlNS = filepath.Join(t.TempDir(), "no-such-ns") // unopenable: the agent's own namespace is used
	c, _ := PipeLinux(ctx, opts, ClientOptions{})
	defer c.Close()
	h, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}, Params: Params{"resend_ticks": 9}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "resend_ticks")); strings.TrimSpace(string(b)) != "9" {
		t.Errorf("resend_ticks sysctl = %q after hello asked for 9", b)
	}
	for name, want := range map[string]int64{"resend_ticks": 9, "unsched_bytes": 40000, "timeout_ticks": 100, "tick_ns": 1e6} {
		if v, _ := Params(h.Params).Int(name); v != want {
			t.Errorf("hello %s = %v, want %d", name, h.Params[name], want)
		}
	}
	if cut, _ := Params(h.Params).Ints("unsched_cutoffs"); len(cut) != 8 || cut[7] != 200 {
		t.Errorf("hello unsched_cutoffs = %v", h.Params["unsched_cutoffs"])
	}
	caps := strings.Join(h.Capabilities, " ")
	for _, want := range []string{CapIPv4, CapParams, CapGrants, CapCutoffs, CapNeedAck} {
		if !strings.Contains(caps, want) {
			t.Errorf("capabilities %q lack %s", caps, want)
		}
	}
	if strings.Contains(caps, CapIPv6) {
		t.Errorf("capabilities %q: ipv6 without an IPv6 address", caps)
	}
	// Each family it has an address of (with both, its servers are
	// AF_INET unless a listen asks for IPv6).
	for _, c := range []struct {
		addrs []string
		want  string
	}{{[]string{"198.18.0.1", "fd00::1"}, CapIPv4 + " " + CapIPv6}, {[]string{"fd00::1"}, CapIPv6}} {
		cx, _ := PipeLinux(ctx, newHomaModel().options(dir), ClientOptions{}) // its own model: fds are reused
		var addrs []netip.Addr
		for _, a := range c.addrs {
			addrs = append(addrs, netip.MustParseAddr(a))
		}
		hx, err := cx.Hello(ctx, HelloRequest{Addrs: addrs})
		cx.Close()
		if err != nil {
			t.Fatalf("hello %v: %v", c.addrs, err)
		}
		var fams []string
		for _, cp := range hx.Capabilities {
			if cp == CapIPv4 || cp == CapIPv6 {
				fams = append(fams, cp)
			}
		}
		if got := strings.Join(fams, " "); got != c.want {
			t.Errorf("hello %v: address families %q, want %q", c.addrs, got, c.want)
		}
	}
	// A parameter HomaModule has no sysctl for (the ref's tick_ns) is
	// refused, naming it.
	c2, _ := PipeLinux(ctx, m.options(dir), ClientOptions{})
	defer c2.Close()
	var aerr *AgentError
	if _, err := c2.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}, Params: Params{"tick_ns": 5e6}}); !errors.As(err, &aerr) || !strings.Contains(aerr.Message, `unknown parameter "tick_ns"`) {
		t.Errorf("hello with tick_ns: %v", err)
	}
	// Without any sysctl (HomaModule's live only in the initial namespace
	// and this one has none) hello declares no params capability.
	c3, _ := PipeLinux(ctx, m.options(t.TempDir()), ClientOptions{})
	defer c3.Close()
	h3, err := c3.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(h3.Capabilities, " "), CapParams) {
		t.Errorf("params capability without sysctls: %q", h3.Capabilities)
	}
}

// TestLinuxAgentAPI2024 gives the linux agent a module with linux_6.1.38's
// API (IPPROTO_HOMA 253): hello must find it without being told, say
// wire "2024", and open, bind and install buffers with protocol 253 and
// without SO_HOMA_SERVER; against main's API hello says no wire and a
// server gets SO_HOMA_SERVER. Without the fallback hello said
// "unsupported: Linux kernel has no Homa".
func TestLinuxAgentAPI2024(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		m        *homaModel
		wire     string
		wantOpts []int
	}{
		{newHomaModel(), "", []int{soHomaRcvbuf, soHomaRcvbuf, soHomaServer}},
		{newHomaModel2024(), "2024", []int{soHomaRcvbuf, soHomaRcvbuf}},
	} {
		c, done := PipeLinux(ctx, tc.m.options(sysctlDir(t)), ClientOptions{})
		h, err := c.Hello(ctx, HelloRequest{Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}})
		if err != nil {
			t.Fatal(err)
		}
		if h.Unsupported != "" || h.Wire != tc.wire {
			t.Errorf("proto %d: hello wire %q, unsupported %q; want wire %q", tc.m.proto, h.Wire, h.Unsupported, tc.wire)
		}
		if err := c.Listen(ctx, 4000); err != nil {
			t.Errorf("proto %d: listen: %v", tc.m.proto, err)
		}
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("ServeLinux: %v", err)
		}
		c.Close()
		tc.m.mu.Lock()
		if !slices.Equal(tc.m.opts, tc.wantOpts) || len(tc.m.binds) != 1 {
			t.Errorf("proto %d: setsockopt options %v, binds %q; want %v and one bind", tc.m.proto, tc.m.opts, tc.m.binds, tc.wantOpts)
		}
		tc.m.mu.Unlock()
	}
}
