package explore

import (
	"context"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestHeldGrantsStallClient: an IUT client whose request needs GRANTs past
// the first window, its first GRANT held until mid-way through its next
// RESEND round (FateMidRound) with the GRANTs behind it held in the same
// queue (KindBurst, B 1), RESENDs while it still has request bytes and
// sends fresh ones more than slack later: HOMA-RESEND-024 is judged (and
// passes, the ref being correct). Without the hold the later GRANTs reach
// it at once and it never stalls.
func TestHeldGrantsStallClient(t *testing.T) {
	s, release, err := newSession(context.Background(), Config{Env: SimEnv(nil, nil), Budget: time.Hour, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	u := int(s.info.params.UnschedBytes)
	grant := Choice{Key{Kind: KindOut, RPC: 1, Type: uint8(wire.TypeGrant)}, FateMidRound}
	hold := Choice{Key{Kind: KindBurst, RPC: 1, B: 1}, 2}
	if got := hold.String(); got != "burst rpc 1 to the IUT, held: resend_ticks+1 ticks" {
		t.Errorf("hold choice prints %q", got)
	}
	for _, tc := range []struct {
		choices []Choice
		want    bool
	}{{[]Choice{grant, hold}, true}, {[]Choice{grant}, false}} {
		c := &Case{RPCs: []RPC{{IUTClient: true, Request: 2*u + 300000, Response: 100}}, Choices: tc.choices}
		c.sortChoices()
		out, err := s.play(c, [numKinds]float64{}, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if out.fail != nil {
			t.Errorf("%v: failure %v", tc.choices, out.fail)
		}
		if got := out.exercised["HOMA-RESEND-024"]; got != tc.want {
			t.Errorf("%v: HOMA-RESEND-024 exercised %v, want %v", tc.choices, got, tc.want)
		}
	}
}
