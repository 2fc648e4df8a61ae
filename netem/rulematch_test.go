package netem

import (
	"net/netip"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestRuleMatchesPacket: a rule's fields select a decoded packet as the
// switch would, whatever its Nth and RPC ordinal; out_port needs the port;
// a rule that does not validate matches nothing.
func TestRuleMatchesPacket(t *testing.T) {
	p, err := ParsePlan([]byte(`rules:
  - {match: {type: DATA, id: 200, message: request, offset: [5000, 6000], nth: 3, rpc: 9}, action: drop}
  - {match: {type: GRANT, to: 198.18.0.1, out_port: p1}, action: drop}
  - {match: {type: DATA, offset: [0, 6000], retransmit: true}, action: drop}
`))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(f []byte) wire.Packet {
		fi := classify(f)
		if !fi.homa {
			t.Fatal("not Homa")
		}
		return fi.pkt
	}
	data := decode(dataFrame(t, true, 200, 5000, 500, false)) // the offset in sequence
	grant := decode(grantFrame(t, false, 200, 1000))          // server to client
	for _, c := range []struct {
		name     string
		rule     int
		src, dst netip.Addr
		pkt      wire.Packet
		out      string
		want     bool
	}{
		{"request DATA of 200 at 5000", 0, addrA, addrB, data, "", true},
		{"response DATA of 200 at 5000", 0, addrB, addrA, decode(dataFrame(t, false, 200, 5000, 500, false)), "", false},
		{"request DATA of 200 at 6000", 0, addrA, addrB, decode(dataFrame(t, true, 200, 6000, 500, false)), "", false},
		{"GRANT to the client on p1", 1, addrB, addrA, grant, "p1", true},
		{"GRANT to the client, port unknown", 1, addrB, addrA, grant, "", false},
		{"GRANT to another host on p1", 1, addrA, addrB, grant, "p1", false},
		{"fresh DATA", 2, addrA, addrB, data, "", false},
		{"retransmitted DATA", 2, addrA, addrB, decode(dataFrame(t, true, 200, 5000, 500, true)), "", true},
	} {
		if got := p.Rules[c.rule].MatchesPacket(c.src, c.dst, c.pkt, "", c.out); got != c.want {
			t.Errorf("%s: rule %d matches %v, want %v", c.name, c.rule, got, c.want)
		}
	}
	bad := Rule{Match: Match{Type: "GRUNT"}, Action: Action{Drop: true}}
	if bad.MatchesPacket(addrA, addrB, data, "", "") {
		t.Error("a rule that does not validate matched")
	}
}
