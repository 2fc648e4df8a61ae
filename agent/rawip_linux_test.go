package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// childEnv makes the test binary run the ref agent on its standard input
// and output instead of the tests (see TestMain).
const childEnv = "HOMATEST_AGENT_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "ref" {
		err := ServeRef(context.Background(), os.Stdin, os.Stdout, RefOptions{Version: "test-child"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRefOverRawIPNamespaces runs the ref agent as a child process in each
// of two network namespaces joined by a veth pair and proves calls complete
// over raw IP sockets, IPv4 and IPv6.
func TestRefOverRawIPNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and raw IP sockets")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	names := []string{"hta" + hex.EncodeToString(suffix) + "a", "hta" + hex.EncodeToString(suffix) + "b"}
	t.Cleanup(func() {
		for _, n := range names {
			netns.DeleteNamed(n)
		}
	})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	defer netns.Set(orig)
	var nss []netns.NsHandle
	for _, n := range names {
		ns, err := netns.NewNamed(n) // also enters it
		if err != nil {
			t.Fatalf("create namespace %s: %v", n, err)
		}
		defer ns.Close()
		nss = append(nss, ns)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	addrs := [][]netip.Addr{
		{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")},
		{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("fd00::2")},
	}
	hA, err := netlink.NewHandleAt(nss[0])
	if err != nil {
		t.Fatal(err)
	}
	defer hA.Close()
	if err := hA.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "hta0"}, PeerName: "hta1", PeerNamespace: netlink.NsFd(nss[1])}); err != nil {
		t.Fatalf("veth: %v", err)
	}
	for i, ns := range nss {
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for _, name := range []string{"lo", fmt.Sprintf("hta%d", i)} {
			l, err := h.LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if name != "lo" {
				for _, a := range addrs[i] {
					bits := 24
					if a.Is6() {
						bits = 64
					}
					ipn := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, a.BitLen())}
					if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipn, Flags: syscall.IFA_F_NODAD}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := h.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait for both ends to be operationally up: the kernel reports the
	// veth carrier asynchronously (linkwatch), and IPv6 neighbour
	// discovery sent before that is lost for a second.
	deadline := time.Now().Add(scaled(5 * time.Second))
	for i, ns := range nss {
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for {
			l, err := h.LinkByName(fmt.Sprintf("hta%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("hta%d still %v after %v", i, l.Attrs().OperState, scaled(5*time.Second))
			}
			time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
		}
	}
	// The ref agent as the test binary re-executed (ServeRef on stdin and
	// stdout), and as the homatest executable built from this tree.
	bin := filepath.Join(t.TempDir(), "homatest")
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go") // the toolchain that built this test
	}
	if out, err := exec.Command(gocmd, "build", "-o", bin, "github.com/homatest/homatest/cmd/homatest").CombinedOutput(); err != nil {
		t.Fatalf("build homatest: %v\n%s", err, out)
	}
	for _, child := range []struct {
		name, version string
		argv, env     []string
	}{
		{"reexec", "test-child", []string{os.Args[0], "-test.run=^$"}, []string{childEnv + "=ref"}},
		{"homatest-agent", "", []string{bin, "agent", "--impl", "ref"}, nil},
	} {
		t.Run(child.name, func(t *testing.T) {
			callsOverNamespaces(t, nss, orig, names, addrs, child.argv, child.env, child.version)
		})
	}
}

// callsOverNamespaces starts one agent (argv, extra env) in each namespace
// (forked from this thread while it is in the namespace, so the child
// starts there), makes the second a server and runs IPv4 and IPv6 calls
// from the first.
func callsOverNamespaces(t *testing.T, nss []netns.NsHandle, orig netns.NsHandle, names []string, addrs [][]netip.Addr, argv, env []string, version string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clients := make([]*Client, 2)
	for i, ns := range nss {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stderr := NewTailWriter(5, 0)
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.Process != nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		if err := netns.Set(ns); err != nil {
			t.Fatal(err)
		}
		err = cmd.Start()
		netns.Set(orig)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = NewClient(stdout, stdin, ClientOptions{StderrTail: stderr.String})
		defer clients[i].Close()
	}
	ctx := t.Context()
	for i, c := range clients {
		// timeout_ticks 1000 (1 s) instead of 100: the machine is shared
		// and a descheduled agent must not look like a lost peer.
		h, err := c.Hello(ctx, HelloRequest{Host: names[i], Addrs: addrs[i], Params: Params{"timeout_ticks": int(1000 * timeScale())}})
		if err != nil || h.Unsupported != "" || h.Impl != "ref" || (version != "" && h.Version != version) {
			t.Fatalf("hello %s: %+v, %v", names[i], h, err)
		}
	}
	if err := clients[1].Listen(ctx, 4000); err != nil {
		t.Fatal(err)
	}
	calls := []Call{
		{ID: 1, Dst: addrs[1][0], Port: 4000, Request: 100, Response: 200},
		{ID: 2, Dst: addrs[1][0], Port: 4000, Request: 200000, Response: 300000},
		{ID: 3, Dst: addrs[1][1], Port: 4000, Request: 5, Response: 5},
		{ID: 4, Dst: addrs[1][1], Port: 4000, Request: 100000, Response: 1000},
	}
	for _, c := range calls {
		if err := clients[0].Call(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, clients[0], len(calls))
	for _, c := range calls {
		if comp := got[c.ID]; comp.Error != "" || comp.Response != c.Response {
			t.Errorf("call %+v over raw IP: %+v", c, comp)
		} else {
			t.Logf("call %d (%d/%d bytes): %v", c.ID, c.Request, c.Response, comp.Latency())
		}
	}
	st, err := clients[1].Stats(ctx)
	if err != nil || st.Served != uint64(len(calls)) || st.ServedDuplicates != 0 || st.Extra["sent_grant"] == 0 {
		t.Errorf("server stats %+v, %v; want %d served and GRANTs sent", st, err, len(calls))
	}
	for _, c := range clients {
		if err := c.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
}
