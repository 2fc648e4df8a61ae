package check

import (
	"net/netip"
	"strings"

	"github.com/homatest/homatest/spec"
)

// switchNotePrefix starts the comment of a record the harness adds to a
// run's capture.pcapng for a frame the switch dropped or altered
// (harness.Annotation): not a frame seen on the wire.
const switchNotePrefix = "switch: "

// testerNotePrefix starts the comment homatest run's capture puts on every
// packet a tester sent (tester.SentNote, tester.DeliberatePrefix for one it
// broke on purpose: malformed, an early RESEND ...): findings charged to
// such a frame's sender are the tester's doing and do not fail a check.
const (
	testerNotePrefix       = "homatest tester:"
	testerDeliberatePrefix = "homatest tester: deliberate "
)

// Deliberate reports whether finding f is at a packet a tester broke on
// purpose (its frame's comment says so): an expected finding; why is the
// tester's reason as the comment gives it (the noise measurement's ACKs
// say they are its own, not a spec's).
func Deliberate(f *spec.Finding) (why string, ok bool) {
	return strings.CutPrefix(f.Note, testerDeliberatePrefix)
}

// TesterCharged reports whether finding f is charged to a tester: its
// frame is a tester's packet and the finding is its sender's doing, or
// the host it is charged to is one whose frames a tester marked (an
// answer a tester never gave).
func (fr *FileReport) TesterCharged(f *spec.Finding) bool { return testerCharged(f, fr.testers) }

// testerCharged is FileReport.TesterCharged with testers the hosts whose
// frames a tester marked.
func testerCharged(f *spec.Finding, testers map[netip.Addr]bool) bool {
	return strings.HasPrefix(f.Note, testerNotePrefix) && f.ChargedTo == f.Src || testers[f.ChargedTo]
}

// droppedNotePrefix starts the comment a switch (netem, scenario's tc
// backend) writes on a frame it dropped.
const droppedNotePrefix = "dropped: "
