package explore

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// A replay script is a shrunk failing case written out as its exchange:
// the RPCs, then one line per event in time order, like an active spec:
//
//	homatest-explore 1
//	# comments
//	iut impl=ref env=sim faults=grant-past-end
//	rule HOMA-GRANT-002 MUST
//	param link_bps=1000000000
//	host h2 198.18.0.2
//	rpc 1 h2 calls iut id=2 port=40000 request=50000 response=100
//	rpc 2 iut calls h3 request=3000 response=500
//	at 0.000000000 h2 sends DATA rpc=1 prio=6 offset=0 length=1424 ...
//	at 0.000000012 iut sends GRANT rpc=1 to=h2 prio=7 offset=51424 priority=0
//	at 0.000000000 h2 loses DATA rpc=1 ...
//	at 0.000000000 iut calls rpc=2
//	at 0.000150000 iut completes rpc=2 response=500
//
// "sends" by a tester host is an action (Replay sends it at its time,
// after the IUT's earlier packets came); "sends" by the IUT is an
// expectation; "loses" is a packet the explored network dropped (not
// sent); "calls" makes the IUT's application call; "completes" and
// "fails" are the calls' expected ends; "param" lines are the session's
// parameter overrides (--param NAME=VALUE), which a replay applies. Fields are HomaModule's
// homa_wire.h names; the common header comes from the RPC (sport, dport
// and id override it), DATA payloads from the RPC's message in the agent
// protocol's payload format.

// scriptVersion is the first line of every script.
const scriptVersion = "homatest-explore 1"

