package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// sliceReal writes frames [from, to) (0-based, to clipped to the capture)
// of real capture name to a new pcap in a temporary directory, as
// `editcap -r name out from+1-to` does.
func sliceReal(t *testing.T, name string, from, to int) string {
	t.Helper()
	return sliceRealSnap(t, name, from, to, 0)
}

// sliceRealSnap is sliceReal keeping at most snap bytes of each frame
// (0: all), as `editcap -s snap` does.
func sliceRealSnap(t *testing.T, name string, from, to, snap int) string {
	t.Helper()
	r := openReal(t, name)
	p := filepath.Join(t.TempDir(), fmt.Sprintf("slice-%d-%d-%d.pcap", from, to, snap))
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	snapLen := r.Snaplen()
	if snap > 0 {
		snapLen = uint32(snap)
	}
	if err := w.WriteFileHeader(snapLen, r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < to; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if i >= from {
			if snap > 0 && len(data) > snap {
				data, ci.CaptureLength = data[:snap], snap
			}
			if err := w.WritePacket(ci, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

// TestFileRealSlices: a real capture cut anywhere (here where the first
// frames are the middle of a 500 KB request whose GRANTs the receiver
// sent before the capture, or an ack for an RPC whose response came
// before it, or a GRANT the sender evidently never got just before the
// capture's end) has nothing the hosts did wrong: each slice passes with
// no MUST or SHOULD violation. Before the fix the receiver's bytes granted
// and not received counted the unseen part of a request begun before the
// capture, even after its RPC ended (HOMA-GRANT-013), acks of such RPCs
// were violations (HOMA-ACK-004), and a cut ending just after a GRANT
// the sender never received was a stalled sender (HOMA-SEND-001).
func TestFileRealSlices(t *testing.T) {
	o := opts()
	for _, c := range []struct {
		file     string
		from, to int
		window   bool
	}{
		{"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap", 399, 900, false},
		{"linux-6.1-proto253/c-500k-loss3pct-server-side.pcap", 399, 500, false},
		{"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap", 1200, 1500, false},
		{"linux-6.13-proto146/b-500k-grants.pcap", 1500, 1800, true},
		{"linux-6.1-proto253/b-500k-grants.pcap", 699, 800, false},
		{"linux-6.1-proto253/c-500k-loss3pct-server-side.pcap", 0, 50, false},
		{"linux-6.1-proto253/f1-ipv6.pcap", 14, 68, false},
		// From the client's restart of request 2 after the server forgot
		// it (frame 54: DATA at offset 0 with retransmit=1): the
		// RPC_UNKNOWN that asked for it is before the slice.
		{"linux-6.1-proto253/e2-server-forgets-request.pcap", 53, 200, false},
	} {
		p := sliceReal(t, c.file, c.from, c.to)
		oc := o
		if c.window {
			oc.Params = append(append([]string(nil), o.Params...), "window=10000")
		}
		fr := File(oc, p)
		if fr.Error != "" {
			t.Fatalf("%s [%d, %d): %s", c.file, c.from, c.to, fr.Error)
		}
		if fr.Must+fr.Should != 0 || fr.Report == nil {
			var why []string
			if fr.Report != nil {
				for _, v := range fr.Report.Violations {
					why = append(why, v.String())
				}
			}
			t.Errorf("%s frames [%d, %d): %d MUST, %d SHOULD, want none: %v", c.file, c.from, c.to, fr.Must, fr.Should, why)
		}
	}
}

// TestFileRealSliceSweep cuts every real capture systematically, as a
// user editing it would (windows of 50 to 1000 frames at offsets through
// the capture, pieces cut at several snap lengths), and wants no slice to
// fail: what a cut capture cannot show is inconclusive, never a violation.
func TestFileRealSliceSweep(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(realDir, "*", "*.pcap"))
	if err != nil || len(files) < 9 {
		t.Fatalf("real captures: %v (%d)", err, len(files))
	}
	checked := 0
	for _, path := range files {
		name, _ := filepath.Rel(realDir, path)
		n := countFrames(t, name)
		oc := opts()
		if name == filepath.Join("linux-6.13-proto146", "b-500k-grants.pcap") {
			oc.Params = append(append([]string(nil), oc.Params...), "window=10000") // its README's sysctl
		}
		for _, size := range []int{50, 100, 300, 1000} {
			for from := 0; from < n; from += max(n/5, 1) + size/3 {
				for _, snap := range []int{0, 62, 80, 128, 256} {
					if snap != 0 && size != 300 {
						continue
					}
					p := sliceRealSnap(t, name, from, from+size, snap)
					fr := File(oc, p)
					checked++
					if fr.Error != "" || fr.Verdict == "fail" {
						var why []string
						if fr.Report != nil {
							for _, v := range fr.Report.Violations {
								why = append(why, v.String())
							}
						}
						t.Errorf("%s frames [%d, %d) snap %d: verdict %s %s %v", name, from, from+size, snap, fr.Verdict, fr.Error, why)
					}
				}
			}
		}
	}
	t.Logf("%d slices checked", checked)
	if checked < 100 {
		t.Errorf("checked %d slices, want at least 100", checked)
	}
}

// openReal opens real capture name for reading frame by frame (closed
// when the test ends).
func openReal(t *testing.T, name string) *pcapgo.Reader {
	t.Helper()
	f, err := os.Open(filepath.Join(realDir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countFrames returns the number of frames of real capture name.
func countFrames(t *testing.T, name string) int {
	t.Helper()
	r := openReal(t, name)
	n := 0
	for {
		if _, _, err := r.ReadPacketData(); err != nil {
			return n
		}
		n++
	}
}

// dropReal writes real capture name without the frames (1-based) that
// drop selects, as `editcap name out N...` does: packets the capture lost.
func dropReal(t *testing.T, name string, drop func(frame int) bool) string {
	t.Helper()
	r := openReal(t, name)
	p := filepath.Join(t.TempDir(), "dropped.pcap")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			return p
		}
		if !drop(i) {
			if err := w.WritePacket(ci, data); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFileCaptureLoss: a capture that lost packets without saying so.
// Every 50th frame gone, the request's stretches the capture never saw
// below bytes it saw, in a message its receiver answered, show the loss:
// the GRANTs it also lost make DATA look ungranted, which is then
// inconclusive (INCOMPLETE), not 44 HOMA-GRANT-005 violations. One GRANT
// gone (frame 68) leaves no such trace: the violations stand, and their
// hint names capture loss besides the max_gso_size the overshoot implies.
func TestFileCaptureLoss(t *testing.T) {
	const name = "linux-6.13-proto146/b-500k-grants.pcap"
	o := opts()
	o.Params = append(append([]string(nil), o.Params...), "window=10000")
	fr := File(o, dropReal(t, name, func(i int) bool { return i%50 == 0 }))
	if fr.Error != "" || fr.Verdict != "incomplete" || fr.Must != 0 || fr.Report.CaptureDrops == 0 ||
		fr.Report.CaptureDropsShown == "" || fr.CaptureDropsFrom != "the capture's own evidence" {
		t.Errorf("every 50th frame dropped: verdict %s (%d MUST) %s, drops %d shown %q from %q, want incomplete with the capture's evidence",
			fr.Verdict, fr.Must, fr.Error, fr.Report.CaptureDrops, fr.Report.CaptureDropsShown, fr.CaptureDropsFrom)
	}
	fr = File(o, dropReal(t, name, func(i int) bool { return i == 68 }))
	if fr.Error != "" || fr.Verdict != "fail" || fr.Report.CaptureDrops != 0 {
		t.Fatalf("GRANT of frame 68 dropped: verdict %s %s, drops %d, want fail without drops", fr.Verdict, fr.Error, fr.Report.CaptureDrops)
	}
	n := 0
	for _, v := range fr.Report.Violations {
		if v.Rule == "HOMA-GRANT-005" {
			n++
			if !strings.Contains(v.Hint, "--capture-drops N") {
				t.Errorf("frame %d: hint %q does not name capture loss", v.Frame, v.Hint)
			}
		}
	}
	if n == 0 {
		t.Errorf("GRANT of frame 68 dropped: no HOMA-GRANT-005 violation: %v", fr.Report.Violations)
	}
}
