package check

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// joinShifted writes to a test folder the real capture name (pcap or
// pcapng) followed by a copy of itself stamped shift later, as `mergecap
// -a name copy` of `editcap -t` of it does, or the copy first when
// copyFirst (mergecap -a copy name), and returns its path.
func joinShifted(t *testing.T, name string, shift time.Duration, copyFirst bool) string {
	t.Helper()
	var frames []ngFrame
	var ifs []pcap.Interface
	if strings.HasSuffix(name, ".pcapng") {
		frames, ifs = readNg(t, filepath.Join(realDir, name))
	} else {
		r := openReal(t, name)
		for {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				break
			}
			frames = append(frames, ngFrame{data: data, length: ci.Length, ts: ci.Timestamp})
		}
		ifs = []pcap.Interface{{Name: "eth", LinkType: layers.LinkType(r.LinkType()), SnapLen: r.Snaplen()}}
	}
	shifted := make([]ngFrame, len(frames))
	for i, f := range frames {
		f.ts = f.ts.Add(shift)
		shifted[i] = f
	}
	all := append(slices.Clone(frames), shifted...)
	if copyFirst {
		all = append(shifted, frames...)
	}
	path := filepath.Join(t.TempDir(), "joined.pcapng")
	writeNg(t, path, ifs, all)
	return path
}

// TestFileJoinedInfersPerSection: a real capture joined to a copy of
// itself 30 s later, in either order (the copy's RPC ids and offsets
// are the original's: its hosts' restarts, or the jump back, begin a
// section), implies the max_gso_size the capture alone does, 6-segment
// GSO batches; each batch of the copy was counted with the original's
// (12 segments, max_gso_size ≥ 17208) in the ports capture's
// inference, which judged no sections, and in the one-view checker's,
// which kept its batches across them.
func TestFileJoinedInfersPerSection(t *testing.T) {
	o := Options{Profile: "auto", Level: spec.Should, CapturePoint: "auto"}
	for _, c := range []struct{ file, point string }{
		{"lab-scenarios/linux-6.13-netem-incast.pcapng", "ports"},
		{"linux-6.13-proto146/b-500k-grants.pcap", "switch"},
	} {
		for _, copyFirst := range []bool{false, true} {
			fr := File(o, joinShifted(t, c.file, 30*time.Second, copyFirst))
			if fr.Error != "" {
				t.Fatalf("%s (copy first %v): %s", c.file, copyFirst, fr.Error)
			}
			if fr.CapturePoint != c.point || fr.Report == nil || len(fr.Report.Sections) == 0 {
				t.Fatalf("%s (copy first %v): capture point %s, report %v: want %s and sections", c.file, copyFirst, fr.CapturePoint, fr.Report, c.point)
			}
			i := slices.IndexFunc(fr.Inferred, func(x InferredParam) bool { return x.Name == "max_gso_size" })
			if i < 0 || fr.Inferred[i].Value != "8640" || !strings.HasPrefix(fr.Inferred[i].Evidence, "GSO batches of 6 segments") {
				t.Errorf("%s (copy first %v): inferred %+v, want max_gso_size 8640 from 6-segment batches", c.file, copyFirst, fr.Inferred)
			}
		}
	}
}

// TestFileNoTimeIsIncomplete: a real capture whose every timestamp was
// set to 0 holds no time, so the NEED_ACK it shows after a response
// ("0s after the response's last bytes", HOMA-ACK-005 on such a copy)
// is no violation of a timing rule but inconclusive, and the verdict
// INCOMPLETE with the reason; the capture as taken breaks no MUST rule.
func TestFileNoTimeIsIncomplete(t *testing.T) {
	const name = "linux-6.13-proto146/b-500k-grants.pcap"
	r := openReal(t, name)
	var frames []ngFrame
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		frames = append(frames, ngFrame{data: data, length: ci.Length, ts: time.Unix(0, 0)})
	}
	ifs := []pcap.Interface{{Name: "eth", LinkType: layers.LinkType(r.LinkType()), SnapLen: r.Snaplen()}}
	path := filepath.Join(t.TempDir(), "zero.pcapng")
	writeNg(t, path, ifs, frames)

	o := Options{Profile: "auto", Level: spec.Should, CapturePoint: "auto"}
	if fr := File(o, filepath.Join(realDir, name)); fr.Must != 0 || fr.NoTimeHint != "" {
		t.Fatalf("the capture as taken: %d MUST violations, no-time hint %q; want none", fr.Must, fr.NoTimeHint)
	}
	fr := File(o, path)
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	if fr.Verdict != "incomplete" || fr.Must != 0 {
		t.Errorf("verdict %s with %d MUST violations; want incomplete, none", fr.Verdict, fr.Must)
		for _, f := range fr.Report.Violations {
			t.Logf("  %s frame %d: %s", f.Rule, f.Frame, f.Why)
		}
	}
	if !strings.Contains(fr.NoTimeHint, "same timestamp") {
		t.Errorf("no-time hint %q, want it to say the frames carry the same timestamp", fr.NoTimeHint)
	}
	if fr.NoTimeExcused < 1 {
		t.Errorf("%d violations excused for want of time, want at least the HOMA-ACK-005 one", fr.NoTimeExcused)
	}
	ack := false
	for _, f := range fr.Report.Inconclusive {
		ack = ack || f.Rule == "HOMA-ACK-005" && f.Cause == spec.CauseNoTime
	}
	if !ack {
		t.Errorf("no HOMA-ACK-005 finding inconclusive for %q", spec.CauseNoTime)
	}
}
