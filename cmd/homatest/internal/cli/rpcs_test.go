package cli

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
)

var lossy613 = filepath.Join(realDir, "linux-6.13-proto146/c-500k-loss3pct-server-side.pcap")

// rpcIDs returns the first column of rpcs' text output, header excluded.
func rpcIDs(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("no header: %q", lines[0])
	}
	var ids []string
	for _, l := range lines[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	return ids
}

// TestRPCsSort: --sort orders the lines by latency (longest first), size
// and id; -o json carries the latency the order used.
func TestRPCsSort(t *testing.T) {
	for _, c := range []struct {
		sort string
		want string
	}{
		{"first", "2 4 6 8 10"},
		{"latency", "6 2 4 10 8"},
		{"id", "2 4 6 8 10"},
		{"size", "2 4 6 8 10"}, // every RPC is 500000 + 100 bytes: stable
	} {
		out, err, _ := run(t, "rpcs", "--sort", c.sort, lossy613)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rpcIDs(t, out), " "); got != c.want {
			t.Errorf("--sort %s: ids %s, want %s", c.sort, got, c.want)
		}
	}
	out, err, _ := run(t, "rpcs", "--sort", "latency", "-o", "json", lossy613)
	if err != nil {
		t.Fatal(err)
	}
	var last int64 = 1 << 62
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r rpcJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.LatencyNs == nil || *r.LatencyNs > last || *r.LatencyNs <= 0 || *r.LatencyNs > r.DurationNs {
			t.Fatalf("rpc %d latency %v after %d, duration %d", r.ClientID, r.LatencyNs, last, r.DurationNs)
		}
		last = *r.LatencyNs
	}
	if _, err, code := run(t, "rpcs", "--sort", "speed", lossy613); code != ExitUsage || !strings.Contains(err.Error(), "first, latency, size or id") {
		t.Errorf("--sort speed: exit %d, %v", code, err)
	}
}

// TestDecodeRPC: decode --rpc ID prints exactly the packets rpcs counts
// for that RPC, in both directions, ID its client's id or its server's
// sender_id; @CLIENT narrows by the client; an id
// without packets, slowest or a bad address are usage errors.
func TestDecodeRPC(t *testing.T) {
	for _, capture := range []string{lossy613, filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap"), filepath.Join(realDir, "linux-6.1-proto253/f1-ipv6.pcap")} {
		out, err, _ := run(t, "rpcs", "-o", "json", capture)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r rpcJSON
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, n := range r.Packets {
				want += n
			}
			// The client's address as rpcs prints it, ADDR:PORT or
			// [ADDR]:PORT: cut at the first ':' an IPv6 one was "[fd00".
			ap, err := netip.ParseAddrPort(r.Client)
			if err != nil {
				t.Fatalf("rpcs client %q: %v", r.Client, err)
			}
			client := ap.Addr().String()
			// The server's sender_id (the client's id + 1, HomaModule's
			// id ^ 1) names the same RPC.
			for _, sel := range []string{fmt.Sprint(r.ClientID), fmt.Sprintf("%d@%s", r.ClientID, client), fmt.Sprint(r.ClientID ^ 1)} {
				dec, err, _ := run(t, "decode", "--rpc", sel, "-o", "json", capture)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(dec), "\n")
				dirs := map[string]bool{}
				for _, p := range lines[:len(lines)-1] {
					var j struct {
						SenderID uint64 `json:"sender_id"`
						Role     string
					}
					json.Unmarshal([]byte(p), &j)
					if j.SenderID&^1 != r.ClientID {
						t.Fatalf("--rpc %s printed a packet of sender id %d", sel, j.SenderID)
					}
					dirs[j.Role] = true
				}
				if got := len(lines) - 1; got != want || !dirs["client"] || !dirs["server"] {
					t.Errorf("%s --rpc %s: %d packets (roles %v), rpcs counts %d", filepath.Base(capture), sel, got, dirs, want)
				}
				if !strings.Contains(lines[len(lines)-1], fmt.Sprintf(`"rpc_packets":%d`, want)) {
					t.Errorf("summary %s lacks rpc_packets %d", lines[len(lines)-1], want)
				}
			}
		}
	}
	for _, c := range []struct{ sel, want string }{
		{"99", "no packet of that RPC"},
		{"4@10.0.0.99", "no packet of that RPC"},
		{"slowest", `--rpc "slowest": want an RPC id (a number, as homatest rpcs prints it) or ID@CLIENT; homatest rpcs --sort latency lists the slowest`},
		{"abc", `--rpc "abc": want an RPC id (a number, as homatest rpcs prints it) or ID@CLIENT; homatest rpcs --sort latency lists the slowest`},
		{"4@host", "is not an IP address"},
	} {
		// decode takes no slowest: its errors do not offer it.
		if _, err, code := run(t, "decode", "--rpc", c.sel, lossy613); code != ExitUsage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "or slowest") {
			t.Errorf("--rpc %s: exit %d, %v; want %q", c.sel, code, err, c.want)
		}
	}
	// plot takes slowest: its error for a bad value offers it.
	if _, err, code := run(t, "plot", lossy613, "--rpc", "abc"); code != ExitUsage || !strings.Contains(err.Error(), "ID@CLIENT or slowest") {
		t.Errorf("plot --rpc abc: exit %d, %v", code, err)
	}
}

