package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Drop is one frame the switch dropped or altered, described by its Homa
// meaning so that two runs can be compared packet by packet. The
// user-space switch (backend switch) notes every frame it drops or alters;
// on the tc backend the drops are the frames of the as-sent view with no
// copy in the as-delivered view (priority rewrites are not listed there).
type Drop struct {
	// Time is when the switch dropped or sent the frame.
	Time time.Time `json:"time"`
	// Host is the host the frame was going to ("h2").
	Host string `json:"host"`
	// Dropped is true for a dropped frame, false for one forwarded
	// altered (delayed, held, duplicated, reprioritised, corrupted).
	Dropped bool `json:"dropped"`
	// Reason is the drop reason (netem.DropReason: plan, loss, buffer,
	// corrupt, mtu) or "altered".
	Reason string `json:"reason"`
	// Rules are the fault-plan rules that fired on the frame (indexes into
	// plan.rules), none for other reasons.
	Rules []int `json:"plan_rules,omitempty"`
	// Type is the Homa packet type ("GRANT"), "" for a frame that is not
	// Homa.
	Type string `json:"type,omitempty"`
	// RPC is the RPC's ordinal as the plan counts it (1 for the first
	// distinct client address and client id seen), computed from the
	// as-sent capture; ID the client's RPC id; Client the client's address.
	RPC    int        `json:"rpc,omitempty"`
	ID     uint64     `json:"id,omitempty"`
	Client netip.Addr `json:"client,omitzero"`
	// Message is "request" or "response" for DATA, BUSY, GRANT and RESEND
	// (the message the packet carries or controls).
	Message string `json:"message,omitempty"`
	// Offset is DATA's segment offset, GRANT's or RESEND's offset.
	Offset uint32 `json:"offset"`
	// Retransmit is DATA's retransmit flag.
	Retransmit bool `json:"retransmit,omitempty"`
	// Comment is the switch's note (backend switch) or why the frame is
	// counted as dropped (backend tc).
	Comment string `json:"comment"`
	// SentFrame is the frame's number in sent.pcapng (backend tc, whose
	// drops are the as-sent frames never delivered; 0 for the switch).
	SentFrame int `json:"sent_frame,omitempty"`
}

// Key is the drop's Homa meaning: what a replay must reproduce (plan
// rules, action, type, RPC, message, offset, retransmit flag). The RPC is
// its ordinal, as the switch's plan counts them, or on the tc backend
// (SentFrame set) the client's address and id, as its plan names them.
func (d Drop) Key() string { return d.key(true) }

// key is Key, with the offset of a GRANT or RESEND only if controlOffset.
func (d Drop) key(controlOffset bool) string {
	what := "altered"
	if d.Dropped {
		what = "dropped"
	}
	rules := make([]string, len(d.Rules))
	for i, r := range d.Rules {
		rules[i] = strconv.Itoa(r)
	}
	s := fmt.Sprintf("%s %s %s", d.Reason, what, d.Type)
	if len(rules) > 0 {
		s = fmt.Sprintf("plan rule %s %s %s", strings.Join(rules, ","), what, d.Type)
	}
	if d.Type == "" {
		return s + "non-Homa frame to " + d.Host
	}
	if d.SentFrame != 0 {
		// The tc backend's plan picks RPCs by id; which RPC a host saw
		// first depends on how the hosts' threads interleave.
		s += fmt.Sprintf(" of RPC %s id %d", d.Client, d.ID)
	} else {
		s += fmt.Sprintf(" of RPC %d", d.RPC)
	}
	if d.Message != "" {
		s += " " + d.Message
	}
	if d.Type == "DATA" || controlOffset && (d.Type == "GRANT" || d.Type == "RESEND") {
		s += fmt.Sprintf(" offset %d", d.Offset)
	}
	if d.Retransmit {
		s += " (retransmission)"
	}
	return s
}

// sameKey is Key without the offset of a GRANT or RESEND: what CompareDrops
// matches. A DATA packet is named by its offset, but a GRANT's or
// RESEND's offset follows arrival timing (a GRANT grants received +
// window, and the window depends on how many messages are active at that
// moment), so a replay that drops the same GRANT can see another offset.
func (d Drop) sameKey() string { return d.key(false) }

// planRulesRE finds the rules named in a switch note: "plan rule 0 (name)"
// or "plan rules 0, 2".
var planRulesRE = regexp.MustCompile(`plan rules? (\d+(?:, \d+)*)`)

