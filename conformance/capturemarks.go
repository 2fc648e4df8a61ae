package conformance

import (
	"net/netip"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/pcap"
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
	err := pcap.Annotate(path, pcap.ReaderOptions{}, func(f *pcap.Frame) string {
		if !testers[f.Src] {
			return ""
		}
		if n, ok := notes[f.Src.String()+">"+f.Dst.String()+":"+string(f.Raw)]; ok {
			return n
		}
		return tester.SentNote
	})
	if err != nil {
		return err
	}
	p := e.Params()
	p.Slack = max(p.Slack, e.Slack)
	p.Jitter = max(p.Jitter, e.Slack)
	return p.WriteFile(path+".params", "The parameters homatest run judged the IUT with (its hello's, slack and jitter from the measured noise).")
}
