package explore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// ReplayResult is what replaying a script gave.
type ReplayResult struct {
	// Reproduced: the script's rule failed again, charged to the IUT.
	Reproduced bool `json:"reproduced"`
	// Failure is the first failure charged to the IUT (nil: none).
	Failure *Failure `json:"failure,omitempty"`
	// Divergences are the script's expectations the IUT did not meet
	// (an expected packet that did not come in time, a call that ended
	// otherwise): the exchange went another way.
	Divergences []string `json:"divergences,omitempty"`
	// Sent counts the packets tester hosts gave the IUT; Events the
	// explorer's events.
	Sent   int `json:"sent"`
	Events int `json:"events"`
	// ParamsDiffer, when set, says how the IUT's parameters differ from
	// those the script was found with (a replay under other timers or
	// sizes may not mean the same exchange).
	ParamsDiffer string `json:"params_differ,omitempty"`
	// Params are the parameter overrides (NAME=VALUE) the replay's IUT
	// ran with, and where each came from ("script" or "--param"); set
	// by the caller, which builds the environment.
	Params []ReplayParam `json:"params"`
	// Faults are the fault knobs the replay's IUT ran with (Arg the
	// knob's name) and where each came from ("script", its iut line, or
	// "--fault", which replaces the script's); empty: none. Set by the
	// caller, as Params.
	Faults []ReplayParam `json:"faults"`
	// Capture is the replay's IUT view as pcapng (the failure, if any, as
	// a packet comment on its frame).
	Capture []byte `json:"-"`
	// Judged are the parameters the replay judged the IUT with (its
	// hello's, with the environment's slack and jitter) and Stalls what
	// the environment measured (nil in the simulator): written beside the
	// capture (conformance.WriteCheckSidecars), homatest check judges it
	// as the replay did.
	Judged spec.Params    `json:"-"`
	Stalls *stall.Monitor `json:"-"`
}

// ReplayParam is one parameter override or fault knob of a replay.
type ReplayParam struct {
	Arg  string `json:"arg"`  // NAME=VALUE, or a fault knob's name
	From string `json:"from"` // "script" (its param or iut line), "--param" or "--fault"
}

// expectation is one "iut sends" line not yet met.
type expectation struct {
	st       Step
	deadline time.Duration
	met      bool
}

// scripted is a run's script state (Replay).
type scripted struct {
	s      *Script
	exp    []*expectation
	tol    time.Duration
	diverg []string
	end    time.Duration
}

