package spec

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestFindingJSONRoundTrip: a finding written to a report (scenario
// summary.json, check -o json) reads back equal, its level included.
func TestFindingJSONRoundTrip(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	for _, lvl := range []Level{Must, Should} {
		f := Finding{Rule: "HOMA-RESEND-002", Level: lvl, Frame: 7, Frames: []int{3}, Time: time.Unix(5, 6).UTC(),
			RPC: &RPCKey{Client: a, Server: b, ClientID: 42}, Why: "late", Slack: 50 * time.Millisecond,
			Cause: CauseLossAfter, Src: a, Dst: b, ChargedTo: b}
		j, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var g Finding
		if err := json.Unmarshal(j, &g); err != nil {
			t.Fatalf("%s: %v", j, err)
		}
		if !reflect.DeepEqual(f, g) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", j, g, f)
		}
	}
	var l Level
	if err := json.Unmarshal([]byte(`"MAY"`), &l); err == nil || !strings.Contains(err.Error(), "MUST or SHOULD") {
		t.Errorf("level MAY: %v, want an error naming MUST or SHOULD", err)
	}
}