// writeScript renders found failure f, whose last logged run is out.
func writeScript(s *session, f *Found, out *outcome) string {
	var b strings.Builder
	fmt.Fprintln(&b, scriptVersion)
	fmt.Fprintf(&b, "# %s %s violated by the IUT: %s\n", f.Rule, f.Level, f.Why)
	if r := spec.RuleByID(f.Rule); r != nil {
		fmt.Fprintf(&b, "# The rule: %s\n# Source: %s\n", r.Statement, r.Source)
	} else if d := appRuleDoc[f.Rule]; d != "" {
		fmt.Fprintf(&b, "# The check: %s\n", d)
	}
	fmt.Fprintf(&b, "# Found by homatest explore (seed %d, case %d, after %v); %s.\n",
		s.cfg.Seed, f.Case, f.After.Round(time.Millisecond), f.ShrinkText())
	if f.Unstable {
		fmt.Fprintf(&b, "# Unstable: %s.\n", f.UnstableWhy())
	}
	replay := "homatest explore --replay FILE"
	if s.cfg.ReplayCommand != nil {
		replay = s.cfg.ReplayCommand(len(s.res.Failures)+1, f.Rule)
	}
	fmt.Fprintf(&b, "# Replay: %s\n", replay)
	fmt.Fprintf(&b, "# (the iut line's faults apply to the ref, the param lines to the IUT's hello; --fault and --param override them).\n")
	fmt.Fprintf(&b, "# Lines: 'at T HOST sends' are the tester's packets (sent at T after the IUT's earlier packets);\n")
	fmt.Fprintf(&b, "# 'at T iut sends' what the IUT sent (expected); 'loses' packets the network dropped (not sent).\n")
	fmt.Fprintf(&b, "iut impl=%s version=%s env=%s", tokenSafe(s.res.Impl), tokenSafe(s.res.Version), tokenSafe(s.res.Env))
	if len(s.faults) > 0 {
		fmt.Fprintf(&b, " faults=%s", strings.Join(s.faults, ","))
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "rule %s %s\n", f.Rule, f.Level)
	for _, a := range paramArgs(s.cfg.Env.Params) {
		fmt.Fprintf(&b, "param %s\n", a)
	}
	fmt.Fprintf(&b, "%s%s\n", paramsPrefix, paramsLine(&s.info.params))
	for i, a := range s.res.hostAddrs {
		fmt.Fprintf(&b, "host %s %s\n", hostName(i), a)
	}
	for _, x := range out.rpcs {
		if x.client {
			fmt.Fprintf(&b, "rpc %d %s calls iut id=%d port=%d request=%d response=%d\n", x.n, hostName(x.h.i), x.id, x.myPort, x.spec.Request, x.spec.Response)
		} else {
			fmt.Fprintf(&b, "rpc %d iut calls %s request=%d response=%d", x.n, hostName(x.h.i), x.spec.Request, x.spec.Response)
			if x.agentID != 0 {
				fmt.Fprintf(&b, " call_id=%d", x.agentID)
			}
			fmt.Fprintln(&b)
		}
	}
	for _, ch := range f.Shrunk.Choices {
		fmt.Fprintf(&b, "# decision: %s\n", ch)
	}
	byN := map[int]*rpc{}
	for _, x := range out.rpcs {
		byN[x.n] = x
	}
	for _, rec := range sortedLog(out.log) {
		t := fmt.Sprintf("at %.9f", rec.at.Seconds())
		switch rec.kind {
		case recSent, recDropped, recRecv:
			verb := "sends"
			who := hostName(rec.host)
			if rec.kind == recDropped {
				verb = "loses"
			}
			if rec.kind == recRecv {
				who = "iut"
			}
			line := fmt.Sprintf("%s %s %s %s", t, who, verb, packetText(rec.raw, byN[rec.rpc], rec.rpc, rec.prio, rec.kind == recRecv, rec.host))
			if why, ok := strings.CutPrefix(rec.text, tester.DeliberatePrefix); ok && rec.kind == recSent {
				line += "   " + deliberateTag + why
			}
			if rec.kind == recRecv && f.Frame > 0 && rec.frame == f.Frame {
				line += fmt.Sprintf("   # <- %s %s: %s", f.Rule, f.Level, f.Why)
			} else if rec.kind == recSent && f.Frame > 0 && rec.frame == f.Frame {
				line += fmt.Sprintf("   # <- %s %s (the IUT owed an answer): %s", f.Rule, f.Level, f.Why)
			}
			fmt.Fprintln(&b, line)
		case recCall:
			fmt.Fprintf(&b, "%s iut calls rpc=%d\n", t, rec.rpc)
		case recDone:
			if strings.HasPrefix(rec.text, "error ") {
				fmt.Fprintf(&b, "%s iut fails rpc=%d error=%s\n", t, rec.rpc, strconv.Quote(strings.TrimPrefix(rec.text, "error ")))
			} else {
				fmt.Fprintf(&b, "%s iut completes rpc=%d %s\n", t, rec.rpc, strings.TrimPrefix(rec.text, "ok "))
			}
		case recNote:
			fmt.Fprintf(&b, "# %s %s\n", t, rec.text)
		}
	}
	if f.Frame == 0 {
		fmt.Fprintf(&b, "# end: %s %s: %s\n", f.Rule, f.Level, f.Why)
	}
	return b.String()
}

// sortedLog returns the log in time order (arrivals are logged when the
// loop takes them, after what it did meanwhile), stable.
func sortedLog(log []record) []record {
	out := slices.Clone(log)
	slices.SortStableFunc(out, func(a, b record) int { return cmp.Compare(a.at, b.at) })
	return out
}

// appRuleDoc describes the application-level checks.
var appRuleDoc = map[string]string{
	AppPayload: "every message arrives whole with the bytes its sender put in it (the agent protocol's payload format)",
	AppOnce:    "a server executes each request at most once",
	AppError:   "a call fails only if its peer left it silent for timeout_ticks",
	AppStuck:   "every RPC ends: with its response, or with an error the protocol allows",
}

// hostName names tester host i as the environment does (h2, h3, ...).
func hostName(i int) string { return fmt.Sprintf("h%d", i+2) }

func tokenSafe(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' {
			return '_'
		}
		return r
	}, s)
}