// TestOutputFlag: every command whose -o names a format refuses another
// the same way, before doing anything (exit 2, one line naming the choices).
func TestOutputFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"decode", lossy613}, "text or json"},
		{[]string{"check", lossy613}, "text, json, junit or html"},
		{[]string{"rpcs", lossy613}, "text or json"},
		{[]string{"run"}, "text, json or html"},
		{[]string{"bench"}, "text, json or html"},
		{[]string{"cleanup", "--dry-run"}, "text or json"},
		{[]string{"netem", "show", "--dev", "x"}, "text or json"},
		{[]string{"faults"}, "text or json"},
		{[]string{"spec", "list"}, "text or json"},
		{[]string{"scenario", "run", "x.yaml"}, "text, json or html"},
		{[]string{"replay", "dir"}, "text or json"},
	} {
		_, err, code := run(t, append(c.args, "-o", "xml")...)
		if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), `-o "xml": want `+c.want+" (see homatest ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v -o xml: exit %d, %v; want -o \"xml\": want %s", c.args, code, err, c.want)
		}
	}
}

// TestRPCRowIPv6Endpoints: rpcs writes an IPv6 endpoint with the address
// in brackets, as decode does ("[fd00::1]:32768"), and IPv4 bare. Before,
// rpcs wrote "fd00::1:32768", whose port reads as the address's last group.
func TestRPCRowIPv6Endpoints(t *testing.T) {
	r := &spec.RPC{ClientPort: 32768, ServerPort: 4000}
	r.Key.Client, r.Key.Server = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("10.0.0.2")
	if j := rpcRow(r); j.Client != "[fd00::1]:32768" || j.Server != "10.0.0.2:4000" {
		t.Errorf("client %q, server %q; want [fd00::1]:32768 and 10.0.0.2:4000", j.Client, j.Server)
	}
}

// TestParseRPCSelectorClientAsRPCsPrints: ID@CLIENT takes the client as
// homatest rpcs prints it (address and port, IPv6 in brackets) as well as
// a bare address; "2@[2001:2::1]:32768" was refused as not an address.
func TestParseRPCSelectorClientAsRPCsPrints(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"4@10.0.0.11", "10.0.0.11"},
		{"4@10.0.0.11:32768", "10.0.0.11"},
		{"2@2001:2::1", "2001:2::1"},
		{"2@[2001:2::1]", "2001:2::1"},
		{"2@[2001:2::1]:32768", "2001:2::1"},
	} {
		sel, err := parseRPCSelector(c.in, false)
		if err != nil || sel.client.String() != c.want {
			t.Errorf("%s: %+v, %v; want client %s", c.in, sel, err, c.want)
		}
	}
	for _, bad := range []string{"4@host", "4@[10.0.0.1", "4@10.0.0.1:", "4@[fd00::1]:x"} {
		if _, err := parseRPCSelector(bad, false); err == nil || !strings.Contains(err.Error(), "is not an IP address") {
			t.Errorf("%s: %v, want 'is not an IP address'", bad, err)
		}
	}
}