// drops turns the switch's notes into Drops, writing them as pcapng to w
// (ports named after hosts). RPC ordinals come from ords.
func drops(notes []note, hosts int, ords map[wire.RPCKey]int, w io.Writer) ([]Drop, error) {
	ifaces := make([]pcap.Interface, hosts)
	for i := range ifaces {
		ifaces[i] = pcap.Interface{Name: fmt.Sprintf("h%d", i+1), Description: fmt.Sprintf("switch port to h%d (egress): frames dropped or altered", i+1)}
	}
	var buf bytes.Buffer
	pw, err := pcap.NewWriter(&buf, ifaces...)
	if err != nil {
		return nil, err
	}
	out := make([]Drop, len(notes))
	for i, n := range notes {
		if n.Port < 0 || n.Port >= hosts {
			return nil, fmt.Errorf("switch note on port %d of %d", n.Port, hosts)
		}
		if err := pw.WritePacket(n.Port, n.Time, n.Data, len(n.Data), n.Comment); err != nil {
			return nil, err
		}
		d := Drop{Time: n.Time, Host: hostName(n.Port), Comment: n.Comment, Reason: "altered"}
		if r, ok := strings.CutPrefix(n.Comment, "dropped: "); ok {
			d.Dropped = true
			d.Reason, _, _ = strings.Cut(r, " ")
		}
		if m := planRulesRE.FindStringSubmatch(n.Comment); m != nil {
			for _, s := range strings.Split(m[1], ", ") {
				r, _ := strconv.Atoi(s)
				d.Rules = append(d.Rules, r)
			}
		}
		out[i] = d
	}
	if err := pw.Flush(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if len(notes) == 0 {
		return out, nil
	}
	r, err := pcap.NewReader(bytes.NewReader(data), pcap.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if f.Err != nil || f.Number < 1 || f.Number > len(out) {
			continue
		}
		describe(&out[f.Number-1], f.Src, f.Dst, f.Packet, ords)
	}
	return out, nil
}

// describe fills in d's Homa fields from packet p sent from src to dst.
func describe(d *Drop, src, dst netip.Addr, p wire.Packet, ords map[wire.RPCKey]int) {
	typ := p.Type()
	fromClient := wire.RoleOf(p.SenderID()) == wire.RoleClient
	d.Type = typ.String()
	d.ID = wire.ClientID(p.SenderID())
	k := wire.KeyOf(src, dst, p.SenderID())
	d.Client = k.Client
	d.RPC = ords[k]
	switch typ {
	case wire.TypeData:
		d.Offset, d.Retransmit = p.Data().Offset(), p.Data().Retransmit() != 0
		d.Message = message(fromClient)
	case wire.TypeBusy:
		d.Message = message(fromClient)
	case wire.TypeGrant:
		d.Offset, d.Message = p.Grant().Offset(), message(!fromClient)
	case wire.TypeResend:
		d.Offset, d.Message = p.Resend().Offset(), message(!fromClient)
	}
}

func message(request bool) string {
	if request {
		return "request"
	}
	return "response"
}

// addOrdinal numbers e's RPC in m from 1 by first appearance (ordinalsOf)
// if it is new there.
func addOrdinal(m map[wire.RPCKey]int, e *spec.Event) {
	if e.Err != nil {
		return
	}
	k := wire.KeyOf(e.Src, e.Dst, e.Packet.SenderID())
	if m[k] == 0 {
		m[k] = len(m) + 1
	}
}

// ordinalsOf numbers the RPCs of the as-sent capture at path (in the
// order the hosts sent them, which is the order the switch received them)
// from 1 by first appearance, as netem's plan does. The capture is read
// as a stream, its events not kept; it stops with ctx's error.
func ordinalsOf(ctx context.Context, path string, version wire.Version) (map[wire.RPCKey]int, error) {
	s, err := pcap.OpenEventStream(path, pcap.ReaderOptions{Version: version})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	m := map[wire.RPCKey]int{}
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e, err := s.Next()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		addOrdinal(m, e)
	}
}

// CompareDrops compares the fault-plan entries (Drops with Rules) of two
// runs by Homa meaning (Drop.Key without a GRANT's or RESEND's offset,
// which follows arrival timing), ignoring order and time. It returns
// nil when they are the same, else one line per difference ("only in the
// original: ...", "only in the replay: ...").
func CompareDrops(original, replay []Drop) []string {
	count := func(ds []Drop) map[string]int {
		m := map[string]int{}
		for _, d := range ds {
			if len(d.Rules) > 0 {
				m[d.sameKey()]++
			}
		}
		return m
	}
	a, b := count(original), count(replay)
	var diff []string
	for k, n := range a {
		for range n - b[k] {
			diff = append(diff, "only in the original: "+k)
		}
	}
	for k, n := range b {
		for range n - a[k] {
			diff = append(diff, "only in the replay: "+k)
		}
	}
	sort.Strings(diff)
	return diff
}