// packetText renders transport bytes raw of case RPC x (n its number, 0:
// none) as a script line's packet: type, rpc, prio and the fields.
func packetText(raw []byte, x *rpc, n int, prio uint8, fromIUT bool, host int) string {
	p, err := wire.Decode(raw, wire.DecodeOptions{Version: wire.VersionCurrent})
	if err != nil {
		return fmt.Sprintf("%s bytes=%x", malformed, raw)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s rpc=%d", p.Type(), n)
	if fromIUT {
		fmt.Fprintf(&b, " to=%s", hostName(host))
	}
	fmt.Fprintf(&b, " prio=%d", prio)
	c := p.Common()
	// The common header, where the RPC does not give it.
	var want wire.CommonFields
	if x != nil && !fromIUT {
		want = commonOf(x)
	}
	if fromIUT || x == nil || c.Sport() != want.Sport || c.Dport() != want.Dport || c.SenderID() != want.SenderID {
		if !fromIUT || x == nil {
			fmt.Fprintf(&b, " sport=%d dport=%d id=%d", c.Sport(), c.Dport(), c.SenderID())
		}
	}
	switch p.Type() {
	case wire.TypeData:
		d := p.Data()
		fmt.Fprintf(&b, " offset=%d length=%d message_length=%d incoming=%d cutoff_version=%d retransmit=%d ack=%d:%d",
			d.Offset(), d.DataLen(), d.MessageLength(), d.Incoming(), d.CutoffVersion(), d.Retransmit(), d.AckClientID(), d.AckServerPort())
	case wire.TypeGrant:
		g := p.Grant()
		fmt.Fprintf(&b, " offset=%d priority=%d", g.Offset(), g.Priority())
	case wire.TypeResend:
		r := p.Resend()
		l := strconv.FormatUint(uint64(r.Length()), 10)
		if r.IsResendAll() {
			l = "-1"
		}
		fmt.Fprintf(&b, " offset=%d length=%s priority=%d", r.Offset(), l, r.Priority())
	case wire.TypeCutoffs:
		cu := p.Cutoffs()
		fmt.Fprintf(&b, " cutoffs=%s version=%d", cutoffList(cu.UnschedCutoffs()), cu.CutoffVersion())
	case wire.TypeAck:
		a := p.Ack()
		var acks []string
		for i := range a.ValidAcks() {
			e := a.Entry(i)
			acks = append(acks, fmt.Sprintf("%d:%d", e.ClientID, e.ServerPort))
		}
		fmt.Fprintf(&b, " acks=%s", strings.Join(acks, ","))
		if !fromIUT {
			break
		}
		fmt.Fprintf(&b, " id=%d", c.SenderID())
	}
	return b.String()
}

// malformed is a script line's packet type for bytes that do not decode.
const malformed = "MALFORMED"

// commonOf is the common header of x's packets from its tester host.
func commonOf(x *rpc) wire.CommonFields {
	id := x.id
	if !x.client {
		id |= 1
	}
	return wire.CommonFields{Sport: x.myPort, Dport: x.iutPort, SenderID: id}
}

// Script is a parsed replay script.
type Script struct {
	// Impl, Env and Faults are the iut line's (as found).
	Impl, Env string
	Faults    []string
	// Rule and Level are the failure the script shows.
	Rule  string
	Level spec.Level
	Hosts []netip.Addr
	RPCs  []ScriptRPC
	Steps []Step
	// Params is the IUT's parameters as found (the "# IUT parameters:"
	// line; "" when the script has none).
	Params string
	// ParamArgs are the session's parameter overrides, NAME=VALUE as
	// homatest's --param takes them (the param lines).
	ParamArgs []string
}

// ScriptRPC is an rpc line.
type ScriptRPC struct {
	N         int
	Line      int // the script line (0: not from a script)
	IUTClient bool
	Host      int
	ID        uint64 // the tester client's id (even, as HomaModule's client ids)
	Port      uint16 // the tester client's port
	// Request and Response are the messages' lengths in bytes,
	// 1..wire.MaxMessageLength (HOMA_MAX_MESSAGE_LENGTH).
	Request  int
	Response int
	CallID   uint64 // the IUT call's agent id, as found
}

// Bounds of a script's values beyond the wire's field widths.
const (
	// maxScriptHost is the last tester host name (h254): the
	// environments give tester host hN the address 198.18.0.N.
	maxScriptHost = 254
	// maxScriptTime bounds an "at" time: explored cases last
	// milliseconds to seconds, and a replay in namespaces waits in real
	// time.
	maxScriptTime = time.Hour
)

// Step is one "at" line.
type Step struct {
	At   time.Duration
	Line int
	// Who is the tester host (0-based) or -1 for the IUT.
	Who int
	// Verb is "sends", "loses", "calls", "completes" or "fails".
	Verb string
	Type wire.PacketType
	RPC  int
	Prio uint8
	// Fields are the packet's key=value fields.
	Fields map[string]string
	// Deliberate is why a tester's packet breaks the protocol on purpose
	// (its "# deliberate: why" comment; "" for none): the replay's capture
	// marks it as the session's did.
	Deliberate string
}

// deliberateTag starts the comment of a script line whose tester packet
// the session marked deliberate (tester.DeliberatePrefix in its capture).
const deliberateTag = "# deliberate: "

// paramArg is a param line's NAME=VALUE (VALUE: integers, commas
// between).
var paramArg = regexp.MustCompile(`^[a-z][a-z0-9_]*=-?[0-9]+(,-?[0-9]+)*$`)

// paramArgs renders parameter overrides p as --param's NAME=VALUE, by
// name (lists as integers separated by commas).
func paramArgs(p agent.Params) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if v, ok := p.Int(k); ok {
			out = append(out, fmt.Sprintf("%s=%d", k, v))
		} else if l, ok := p.Ints(k); ok {
			var parts []string
			for _, v := range l {
				parts = append(parts, strconv.FormatInt(v, 10))
			}
			out = append(out, k+"="+strings.Join(parts, ","))
		}
	}
	return out
}

