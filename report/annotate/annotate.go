// Package annotate writes a capture back with the spec checker's findings
// as pcapng packet comments on their frames ("HOMA-RESEND-002 SHOULD: the
// reason"), so that Wireshark shows each finding on its packet
// (frame.comment; the dissector of report/wireshark also lists them as
// Expert Info). homatest check --annotate and the conformance suite's
// per-spec captures use it.
package annotate

import (
	"fmt"
	"io"
	"strings"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// Comment returns the packet comment for finding f, one line: rule ID,
// level, the reason, then the RPC, the other frames that show it and the
// timing tolerance the rule allowed, where there are such, e.g.
//
//	HOMA-RESEND-002 SHOULD: no answer to the RESEND within 50 ms; rpc 4 (10.0.0.11 > 10.0.0.1); see frames 1200,1210; tolerance 1ms
func Comment(f spec.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", f.Rule, f.Level, f.Why)
	if f.RPC != nil {
		b.WriteString("; " + f.RPC.Label())
	}
	if len(f.Frames) > 0 {
		fmt.Fprintf(&b, "; see %s", f.SeeFrames())
	}
	if f.Slack > 0 {
		fmt.Fprintf(&b, "; tolerance %v", f.Slack)
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// Notes groups the comments of findings by frame, in the order given; the
// comments of findings without a frame (Frame < 1) are returned apart.
func Notes(findings []spec.Finding) (byFrame map[int][]string, unplaced []string) {
	byFrame = map[int][]string{}
	for _, f := range findings {
		if f.Frame < 1 {
			unplaced = append(unplaced, Comment(f))
			continue
		}
		byFrame[f.Frame] = append(byFrame[f.Frame], Comment(f))
	}
	return byFrame, unplaced
}

// Write copies the capture read from in to the pcapng file out (written
// whole or not at all) with each finding as a comment on its frame.
// section heads the file's section comment, followed by the findings that
// name no frame. It returns the number of frames that got a comment.
func Write(in io.Reader, out string, findings []spec.Finding, section string) (int, error) {
	notes, unplaced := Notes(findings)
	if len(unplaced) > 0 {
		section = strings.TrimSpace(section + "\n" + strings.Join(unplaced, "\n"))
	}
	if _, err := pcap.AnnotateFile(in, out, notes, section); err != nil {
		return 0, err
	}
	return len(notes), nil
}

// HostView splits the violations of a host-view check (spec.Judge.Hosts)
// into findings on the as-sent and the as-delivered captures the view was
// merged from, named sentName and deliveredName: each finding's frames
// become the frames of the capture its packet came from, the frame
// numbers in its reason name their capture (spec.HostReport.LocateText),
// and the reason says whose view it is. Findings whose frame is outside
// the view are dropped.
func HostView(hr spec.HostReport, sentName, deliveredName string) (sent, delivered []spec.Finding) {
	src := hr.Source
	for _, f := range hr.Violations {
		s, ok := src(f.Frame)
		if !ok {
			continue
		}
		g := f
		g.Frame = s.Frame
		g.Frames = nil
		for _, o := range f.Frames {
			if so, ok := src(o); ok && so.Delivered == s.Delivered {
				g.Frames = append(g.Frames, so.Frame)
			}
		}
		g.Why = fmt.Sprintf("%s (host %v's view)", hr.LocateText(f.Why, sentName, deliveredName), hr.Host)
		if s.Delivered {
			delivered = append(delivered, g)
		} else {
			sent = append(sent, g)
		}
	}
	return sent, delivered
}
