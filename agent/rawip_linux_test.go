package agent

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/timescale"
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
	// What a test binary killed before it cleaned up (its go test
	// -timeout, or a child's own limit) left is removed here.
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}

// TestRefOverRawIPNamespaces runs the ref agent as a child process in each
// of two harness hosts (network namespaces behind a switch) and proves
// calls complete over raw IP sockets, IPv4 and IPv6.
func TestRefOverRawIPNamespaces(t *testing.T) {
	topo := testTopology(t, 2) // root: namespaces and raw IP sockets
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
			callsOverNamespaces(t, topo.Hosts, child.argv, child.env, child.version)
		})
	}
}

// callsOverNamespaces starts one agent (argv, extra env) on each host
// with Start, makes the second a server and runs IPv4 and IPv6 calls from
// the first.
func callsOverNamespaces(t *testing.T, hosts []*harness.Host, argv, env []string, version string) {
	m := &Manifest{Name: "ref", Command: argv, Env: map[string]string{}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m.Env[k] = v
	}
	clients := make([]*Client, 2)
	addrs := [][]netip.Addr{{hosts[0].Addr4, hosts[0].Addr6}, {hosts[1].Addr4, hosts[1].Addr6}}
	ctx := t.Context()
	for i, h := range hosts {
		// timeout_ticks 1000 (1 s) instead of 100: the machine is shared
		// and a descheduled agent must not look like a lost peer.
		a, err := Start(ctx, h, StartConfig{Manifest: m, Addrs: addrs[i], Params: Params{"timeout_ticks": int(1000 * timescale.Factor())}})
		if err != nil {
			t.Fatalf("start on %s: %v", h.Name, err)
		}
		t.Cleanup(func() { a.Proc.Kill() })
		if a.Hello.Impl != "ref" || (version != "" && a.Hello.Version != version) {
			t.Fatalf("hello %s: %+v", h.Name, a.Hello)
		}
		clients[i] = a.Client
		defer clients[i].Close()
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
