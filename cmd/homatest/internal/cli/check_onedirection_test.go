package cli

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// fromSource keeps the frames of frames whose IPv4 source (over
// Ethernet) is src, as tcpdump -Q out on src's host, or a filter on its
// address, records them.
func fromSource(frames []capFrame, src netip.Addr) []capFrame {
	var out []capFrame
	for _, f := range frames {
		if len(f.data) >= 34 && f.data[12] == 0x08 && f.data[13] == 0 && netip.AddrFrom4([4]byte(f.data[26:30])) == src {
			out = append(out, f)
		}
	}
	return out
}

// TestCheckOneDirection: real captures of the Linux module filtered to
// the packets of one host (client 10.0.0.11 or server 10.0.0.1) show no
// packet of the other side. Before, check charged the hosts with what
// the other side's unseen packets would have shown (client only: 12-232
// MUST violations, HOMA-GRANT-005, UNSCHED-001, ACK-004 ...; the e2
// server alone: HOMA-RESEND-022 for a NEED_ACK after its RPC_UNKNOWN,
// with the client's request DATA unseen) while warning that no exchange
// was judged. Now every violation a missing packet may explain is
// inconclusive, cause "capture shows one direction only", named in the
// warning, the downgrades and the verdict line: INCOMPLETE, exit 2. A
// packet's own malformed field (an unknown packet type) still FAILs.
func TestCheckOneDirection(t *testing.T) {
	const dir = "../../../../pcap/testdata/real/"
	client, server := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.1")
	tmp := t.TempDir()
	for _, c := range []string{
		"linux-6.13-proto146/a-small-rpcs.pcap",
		"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap",
		"linux-6.1-proto253/e2-server-forgets-request.pcap",
	} {
		frames := readCapFrames(t, dir+c)
		for _, src := range []netip.Addr{client, server} {
			kept := fromSource(frames, src)
			if len(kept) == 0 || len(kept) == len(frames) {
				t.Fatalf("%s from %v: %d of %d frames", c, src, len(kept), len(frames))
			}
			path := writeCapFrames(t, tmp, "one.pcapng", kept, nil)
			out, _, code := run(t, append(append([]string{"check", "--strict", "-o", "json"}, scaledTimers...), path)...)
			var js struct {
				Files []struct {
					checkFileVerdict
					Should int `json:"should_violations"`
					Report struct {
						OneDirection bool `json:"one_direction"`
						Excused      int  `json:"one_direction_excused"`
						Downgrades   []struct {
							Cause string `json:"cause"`
							Count int    `json:"count"`
						} `json:"downgrades"`
					} `json:"report"`
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 {
				t.Fatalf("%s from %v: %v:\n%s", c, src, err, out)
			}
			v := js.Files[0]
			if code != 2 || v.Verdict != "incomplete" || v.Must != 0 || v.Should != 0 || !v.Report.OneDirection {
				t.Errorf("%s from %v: exit %d verdict %q must %d should %d one_direction %v, want 2 incomplete 0 0 true",
					c, src, code, v.Verdict, v.Must, v.Should, v.Report.OneDirection)
			}
			n := 0
			for _, d := range v.Report.Downgrades {
				if d.Cause == "capture shows one direction only" {
					n += d.Count
				}
			}
			if n != v.Report.Excused || !strings.Contains(v.NothingJudged, "capture shows one direction only") {
				t.Errorf("%s from %v: %d downgrades for the cause, %d excused, warning %q", c, src, n, v.Report.Excused, v.NothingJudged)
			}
			if src == client && n == 0 {
				t.Errorf("%s from the client: nothing excused; the server's GRANTs and response are missing", c)
			}
			text, _, _ := run(t, append(append([]string{"check"}, scaledTimers...), path)...)
			if !strings.Contains(text, "INCOMPLETE: 0 MUST") || !strings.Contains(text, "downgraded; capture shows one direction only)") {
				t.Errorf("%s from %v: verdict line does not name the cause:\n%s", c, src, text)
			}
		}
	}
	// A packet's own field stands alone: the client's first request DATA
	// given an unknown packet type (byte 13 of the Homa header).
	kept := fromSource(readCapFrames(t, dir+"linux-6.13-proto146/a-small-rpcs.pcap"), client)
	for i := range kept {
		if d := kept[i].data; len(d) > 47 && d[23] == 146 {
			d = append([]byte(nil), d...)
			d[47] = 0x7f
			kept[i].data = d
			break
		}
	}
	path := writeCapFrames(t, tmp, "bad.pcapng", kept, nil)
	v, code := checkJSON(t, path)
	if code != 1 || v.Verdict != "fail" || v.Must == 0 {
		t.Errorf("one direction with a malformed packet: exit %d verdict %q must %d, want 1 fail >0", code, v.Verdict, v.Must)
	}
}
