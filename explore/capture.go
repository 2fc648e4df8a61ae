package explore

import (
	"bytes"
	"fmt"
	"net/netip"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/pcap"
)

// writeCapture returns the IUT's view of a logged run as pcapng: one
// interface (the IUT's link), the packets tester hosts gave it (outbound,
// commented with the tester's mark as the conformance tester's captures
// are: tester.SentNote, or tester.DeliberatePrefix and why for a packet
// the case plays against the protocol on purpose, see outPkt.note) and the
// ones it sent (inbound), with the failure as a comment on the frame it
// names. homatest check charges findings at marked packets to the tester.
func writeCapture(s *session, out *outcome, f *Found) []byte {
	iut := s.res.iutAddr
	var buf bytes.Buffer
	pw, err := pcap.NewWriter(&buf, pcap.Interface{Name: "iut(" + iut.String() + ")",
		Description: "the IUT's own link as homatest explore played it (what it was given and what it sent)"})
	if err != nil {
		return nil
	}
	for _, rec := range out.log {
		var src, dst netip.Addr
		dir, comment := pcap.DirInbound, ""
		switch rec.kind {
		case recSent:
			src, dst = s.res.hostAddrs[rec.host], iut
			dir, comment = pcap.DirOutbound, rec.text
		case recRecv:
			src, dst = iut, s.res.hostAddrs[rec.host]
		default:
			continue
		}
		if rec.frame == f.Frame && f.Frame > 0 {
			comment = joinComment(comment, fmt.Sprintf("%s %s: %s", f.Rule, f.Level, f.Why))
		}
		frame, err := tester.Frame(src, dst, rec.prio, rec.raw)
		if err != nil {
			continue
		}
		if err := pw.WritePacketDir(0, rec.stamp, frame, len(frame), dir, comment); err != nil {
			return nil
		}
	}
	if pw.Flush() != nil {
		return nil
	}
	return buf.Bytes()
}

func joinComment(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
