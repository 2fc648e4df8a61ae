package cli

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotSlowest: --rpc slowest on the lossy 6.13 capture picks RPC 6,
// the longest of its five (homatest rpcs: 242.071 ms; the others 71-163
// ms), and writes rpc-6.png in the current folder, a PNG that decodes.
func TestPlotSlowest(t *testing.T) {
	capture, _ := filepath.Abs(filepath.Join(realDir, "linux-6.13-proto146", "c-500k-loss3pct-server-side.pcap"))
	dir := t.TempDir()
	t.Chdir(dir)
	out, err, code := run(t, "plot", capture, "--rpc", "slowest")
	if code != 0 {
		t.Fatalf("exit %d (%v): %s", code, err, out)
	}
	if !strings.HasPrefix(out, "wrote rpc-6.png: RPC 6  10.0.0.11:32768 > 10.0.0.1:4000; request 500000 B, response 100 B; latency 242.071 ms") {
		t.Errorf("output %q", out)
	}
	f, err := os.Open(filepath.Join(dir, "rpc-6.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("rpc-6.png: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("folder holds %d files, want only rpc-6.png (no temporary left)", len(ents))
	}
}

// TestPlotRetransmitSVG: RPC 4 of the crafted BR-26 capture, whose 22
// retransmitted segments the title counts, drawn as SVG.
func TestPlotRetransmitSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "rpc4.svg")
	out, err, code := run(t, "plot", filepath.Join(faultsDir, "BR-26-resent-then-sent-again.pcapng"), "--rpc", "4@10.0.0.11", "-o", svg)
	if code != 0 {
		t.Fatalf("exit %d (%v): %s", code, err, out)
	}
	if !strings.Contains(out, "retransmitted 30096 B in 22 DATA; 2 RESEND, 0 BUSY") {
		t.Errorf("output %q, want the 22 retransmissions", out)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.NewDecoder(bytes.NewReader(b)).Decode(&root); err != nil || root.XMLName.Local != "svg" {
		t.Errorf("%s: root <%s>, %v; want <svg>", svg, root.XMLName.Local, err)
	}
}

// TestPlotErrors: bad input gives exit 2, one line saying what is wrong,
// and no file.
func TestPlotErrors(t *testing.T) {
	real := filepath.Join(realDir, "linux-6.13-proto146", "c-500k-loss3pct-server-side.pcap")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", filepath.Join(dir, "missing.pcap"), "--rpc", "4"}, "cannot open capture"},
		{[]string{"plot", "plot_test.go", "--rpc", "4"}, "not a pcap or pcapng file"},
		{[]string{"plot", real, "--rpc", "99", "-o", filepath.Join(dir, "a.png")}, "no RPC with id 99 (5 RPCs, ids 2 4 6 8 10; see homatest rpcs)"},
		{[]string{"plot", real, "--rpc", "4@10.0.0.99", "-o", filepath.Join(dir, "a.png")}, "no RPC with id 4 from client 10.0.0.99"},
		{[]string{"plot", real, "--rpc", "4", "-o", filepath.Join(dir, "a.gif")}, `unknown picture format "gif": name the file .png, .svg or .pdf`},
		{[]string{"plot", real, "--rpc", "4", "-o", "json"}, "-o json: plot writes a picture; -o names its file"},
		{[]string{"plot", real, "--rpc", "4", "-o", filepath.Join(dir, "pic")}, "no file extension to tell the picture format"},
		{[]string{"plot", real, "--rpc", "4", "-o", filepath.Join(dir, "no", "a.png")}, "-o " + filepath.Join(dir, "no", "a.png") + ": folder " + filepath.Join(dir, "no") + ": no such file or directory"},
		{[]string{"plot", real}, "--rpc is required"},
		{[]string{"plot", real, "--rpc", "fast"}, `--rpc "fast": want an RPC id`},
		{[]string{"plot", real, "--rpc", "4", "--wire", "v9"}, "--wire"},
		{[]string{"plot", "--rpc", "4"}, "plot needs exactly one capture file"},
		{[]string{"plot", filepath.Join(faultsDir, "WIRE-011-one-id-two-sockets.pcapng"), "--rpc", "99", "-o", filepath.Join(dir, "b.png")}, "no RPC with id 99 (1 RPC, id 10; see homatest rpcs)"},
	} {
		out, err, code := run(t, c.args...)
		if code != 2 || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, %v (out %q); want exit 2 and one line with %q", c.args[1:], code, err, out, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("errors left %d files in %s", len(ents), dir)
	}
}

// TestPlotNoCompleteRPC: a capture none of whose RPCs got its response
// has no slowest RPC; the error names the ids to pick from.
func TestPlotNoCompleteRPC(t *testing.T) {
	_, err, code := run(t, "plot", filepath.Join(faultsDir, "BR-12-no-regrant-after-delete.pcapng"), "--rpc", "slowest", "-o", filepath.Join(t.TempDir(), "x.png"))
	if code != 2 || err == nil || !strings.Contains(err.Error(), "none is the slowest; pick one with --rpc ID") {
		t.Errorf("exit %d, %v", code, err)
	}
}
