package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestDamagedCapture: a capture cut mid-frame is judged, listed and
// plotted up to the damage exactly as the same frames in an undamaged
// file are, and every command still exits 2 naming where it stops.
func TestDamagedCapture(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.pcap")
	os.WriteFile(cut, b[:300000], 0o644)
	// The frames wholly inside the cut, rewritten as a file that ends cleanly.
	f, _ := os.Open(src)
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "prefix.pcap")
	pf, _ := os.Create(prefix)
	w := pcapgo.NewWriter(pf)
	w.WriteFileHeader(r.Snaplen(), r.LinkType())
	n, off := 0, 24
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil || off+16+len(data) > 300000 {
			break
		}
		w.WritePacket(ci, data)
		off += 16 + len(data)
		n++
	}
	pf.Close()
	if n < 1000 {
		t.Fatalf("only %d frames before the cut", n)
	}

	type fileJSON struct {
		Error, Damaged, Verdict string
		Report                  json.RawMessage
		Capture                 struct{ Frames int }
	}
	check := func(path string) (fileJSON, int) {
		out, _, code := run(t, "check", "-o", "json", path)
		var got struct{ Files []fileJSON }
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Files) != 1 {
			t.Fatalf("check -o json %s: %v\n%.300s", path, err, out)
		}
		return got.Files[0], code
	}
	c, code := check(cut)
	p, pcode := check(prefix)
	if code != ExitUsage || pcode != 0 {
		t.Errorf("exit %d for the cut capture (want 2), %d for its prefix (want 0)", code, pcode)
	}
	if c.Error != "" || !strings.Contains(c.Damaged, "after frame "+strconv.Itoa(n)) || c.Verdict != "incomplete" || c.Capture.Frames != n {
		t.Errorf("cut capture: error %q, damaged %q, verdict %q, %d frames; want a report of %d frames, damaged after frame %d", c.Error, c.Damaged, c.Verdict, c.Capture.Frames, n, n)
	}
	if string(c.Report) != string(p.Report) {
		t.Errorf("the cut capture's report differs from its undamaged prefix's")
	}
	out, _, _ := run(t, "check", cut)
	if !strings.Contains(out, "DAMAGED: ") || !strings.Contains(out, "INCOMPLETE: 0 MUST and 0 SHOULD violations in the "+strconv.Itoa(n)+" frames before the damage") {
		t.Errorf("text report does not say where the capture stops:\n%s", out[max(0, len(out)-400):])
	}

	ann := filepath.Join(dir, "annotated.pcapng")
	if _, err, code := run(t, "check", "--annotate", ann, cut); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "not written: "+cut+": capture damaged") {
		t.Errorf("--annotate of a damaged capture: exit %d, %v", code, err)
	}
	if _, err := os.Stat(ann); err == nil {
		t.Errorf("--annotate left %s behind", ann)
	}

	rc, err, code := run(t, "rpcs", "-o", "json", cut)
	rp, _, _ := run(t, "rpcs", "-o", "json", prefix)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "only the frames before it were read") {
		t.Errorf("rpcs on the cut capture: exit %d, %v", code, err)
	}
	if rc == "" || rc != rp {
		t.Errorf("rpcs on the cut capture:\n%s\nwant, as on its prefix:\n%s", rc, rp)
	}

	png := filepath.Join(dir, "rpc.png")
	if _, err, code := run(t, "plot", "--rpc", "2", "-o", png, cut); code != ExitUsage || err == nil {
		t.Errorf("plot on the cut capture: exit %d, %v", code, err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot wrote no picture of the frames before the damage: %v", err)
	}
}

// TestCheckWarnsForcedFormat: a profile forced onto a capture of another
// wire format says so in the text report, where every finding may be the
// decoder's misreading, counting every packet over the other protocol
// (one that does not decode in the forced format too: it was 43 of 44);
// the capture's own format says nothing.
func TestCheckWarnsForcedFormat(t *testing.T) {
	f := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	out, _, _ := run(t, "check", "--profile", "linux-2024", f)
	if !strings.Contains(out, "WARNING: 44 of 44 Homa packets carry IP protocol 146, not the 2024 wire format's 253 (profile linux-2024)") ||
		!strings.Contains(out, "44 of 44 Homa packets decoded in another wire format than their IP protocol's (see WARNING above)\n") {
		t.Errorf("no warning for linux-2024 forced on a main capture:\n%.600s", out)
	}
	if out, _, _ := run(t, "check", f); strings.Contains(out, "WARNING") {
		t.Errorf("a warning without a forced format:\n%.600s", out)
	}
}

// TestDamagedOneLine: decode, check, rpcs and plot say the same one line
// of a capture cut short, with no trailing space: where it stops, what
// was read and how to get it whole; check's DAMAGED line is that line
// too, and plot's, when the RPC is not in the frames before the damage,
// ends with it (it said only "no RPC in the capture"). (decode said "capture damaged or cut short: FILE: read frame 5:
// unexpected EOF (the packets before the damage were decoded)", check
// "FILE: capture damaged or cut short after frame 4: read frame 5:
// unexpected EOF: the report covers the frames before it", neither how
// to fix it; and "after frame 0" of a file cut in its first frame.)
func TestDamagedOneLine(t *testing.T) {
	// A real capture cut before the server's first packet: the file ends
	// early, which says nothing of the direction it was captured in.
	real, err := os.ReadFile(filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	cutReal := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cutReal, real[:1000], 0o644)
	if out, _, code := run(t, "check", cutReal); code != ExitUsage || strings.Contains(out, "one direction only (no two hosts") || !strings.Contains(out, "the file ends early") {
		t.Errorf("check of a cut capture: exit %d:\n%s", code, out)
	}

	b, err := os.ReadFile(filepath.Join(faultsDir, "BR-24-resend-storm.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	fix := "; to read it whole, copy the file again, or capture again and stop tcpdump with Ctrl-C (not kill -9) on a disk with room"
	for _, c := range []struct {
		size int
		want string
	}{
		{1000, ": capture damaged or cut short after frame 4 (read frame 5: unexpected EOF): only the frames before it were read" + fix},
		{100, ": capture damaged or cut short at its first frame (read frame 1: unexpected EOF): no frame could be read" + fix},
	} {
		cut := filepath.Join(t.TempDir(), "cut.pcapng")
		os.WriteFile(cut, b[:c.size], 0o644)
		for _, args := range [][]string{{"decode", cut}, {"check", cut}, {"rpcs", cut}, {"plot", "--rpc", "2", "-o", filepath.Join(t.TempDir(), "p.png"), cut}} {
			out, err, code := run(t, args...)
			if code != ExitUsage || err == nil || !strings.HasSuffix(err.Error(), cut+c.want) ||
				args[0] != "plot" && err.Error() != cut+c.want {
				t.Errorf("%s, %d bytes: exit %d, %v; want 2 and %q", args[0], c.size, code, err, cut+c.want)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.HasSuffix(l, " ") {
					t.Errorf("%s, %d bytes: line with a trailing space: %q", args[0], c.size, l)
				}
				if strings.HasPrefix(l, "DAMAGED: ") && l != "DAMAGED: "+cut+c.want {
					t.Errorf("%s, %d bytes: %q, want the same line as the error", args[0], c.size, l)
				}
			}
		}
	}
}
