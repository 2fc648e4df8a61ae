package spec_test

import (
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestUsualVerified checks every capture the tests keep (real HomaModule
// captures, the fault captures) under two profiles, with the profile's
// timers and with a real run's (as the captures' READMEs give them),
// through a verifying Checker: at every DATA packet whose facts decide an
// Each rule's Usual result, the rule's Check is called too and must give
// that result (verifyUsual panics otherwise). It also requires that the
// facts decide results on ordinary traffic, so that the shortcut is both
// taken and checked.
func TestUsualVerified(t *testing.T) {
	timers := []string{"resend_ticks", "50", "resend_interval", "50", "timeout_ticks", "1000", "request_ack_ticks", "20"}
	total := 0
	for _, path := range testCaptures(t) {
		for _, profile := range []string{"linux", "linux-2024"} {
			for _, params := range [][]string{nil, timers} {
				prof, err := spec.LookupProfile(profile)
				if err != nil {
					t.Fatal(err)
				}
				rules, err := spec.Select(spec.Rules(), "", spec.Should, profile)
				if err != nil {
					t.Fatal(err)
				}
				p := prof.Params
				for i := 0; i+1 < len(params); i += 2 {
					if err := p.Set(params[i], params[i+1]); err != nil {
						t.Fatal(err)
					}
				}
				c := spec.NewChecker(profile, p, rules)
				c.SetInferrer(spec.NewInferrer(p))
				if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, c.Feed); err != nil {
					t.Fatal(err)
				}
				c.Finish()
				n := spec.UsualVerified(c)
				if filepath.Base(path) == "a-small-rpcs.pcap" && n == 0 {
					t.Errorf("%s (%s): no Usual result decided on a capture of ordinary RPCs", path, profile)
				}
				total += n
			}
		}
	}
	t.Logf("%d Usual results verified", total)
}
