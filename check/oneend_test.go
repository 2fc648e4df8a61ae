package check

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// writeOneEnd writes to dst the frames of the switch-port capture src
// that carry direction dir in epb_flags (inbound: each packet as its
// sender sent it, a run's sent.pcapng; outbound: as it was delivered,
// delivered.pcapng), on src's interfaces, with src's .params and
// .stalls.json beside it.
func writeOneEnd(t *testing.T, src, dst string, dir pcap.Direction) {
	t.Helper()
	ng, done := openNg(t, src)
	defer done()
	type frame struct {
		data          []byte
		iface, length int
		ts            time.Time
	}
	var frames []frame
	for {
		data, ci, opts, err := ng.ZeroCopyReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if opts.Flags == nil || pcap.Direction(opts.Flags.Direction&pcapgo.NgEpbFlagDirectionMask) != dir {
			continue
		}
		frames = append(frames, frame{append([]byte(nil), data...), ci.InterfaceIndex, ci.Length, ci.Timestamp})
	}
	var ifs []pcap.Interface
	for i := 0; i < ng.NInterfaces(); i++ {
		in, err := ng.Interface(i)
		if err != nil {
			t.Fatal(err)
		}
		ifs = append(ifs, pcap.Interface{Name: in.Name, LinkType: in.LinkType, SnapLen: in.SnapLength})
	}
	fw, err := pcap.Create(dst, ifs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := fw.WritePacketDir(f.iface, f.ts, f.data, f.length, dir, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".params", ".stalls.json"} {
		b, err := os.ReadFile(src + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+ext, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFileOneEndOfNetemRun: each end of a lab run through a netem link
// (c-netem: 2% loss, 5% reordering, 2 ms ± 1 ms delay) against the real
// HomaModule, judged alone at its capture point with the run's
// parameters and stalls, passes, as the whole capture does. The delivered
// end of the linux_6.13.9 run failed 7 MUSTs and that of the linux_6.1.38
// run 1 MUST and 1 SHOULD, each resting on a packet the network before
// the capture point lost or held behind later ones (HOMA-GRANT-003,
// HOMA-ID-004, HOMA-ACK-001, HOMA-GRANT-014), which the delivered point
// cannot rule out.
func TestFileOneEndOfNetemRun(t *testing.T) {
	for _, run := range []string{"linux-6.13-netem-incast.pcapng", "linux-6.1-netem-incast.pcapng"} {
		for _, end := range []struct {
			name string
			dir  pcap.Direction
		}{{"delivered", pcap.DirOutbound}, {"sent", pcap.DirInbound}} {
			path := filepath.Join(t.TempDir(), end.name+".pcapng")
			writeOneEnd(t, filepath.Join(realDir, "lab-scenarios", run), path, end.dir)
			fr := File(Options{Profile: "auto", Level: spec.Should, CapturePoint: end.name}, path)
			if fr.Error != "" {
				t.Fatalf("%s %s: %s", run, end.name, fr.Error)
			}
			if fr.Stats == nil || fr.Stats.Homa < 800 {
				t.Fatalf("%s %s: stats %+v: want the run's packets (at least 800)", run, end.name, fr.Stats)
			}
			if fr.Verdict != "pass" || fr.Must+fr.Should != 0 {
				var vs []string
				for _, v := range fr.Report.Violations {
					vs = append(vs, v.String())
				}
				t.Errorf("%s %s: verdict %s (%d MUST, %d SHOULD), want pass with none: %v", run, end.name, fr.Verdict, fr.Must, fr.Should, vs)
			}
		}
	}
}
