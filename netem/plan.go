package netem

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/homatest/homatest/spec/wire"
)

// Plan is a fault plan: rules that pick packets by their Homa meaning and
// act on them. The switch evaluates every rule for every frame, in the order
// frames enter the switch, so the same frame sequence gives the same hits.
// Every rule whose Match selects a frame fires; the actions of all firing
// rules are combined (drop wins; delays add; duplicates add; the largest
// hold counts; the last priority rewrite counts). Each firing is recorded as
// a Hit.
//
// The tc backend (ApplyTCPlan) runs the subset nftables can express on one
// interface's egress: Homa frames of IP protocol 146 only, no RPC ordinal
// or in_port, actions drop and priority; DetectPlan lists what a plan
// needs beyond that.
//
// YAML form (a scenario file's "plan:" section):
//
//	rules:
//	  - name: drop the 2nd GRANT of the first RPC
//	    match: {type: GRANT, rpc: 1, nth: 2}
//	    action: drop
//	  - match: {type: DATA, message: request, offset: [0, 10000], retransmit: false}
//	    action: {delay: 5ms}
//	  - match: {type: DATA, from: 198.18.0.1, nth: 3, count: 2}
//	    action: {hold: 4}
//	  - match: {type: RESEND}
//	    action: {priority: 0}
type Plan struct {
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Rule is one fault-plan rule: Name (free text for reports), Match and Action.
type Rule struct {
	Name   string `yaml:"name,omitempty" json:"name,omitempty"`
	Match  Match  `yaml:"match" json:"match"`
	Action Action `yaml:"action" json:"action"`

	line int // YAML line of the rule, for errors
}

// Match selects frames. Empty fields match anything; all set fields must
// match. Only Homa frames (IP protocol 146 or 253) match a rule that sets any
// Homa field (Type, Direction, SrcPort, DstPort, RPC, ID, Message, Offset,
// Retransmit); From, To, InPort and OutPort also match other IP frames.
type Match struct {
	// Type is a Homa packet type name as HomaModule spells it: DATA,
	// GRANT, RESEND, RPC_UNKNOWN, BUSY, CUTOFFS, FREEZE, NEED_ACK, ACK.
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Direction is "to-server" (sent by the RPC's client: sender_id even,
	// HomaModule homa_local_id) or "to-client".
	Direction string `yaml:"direction,omitempty" json:"direction,omitempty"`
	// From and To are the IP source and destination host addresses.
	From string `yaml:"from,omitempty" json:"from,omitempty"`
	To   string `yaml:"to,omitempty" json:"to,omitempty"`
	// InPort is the switch port the frame entered by; OutPort the port a
	// unicast frame leaves by (a flooded frame never matches OutPort).
	InPort  string `yaml:"in_port,omitempty" json:"in_port,omitempty"`
	OutPort string `yaml:"out_port,omitempty" json:"out_port,omitempty"`
	// SrcPort and DstPort are the Homa header's sport and dport.
	SrcPort uint16 `yaml:"src_port,omitempty" json:"src_port,omitempty"`
	DstPort uint16 `yaml:"dst_port,omitempty" json:"dst_port,omitempty"`
	// RPC is the RPC ordinal: 1 for the first distinct RPC the switch saw
	// (counted by client address and client id, wire.ClientID), 2 for the
	// second, and so on.
	RPC int `yaml:"rpc,omitempty" json:"rpc,omitempty"`
	// ID is an explicit RPC id: the client's id (even), whichever side sent.
	ID uint64 `yaml:"id,omitempty" json:"id,omitempty"`
	// Message is "request" or "response": the message a packet carries
	// (DATA, BUSY: the sender's message) or controls (GRANT, RESEND: the
	// receiver's message). Other types never match Message.
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	// Offset [from, to) in message bytes: DATA matches when its segment
	// offset is in the range, GRANT by its offset, RESEND by its offset.
	Offset []uint32 `yaml:"offset,omitempty,flow" json:"offset,omitempty"`
	// Retransmit: true matches only DATA with the retransmit flag set,
	// false only DATA without it.
	Retransmit *bool `yaml:"retransmit,omitempty" json:"retransmit,omitempty"`
	// Nth (1-based) makes the rule fire only on the Nth frame that matches
	// the fields above, and Count on Count frames starting there (default
	// 1). With Nth 0 the rule fires on every match (Count then limits the
	// total; 0 = no limit).
	Nth   int `yaml:"nth,omitempty" json:"nth,omitempty"`
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
}

// Action says what a firing rule does. In YAML it is a map, or one of the
// scalars "drop" and "duplicate" (one extra copy).
type Action struct {
	// Drop the frame (reason DropPlan).
	Drop bool `yaml:"drop,omitempty" json:"drop,omitempty"`
	// Delay the frame by this much on top of the link delay.
	Delay time.Duration `yaml:"delay,omitempty" json:"delay_ns,omitempty"`
	// Duplicate sends this many extra copies.
	Duplicate int `yaml:"duplicate,omitempty" json:"duplicate,omitempty"`
	// Hold keeps the frame back until this many later frames have left the
	// same egress port (or HoldMax passed, default DefaultMaxHold).
	Hold    int           `yaml:"hold,omitempty" json:"hold,omitempty"`
	HoldMax time.Duration `yaml:"hold_max,omitempty" json:"hold_max_ns,omitempty"`
	// Priority rewrites the frame's Homa priority (IP precedence) to 0..7
	// before it is queued.
	Priority *int `yaml:"priority,omitempty" json:"priority,omitempty"`
}

// Hit records one firing of a plan rule.
type Hit struct {
	// Rule is the rule's index in Plan.Rules (0-based); Name its name.
	Rule int    `json:"rule"`
	Name string `json:"name,omitempty"`
	// Frame is the switch's frame number (1-based, in order of arrival on
	// any port).
	Frame uint64 `json:"frame"`
	// Action is Action.String of the rule.
	Action string `json:"action"`
}

// ParsePlan decodes a plan from YAML and validates it. Unknown fields and bad
// values give a one-line error with the YAML line.
func ParsePlan(data []byte) (*Plan, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("netem: plan: %s", strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", "; "))
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// UnmarshalYAML decodes a rule and remembers its line for Validate.
func (r *Rule) UnmarshalYAML(n *yaml.Node) error {
	if err := strictKeys(n, reflect.TypeFor[Rule]()); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "match" {
			m := n.Content[i+1]
			if err := strictKeys(m, reflect.TypeFor[Match]()); err != nil {
				return err
			}
			// Decoded, 0 is the same as no rpc or nth: a rule that
			// matches every RPC or frame. Said as 0, it is a mistake.
			for j := 0; j+1 < len(m.Content); j += 2 {
				k, v := m.Content[j], m.Content[j+1]
				var x int
				if (k.Value == "rpc" || k.Value == "nth") && v.Kind == yaml.ScalarNode && v.Decode(&x) == nil && x == 0 {
					return fmt.Errorf("line %d: %s 0: rpc and nth count from 1 (rpc 1 is the first RPC the switch sees, nth 1 the first matching frame); leave %s out to match every one", v.Line, k.Value, k.Value)
				}
			}
		}
	}
	type plain Rule
	if err := n.Decode((*plain)(r)); err != nil {
		return err
	}
	r.line = n.Line
	return nil
}

// UnmarshalYAML accepts the scalars "drop" and "duplicate" or a map.
func (a *Action) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "drop":
			*a = Action{Drop: true}
		case "duplicate":
			*a = Action{Duplicate: 1}
		default:
			return fmt.Errorf("line %d: action %q: want drop, duplicate or a map {drop, delay, duplicate, hold, priority}", n.Line, n.Value)
		}
		return nil
	}
	if err := strictKeys(n, reflect.TypeFor[Action]()); err != nil {
		return err
	}
	type plain Action
	return n.Decode((*plain)(a))
}

