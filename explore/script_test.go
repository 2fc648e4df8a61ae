package explore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validScript is a small well-formed script (a tester client's request
// the IUT does not grant), the base of the hand edits below.
const validScript = `homatest-explore 1
iut impl=ref version=simulated env=sim faults=no-grants
rule HOMA-GRANT-010 MUST
param link_bps=1000000000
host h2 198.18.0.2
host h3 198.18.0.3
rpc 1 h2 calls iut id=2 port=40000 request=3001 response=1
at 0.000000002 h2 sends DATA rpc=1 prio=6 offset=0 length=1424 message_length=3001 incoming=3000 cutoff_version=0 retransmit=0 ack=0:0
at 0.000000003 iut sends CUTOFFS rpc=1 to=h2 prio=7 cutoffs=0,0,0,0,1000000,15000,2800,200 version=1
at 0.090000001 h2 sends RESEND rpc=1 prio=7 offset=0 length=-1 priority=7
`

// TestParseScriptRejects: hand edits that name an undeclared host, sizes
// beyond HOMA_MAX_MESSAGE_LENGTH, values wider than their wire fields or
// times out of range are rejected with an error naming the script line
// and what is allowed (they panicked or allocated ~100 GB in Replay).
func TestParseScriptRejects(t *testing.T) {
	s, err := ParseScript(strings.NewReader(validScript))
	if err != nil {
		t.Fatalf("the base script: %v", err)
	}
	// An IUT packet that did not decode, as writeScript renders it, is
	// no expectation (it failed to parse, so a script showing a
	// malformed packet could not be replayed).
	m := strings.Replace(validScript, "at 0.090000001", "at 0.000000004 iut sends "+packetText([]byte{1, 2, 3}, nil, 0, 7, true, 0)+"\nat 0.090000001", 1)
	if ms, err := ParseScript(strings.NewReader(m)); err != nil || len(ms.Steps) != 3 {
		t.Errorf("a script with an IUT's MALFORMED packet: %v, want it parsed with 3 steps:\n%s", err, m)
	}
	if len(s.RPCs) != 1 || s.RPCs[0].Request != 3001 || s.RPCs[0].Line != 7 || len(s.Steps) != 3 || strings.Join(s.ParamArgs, " ") != "link_bps=1000000000" {
		t.Fatalf("the base script parsed as %+v", s)
	}
	for _, c := range []struct{ old, new, want string }{
		{"param link_bps=1000000000", "param link_bps", "script line 4: want 'param NAME=VALUE' (VALUE an integer or integers separated by commas, as --param takes)"},
		{"param link_bps=1000000000", "param link_bps=1e9", "script line 4: want 'param NAME=VALUE'"},
		{"param link_bps=1000000000", "param link_bps=1 unsched_bytes=2", "script line 4: want 'param NAME=VALUE'"},
		{"rpc 1 h2 calls", "rpc 1 h9 calls", "script line 7: host h9 has no host line (hosts declared: h2, h3)"},
		{"at 0.000000002 h2 sends", "at 0.000000002 h7 sends", "script line 8: host h7 has no host line (hosts declared: h2, h3)"},
		{"host h2 198.18.0.2\n", "", "script line 6: host h2 has no host line (hosts declared: h3)"},
		{"to=h2", "to=h9", "script line 9: host h9 has no host line"},
		{"request=3001", "request=99999999999", `script line 7: rpc 1: request="99999999999": want a message length in bytes, 1..1000000 (HOMA_MAX_MESSAGE_LENGTH)`},
		{"request=3001", "request=1000001", `request="1000001": want a message length in bytes, 1..1000000`},
		{"response=1", "response=0", `script line 7: rpc 1: response="0": want a message length`},
		{"response=1", "", `script line 7: rpc 1: response="": want a message length`},
		{"host h3 ", "host h99999999999 ", "script line 6: host \"h99999999999\": want h2 ... h254"},
		{"host h3 ", "host h255 ", "want h2 ... h254"},
		{"id=2", "id=3", `script line 7: rpc 1: id="3": want the tester client's RPC id, even and non-zero`},
		{"port=40000", "port=70000", `script line 7: rpc 1: port="70000": want the tester client's port, 1..65535`},
		{"calls iut", "calls h3", "script line 7: rpc 1: one side is the iut"},
		{"at 0.090000001", "at -1", `script line 10: time "-1": want seconds, 0..3600`},
		{"at 0.090000001", "at NaN", `script line 10: time "NaN": want seconds`},
		{"at 0.090000001", "at +Inf", `script line 10: time "+Inf": want seconds`},
		{"at 0.090000001", "at 1e300", `script line 10: time "1e300": want seconds`},
		{"RESEND rpc=1", "RESEND rpc=5", "script line 10: rpc=5: no such rpc line"},
		{"offset=0 length=1424", "offset=3000 length=1424", "script line 8: DATA offset=3000 length=1424: want length > 0 and offset+length within rpc 1's 3001-byte message"},
		{"offset=0 length=1424", "offset=0 length=0", "script line 8: DATA offset=0 length=0"},
		{"message_length=3001", "message_length=4294967296", `script line 8: message_length="4294967296": want an unsigned 32-bit integer`},
		{"offset=0 length=-1", "offset=-1 length=-1", `script line 10: offset="-1": want an unsigned 32-bit integer`},
		{"prio=7 offset=0 length=-1", "prio=8 offset=0 length=-1", `script line 10: prio="8": want 0..7`},
		{"ack=0:0", "ack=0:70000", `script line 8: ack "0:70000": want CLIENT_ID:SERVER_PORT`},
		{"at 0.090000001 h2 sends RESEND rpc=1 prio=7 offset=0 length=-1 priority=7", "at 0.09 h2 sends ACK rpc=1 prio=7 acks=2:1,4:1,6:1,8:1,10:1,12:1",
			`script line 10: acks="2:1,4:1,6:1,8:1,10:1,12:1": at most 5 entries (HOMA_MAX_ACKS_PER_PKT)`},
		{"at 0.090000001 h2 sends RESEND rpc=1 prio=7 offset=0 length=-1 priority=7", "at 0.09 h2 sends CUTOFFS rpc=1 prio=7 cutoffs=1,2,3 version=1",
			`script line 10: cutoffs="1,2,3": want 8 comma-separated byte counts`},
		{"homatest-explore 1", "homatest-explore 2", "script line 1: want \"homatest-explore 1\" first"},
		{"\nat 0.000000003", "\n" + strings.Repeat("x", 2<<20) + "\nat 0.000000003", "script line 9: longer than 1 MiB"},
	} {
		text := strings.Replace(validScript, c.old, c.new, 1)
		if text == validScript {
			t.Fatalf("edit %q -> %q changes nothing", c.old, c.new)
		}
		_, err := ParseScript(strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q -> %q: error %v; want one line with %q", c.old, c.new, err, c.want)
		}
	}
}

// TestParseScriptTruncatedAndGarbage: every prefix of real scripts (as
// homatest explore wrote them), and random bytes and tokens, parse to a
// valid script or an error naming what is wrong; nothing panics.
func TestParseScriptTruncatedAndGarbage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "found", "*.homa"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/found: %v", err)
	}
	inputs := []string{validScript}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	parse := func(text string) {
		t.Helper()
		s, err := ParseScript(strings.NewReader(text))
		switch {
		case err == nil && s.validate() != nil:
			t.Errorf("accepted a script its validation rejects (%v):\n%q", s.validate(), text)
		case err != nil && err.Error() == "":
			t.Errorf("empty error for %q", text)
		}
	}
	accepted := 0
	for _, in := range inputs {
		if _, err := ParseScript(strings.NewReader(in)); err != nil {
			t.Fatalf("a whole script does not parse: %v\n%s", err, in)
		}
		// Every byte of the header and the first steps; then each line
		// cut at its end and in its middle.
		start := 0
		for n := range len(in) {
			if n < 1024 {
				parse(in[:n])
			} else if in[n] == '\n' {
				parse(in[:n])
				parse(in[:(start+n)/2])
			}
			if in[n] == '\n' {
				start = n
			}
		}
		// A prefix ending at a line's end, past the first step, parses.
		if i := strings.Index(in, "\nat "); i >= 0 {
			if j := strings.Index(in[i+1:], "\n"); j >= 0 {
				if _, err := ParseScript(strings.NewReader(in[:i+1+j+1])); err == nil {
					accepted++
				}
			}
		}
	}
	if accepted != len(inputs) {
		t.Errorf("%d of %d scripts cut after their first step parse, want all", accepted, len(inputs))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := []string{"homatest-explore", "1", "iut", "rule", "host", "rpc", "at", "calls", "sends", "loses", "completes", "fails",
		"h2", "h3", "h0", "h254", "h255", "198.18.0.2", "DATA", "GRANT", "RESEND", "ACK", "CUTOFFS", "rpc=1", "rpc=2", "request=1",
		"response=1000000", "request=1000001", "id=2", "id=0", "port=1", "offset=0", "length=1", "length=-1", "acks=1:1", "cutoffs=1,2",
		"0.5", "-1", "NaN", "#", "=", "\n", "\n", "\n", "homatest-explore 1\n"}
	for range 2000 {
		var b strings.Builder
		b.WriteString("homatest-explore 1\n")
		for range rng.IntN(40) {
			b.WriteString(tokens[rng.IntN(len(tokens))])
			b.WriteByte(' ')
		}
		parse(b.String())
		raw := make([]byte, rng.IntN(200))
		for i := range raw {
			raw[i] = byte(rng.UintN(256))
		}
		parse(string(raw))
	}
}

// FuzzParseScript: the script parser never panics; what it accepts
// passes validation (every host named is declared, sizes within
// HOMA_MAX_MESSAGE_LENGTH), so Replay cannot index past its hosts or
// allocate beyond a message.
func FuzzParseScript(f *testing.F) {
	f.Add([]byte(validScript))
	files, _ := filepath.Glob(filepath.Join("testdata", "found", "*.homa"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseScript(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if err := s.validate(); err != nil {
			t.Errorf("accepted script fails validation: %v", err)
		}
		for _, x := range s.RPCs {
			if x.Host >= len(s.Hosts) || x.Request > 1000000 || x.Response > 1000000 {
				t.Errorf("accepted rpc %+v with hosts %v", x, s.Hosts)
			}
		}
		for _, st := range s.Steps {
			if st.Who >= len(s.Hosts) || st.At < 0 || st.RPC > len(s.RPCs) {
				t.Errorf("accepted step %+v with %d hosts, %d rpcs", st, len(s.Hosts), len(s.RPCs))
			}
		}
	})
}