// Replay runs script s in env: the tester hosts send the script's
// packets at their times (each once the IUT's earlier expected packets
// came, or were overdue), the IUT's application makes the script's calls,
// and the oracle judges the IUT as during exploration (rules at level
// and stricter; nil rules: every rule of the environment's profile).
// Errors: the environment cannot be built, a packet line cannot be built
// (an rpc the IUT never bound), ctx ended.
func Replay(ctx context.Context, env Env, s *Script, rules []*spec.Rule, level spec.Level) (*ReplayResult, error) {
	if level == 0 {
		level = spec.Should
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	w, err := newWorld(ctx, env)
	if err != nil {
		return nil, err
	}
	defer w.close()
	if len(s.Hosts) > len(w.hosts) {
		return nil, fmt.Errorf("the script uses %d tester hosts; the environment has %d", len(s.Hosts), len(w.hosts))
	}
	if rules == nil {
		rules = spec.Rules()
	}
	var kept []*spec.Rule
	for _, r := range rules {
		if r.AppliesTo(w.ce.Profile) && r.Level <= level {
			kept = append(kept, r)
		}
	}
	cfg := &runConfig{rules: kept, level: level, keepLog: true}
	c := &Case{}
	for _, x := range s.RPCs {
		c.RPCs = append(c.RPCs, RPC{IUTClient: x.IUTClient, Host: x.Host, Request: x.Request, Response: x.Response})
	}
	r := &run{ctx: ctx, w: w, cfg: cfg, c: c, d: newDecider(nil, nil, [numKinds]float64{}), p: &w.info.Params,
		live: map[rkey]*rpc{}, out: &outcome{}, feats: map[string]bool{}}
	r.seg = maxSegData(w.info)
	r.o = newOracle(ctx, w, kept, level)
	r.out.exercised = r.o.exercised
	sc := &scripted{s: s, tol: time.Microsecond}
	if !w.virtual {
		sc.tol = w.params.Slack + 2*w.params.Tick
		if st, err := w.ce.IUT.Stats(ctx); err == nil {
			r.stats0 = st
		}
	}
	r.script = sc
	if err := r.startScript(); err != nil {
		return nil, err
	}
	for !r.over {
		at, ok := r.q.next()
		if !ok {
			break
		}
		if _, err := w.clock.Wait(ctx, r.t0.Add(at), r.ready); err != nil {
			return nil, err
		}
		r.step()
		if r.scriptErr != nil {
			return nil, r.scriptErr
		}
	}
	r.finish()
	res := &ReplayResult{Failure: r.out.fail, Sent: r.out.sent, Events: r.out.events, Divergences: sc.diverg, Judged: w.params, Stalls: w.ce.Stalls}
	if now := paramsLine(&w.params); s.Params != "" && s.Params != now {
		res.ParamsDiffer = "the IUT's parameters differ from the script's (a --param given here, or an IUT whose own defaults differ): now " + now + "; found with " + s.Params
	}
	for _, e := range sc.exp {
		if !e.met {
			res.Divergences = append(res.Divergences, fmt.Sprintf("line %d: the IUT did not send %s rpc=%d by %.6fs", e.st.Line, e.st.Type, e.st.RPC, e.st.At.Seconds()))
		}
	}
	for _, x := range r.rpcs {
		want := sc.ending(x.n)
		switch {
		case want == "":
		case x.result == nil:
			res.Divergences = append(res.Divergences, fmt.Sprintf("rpc %d: the IUT's call did not end (the script says it %s)", x.n, want))
		case (x.result.Err == "") != (want == "completes"):
			res.Divergences = append(res.Divergences, fmt.Sprintf("rpc %d: the IUT's call %s (the script says it %s)", x.n, callText(*x.result), want))
		}
	}
	res.Reproduced = r.out.fail != nil && r.out.fail.Rule == s.Rule
	f := &Found{}
	if r.out.fail != nil {
		f.Failure = *r.out.fail
	}
	ss := &session{res: &Result{iutAddr: w.info.Addr}}
	for _, h := range w.hosts {
		ss.res.hostAddrs = append(ss.res.hostAddrs, h.addr)
	}
	res.Capture = writeCapture(ss, r.out, f)
	return res, nil
}

// ending returns how the script says rpc n's call ends ("" if it does not).
func (sc *scripted) ending(n int) string {
	for _, st := range sc.s.Steps {
		if st.RPC == n && (st.Verb == "completes" || st.Verb == "fails") {
			return st.Verb
		}
	}
	return ""
}

// startScript sets a replay up: hosts, the script's RPCs (tester clients
// with the script's ids), its steps on the timer queue.
func (r *run) startScript() error {
	sc := r.script
	r.t0 = r.w.clock.Now()
	for i, st := range r.w.hosts {
		r.hosts = append(r.hosts, &host{i: i, st: st, port: st.nextPort, cutoffsTick: -1})
	}
	for i, sx := range sc.s.RPCs {
		x := &rpc{n: i + 1, spec: r.c.RPCs[i], h: r.hosts[sx.Host], client: !sx.IUTClient}
		x.h.rpcs = append(x.h.rpcs, x)
		r.rpcs = append(r.rpcs, x)
		if x.client {
			x.id, x.myPort, x.iutPort, x.callID, x.state = sx.ID, sx.Port, serverPort, sx.ID, csActive
			req := make([]byte, sx.Request)
			agent.FillPayload(req, x.callID, uint32(sx.Response))
			x.out = newOutMsg(req, r.p.UnschedBytes)
			r.live[rkey{x.h.i, x.id, true}] = x
		} else {
			x.agentID = sx.CallID
		}
	}
	last := time.Duration(0)
	for _, st := range sc.s.Steps {
		last = max(last, st.At)
		switch {
		case st.Verb == "sends" && st.Who >= 0:
			r.at(st.At, func() { r.scriptSend(st) })
		case st.Verb == "sends":
			sc.exp = append(sc.exp, &expectation{st: st, deadline: st.At + sc.tol})
		case st.Verb == "calls":
			x := r.rpcs[st.RPC-1]
			r.at(st.At, func() { r.begin(x) })
		}
	}
	sc.end = last + r.c.tail(r.p.Tick)
	r.at(sc.end, func() { r.over = true })
	return nil
}

// scriptSend sends step st's packet once the IUT's earlier expected
// packets came or are overdue.
func (r *run) scriptSend(st Step) {
	for _, e := range r.script.exp {
		if e.st.Line > st.Line {
			break
		}
		if !e.met && r.now < e.deadline {
			r.at(e.deadline, func() { r.scriptSend(st) })
			return
		}
	}
	var x *rpc
	if st.RPC > 0 {
		x = r.rpcs[st.RPC-1]
	}
	h := r.hosts[st.Who]
	f, err := r.scriptPacket(st, x)
	if err != nil {
		r.scriptErr = fmt.Errorf("script line %d: %w", st.Line, err)
		r.over = true
		return
	}
	b, err := f.AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: h.st.addr, Dst: r.w.info.Addr})
	if err != nil {
		r.scriptErr = fmt.Errorf("script line %d: %w", st.Line, err)
		r.over = true
		return
	}
	r.deliver(x, h, st.Prio, b, Key{}, st.Deliberate)
}

