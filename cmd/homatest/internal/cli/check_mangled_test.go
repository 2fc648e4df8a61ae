package cli

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// labIncast is a real ports capture from scenario run (every switch port,
// both directions; pcapng interface statistics at its end).
const labIncast = "../../../../pcap/testdata/real/lab-scenarios/linux-6.13-netem-incast.pcapng"

// ngBlock is one block of a little-endian pcapng file, whole (type,
// lengths and body), for the tests that mangle a capture as mergecap,
// editcap and reordercap do, block by block.
type ngBlock []byte

// ngEPB is the type of an enhanced packet block.
const ngEPB = 6

func (b ngBlock) typ() uint32 { return binary.LittleEndian.Uint32(b) }

// ts returns an EPB's timestamp in the units of its interface (the lab
// captures' are nanoseconds).
func (b ngBlock) ts() uint64 {
	return uint64(binary.LittleEndian.Uint32(b[12:]))<<32 | uint64(binary.LittleEndian.Uint32(b[16:]))
}

// withTS returns a copy of the EPB b stamped ts.
func (b ngBlock) withTS(ts uint64) ngBlock {
	c := append(ngBlock(nil), b...)
	binary.LittleEndian.PutUint32(c[12:], uint32(ts>>32))
	binary.LittleEndian.PutUint32(c[16:], uint32(ts))
	return c
}

// readNgBlocks splits the little-endian pcapng at path into its blocks.
func readNgBlocks(t *testing.T, path string) []ngBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || binary.LittleEndian.Uint32(data[8:]) != 0x1A2B3C4D {
		t.Fatalf("%s: not a little-endian pcapng", path)
	}
	var out []ngBlock
	for len(data) >= 12 {
		n := binary.LittleEndian.Uint32(data[4:])
		if n < 12 || int(n) > len(data) {
			t.Fatalf("%s: bad block length %d", path, n)
		}
		out = append(out, ngBlock(data[:n]))
		data = data[n:]
	}
	return out
}

