package conformance

import (
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"os"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// markTesterPackets marks, in the run's capture at path, every frame a
// tester host sent: with the tester's note for a packet it broke on
// purpose (tester.DeliberatePrefix), else tester.SentNote. homatest check
// charges findings at such frames to the tester, not to the IUT. It also
// writes path+".params", the parameters the suite judged the IUT with
// (homatest check reads it).
func markTesterPackets(path string, e *Env) error {
	notes := map[string]string{}
	for _, r := range e.testerPackets() {
		notes[r.Src.String()+">"+r.Dst.String()+":"+string(r.Raw)] = r.CaptureNote()
	}
	testers := map[netip.Addr]bool{}
	for _, a := range e.TesterAddrs {
		testers[a] = true
	}
	marks := map[int][]string{}
	r, err := pcap.Open(path, pcap.ReaderOptions{})
	if err != nil {
		return err
	}
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.Close()
			return err
		}
		if !testers[f.Src] {
			continue
		}
		n, ok := notes[f.Src.String()+">"+f.Dst.String()+":"+string(f.Raw)]
		if !ok {
			n = tester.SentNote
		}
		marks[f.Number] = []string{n}
	}
	r.Close()
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	_, err = pcap.AnnotateFile(in, path, marks, "")
	in.Close()
	if err != nil {
		return err
	}
	p := e.Params()
	p.Slack = max(p.Slack, e.Slack)
	p.Jitter = max(p.Jitter, e.Slack)
	return writeCheckSidecars(path, p, e.Stalls, "The parameters homatest run judged the IUT with (its hello's, slack and jitter from the measured noise).")
}

// removeWithSidecars removes the capture at path and the sidecars
// writeCheckSidecars wrote beside it.
func removeWithSidecars(path string) {
	for _, f := range []string{path, path + ".params", path + ".stalls.json"} {
		os.Remove(f)
	}
}

// writeCheckSidecars writes path+".params" (p, with the comment why) and
// path+".stalls.json" (the stalls m measured; [] for none or a nil m),
// which homatest check reads next to a capture: it then judges the file
// with the parameters the suite used, and treats a timing finding a stall
// explains as the suite did, inconclusive.
func writeCheckSidecars(path string, p spec.Params, m *stall.Monitor, why string) error {
	if err := p.WriteFile(path+".params", why); err != nil {
		return err
	}
	spans := []stall.Span{} // [] rather than null when none
	if m != nil {
		spans = append(spans, m.Spans()...)
	}
	return atomicfile.Write(path+".stalls.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(spans)
	})
}