// scriptPacket builds step st's packet of rpc x (nil: none).
func (r *run) scriptPacket(st Step, x *rpc) (wire.Fields, error) {
	kv := st.Fields
	var errs []string
	num := func(k string, def uint64) uint64 {
		v, ok := kv[k]
		if !ok {
			return def
		}
		n, err := fieldValue(k, v)
		if err != nil {
			errs = append(errs, err.Error())
		}
		return n
	}
	var c wire.CommonFields
	if x != nil {
		if !x.client && x.id == 0 {
			return nil, fmt.Errorf("rpc %d: the IUT has not sent a packet of its call yet, so its id is unknown", x.n)
		}
		c = commonOf(x)
	}
	c.Sport = uint16(num("sport", uint64(c.Sport)))
	c.Dport = uint16(num("dport", uint64(c.Dport)))
	c.SenderID = num("id", c.SenderID)
	var f wire.Fields
	switch st.Type {
	case wire.TypeData:
		if x == nil {
			return nil, fmt.Errorf("DATA needs rpc=N")
		}
		off, n := uint32(num("offset", 0)), uint32(num("length", 0))
		msg := r.scriptMessage(x)
		if uint64(off)+uint64(n) > uint64(len(msg)) || n == 0 {
			return nil, fmt.Errorf("DATA offset=%d length=%d outside rpc %d's %d-byte message", off, n, x.n, len(msg))
		}
		// Framed as the explorer frames it (wire.NewData); the script
		// gives the retransmit byte, which may be any value.
		retx := uint8(num("retransmit", 0))
		d := wire.NewData(c, uint32(num("message_length", uint64(len(msg)))), uint32(num("incoming", 0)),
			uint16(num("cutoff_version", 0)), off, msg[off:off+n], retx != 0)
		d.Retransmit = retx
		if a := kv["ack"]; a != "" {
			e, err := ackValue(a)
			if err != nil {
				errs = append(errs, err.Error())
			}
			d.Ack = e
		}
		f = d
	case wire.TypeGrant:
		f = &wire.GrantFields{Common: c, Offset: uint32(num("offset", 0)), Priority: uint8(num("priority", 0))}
	case wire.TypeResend:
		f = &wire.ResendFields{Common: c, Offset: uint32(num("offset", 0)), Length: uint32(num("length", 0)), Priority: uint8(num("priority", 0))}
	case wire.TypeBusy:
		f = &wire.BusyFields{Common: c}
	case wire.TypeRPCUnknown:
		f = &wire.RPCUnknownFields{Common: c}
	case wire.TypeNeedAck:
		f = &wire.NeedAckFields{Common: c}
	case wire.TypeCutoffs:
		cu := &wire.CutoffsFields{Common: c, CutoffVersion: uint16(num("cutoff_version", num("version", 0)))}
		parts := strings.Split(kv["cutoffs"], ",")
		if len(parts) != wire.NumCutoffs {
			errs = append(errs, "cutoffs="+kv["cutoffs"])
		} else {
			for i, p := range parts {
				v, err := strconv.ParseUint(p, 10, 32)
				if err != nil {
					errs = append(errs, "cutoffs="+kv["cutoffs"])
				}
				cu.UnschedCutoffs[i] = uint32(v)
			}
		}
		f = cu
	case wire.TypeAck:
		a := &wire.AckFields{Common: c}
		if v := kv["acks"]; v != "" {
			for _, e := range strings.Split(v, ",") {
				en, err := ackValue(e)
				if err != nil {
					errs = append(errs, err.Error())
				}
				a.Acks = append(a.Acks, en)
			}
		}
		f = a
	default:
		return nil, fmt.Errorf("a tester host does not send %s", st.Type)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("bad fields: %s", strings.Join(errs, ", "))
	}
	return f, nil
}

// scriptMessage is the message rpc x's tester host sends: a tester
// client's request, or a tester server's response to the IUT's call.
func (r *run) scriptMessage(x *rpc) []byte {
	if x.client {
		return x.out.payload
	}
	if x.out == nil {
		resp := make([]byte, x.spec.Response)
		agent.FillPayload(resp, x.agentID, uint32(x.spec.Response))
		x.out = newOutMsg(resp, r.p.UnschedBytes)
	}
	return x.out.payload
}

// expect matches a packet from the IUT against the script's expectations.
func (sc *scripted) expect(host int, x *rpc, p wire.Packet) {
	n := 0
	if x != nil {
		n = x.n
	}
	for _, e := range sc.exp {
		if e.met || e.st.Type != p.Type() || e.st.RPC != n {
			continue
		}
		if to := e.st.Fields["to"]; to != "" && to != hostName(host) {
			continue
		}
		if !fieldsMatch(e.st.Fields, p) {
			continue
		}
		e.met = true
		return
	}
}

// fieldsMatch compares the fields that identify an expected packet.
func fieldsMatch(kv map[string]string, p wire.Packet) bool {
	eq := func(k string, v uint64) bool {
		s, ok := kv[k]
		if !ok {
			return true
		}
		if s == "-1" {
			return v == 0xFFFFFFFF
		}
		return s == strconv.FormatUint(v, 10)
	}
	switch p.Type() {
	case wire.TypeData:
		d := p.Data()
		return eq("offset", uint64(d.Offset())) && eq("retransmit", uint64(d.Retransmit()))
	case wire.TypeGrant:
		return eq("offset", uint64(p.Grant().Offset()))
	case wire.TypeResend:
		rs := p.Resend()
		return eq("offset", uint64(rs.Offset())) && eq("length", uint64(rs.Length()))
	}
	return true
}