// writeNgBlocks writes blocks as dir/name and returns its path.
func writeNgBlocks(t *testing.T, dir, name string, blocks []ngBlock) string {
	t.Helper()
	var b []byte
	for _, x := range blocks {
		b = append(b, x...)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// copySidecars writes labIncast's sidecars (its run's parameters and
// measured stalls, which check reads beside a capture) beside path, the
// stalls once for each shift of the capture's records path holds: the
// emulated lab's stalls excuse its timing findings (without them its
// HOMA-ACK-013 alone gives 70 MUST), in a mangled copy as in the original.
func copySidecars(t *testing.T, path string, shifts ...time.Duration) {
	t.Helper()
	params, err := os.ReadFile(labIncast + ".params")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".params", params, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(labIncast + ".stalls.json")
	if err != nil {
		t.Fatal(err)
	}
	var stalls []map[string]any
	if err := json.Unmarshal(data, &stalls); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, d := range shifts {
		for _, st := range stalls {
			c := map[string]any{}
			for k, v := range st {
				c[k] = v
			}
			for _, k := range []string{"from", "to"} {
				at, err := time.Parse(time.RFC3339Nano, st[k].(string))
				if err != nil {
					t.Fatal(err)
				}
				c[k] = at.Add(d).Format(time.RFC3339Nano)
			}
			out = append(out, c)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".stalls.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitNg returns blocks' header blocks (those before the first EPB),
// EPBs and the rest (interface statistics).
func splitNg(blocks []ngBlock) (head, epbs, tail []ngBlock) {
	for _, b := range blocks {
		switch {
		case b.typ() == ngEPB:
			epbs = append(epbs, b)
		case len(epbs) == 0:
			head = append(head, b)
		default:
			tail = append(tail, b)
		}
	}
	return head, epbs, tail
}

// TestCheckPortsJoinedRestart: a ports capture joined end to end with a
// copy of itself 5 s after its end (editcap -t, then mergecap -a), as
// if every module had been reloaded between the two runs. The host views
// (the default ports layout) each judge one link: 198.18.0.3's view and
// its server's found 198.18.0.3's restart (ids from 2 again after 2.6 s
// of silence) and judged afresh from it, while 198.18.0.1's view, which
// shows no sign of its own, judged across it and charged 198.18.0.1
// three HOMA-RESEND-010 (a request's first bytes "sent again"): FAIL,
// where the whole capture's view (--capture-point switch) starts a
// section there for every host. Now a restart any view finds starts a
// section in every view: no MUST violation, and the report lists the
// restart at the copy's first frame. (198.18.0.2's view reaches the
// restarts of 198.18.0.3 and 198.18.0.1 at one event, its own first
// DATA: they must start one section there, not a second at its next
// packet, which forgot that RPC and charged its RESEND as early.)
func TestCheckPortsJoinedRestart(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	blocks := append(append([]ngBlock(nil), head...), epbs...)
	// The copy begins 5 s after the original's last frame.
	shift := epbs[len(epbs)-1].ts() - epbs[0].ts() + 5e9
	for _, b := range epbs {
		blocks = append(blocks, b.withTS(b.ts()+shift))
	}
	path := writeNgBlocks(t, t.TempDir(), "joined.pcapng", append(blocks, tail...))
	copySidecars(t, path, 0, time.Duration(shift))
	out, _, code := run(t, append(append([]string{"check", "-o", "json"}, scaledTimers...), path)...)
	var js struct {
		Files []struct {
			Verdict string `json:"verdict"`
			Must    int    `json:"must_violations"`
			Point   string `json:"capture_point"`
			Report  struct {
				Sections []struct {
					Frame     int    `json:"frame"`
					Restarted string `json:"restarted"`
				} `json:"sections"`
			} `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%v:\n%s", err, out)
	}
	f := js.Files[0]
	restart := false
	for _, s := range f.Report.Sections {
		restart = restart || s.Restarted == "198.18.0.3" && s.Frame == len(epbs)+1
	}
	if f.Point != "ports" || f.Must != 0 || code != ExitOK || !restart {
		t.Errorf("joined with itself 5 s later: capture point %s, exit %d, %d MUST, sections %+v; want ports, 0 (the original's PASS), 0, 198.18.0.3's restart at frame %d",
			f.Point, code, f.Must, f.Report.Sections, len(epbs)+1)
	}
}

// timeOrderFile is what the moved-record and joined tests read of a
// file's check -o json.
type timeOrderFile struct {
	Verdict string `json:"verdict"`
	Must    int    `json:"must_violations"`
	Point   string `json:"capture_point"`
	Hint    string `json:"time_order_hint"`
	Excused int    `json:"time_order_excused"`
	Report  struct {
		Sections []struct {
			Frame int    `json:"frame"`
			Why   string `json:"why"`
		} `json:"sections"`
		TimeGaps []struct {
			Why string `json:"why"`
		} `json:"time_gaps"`
	} `json:"report"`
}

// checkTimeOrder runs check -o json with args and returns its one file.
func checkTimeOrder(t *testing.T, args ...string) timeOrderFile {
	t.Helper()
	out, _, _ := run(t, append([]string{"check", "-o", "json"}, args...)...)
	var js struct {
		Files []timeOrderFile `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
		t.Fatalf("%v:\n%s", err, out)
	}
	return js.Files[0]
}

// TestCheckPortsMovedRecord: labIncast with one record (a DATA to
// 198.18.0.4 on its port, EPB 1101) moved 200 places later, as a user
// did with a script: its timestamp then lies 2.7 s back. The ports
// check gave FAIL with 9 MUST (HOMA-GRANT-009 of 198.18.0.4, whose view
// lacked that DATA, and findings of a view that judged afresh from the
// record yet took its RPCs for ones the capture saw start), no sections
// and no timestamps line, where --capture-point switch listed the jump.
// Now both list the jump (frame 1301) and the return to the time before
// it (frame 1302), the hint says how to sort the file (reordercap), and
// the ports check makes the violations found where the record was
// missing inconclusive: INCOMPLETE with no MUST (the sorted file
// passes).
func TestCheckPortsMovedRecord(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	const from, by = 1100, 200
	moved := append(append([]ngBlock(nil), epbs[:from]...), epbs[from+1:from+1+by]...)
	moved = append(append(moved, epbs[from]), epbs[from+1+by:]...)
	path := writeNgBlocks(t, t.TempDir(), "moved.pcapng", append(append(append([]ngBlock(nil), head...), moved...), tail...))
	copySidecars(t, path, 0)
	for _, point := range []string{"auto", "switch"} {
		f := checkTimeOrder(t, "--capture-point", point, path)
		s := f.Report.Sections
		if len(s) != 2 || s[0].Frame != from+by+1 || !strings.HasPrefix(s[0].Why, "timestamps jump 2.689374s back") || s[1].Frame != from+by+2 || !strings.HasPrefix(s[1].Why, "timestamps come back") {
			t.Errorf("%s: sections %+v, want the jump back at frame %d and the return at %d", point, s, from+by+1, from+by+2)
		}
		if !strings.Contains(f.Hint, "frame 1301 has a timestamp 2.689374s before") || !strings.Contains(f.Hint, "reordercap IN OUT") {
			t.Errorf("%s: time_order_hint %q: want the jump and how to sort the file", point, f.Hint)
		}
		if point == "auto" && (f.Point != "ports" || f.Must != 0 || f.Verdict != "incomplete" || f.Excused == 0) {
			t.Errorf("ports: capture point %s, verdict %s with %d MUST, %d excused by the order; want ports, incomplete with 0, some", f.Point, f.Verdict, f.Must, f.Excused)
		}
	}
}

// TestCheckPortsJoinedEarlier: labIncast joined end to end with a copy
// of itself retimed 20 s earlier (editcap -t -20, mergecap -a): the
// copy's first frame lies 33 s back. The ports check said nothing of
// it (no section, no timestamps line); now it lists the section and
// the hint, and the copy, judged apart, adds no MUST.
func TestCheckPortsJoinedEarlier(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	blocks := append(append([]ngBlock(nil), head...), epbs...)
	const shift = 20e9
	for _, b := range epbs {
		blocks = append(blocks, b.withTS(b.ts()-shift))
	}
	path := writeNgBlocks(t, t.TempDir(), "joined.pcapng", append(blocks, tail...))
	copySidecars(t, path, 0, -shift)
	f := checkTimeOrder(t, path)
	s := f.Report.Sections
	if f.Point != "ports" || f.Must != 0 || len(s) != 1 || s[0].Frame != len(epbs)+1 || !strings.HasPrefix(s[0].Why, "timestamps jump 32.964267s back") {
		t.Errorf("capture point %s, %d MUST, sections %+v; want ports, 0, one jump at frame %d", f.Point, f.Must, s, len(epbs)+1)
	}
	if !strings.Contains(f.Hint, "reordercap IN OUT") || f.Excused != 0 {
		t.Errorf("time_order_hint %q, %d excused: want the jump named, none excused (the copy lies wholly before)", f.Hint, f.Excused)
	}
}

// TestCheckGapParams: labIncast judged without its .params (copied
// alone) times its silences with the linux profile's timeout_ticks 100
// where the run used 1000: its forward time jumps (report.time_gaps)
// now say the parameters may be their cause, with the flag and the
// file to give. With the run's parameters (sidecar) there is no such
// jump; with --param timeout_ticks given, the words are not added.
func TestCheckGapParams(t *testing.T) {
	data, err := os.ReadFile(labIncast)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alone.pcapng")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := checkTimeOrder(t, path)
	if len(f.Report.TimeGaps) == 0 {
		t.Fatal("no forward time jump without the run's parameters")
	}
	for _, g := range f.Report.TimeGaps {
		if !strings.Contains(g.Why, "or the parameters are the cause: with no "+path+".params beside the capture") || !strings.Contains(g.Why, "--param timeout_ticks=N; the capture implies at least 301") {
			t.Errorf("time gap %q: want the parameters named as a cause", g.Why)
		}
	}
	for _, args := range [][]string{{"--param", "timeout_ticks=100", path}, {labIncast}} {
		for _, g := range checkTimeOrder(t, args...).Report.TimeGaps {
			if strings.Contains(g.Why, "parameters are the cause") {
				t.Errorf("%v: time gap %q names the parameters, which were given", args, g.Why)
			}
		}
	}
}

// TestCheckPortsClockOffset: labIncast with port 2's timestamps 150 ms
// behind the others' (its interface stamped by a clock that
// disagrees): the file's order jumps back and forth between the ports
// by more than spec.TimeJump, but each port's view, on its own clock,
// runs forward. The ports check shares only the jumps a view shows too
// (none here): no section and the original's PASS (the timestamps line
// names only the frames out of order by less than spec.TimeJump).
func TestCheckPortsClockOffset(t *testing.T) {
	head, epbs, tail := splitNg(readNgBlocks(t, labIncast))
	blocks := append([]ngBlock(nil), head...)
	for _, b := range epbs {
		if binary.LittleEndian.Uint32(b[8:]) == 1 {
			b = b.withTS(b.ts() - 150e6)
		}
		blocks = append(blocks, b)
	}
	path := writeNgBlocks(t, t.TempDir(), "offset.pcapng", append(blocks, tail...))
	copySidecars(t, path, 0)
	f := checkTimeOrder(t, path)
	if f.Point != "ports" || f.Verdict != "pass" || len(f.Report.Sections) != 0 || strings.Contains(f.Hint, "section") {
		t.Errorf("capture point %s, verdict %s, sections %+v, time_order_hint %q; want ports, pass, none, no section named", f.Point, f.Verdict, f.Report.Sections, f.Hint)
	}
}

// TestCheckGapTesterSilence: a server sends the unscheduled part of a
// response, then the capture is silent 1 s (longer than timeout_ticks
// 100 allow, timer_drift and slack added) until the client GRANTs the rest. Only the client's timer
// would have broken that silence (a server sending its response counts
// no silent ticks). When a tester marked the client's packets (a
// conformance run's tester holding its GRANT back on purpose) the
// silence is its choice: no time gap. With no tester known, or with the
// tester at the server (the client under test should have sent RESEND),
// the gap is still reported. The old check warned in all three.
func TestCheckGapTesterSilence(t *testing.T) {
	for _, tc := range []struct {
		name         string
		client, serv bool // which end's packets a tester marked
		gap          bool // time gap wanted
	}{
		{name: "no-tester", gap: true},
		{name: "tester-client", client: true},
		{name: "tester-server", serv: true, gap: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newCap(wire.VersionCurrent)
			r := rpcOf(hostC, hostS, 10)
			mark := func(i int, tester bool) {
				if tester {
					b.mark(i, "homatest tester: sent")
				}
			}
			mark(b.data(0, r, true, 7, 100, 0, 100, 100, 1, false), tc.client)
			mark(b.data(us(20), r, false, 7, 3000, 0, 1424, 1424, 1, false), tc.serv)
			mark(b.grant(us(20)+ms(1000), r, false, 3000, 0), tc.client)
			mark(b.data(us(40)+ms(1000), r, false, 0, 3000, 1424, 1576, 3000, 1, false), tc.serv)
			mark(b.ack(us(60)+ms(1000), r), tc.client)
			f := filepath.Join(t.TempDir(), tc.name+".pcapng")
			if _, err := b.write(f, tc.name); err != nil {
				t.Fatal(err)
			}
			gaps := checkTimeOrder(t, f).Report.TimeGaps
			if tc.gap && (len(gaps) != 1 || !strings.Contains(gaps[0].Why, "capture time jumps forward 1s at frame 3 (no packet since frame 2), yet rpc 10 (client 10.0.0.11, server 10.0.0.1)")) {
				t.Errorf("time gaps %+v: want the 1 s silence before frame 3", gaps)
			}
			if !tc.gap && len(gaps) != 0 {
				t.Errorf("time gaps %+v: want none, the silent client is a tester", gaps)
			}
		})
	}
}
