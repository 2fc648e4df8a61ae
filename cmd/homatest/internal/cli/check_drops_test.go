package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// capFrame is one frame of a capture being rewritten.
type capFrame struct {
	ci   gopacket.CaptureInfo
	data []byte
}

// readCapFrames reads every frame of the pcap or pcapng at path.
func readCapFrames(t *testing.T, path string) []capFrame {
	t.Helper()
	out, err := readCapFramesErr(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readCapFramesErr is readCapFrames returning its error (a capture pcapgo
// cannot read to the end) instead of failing the test.
func readCapFramesErr(path string) ([]capFrame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src interface {
		ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	}
	if strings.HasSuffix(path, ".pcapng") {
		src, err = pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	} else {
		src, err = pcapgo.NewReader(f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []capFrame
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s frame %d: %w", path, len(out)+1, err)
		}
		out = append(out, capFrame{ci: ci, data: data})
	}
}

// homaOf returns the Homa packet of an Ethernet/IPv4 frame (ok false for
// anything else).
func homaOf(data []byte) (wire.Packet, bool) {
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.NoCopy)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ip == nil || (ip.Protocol != wire.IPProtoHoma && ip.Protocol != wire.IPProtoHoma2024) {
		return wire.Packet{}, false
	}
	h, err := wire.Decode(ip.Payload, wire.DecodeOptions{IPProto: uint8(ip.Protocol), WireLen: int(ip.Length) - int(ip.IHL)*4})
	return h, err == nil
}

// writeCapFrames writes frames to a pcapng in dir, one interface; drops,
// when not nil, adds an interface statistics block declaring *drops
// packets dropped (isb_ifdrop), as dumpcap writes at its end.
func writeCapFrames(t *testing.T, dir, name string, frames []capFrame, drops *uint64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := pcap.Create(path, pcap.Interface{Name: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, f := range frames {
		if err := w.WritePacket(0, f.ci.Timestamp, f.data, f.ci.Length, ""); err != nil {
			t.Fatal(err)
		}
		last = f.ci.Timestamp
	}
	if drops != nil {
		if err := w.WriteInterfaceStats(0, last, *drops); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// dropsReport is what check -o json says about one file's drops.
type dropsReport struct {
	code    int
	must    int
	verdict string
	from    string
	hint    string
	rules   map[string]int // violations by rule
	// violations are the report's violations: rule and host charged.
	violations []chargedViolation
	report     struct {
		CaptureDrops       uint64 `json:"capture_drops"`
		CaptureDropLimit   int    `json:"capture_drop_limit"`
		CaptureDropExcused int    `json:"capture_drop_excused"`
		CaptureDropTooMany bool   `json:"capture_drop_too_many"`
		Inconclusive       []struct {
			Rule  string `json:"rule"`
			Cause string `json:"cause"`
		} `json:"inconclusive"`
	}
	json string
}

// chargedViolation is a violation of a check -o json report: its rule
// and the host it is charged to.
type chargedViolation struct {
	Rule      string `json:"rule"`
	ChargedTo string `json:"charged_to"`
}

// checkDrops runs check -o json with args on path.
func checkDropsJSON(t *testing.T, path string, args ...string) dropsReport {
	t.Helper()
	out, _, code := run(t, append(append([]string{"check", "-o", "json"}, args...), path)...)
	var js struct {
		Files []struct {
			Error   string          `json:"error"`
			Verdict string          `json:"verdict"`
			Must    int             `json:"must_violations"`
			From    string          `json:"capture_drops_from"`
			Hint    string          `json:"capture_drops_hint"`
			Report  json.RawMessage `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 || js.Files[0].Error != "" {
		t.Fatalf("check %s: exit %d, %v:\n%s", path, code, err, out)
	}
	f := js.Files[0]
	r := dropsReport{code: code, must: f.Must, verdict: f.Verdict, from: f.From, hint: f.Hint, rules: map[string]int{}, json: out}
	if err := json.Unmarshal(f.Report, &r.report); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Violations []chargedViolation `json:"violations"`
	}
	if err := json.Unmarshal(f.Report, &v); err != nil {
		t.Fatal(err)
	}
	r.violations = v.Violations
	for _, x := range v.Violations {
		r.rules[x.Rule]++
	}
	return r
}

// TestCheckCaptureDropsMissingPackets: a real capture with packets of
// one kind taken out, as a capture that dropped them would hold it. The
// hosts did send and get them, so the MUST findings their absence causes
// are violations only while the capture declares no drops (DATA past the grant the capture shows: GRANT-005; a
// retransmission or BUSY without a RESEND: RESEND-003, RESEND-005; an ACK
// without a NEED_ACK: ACK-007); with an interface statistics block declaring them, or
// --capture-drops for a capture that cannot, they are inconclusive (cause
// "capture dropped packets") and the report says so. A block declaring 0
// drops changes nothing: the JSON is the same as without one.
func TestCheckCaptureDropsMissingPackets(t *testing.T) {
	dir := t.TempDir()
	const real = "../../../../pcap/testdata/real/linux-6.13-proto146/"
	for _, tc := range []struct {
		name, src string
		drop      func(wire.Packet) bool
		rules     []string // some of the violations the gap causes
	}{
		{"grants", real + "b-500k-grants.pcap", func(p wire.Packet) bool { return p.Type() == wire.TypeGrant && p.SenderID() == 3 },
			[]string{"HOMA-GRANT-005"}},
		{"resends", real + "c-500k-loss3pct-server-side.pcap", func(p wire.Packet) bool { return p.Type() == wire.TypeResend },
			[]string{"HOMA-RESEND-003", "HOMA-RESEND-005"}},
		{"need-acks", real + "a-small-rpcs.pcap", func(p wire.Packet) bool { return p.Type() == wire.TypeNeedAck },
			[]string{"HOMA-ACK-007"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kept []capFrame
			var dropped uint64
			for _, f := range readCapFrames(t, tc.src) {
				if p, ok := homaOf(f.data); ok && tc.drop(p) {
					dropped++
					continue
				}
				kept = append(kept, f)
			}
			if dropped == 0 {
				t.Fatal("nothing taken out")
			}
			zero := uint64(0)
			plain := writeCapFrames(t, dir, tc.name+".pcapng", kept, nil)
			declared := writeCapFrames(t, dir, tc.name+"-declared.pcapng", kept, &dropped)
			declared0 := writeCapFrames(t, dir, tc.name+"-declared0.pcapng", kept, &zero)

			before := checkDropsJSON(t, plain, scaledTimers...)
			if before.code != ExitViolations || before.must == 0 {
				t.Fatalf("without declared drops: exit %d, %d MUST violations; want exit 1 and violations\n%s", before.code, before.must, before.json)
			}
			for _, r := range tc.rules {
				if before.rules[r] == 0 {
					t.Errorf("without declared drops: no %s violation; violations by rule %v", r, before.rules)
				}
			}
			if before.report.CaptureDrops != 0 || before.hint != "" {
				t.Errorf("without declared drops the report names drops: %d %q", before.report.CaptureDrops, before.hint)
			}
			zeroRep := checkDropsJSON(t, declared0, scaledTimers...)
			if strings.ReplaceAll(zeroRep.json, declared0, plain) != before.json {
				t.Errorf("a capture declaring 0 drops is not checked as one declaring none:\n%s\nvs\n%s", zeroRep.json, before.json)
			}

			for _, c := range []struct {
				path, from string
				args       []string
			}{
				{declared, "interface statistics", nil},
				{plain, "--capture-drops", []string{"--capture-drops", fmt.Sprint(dropped)}},
			} {
				after := checkDropsJSON(t, c.path, append(c.args, scaledTimers...)...)
				// The findings excused may be violations: not evidence
				// enough to pass (as when the snap length hid packets).
				if after.code != ExitUsage || after.must != 0 || after.verdict != "incomplete" {
					t.Fatalf("%s drops: exit %d, %d MUST violations, verdict %q; want INCOMPLETE, exit 2; violations by rule %v", c.from, after.code, after.must, after.verdict, after.rules)
				}
				if r := after.report; r.CaptureDrops != dropped || r.CaptureDropLimit != int(dropped)*6 || r.CaptureDropTooMany || r.CaptureDropExcused < before.must || after.from != c.from {
					t.Errorf("%s drops: report drops %d limit %d excused %d too many %v from %q; want %d, %d, ≥ %d, false, %q",
						c.from, r.CaptureDrops, r.CaptureDropLimit, r.CaptureDropExcused, r.CaptureDropTooMany, after.from, dropped, dropped*6, before.must, c.from)
				}
				byCause := 0
				for _, f := range after.report.Inconclusive {
					if f.Cause == "capture dropped packets" {
						byCause++
					}
				}
				if byCause == 0 || !strings.Contains(after.hint, "tcpdump -B") {
					t.Errorf("%s drops: %d inconclusive findings with the cause, hint %q", c.from, byCause, after.hint)
				}
			}
			// The text report says it too.
			out, _, code := run(t, append([]string{"check", declared}, scaledTimers...)...)
			if code != ExitUsage || !strings.Contains(out, fmt.Sprintf("capture drops (interface statistics): the capture dropped %d packet", dropped)) || !strings.Contains(out, "capture dropped packets") || !strings.Contains(out, "INCOMPLETE") {
				t.Errorf("text report (exit %d) does not name the drops:\n%s", code, out)
			}
		})
	}
}

// TestCheckCaptureDropsTooFew: a fault of the catalogue (BR-09: a server
// that never grants) at 7 clients: one dropped packet touches at most 6
// RPCs (an ACK names its own and 5 more), so one declared drop cannot
// explain findings at all 7 and the check still fails, saying why; two
// (12 RPCs) can. At one client, one drop can.
func TestCheckCaptureDropsTooFew(t *testing.T) {
	dir := t.TempDir()
	frames := readCapFrames(t, filepath.Join(faultsDir, "BR-09-no-grants.pcapng"))
	one := checkDropsJSON(t, writeCapFrames(t, dir, "one.pcapng", frames, nil), "--capture-drops", "1")
	if one.code != ExitUsage || one.report.CaptureDropExcused == 0 {
		t.Fatalf("one client, one drop: exit %d, %d excused; want INCOMPLETE (exit 2) with findings excused\n%s", one.code, one.report.CaptureDropExcused, one.json)
	}
	// Copy i moves client 10.0.0.11 to 10.0.2.i and follows the previous
	// copy by a second.
	var seven []capFrame
	var span time.Duration
	start := frames[0].ci.Timestamp
	for _, f := range frames {
		span = max(span, f.ci.Timestamp.Sub(start))
	}
	for i := range 7 {
		to := netip.AddrFrom4([4]byte{10, 0, 2, byte(i + 1)})
		for _, f := range frames {
			f.ci.Timestamp = f.ci.Timestamp.Add(time.Duration(i) * (span + time.Second))
			f.data = moveHost(t, f.data, hostC, to)
			f.ci.CaptureLength, f.ci.Length = len(f.data), max(f.ci.Length, len(f.data))
			seven = append(seven, f)
		}
	}
	path := writeCapFrames(t, dir, "seven.pcapng", seven, nil)
	none := checkDropsJSON(t, path)
	if none.code != ExitViolations {
		t.Fatalf("seven clients: exit %d, want 1\n%s", none.code, none.json)
	}
	few := checkDropsJSON(t, path, "--capture-drops", "1")
	if few.code != ExitViolations || few.must != none.must || !few.report.CaptureDropTooMany || few.report.CaptureDropExcused != 0 || few.report.CaptureDropLimit != 6 {
		t.Fatalf("seven clients, one drop: exit %d, %d MUST (%d without), too many %v, excused %d, limit %d; want a fail as without drops, too many, 0 excused, limit 6",
			few.code, few.must, none.must, few.report.CaptureDropTooMany, few.report.CaptureDropExcused, few.report.CaptureDropLimit)
	}
	if !strings.Contains(few.hint, "stay violations") {
		t.Errorf("hint %q does not say the findings stay violations", few.hint)
	}
	two := checkDropsJSON(t, path, "--capture-drops", "2")
	if two.code != ExitUsage || two.report.CaptureDropTooMany || two.must != 0 {
		t.Fatalf("seven clients, two drops: exit %d, too many %v, %d MUST; want INCOMPLETE (exit 2), all excused", two.code, two.report.CaptureDropTooMany, two.must)
	}
}

// moveHost returns an Ethernet/IPv4 frame with address from replaced by
// to in its IP header (checksum recomputed); other frames unchanged.
func moveHost(t *testing.T, data []byte, from, to netip.Addr) []byte {
	t.Helper()
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if eth == nil || ip == nil {
		return data
	}
	if a, _ := netip.AddrFromSlice(ip.SrcIP); a == from {
		ip.SrcIP = to.AsSlice()
	}
	if a, _ := netip.AddrFromSlice(ip.DstIP); a == from {
		ip.DstIP = to.AsSlice()
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, eth, ip, gopacket.Payload(ip.Payload)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// TestCheckCaptureDropsPorts: a capture of switch ports judges each
// host's view with the drops of that host's port: drops declared at the
// port of the host the findings are charged to excuse them, drops at the
// other port do not (that view holds none of them).
func TestCheckCaptureDropsPorts(t *testing.T) {
	dir := t.TempDir()
	hosts := []netip.Addr{hostC, hostS}
	faulty := faultCaseByID(t, "BR-09").build(true)
	plain := filepath.Join(dir, "plain.pcapng")
	writePorts(t, faulty, plain, hosts)
	before := checkDropsJSON(t, plain)
	if before.code != ExitViolations || before.must == 0 {
		t.Fatalf("no drops: exit %d, %d MUST violations; want a fail\n%s", before.code, before.must, before.json)
	}
	charged := map[string]bool{}
	for _, v := range before.violations {
		charged[v.ChargedTo] = true
	}
	if len(charged) != 1 {
		t.Fatalf("violations charged to %v, want one host", charged)
	}
	at := 0 // the port of the host charged
	if charged[hostS.String()] {
		at = 1
	}
	drops := make([]uint64, 2)
	drops[1-at] = 1
	other := filepath.Join(dir, "other.pcapng")
	writePorts(t, faulty, other, hosts, drops...)
	if r := checkDropsJSON(t, other); r.code != ExitViolations || r.must != before.must || r.report.CaptureDrops != 1 {
		t.Errorf("a drop at the other port: exit %d, %d MUST (want %d), drops %d; want the same fail, 1 drop reported", r.code, r.must, before.must, r.report.CaptureDrops)
	}
	drops[1-at], drops[at] = 0, 1
	own := filepath.Join(dir, "own.pcapng")
	writePorts(t, faulty, own, hosts, drops...)
	if r := checkDropsJSON(t, own); r.code != ExitUsage || r.must != 0 || r.report.CaptureDrops != 1 || r.report.CaptureDropExcused == 0 {
		t.Errorf("a drop at the charged host's port: exit %d, %d MUST, drops %d, excused %d; want INCOMPLETE (exit 2), all excused", r.code, r.must, r.report.CaptureDrops, r.report.CaptureDropExcused)
	}
}