// strictKeys checks that every key of mapping node n is a yaml tag of
// struct type t (yaml.v3's KnownFields does not reach into custom
// unmarshalers).
func strictKeys(n *yaml.Node, t reflect.Type) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var known []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			known = append(known, name)
		}
	}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: unknown field %q in %s: want one of %s", k.Line, k.Value, strings.ToLower(t.Name()), strings.Join(known, ", "))
		}
	}
	return nil
}

// String describes the action ("drop", "delay 5ms", "duplicate 1",
// "hold 4", "priority 7", combined with "+").
func (a Action) String() string {
	var s []string
	if a.Drop {
		s = append(s, "drop")
	}
	if a.Delay > 0 {
		s = append(s, "delay "+a.Delay.String())
	}
	if a.Duplicate > 0 {
		s = append(s, fmt.Sprintf("duplicate %d", a.Duplicate))
	}
	if a.Hold > 0 {
		s = append(s, fmt.Sprintf("hold %d", a.Hold))
	}
	if a.Priority != nil {
		s = append(s, fmt.Sprintf("priority %d", *a.Priority))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

// Validate checks every rule and returns the first problem as a one-line
// error naming the rule (index, name, YAML line when parsed) and the field.
func (p *Plan) Validate() error {
	for i := range p.Rules {
		if _, err := p.Rules[i].compile(); err != nil {
			r := &p.Rules[i]
			where := fmt.Sprintf("rule %d", i)
			if r.Name != "" {
				where += fmt.Sprintf(" (%s)", r.Name)
			}
			if r.line > 0 {
				where += fmt.Sprintf(" at line %d", r.line)
			}
			return fmt.Errorf("netem: plan %s: %w", where, err)
		}
	}
	return nil
}

// compiledRule is a Rule with its strings resolved.
type compiledRule struct {
	Rule
	typ        wire.PacketType
	dir        int // 0 any, 1 to-server, 2 to-client
	from, to   netip.Addr
	msg        int // 0 any, 1 request, 2 response
	needsHoma  bool
	seen, done int // matches seen, firings done
}

func (r *Rule) compile() (*compiledRule, error) {
	c := &compiledRule{Rule: *r}
	m := &r.Match
	var err error
	if m.Type != "" {
		if c.typ, err = wire.ParsePacketType(m.Type); err != nil {
			return nil, fmt.Errorf("match.type %q: want DATA, GRANT, RESEND, RPC_UNKNOWN, BUSY, CUTOFFS, FREEZE, NEED_ACK or ACK", m.Type)
		}
	}
	switch m.Direction {
	case "":
	case "to-server", "client-to-server":
		c.dir = 1
	case "to-client", "server-to-client":
		c.dir = 2
	default:
		return nil, fmt.Errorf("match.direction %q: want to-server or to-client", m.Direction)
	}
	switch m.Message {
	case "":
	case "request":
		c.msg = 1
	case "response":
		c.msg = 2
	default:
		return nil, fmt.Errorf("match.message %q: want request or response", m.Message)
	}
	for _, a := range []struct {
		name string
		s    string
		dst  *netip.Addr
	}{{"from", m.From, &c.from}, {"to", m.To, &c.to}} {
		if a.s == "" {
			continue
		}
		if *a.dst, err = netip.ParseAddr(a.s); err != nil {
			return nil, fmt.Errorf("match.%s %q: want an IP address such as 198.18.0.1 or fd00::1", a.name, a.s)
		}
	}
	if len(m.Offset) != 0 && (len(m.Offset) != 2 || m.Offset[0] >= m.Offset[1]) {
		return nil, fmt.Errorf("match.offset %v: want [from, to) in bytes with from < to, e.g. [0, 1400]", m.Offset)
	}
	if m.RPC < 0 || m.Nth < 0 || m.Count < 0 {
		return nil, errors.New("match.rpc, match.nth and match.count are counts: want >= 0 (rpc and nth are 1-based)")
	}
	if m.ID%2 != 0 {
		return nil, fmt.Errorf("match.id %d: want the client's (even) RPC id", m.ID)
	}
	c.needsHoma = m.Type != "" || c.dir != 0 || m.SrcPort != 0 || m.DstPort != 0 || m.RPC != 0 ||
		m.ID != 0 || c.msg != 0 || len(m.Offset) != 0 || m.Retransmit != nil
	a := &r.Action
	switch {
	case a.Delay < 0:
		return nil, fmt.Errorf("action.delay %v: want >= 0", a.Delay)
	case a.Duplicate < 0 || a.Hold < 0 || a.HoldMax < 0:
		return nil, errors.New("action.duplicate, action.hold and action.hold_max: want >= 0")
	case a.Priority != nil && (*a.Priority < 0 || *a.Priority > 7):
		return nil, fmt.Errorf("action.priority %d: want a Homa priority 0..7", *a.Priority)
	case !a.Drop && a.Delay == 0 && a.Duplicate == 0 && a.Hold == 0 && a.Priority == nil:
		return nil, errors.New("action is empty: want drop, delay, duplicate, hold or priority")
	case a.Drop && (a.Delay != 0 || a.Duplicate != 0 || a.Hold != 0 || a.Priority != nil):
		return nil, errors.New("action drop cannot be combined with other actions")
	}
	return c, nil
}

// matches reports whether the rule's fields (not Nth/Count) select the frame.
func (c *compiledRule) matches(fi *frameInfo, rpcOrdinal int, in, out string) bool {
	m := &c.Match
	if c.needsHoma && !fi.homa {
		return false
	}
	if (c.from.IsValid() && fi.src != c.from) || (c.to.IsValid() && fi.dst != c.to) ||
		(m.InPort != "" && m.InPort != in) || (m.OutPort != "" && m.OutPort != out) {
		return false
	}
	if !fi.homa {
		return true
	}
	p := fi.pkt
	typ, fromClient := p.Type(), wire.RoleOf(p.SenderID()) == wire.RoleClient
	switch {
	case m.Type != "" && typ != c.typ,
		c.dir == 1 && !fromClient, c.dir == 2 && fromClient,
		m.SrcPort != 0 && p.Common().Sport() != m.SrcPort,
		m.DstPort != 0 && p.Common().Dport() != m.DstPort,
		m.RPC != 0 && rpcOrdinal != m.RPC,
		m.ID != 0 && wire.ClientID(p.SenderID()) != m.ID:
		return false
	}
	if c.msg != 0 {
		var request bool
		switch typ {
		case wire.TypeData, wire.TypeBusy:
			request = fromClient
		case wire.TypeGrant, wire.TypeResend:
			request = !fromClient
		default:
			return false
		}
		if request != (c.msg == 1) {
			return false
		}
	}
	if m.Retransmit != nil && (typ != wire.TypeData || (p.Data().Retransmit() != 0) != *m.Retransmit) {
		return false
	}
	if len(m.Offset) == 2 {
		var off uint32
		switch typ {
		case wire.TypeData:
			off = p.Data().Offset()
		case wire.TypeGrant:
			off = p.Grant().Offset()
		case wire.TypeResend:
			off = p.Resend().Offset()
		default:
			return false
		}
		if off < m.Offset[0] || off >= m.Offset[1] {
			return false
		}
	}
	return true
}

// fire advances the rule's match counter and reports whether it acts on
// this match (Nth / Count selection).
func (c *compiledRule) fire() bool {
	c.seen++
	m := &c.Match
	count := m.Count
	if m.Nth > 0 {
		count = max(count, 1)
		if c.seen < m.Nth {
			return false
		}
	}
	if count > 0 && c.done >= count {
		return false
	}
	c.done++
	return true
}

// planRunner is the state of one plan during a run: per-rule counters, RPC
// ordinals and the hits.
type planRunner struct {
	rules []*compiledRule
	rpcs  map[wire.RPCKey]int
	hits  []Hit
}

func newPlanRunner(p *Plan) (*planRunner, error) {
	pr := &planRunner{rpcs: make(map[wire.RPCKey]int)}
	if p == nil {
		return pr, nil
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for i := range p.Rules {
		c, _ := p.Rules[i].compile()
		pr.rules = append(pr.rules, c)
	}
	return pr, nil
}

// apply evaluates every rule for frame number frame and returns the
// combined action and whether any rule fired.
func (pr *planRunner) apply(frame uint64, fi *frameInfo, in, out string) (Action, bool) {
	if len(pr.rules) == 0 {
		return Action{}, false
	}
	ord := 0
	if fi.homa {
		k := wire.KeyOf(fi.src, fi.dst, fi.pkt.SenderID())
		if ord = pr.rpcs[k]; ord == 0 {
			ord = len(pr.rpcs) + 1
			pr.rpcs[k] = ord
		}
	}
	var act Action
	fired := false
	for i, r := range pr.rules {
		if !r.matches(fi, ord, in, out) || !r.fire() {
			continue
		}
		fired = true
		a := r.Action
		pr.hits = append(pr.hits, Hit{Rule: i, Name: r.Name, Frame: frame, Action: a.String()})
		act.Drop = act.Drop || a.Drop
		act.Delay += a.Delay
		act.Duplicate += a.Duplicate
		if a.Hold > act.Hold {
			act.Hold, act.HoldMax = a.Hold, a.HoldMax
		}
		if a.Priority != nil {
			act.Priority = a.Priority
		}
	}
	return act, fired
}

// lastRules names the rules that fired on frame ("rule 0 (name)",
// "rules 0, 2"), for drop reasons and record comments.
func (pr *planRunner) lastRules(frame uint64) string {
	var s []string
	for i := len(pr.hits) - 1; i >= 0 && pr.hits[i].Frame == frame; i-- {
		h := pr.hits[i]
		n := fmt.Sprint(h.Rule)
		if h.Name != "" {
			n += " (" + h.Name + ")"
		}
		s = append([]string{n}, s...)
	}
	if len(s) == 1 {
		return "rule " + s[0]
	}
	return "rules " + strings.Join(s, ", ")
}
