package netem

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

func TestTCPlanUnsupported(t *testing.T) {
	p, err := ParsePlan([]byte(`
rules:
  - name: first rpc
    match: {type: GRANT, rpc: 1, nth: 2}
    action: drop
  - match: {type: DATA}
    action: {delay: 1ms}
  - match: {message: request, offset: [0, 100]}
    action: {hold: 2}
  - match: {in_port: sw1, out_port: other}
    action: duplicate
  - match: {type: GRANT, id: 4, nth: 2, count: 3, direction: to-client, offset: [0, 10000]}
    action: {priority: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := thisKernel.MissingPlan(p, "veth0")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := (KernelFeatures{HTB: true}).MissingPlan(&Plan{Rules: p.Rules[4:]}, "veth0"); len(m) != 1 || !strings.HasPrefix(m[0], "plan: needs nftables on the egress hook") {
		t.Errorf("kernel without nftables egress: %q", m)
	}
	want := []string{
		"plan rule 0 (first rpc): match.rpc: nftables cannot number RPCs in the order first seen (use match.id with the client's RPC id); use --backend switch",
		"plan rule 1: action.delay: nftables cannot delay single packets; use --backend switch",
		"plan rule 2: match.message: needs match.type (DATA, BUSY, GRANT or RESEND) to know which side sends the message; use --backend switch",
		"plan rule 2: match.offset: needs match.type DATA, GRANT or RESEND (the offset field's position depends on the type); use --backend switch",
		"plan rule 2: action.hold: nftables cannot hold packets back; use --backend switch",
		"plan rule 3: match.in_port: the egress hook does not know the port a frame entered by; use --backend switch",
		`plan rule 3: match.out_port: "other" is not veth0, the interface the plan is applied to; use --backend switch`,
		"plan rule 3: action.duplicate: the tc backend does not duplicate single packets; use --backend switch",
	}
	if !slices.Equal(got, want) {
		t.Errorf("DetectPlan =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Rule 4 alone is expressible.
	rules, missing, err := nftPlanRules(&Plan{Rules: p.Rules[4:]}, "veth0")
	if err != nil || len(missing) != 0 {
		t.Fatalf("rule 4: %v %q", err, missing)
	}
	// The rule, the two rewrites (IPv4, IPv6) and the mark clear.
	if len(rules) != 4 {
		t.Fatalf("%d nft rules, want 4", len(rules))
	}
	var dump string
	for _, e := range rules[0] {
		dump += fmt.Sprintf("%+v\n", reflect.ValueOf(e).Elem().Interface())
	}
	for _, want := range []string{
		"Key:16 ", // meta l4proto
		"Data:[146]",
		"Offset:11 Len:1", "Data:[17]", // type GRANT (0x11)
		"Offset:27 Len:1", "Data:[1]", // sent by the server: to-client
		"Offset:20 Len:8", "Data:[0 0 0 0 0 0 0 4]", // id 4
		"Offset:28 Len:4", // GRANT offset
		"Modulus:4294967295 Type:0",
		"Op:5 Register:1 Data:[0 0 0 1]", // >= 1 (the 2nd)
		"Op:2 Register:1 Data:[0 0 0 4]", // < 4 (3 of them)
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("rule lacks %q:\n%s", want, dump)
		}
	}
	// IPv4 rewrite to priority 0: TOS & 0x1f, header checksum at 10.
	w := rules[1][len(rules[1])-1].(*expr.Payload)
	if w.OperationType != expr.PayloadWrite || w.CsumType != expr.CsumTypeInet || w.CsumOffset != 10 {
		t.Errorf("IPv4 rewrite %+v", w)
	}
}

func TestTCPlanDropsExactlyNamedRoot(t *testing.T) {
	tp := newTestTopo(t)
	k, err := ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	if !k.NFTLoss {
		t.Skip("this kernel has no nftables egress hook (CONFIG_NETFILTER_EGRESS)")
	}
	p, err := ParsePlan([]byte(`
rules:
  - name: 2nd GRANT of RPC 100
    match: {type: GRANT, id: 100, nth: 2}
    action: drop
  - name: retransmitted DATA to priority 7
    match: {type: DATA, retransmit: true}
    action: {priority: 7}
  - name: 1st and 2nd request DATA of RPC 200 at offset >= 5000
    match: {type: DATA, message: request, id: 200, offset: [5000, 100000], nth: 1, count: 2}
    action: drop
`))
	if err != nil {
		t.Fatal(err)
	}
	// Frames go from host a through its egress hook (no
	// PACKET_QDISC_BYPASS) and are received at the switch end.
	a := hostSock(t, tp.nsA, tp.ifA)
	if err := unix.SetsockoptInt(a.fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 0); err != nil {
		t.Fatal(err)
	}
	sw := hostSock(t, tp.nsS, tp.swA)
	t.Cleanup(func() { _ = ResetTC(tp.nsA, tp.ifA) })
	if err := ApplyTCPlan(tp.nsA, tp.ifA, p); err != nil {
		t.Fatal(err)
	}
	type pkt struct {
		name  string
		frame []byte
		drop  bool
		prio  uint8 // expected priority on arrival
	}
	pkts := []pkt{
		{"grant 100 @1000", grantFrame(t, false, 100, 1000), false, 7},
		{"grant 200 @1000", grantFrame(t, false, 200, 1000), false, 7},
		{"data 100 @0", dataFrame(t, true, 100, 0, 500, false), false, 3},
		{"grant 100 @1000 from client", grantFrame(t, true, 100, 1000), true, 7}, // 2nd GRANT of RPC 100
		{"grant 200 @2000", grantFrame(t, false, 200, 2000), false, 7},
		{"data 200 @0", dataFrame(t, true, 200, 0, 500, false), false, 3},
		{"data 200 @5000", dataFrame(t, true, 200, 5000, 500, false), true, 3},
		{"data 200 response @6000", dataFrame(t, false, 200, 6000, 500, false), false, 3},
		{"data 100 @2000 retransmit", dataFrame(t, true, 100, 2000, 500, true), false, 7},
		{"grant 100 @3000", grantFrame(t, false, 100, 3000), false, 7},
		{"data 200 @6000 retransmit", dataFrame(t, true, 200, 6000, 500, true), true, 7},
		{"data 200 @7000", dataFrame(t, true, 200, 7000, 500, false), false, 3},
		{"grant 100 @4000", grantFrame(t, false, 100, 4000), false, 7},
		{"udp", ipv4Frame(macA, macB, addrA, addrB, 0, 17, make([]byte, 100)), false, 0},
	}
	want := 0
	for _, q := range pkts {
		if !q.drop {
			want++
		}
	}
	done := make(chan []rxFrame)
	go func() { done <- receive(sw, want+1, scaled(300*time.Millisecond), true) }()
	// A frame the egress hook drops fails the send with ENOBUFS; it is
	// not retried (send would retry it, and the retry would be the next
	// match).
	for _, q := range pkts {
		if _, err := unix.Write(a.fd, q.frame); err != nil && (err != unix.ENOBUFS || !q.drop) {
			t.Errorf("send %s: %v", q.name, err)
		}
	}
	var got []rxFrame
	for _, f := range <-done {
		if len(f.data) > 34 && f.data[12] == 0x08 && f.data[13] == 0x00 {
			got = append(got, f)
		}
	}
	// Received frames in order, compared with the sent ones minus the
	// dropped: the same bytes except the rewritten TOS and checksum.
	i := 0
	for _, q := range pkts {
		if q.drop {
			continue
		}
		if i >= len(got) {
			t.Errorf("%s: not received", q.name)
			continue
		}
		f := got[i].data
		i++
		if !slices.Equal(f[34:], q.frame[34:]) {
			t.Errorf("received %q, want %s", f[34:min(len(f), 70)], q.name)
			continue
		}
		if f[15]>>5 != q.prio {
			t.Errorf("%s arrived with priority %d, want %d", q.name, f[15]>>5, q.prio)
		}
		if wire.IPv4HeaderChecksum(f[14:34]) != 0 {
			t.Errorf("%s: bad IPv4 header checksum after the rewrite", q.name)
		}
	}
	if i != len(got) {
		t.Errorf("received %d frames, want %d", len(got), i)
	}
	st, err := ShowTC(tp.nsA, tp.ifA)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan hits: %+v", st.PlanHits)
	wantHits := []PlanRuleHits{{"rule 0: 2nd GRANT of RPC 100", 1}, {"rule 1: retransmitted DATA to priority 7", 2}, {"rule 2: 1st and 2nd request DATA of RPC 200 at offset >= 5000", 2}}
	if !slices.Equal(st.PlanHits, wantHits) {
		t.Errorf("plan hits %+v, want %+v", st.PlanHits, wantHits)
	}
	if err := ResetTC(tp.nsA, tp.ifA); err != nil {
		t.Fatal(err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(tp.nsA)))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Name == nftTable {
			t.Errorf("table %s left after ResetTC", nftTable)
		}
	}
}
