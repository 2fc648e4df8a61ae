package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/internal/jsonout"
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
	notes := map[string][]*tester.Packet{}
	for _, r := range e.testerPackets() {
		k := markKey(r.Src, r.Dst, len(r.Raw), r.Raw)
		notes[k] = append(notes[k], r)
	}
	testers := map[netip.Addr]bool{}
	for _, as := range [][]netip.Addr{e.TesterAddrs, e.TesterAddrs6} {
		for _, a := range as {
			testers[a] = true
		}
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
		wireLen := len(f.Raw)
		if f.SnapCut {
			wireLen += f.Length - f.CaptureLen
		}
		marks[f.Number] = []string{captureNote(notes[markKey(f.Src, f.Dst, wireLen, f.Raw)], f.Raw)}
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
	return WriteCheckSidecars(path, e.judgedParams(), e.Stalls, "The parameters homatest run judged the IUT with (its hello's, slack and jitter from the measured noise).")
}

// removeWithSidecars removes the capture at path and the sidecars
// WriteCheckSidecars wrote beside it.
func removeWithSidecars(path string) {
	for _, f := range []string{path, path + ".params", path + ".stalls.json"} {
		os.Remove(f)
	}
}

// WriteCheckSidecars writes path+".params" (p, with the comment why) and
// path+".stalls.json" (the stalls m measured; [] for none or a nil m),
// which homatest check reads next to a capture: it then judges the file
// with the parameters the writer used (homatest run's suite, homatest
// explore's session or replay), and treats a timing finding a stall
// explains as the writer did, inconclusive. It is the one writer of these
// sidecars.
func WriteCheckSidecars(path string, p spec.Params, m *stall.Monitor, why string) error {
	if err := p.WriteFile(path+".params", why); err != nil {
		return err
	}
	spans := []stall.Span{} // [] rather than null when none
	if m != nil {
		spans = append(spans, m.Spans()...)
	}
	return atomicfile.Write(path+".stalls.json", func(w io.Writer) error {
		return jsonout.Write(w, spans)
	})
}

// markHead is how many leading transport bytes key a tester packet to its
// frames: the Homa header of every type, less than any snap length a run's
// capture uses (the simulator's keeps 128-byte frames).
const markHead = 64

// markKey keys a packet by its addresses, its transport length and its
// first markHead bytes: a frame the snap length cut still finds the
// packet it holds the start of.
func markKey(src, dst netip.Addr, wireLen int, raw []byte) string {
	return fmt.Sprintf("%v>%v:%d:%s", src, dst, wireLen, raw[:min(len(raw), markHead)])
}

// captureNote is the note for a frame holding raw, the transport bytes as
// captured (possibly cut), among the tester packets that share its key:
// a deliberate packet's note if the frame holds the start of one (packets
// this alike break the same rules), else tester.SentNote.
func captureNote(cands []*tester.Packet, raw []byte) string {
	for _, r := range cands {
		if r.Note != "" && bytes.HasPrefix(r.Raw, raw) {
			return r.CaptureNote()
		}
	}
	return tester.SentNote
}