// paramsPrefix starts the comment line that records the IUT's parameters.
const paramsPrefix = "# IUT parameters: "

// paramsLine is that line's text for p (after paramsPrefix).
func paramsLine(p *spec.Params) string {
	return fmt.Sprintf("tick %v, resend_ticks %d, resend_interval %d, timeout_ticks %d, request_ack_ticks %d, unsched_bytes %d, max_incoming %d, max_overcommit %d, window %d, cutoffs %s version %d",
		p.Tick, p.ResendTicks, p.ResendInterval, p.TimeoutTicks, p.RequestAckTicks, p.UnschedBytes, p.MaxIncoming, p.MaxOvercommit, p.Window, cutoffList(p.UnschedCutoffs), p.CutoffVersion)
}

// ParseScript reads a replay script. Errors name the line.
func ParseScript(r io.Reader) (*Script, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	s := &Script{}
	line := 0
	bad := func(format string, a ...any) error {
		return fmt.Errorf("script line %d: %s", line, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		if rest, ok := strings.CutPrefix(text, paramsPrefix); ok {
			s.Params = strings.TrimSpace(rest)
		}
		deliberate := ""
		if _, rest, ok := strings.Cut(text, deliberateTag); ok {
			deliberate, _, _ = strings.Cut(rest, " #")
			deliberate = strings.TrimSpace(deliberate)
		}
		if i := strings.Index(text, "#"); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if line == 1 || s.Rule == "" && len(s.Steps) == 0 && f[0] == "homatest-explore" {
			if strings.Join(f, " ") != scriptVersion {
				return nil, bad("want %q first (not a homatest explore script?)", scriptVersion)
			}
			continue
		}
		kv := pairs(f)
		switch f[0] {
		case "iut":
			s.Impl, s.Env = kv["impl"], kv["env"]
			if v := kv["faults"]; v != "" {
				s.Faults = strings.Split(v, ",")
			}
		case "rule":
			if len(f) < 2 {
				return nil, bad("rule needs an ID")
			}
			s.Rule = f[1]
			s.Level = spec.Must
			if len(f) > 2 && f[2] == "SHOULD" {
				s.Level = spec.Should
			}
		case "param":
			if len(f) != 2 || !paramArg.MatchString(f[1]) {
				return nil, bad("want 'param NAME=VALUE' (VALUE an integer or integers separated by commas, as --param takes)")
			}
			s.ParamArgs = append(s.ParamArgs, f[1])
		case "host":
			if len(f) != 3 {
				return nil, bad("want 'host NAME ADDR'")
			}
			i, err := hostIndex(f[1])
			if err != nil {
				return nil, bad("%v", err)
			}
			a, err := netip.ParseAddr(f[2])
			if err != nil {
				return nil, bad("host address %q: %v", f[2], err)
			}
			for len(s.Hosts) <= i {
				s.Hosts = append(s.Hosts, netip.Addr{})
			}
			s.Hosts[i] = a
		case "rpc":
			if len(f) < 5 || f[3] != "calls" {
				return nil, bad("want 'rpc N CLIENT calls SERVER key=value...'")
			}
			n, err := strconv.Atoi(f[1])
			if err != nil || n != len(s.RPCs)+1 {
				return nil, bad("rpc numbers must count 1, 2, ... (got %q)", f[1])
			}
			x := ScriptRPC{N: n}
			who := f[2]
			if who == "iut" {
				x.IUTClient = true
				who = f[4]
			} else if f[4] != "iut" {
				return nil, bad("rpc %d: one side is the iut: want 'rpc N hH calls iut ...' or 'rpc N iut calls hH ...'", n)
			}
			if x.Host, err = hostIndex(who); err != nil {
				return nil, bad("%v", err)
			}
			x.Line = line
			size := func(k string) (int, error) {
				v, err := strconv.ParseUint(kv[k], 10, 32)
				if err != nil || v < 1 || v > wire.MaxMessageLength {
					return 0, bad("rpc %d: %s=%q: want a message length in bytes, 1..%d (HOMA_MAX_MESSAGE_LENGTH)", n, k, kv[k], wire.MaxMessageLength)
				}
				return int(v), nil
			}
			if x.Request, err = size("request"); err != nil {
				return nil, err
			}
			if x.Response, err = size("response"); err != nil {
				return nil, err
			}
			if v, ok := kv["call_id"]; ok {
				if x.CallID, err = strconv.ParseUint(v, 10, 64); err != nil {
					return nil, bad("rpc %d: call_id=%q: want an unsigned 64-bit integer", n, v)
				}
			}
			if !x.IUTClient {
				if x.ID, err = strconv.ParseUint(kv["id"], 10, 64); err != nil || x.ID == 0 || x.ID%2 != 0 {
					return nil, bad("rpc %d: id=%q: want the tester client's RPC id, even and non-zero (HomaModule's client ids)", n, kv["id"])
				}
				p, err := strconv.ParseUint(kv["port"], 10, 16)
				if err != nil || p == 0 {
					return nil, bad("rpc %d: port=%q: want the tester client's port, 1..65535", n, kv["port"])
				}
				x.Port = uint16(p)
			}
			s.RPCs = append(s.RPCs, x)
		case "at":
			if len(f) >= 5 && f[2] == "iut" && f[3] == "sends" && f[4] == malformed {
				// A packet of the IUT's that did not decode (packetText):
				// the oracle judges it again; nothing to expect.
				continue
			}
			st, err := parseStep(f, kv)
			if err != nil {
				return nil, bad("%v", err)
			}
			st.Line = line
			st.Deliberate = deliberate
			if st.RPC < 0 || st.RPC > len(s.RPCs) || (st.Verb == "calls" || st.Verb == "completes" || st.Verb == "fails") && st.RPC == 0 {
				return nil, bad("rpc=%d: no such rpc line", st.RPC)
			}
			s.Steps = append(s.Steps, st)
		default:
			return nil, bad("unknown line %q (want iut, rule, param, host, rpc or at)", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("script line %d: longer than 1 MiB (not a homatest explore script?)", line+1)
		}
		return nil, fmt.Errorf("script line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("script: empty (want %q first)", scriptVersion)
	}
	if len(s.RPCs) == 0 && len(s.Steps) == 0 {
		// Replaying nothing would pass and read as "fixed".
		return nil, fmt.Errorf("script: no rpc or at lines (truncated? give the whole file homatest explore wrote)")
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// validate checks what no single line shows: every host an rpc or at
// line names has a host line, every step's rpc exists, and every DATA a
// tester host sends lies within its RPC's message. Errors name the line.
func (s *Script) validate() error {
	var names []string
	for i, a := range s.Hosts {
		if a.IsValid() {
			names = append(names, hostName(i))
		}
	}
	declared := func(line, i int) error {
		if i >= 0 && (i >= len(s.Hosts) || !s.Hosts[i].IsValid()) {
			return fmt.Errorf("script line %d: host %s has no host line (hosts declared: %s)", line, hostName(i), strings.Join(names, ", "))
		}
		return nil
	}
	for _, x := range s.RPCs {
		if err := declared(x.Line, x.Host); err != nil {
			return err
		}
		if x.Request < 1 || x.Response < 1 || x.Request > wire.MaxMessageLength || x.Response > wire.MaxMessageLength {
			return fmt.Errorf("script line %d: rpc %d: request=%d response=%d: want 1..%d bytes (HOMA_MAX_MESSAGE_LENGTH)", x.Line, x.N, x.Request, x.Response, wire.MaxMessageLength)
		}
	}
	for _, st := range s.Steps {
		if err := declared(st.Line, st.Who); err != nil {
			return err
		}
		if st.RPC < 0 || st.RPC > len(s.RPCs) {
			return fmt.Errorf("script line %d: rpc=%d: no such rpc line (rpc 1 ... %d)", st.Line, st.RPC, len(s.RPCs))
		}
		if to, ok := st.Fields["to"]; ok && st.Who < 0 {
			i, err := hostIndex(to)
			if err != nil {
				return fmt.Errorf("script line %d: to=%s: %v", st.Line, to, err)
			}
			if err := declared(st.Line, i); err != nil {
				return err
			}
		}
		if st.Who < 0 || st.Verb != "sends" || st.Type != wire.TypeData {
			continue
		}
		if st.RPC == 0 {
			return fmt.Errorf("script line %d: DATA needs rpc=N", st.Line)
		}
		x := s.RPCs[st.RPC-1]
		msg := x.Request // a tester client's request, or a tester server's response
		if x.IUTClient {
			msg = x.Response
		}
		off, _ := fieldValue("offset", st.Fields["offset"])
		n, _ := fieldValue("length", st.Fields["length"])
		if n == 0 || off+n > uint64(msg) {
			return fmt.Errorf("script line %d: DATA offset=%d length=%d: want length > 0 and offset+length within rpc %d's %d-byte message", st.Line, off, n, x.N, msg)
		}
	}
	return nil
}

// fieldBits are the wire widths of a tester packet's numeric fields
// (homa_wire.h); "-1" stands for all ones (RESEND's "everything").
var fieldBits = map[string]int{
	"sport": 16, "dport": 16, "id": 64, "offset": 32, "length": 32, "message_length": 32, "incoming": 32,
	"cutoff_version": 16, "version": 16, "retransmit": 8, "priority": 8,
}

// fieldValue parses numeric field k's value v within its wire width.
func fieldValue(k, v string) (uint64, error) {
	if v == "-1" && k == "length" {
		return 0xFFFFFFFF, nil
	}
	n, err := strconv.ParseUint(v, 10, fieldBits[k])
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want an unsigned %d-bit integer", k, v, fieldBits[k])
	}
	return n, nil
}

// ackValue parses an ack entry "CLIENT_ID:SERVER_PORT".
func ackValue(s string) (wire.AckEntry, error) {
	id, port, _ := strings.Cut(s, ":")
	i, err1 := strconv.ParseUint(id, 10, 64)
	p, err2 := strconv.ParseUint(port, 10, 16)
	if err1 != nil || err2 != nil {
		return wire.AckEntry{}, fmt.Errorf("ack %q: want CLIENT_ID:SERVER_PORT", s)
	}
	return wire.AckEntry{ClientID: i, ServerPort: uint16(p)}, nil
}

// checkFields checks a tester packet's fields: numbers within their
// wire widths, cutoffs eight numbers, acks at most HOMA_MAX_ACKS_PER_PKT.
func checkFields(kv map[string]string) error {
	for k, v := range kv {
		if _, ok := fieldBits[k]; ok {
			if _, err := fieldValue(k, v); err != nil {
				return err
			}
		}
	}
	if v, ok := kv["cutoffs"]; ok {
		parts := strings.Split(v, ",")
		if len(parts) != wire.NumCutoffs {
			return fmt.Errorf("cutoffs=%q: want %d comma-separated byte counts", v, wire.NumCutoffs)
		}
		for _, p := range parts {
			if _, err := strconv.ParseUint(p, 10, 32); err != nil {
				return fmt.Errorf("cutoffs=%q: want %d comma-separated byte counts", v, wire.NumCutoffs)
			}
		}
	}
	if v := kv["ack"]; v != "" {
		if _, err := ackValue(v); err != nil {
			return err
		}
	}
	if v := kv["acks"]; v != "" {
		parts := strings.Split(v, ",")
		if len(parts) > wire.MaxAcksPerPkt {
			return fmt.Errorf("acks=%q: at most %d entries (HOMA_MAX_ACKS_PER_PKT)", v, wire.MaxAcksPerPkt)
		}
		for _, e := range parts {
			if _, err := ackValue(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// hostIndex returns tester host name's index (h2: 0).
func hostIndex(name string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "h"))
	if !strings.HasPrefix(name, "h") || err != nil || n < 2 || n > maxScriptHost {
		return 0, fmt.Errorf("host %q: want h2 ... h%d", name, maxScriptHost)
	}
	return n - 2, nil
}

// pairs returns a line's key=value fields (a quoted value may hold
// spaces only at the end of a line: error="...").
func pairs(f []string) map[string]string {
	kv := map[string]string{}
	for i, t := range f {
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		if strings.HasPrefix(v, `"`) {
			rest := strings.Join(append([]string{v}, f[i+1:]...), " ")
			if u, err := strconv.Unquote(rest); err == nil {
				v = u
			}
		}
		kv[k] = v
	}
	return kv
}

func parseStep(f []string, kv map[string]string) (Step, error) {
	if len(f) < 4 {
		return Step{}, fmt.Errorf("want 'at TIME WHO VERB ...'")
	}
	secs, err := strconv.ParseFloat(f[1], 64)
	if err != nil || !(secs >= 0 && secs <= maxScriptTime.Seconds()) {
		return Step{}, fmt.Errorf("time %q: want seconds, 0..%.0f", f[1], maxScriptTime.Seconds())
	}
	st := Step{At: time.Duration(secs*1e9 + 0.5), Verb: f[3], Fields: kv, Who: -1}
	if f[2] != "iut" {
		if st.Who, err = hostIndex(f[2]); err != nil {
			return Step{}, err
		}
	}
	if v := kv["rpc"]; v != "" {
		if st.RPC, err = strconv.Atoi(v); err != nil {
			return Step{}, fmt.Errorf("rpc=%q: want an rpc line's number (0: none)", v)
		}
	}
	if v := kv["prio"]; v != "" {
		p, err := strconv.ParseUint(v, 10, 8)
		if err != nil || p > 7 {
			return Step{}, fmt.Errorf("prio=%q: want 0..7", v)
		}
		st.Prio = uint8(p)
	}
	switch st.Verb {
	case "sends", "loses":
		if len(f) < 5 {
			return Step{}, fmt.Errorf("%s needs a packet type", st.Verb)
		}
		if st.Type, err = wire.ParsePacketType(f[4]); err != nil {
			return Step{}, err
		}
		if st.Who >= 0 && st.Verb == "sends" {
			// A tester's packet: its fields must fit the wire.
			if err := checkFields(kv); err != nil {
				return Step{}, err
			}
		}
	case "calls", "completes", "fails":
		if st.Who != -1 {
			return Step{}, fmt.Errorf("only the iut %s", st.Verb)
		}
	default:
		return Step{}, fmt.Errorf("verb %q: want sends, loses, calls, completes or fails", st.Verb)
	}
	return st, nil
}
