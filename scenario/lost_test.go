package scenario

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// captureOf writes frames as a pcapng capture of two switch ports.
func captureOf(t *testing.T, frames ...[]byte) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	w, err := pcap.NewWriter(&b, pcap.Interface{Name: "p1"}, pcap.Interface{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	a := hostA.As4()
	for i, f := range frames {
		// One interface per sending host, as the tc backend's sent.pcapng
		// has (a frame on two interfaces 1 ms apart would be one packet
		// seen at two points: pcap's copyTracker).
		iface := 1
		if bytes.Equal(f[26:30], a[:]) {
			iface = 0
		}
		if err := w.WritePacket(iface, t0.Add(time.Duration(i)*time.Millisecond), f, len(f), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// setTOS returns a copy of IPv4 frame f with TOS tos (the checksum is not
// fixed: findLost never looks at the IP header's bytes).
func setTOS(f []byte, tos byte) []byte {
	g := append([]byte(nil), f...)
	g[15] = tos
	return g
}

// TestFindLostAndTCDrops: frames sent and never delivered are found as a
// multiset by their Homa bytes and addresses, whatever the order and the
// IP header (a rewritten priority is delivered, not dropped); each is
// described by its Homa meaning and attributed to the plan's drop rules
// whose match fields select it, else ReasonTC.
func TestFindLostAndTCDrops(t *testing.T) {
	data := func(off uint32, retransmit uint8) []byte {
		return frame(t, hostA, hostB, &wire.DataFields{Common: wire.CommonFields{SenderID: 4, Sport: 32768, Dport: 4000, Sequence: off},
			MessageLength: 5000, Incoming: 5000, SegOffset: wire.SegOffsetInSequence, Retransmit: retransmit, Payload: make([]byte, 1000)})
	}
	grant := frame(t, hostB, hostA, &wire.GrantFields{Common: wire.CommonFields{SenderID: 5, Sport: 4000, Dport: 32768}, Offset: 5000, Priority: 1})
	resend := frame(t, hostB, hostA, &wire.ResendFields{Common: wire.CommonFields{SenderID: 5, Sport: 4000, Dport: 32768}, Offset: 1000, Length: 1000, Priority: 1})
	// Sent: DATA 0, 1000, 2000, the GRANT, the RESEND twice, DATA 1000
	// again (retransmitted). Delivered, in another order: DATA 2000,
	// DATA 0 with another priority, one RESEND, the retransmission.
	sent := captureOf(t, data(0, 0), data(1000, 0), data(2000, 0), grant, resend, resend, data(1000, 1))
	delivered := captureOf(t, data(2000, 0), setTOS(data(0, 0), 0xe0), resend, data(1000, 1))
	lost, delivBytes, err := findLost(sent, delivered, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, l := range lost {
		nums = append(nums, l.Number)
	}
	if len(nums) != 3 || nums[0] != 2 || nums[1] != 4 || nums[2] != 6 {
		t.Fatalf("lost frames %v, want 2 (DATA 1000), 4 (GRANT), 6 (the 2nd RESEND)", nums)
	}
	// Delivered: three DATA frames to B, one RESEND to A.
	if want := 3*len(data(0, 0)) + len(resend); delivBytes[hostB]+delivBytes[hostA] != uint64(want) || delivBytes[hostA] != uint64(len(resend)) {
		t.Errorf("delivered bytes %v, want %d in all, %d to %v", delivBytes, want, len(resend), hostA)
	}
	if lost[0].Src != hostA || lost[0].Dst != hostB || lost[0].Packet.Data().Offset() != 1000 || lost[1].Packet.Type() != wire.TypeGrant {
		t.Errorf("lost %+v", lost)
	}

	plan, err := netem.ParsePlan([]byte(`rules:
  - {name: request DATA at 1000, match: {type: DATA, id: 4, message: request, offset: [1000, 2000], nth: 1}, action: drop}
  - {name: any GRANT to 198.18.0.1, match: {type: GRANT, to: 198.18.0.1}, action: drop}
  - {name: GRANT to priority 7, match: {type: GRANT}, action: {priority: 7}}
  - {name: DATA of id 8, match: {type: DATA, id: 8}, action: drop}
`))
	if err != nil {
		t.Fatal(err)
	}
	ords := map[wire.RPCKey]int{{Client: hostA, Server: hostB, ClientID: 4}: 1}
	ds := tcDrops(lost, []netip.Addr{hostA, hostB}, []string{"p1", "p2"}, plan, ords)
	want := []string{
		"plan rule 0 dropped DATA of RPC 198.18.0.1 id 4 request offset 1000",
		"plan rule 1 dropped GRANT of RPC 198.18.0.1 id 4 request offset 5000",
		"tc dropped RESEND of RPC 198.18.0.1 id 4 request offset 1000",
	}
	if len(ds) != len(want) {
		t.Fatalf("drops %+v", ds)
	}
	for i, d := range ds {
		if d.Key() != want[i] {
			t.Errorf("drop %d: %q, want %q", i, d.Key(), want[i])
		}
	}
	if ds[0].Host != "h2" || ds[1].Host != "h1" || ds[0].SentFrame != 2 || ds[2].Reason != ReasonTC || !ds[2].Dropped || ds[0].ID != 4 || ds[0].RPC != 1 ||
		!strings.HasPrefix(ds[0].Comment, "dropped: plan") {
		t.Errorf("drops %+v", ds)
	}
	// Only plan drops are compared, tc drops are not.
	if d := CompareDrops(ds, ds[:2]); d != nil {
		t.Errorf("a tc drop was compared: %v", d)
	}
	// No plan: every lost frame is a tc drop.
	for _, d := range tcDrops(lost, []netip.Addr{hostA, hostB}, []string{"p1", "p2"}, nil, ords) {
		if d.Reason != ReasonTC || len(d.Rules) != 0 {
			t.Errorf("without a plan: %+v", d)
		}
	}
}

// TestFindLostBadCapture: a view that is not a capture is an error naming
// the view.
func TestFindLostBadCapture(t *testing.T) {
	_, _, err := findLost(captureOf(t), strings.NewReader("not a capture"), pcap.ReaderOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "as-delivered view: ") {
		t.Errorf("got %v", err)
	}
}
