package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestCheckPointGivenForPorts: a run's ports capture (both directions
// per interface in epb_flags) checked with --capture-point sent or
// delivered judges every packet twice, once per port; the checker takes
// the repeats for two instances of a host merged. The report says the
// real cause, the point given, and how to judge the file (drop the flag,
// or extract one direction with its tshark filter), never that it looks
// like two captures merged to split by time (editcap -A/-B) or by host,
// as it did before.
func TestCheckPointGivenForPorts(t *testing.T) {
	for _, point := range []string{"sent", "delivered"} {
		out, err, code := run(t, "check", "--capture-point", point, labIncast)
		all := out + fmt.Sprint(err)
		if code != 2 {
			t.Errorf("--capture-point %s: exit %d, want 2 (incomplete)", point, code)
		}
		for _, bad := range []string{"two captures merged", "editcap -A/-B"} {
			if strings.Contains(all, bad) {
				t.Errorf("--capture-point %s: report says %q:\n%s", point, bad, all)
			}
		}
		for _, want := range []string{"frame.packet_flags_direction==1", "frame.packet_flags_direction==2", "drop --capture-point", "incomplete: every packet counted twice: its frames carry both directions and --capture-point " + point} {
			if !strings.Contains(all, want) {
				t.Errorf("--capture-point %s: report lacks %q:\n%s", point, want, all)
			}
		}
	}
}
