package netem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

// Skb mark bits the plan chain uses as scratch between its rules (see
// nftPlanRules): a frame that carries them from elsewhere is treated as
// marked by the plan.
const (
	planMarkDrop      = 1 << 31    // a rule with action drop fired
	planMarkPrio      = 1 << 30    // a rule with action priority fired
	planMarkPrioShift = 27         // the priority, 3 bits
	planMarkAll       = 0xf8000000 // every bit above
)

// planChain is the name of dev's plan chain in table nftTable.
func planChain(dev string) string { return "plan_" + dev }

// nftPlanRules expresses plan p as nftables rules for the egress hook of
// interface dev, or returns one line per feature nftables cannot express
// (each naming the rule and the field, ending "use --backend switch").
//
// Each plan rule becomes one nft rule in plan order: its matches on fixed
// offsets of the Homa header (IP protocol 146, current wire format,
// wire.Layout: type at 11, sender_id at 20, DATA retransmit at 48, DATA's
// offset as common.sequence at 4, GRANT and RESEND offset at 28), then for Nth/Count a
// "numgen inc" (a per-rule counter of the frames that reached it, that is
// that matched: 0 for the first) compared with [Nth-1, Nth-1+Count), then
// a counter (the rule's hits) and a mark: drop sets planMarkDrop, priority
// p sets planMarkPrio and p. No plan rule ends evaluation, so every rule's
// counter sees every frame, as in the switch. After them one rule drops
// marked frames (drop wins), one rule per rewritten priority and address
// family writes the IP precedence (IPv4 TOS with the header checksum
// fixed, IPv6 traffic class) and one rule clears the mark bits. The egress
// hook runs before the qdisc, so a rewritten priority picks the HTB class.
func nftPlanRules(p *Plan, dev string) ([][]expr.Any, []string, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	var rules [][]expr.Any
	var missing []string
	prios := map[uint8]bool{}
	anyDrop := false
	for i := range p.Rules {
		r := &p.Rules[i]
		e, m := nftRuleExprs(r, dev)
		where := fmt.Sprintf("plan rule %d", i)
		if r.Name != "" {
			where += " (" + r.Name + ")"
		}
		for _, l := range m {
			missing = append(missing, where+": "+l+"; use --backend switch")
		}
		if r.Action.Drop {
			anyDrop = true
		}
		if r.Action.Priority != nil {
			prios[uint8(*r.Action.Priority)] = true
		}
		rules = append(rules, e)
	}
	if len(missing) > 0 {
		return nil, missing, nil
	}
	if anyDrop {
		rules = append(rules, append(markIs(planMarkDrop, planMarkDrop), &expr.Verdict{Kind: expr.VerdictDrop}))
	}
	for pr := range uint8(MaxPriorities) {
		if !prios[pr] {
			continue
		}
		sel := markIs(planMarkPrio|7<<planMarkPrioShift, planMarkPrio|uint32(pr)<<planMarkPrioShift)
		// IPv4: TOS is byte 1; written as the 16-bit word 0..1 so the
		// header checksum (offset 10) can be updated incrementally.
		rules = append(rules, append(append(sel[:len(sel):len(sel)], ethertypeIs(unix.ETH_P_IP)...),
			rewriteNH([]byte{0xff, 0x1f}, []byte{0, pr << 5}, expr.CsumTypeInet, 10)...))
		// IPv6: the traffic class's top 3 bits are bits 3..1 of byte 0.
		rules = append(rules, append(append(sel[:len(sel):len(sel)], ethertypeIs(unix.ETH_P_IPV6)...),
			rewriteNH([]byte{0xf1, 0xff}, []byte{pr << 1, 0}, expr.CsumTypeNone, 0)...))
	}
	if len(prios) > 0 {
		rules = append(rules, setMark(planMarkAll, 0))
	}
	return rules, nil, nil
}

// nftRuleExprs translates one plan rule, or says what it cannot express.
func nftRuleExprs(r *Rule, dev string) ([]expr.Any, []string) {
	c, _ := r.compile() // validated by the caller
	m := &r.Match
	var e []expr.Any
	var missing []string
	no := func(field, why string) { missing = append(missing, field+": "+why) }
	from, to := c.from, c.to
	if from.IsValid() && to.IsValid() && from.Is4() != to.Is4() {
		no("match.from/to", "addresses of different families never match")
	}
	if from.IsValid() || to.IsValid() {
		// IPv4 source and destination at 12 and 16, IPv6 at 8 and 24.
		et, srcOff, dstOff := uint16(unix.ETH_P_IP), uint32(12), uint32(16)
		if from.Is6() || to.Is6() {
			et, srcOff, dstOff = unix.ETH_P_IPV6, 8, 24
		}
		e = append(e, ethertypeIs(et)...)
		if from.IsValid() {
			e = append(e, loadEq(expr.PayloadBaseNetworkHeader, srcOff, from.AsSlice())...)
		}
		if to.IsValid() {
			e = append(e, loadEq(expr.PayloadBaseNetworkHeader, dstOff, to.AsSlice())...)
		}
	}
	if m.InPort != "" {
		no("match.in_port", "the egress hook does not know the port a frame entered by")
	}
	if m.OutPort != "" && m.OutPort != dev {
		no("match.out_port", fmt.Sprintf("%q is not %s, the interface the plan is applied to", m.OutPort, dev))
	}
	if m.RPC != 0 {
		no("match.rpc", "nftables cannot number RPCs in the order first seen (use match.id with the client's RPC id)")
	}
	if c.msg != 0 && m.Type == "" {
		no("match.message", "needs match.type (DATA, BUSY, GRANT or RESEND) to know which side sends the message")
	}
	if len(m.Offset) == 2 && homaOffsetAt(c.typ, m.Type) == 0 {
		no("match.offset", "needs match.type DATA, GRANT or RESEND (the offset field's position depends on the type)")
	}
	if m.Retransmit != nil && m.Type != "" && c.typ != wire.TypeData {
		no("match.retransmit", "only DATA has a retransmit flag; this rule never matches")
	}
	a := &r.Action
	if a.Delay > 0 {
		no("action.delay", "nftables cannot delay single packets")
	}
	if a.Duplicate > 0 {
		no("action.duplicate", "the tc backend does not duplicate single packets")
	}
	if a.Hold > 0 {
		no("action.hold", "nftables cannot hold packets back")
	}
	if len(missing) > 0 {
		return nil, missing
	}
	if c.needsHoma {
		e = append(e, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{wire.IPProtoHoma}})
	}
	typ := uint8(c.typ)
	if m.Retransmit != nil {
		typ = uint8(wire.TypeData)
	}
	if m.Type != "" || m.Retransmit != nil {
		e = append(e, loadEq(expr.PayloadBaseTransportHeader, homaTypeOff, []byte{typ})...)
	}
	// sender_id's low bit is 0 when the RPC's client sent the packet
	// (HomaModule homa_local_id).
	fromClient := func(yes bool) {
		v := byte(1)
		if yes {
			v = 0
		}
		e = append(e, loadMaskEq(homaSenderIDOff+7, []byte{1}, []byte{v})...)
	}
	if c.dir != 0 {
		fromClient(c.dir == 1)
	}
	if c.msg != 0 {
		switch c.typ {
		case wire.TypeData, wire.TypeBusy:
			fromClient(c.msg == 1)
		default: // GRANT, RESEND: sent by the message's receiver
			fromClient(c.msg != 1)
		}
	}
	if m.SrcPort != 0 {
		e = append(e, loadEq(expr.PayloadBaseTransportHeader, 0, binary.BigEndian.AppendUint16(nil, m.SrcPort))...)
	}
	if m.DstPort != 0 {
		e = append(e, loadEq(expr.PayloadBaseTransportHeader, 2, binary.BigEndian.AppendUint16(nil, m.DstPort))...)
	}
	if m.ID != 0 {
		e = append(e, loadMaskEq(homaSenderIDOff, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, binary.BigEndian.AppendUint64(nil, m.ID))...)
	}
	if m.Retransmit != nil {
		op := expr.CmpOpEq
		if *m.Retransmit {
			op = expr.CmpOpNeq
		}
		e = append(e, payload(expr.PayloadBaseTransportHeader, homaRetransmitOff, 1),
			&expr.Cmp{Op: op, Register: 1, Data: []byte{0}})
	}
	if len(m.Offset) == 2 {
		off := homaOffsetAt(c.typ, m.Type)
		e = append(e, payload(expr.PayloadBaseTransportHeader, off, 4))
		if m.Offset[0] > 0 {
			e = append(e, &expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: binary.BigEndian.AppendUint32(nil, m.Offset[0])})
		}
		e = append(e, &expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binary.BigEndian.AppendUint32(nil, m.Offset[1])})
	}
	if m.Nth > 0 || m.Count > 0 {
		lo, n := uint32(0), uint32(m.Count)
		if m.Nth > 0 {
			lo, n = uint32(m.Nth-1), uint32(max(m.Count, 1))
		}
		// numgen inc counts the frames that reach it (0 for the first),
		// wrapping after 2^32-1.
		e = append(e, &expr.Numgen{Register: 1, Modulus: math.MaxUint32, Type: unix.NFT_NG_INCREMENTAL},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4})
		if lo > 0 {
			e = append(e, &expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: binary.BigEndian.AppendUint32(nil, lo)})
		}
		e = append(e, &expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binary.BigEndian.AppendUint32(nil, lo+n)})
	}
	e = append(e, &expr.Counter{})
	if a.Drop {
		e = append(e, setMark(planMarkDrop, planMarkDrop)...)
	} else {
		e = append(e, setMark(planMarkPrio|7<<planMarkPrioShift, planMarkPrio|uint32(*a.Priority)<<planMarkPrioShift)...)
	}
	return e, nil
}

// Homa header offsets (current wire format, wire.Layout; HomaModule
// homa_wire.h homa_common_hdr, homa_data_hdr, homa_grant_hdr,
// homa_resend_hdr).
const (
	homaTypeOff       = 11
	homaSenderIDOff   = 20
	homaRetransmitOff = 48
)

// homaOffsetAt returns the transport-header offset of the message offset
// a packet of type t carries (GRANT and RESEND offset), or 0 when t has
// none or typeName is empty. For DATA it is common.sequence: a fresh
// single-segment packet carries its offset there with seg.offset
// 0xFFFFFFFF (wire.SegOffsetInSequence; HomaModule homa_gro_receive
// rewrites it), and senders set sequence to the offset in
// retransmissions too, whereas one nftables rule cannot pick seg.offset or
// sequence by the sentinel.
func homaOffsetAt(t wire.PacketType, typeName string) uint32 {
	if typeName == "" {
		return 0
	}
	want := map[wire.PacketType]string{wire.TypeData: "sequence", wire.TypeGrant: "offset", wire.TypeResend: "offset"}[t]
	for _, f := range wire.Layout(t, wire.VersionCurrent) {
		if want != "" && f.Name == want && f.Size == 4 {
			return uint32(f.Off)
		}
	}
	return 0
}

func payload(base expr.PayloadBase, off, n uint32) *expr.Payload {
	return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: base, Offset: off, Len: n}
}

// loadEq loads len(v) bytes at off from base and compares them with v.
func loadEq(base expr.PayloadBase, off uint32, v []byte) []expr.Any {
	return []expr.Any{payload(base, off, uint32(len(v))), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: v}}
}

// loadMaskEq loads len(v) bytes of the Homa header at off and compares
// them under mask with v.
func loadMaskEq(off uint32, mask, v []byte) []expr.Any {
	n := uint32(len(v))
	return []expr.Any{payload(expr.PayloadBaseTransportHeader, off, n),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: v}}
}

// ethertypeIs matches the frame's link-layer protocol (skb->protocol).
func ethertypeIs(et uint16) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyPROTOCOL, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, et)}}
}

// markIs matches skb mark & mask == v (the mark is in host byte order).
func markIs(mask, v uint32) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binary.NativeEndian.AppendUint32(nil, mask), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, v)}}
}

// setMark sets skb mark = mark &^ clear | v.
func setMark(clear, v uint32) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ^clear), Xor: binary.NativeEndian.AppendUint32(nil, v)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1}}
}

// rewriteNH rewrites the first two bytes of the network header to
// (b & mask) ^ xor, updating the checksum at csumOff when csum is inet.
func rewriteNH(mask, xor []byte, csum expr.PayloadCsumType, csumOff uint32) []expr.Any {
	return []expr.Any{payload(expr.PayloadBaseNetworkHeader, 0, 2),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: mask, Xor: xor},
		&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader,
			Offset: 0, Len: 2, CsumType: csum, CsumOffset: csumOff}}
}

// ApplyTCPlan installs fault plan p on the egress of dev in ns as an
// nftables chain (netdev family, egress hook, table homatest_netem, chain
// "plan_" + dev; see nftPlanRules), replacing an earlier plan on dev. It
// changes nothing and returns *UnsupportedError, one line per feature,
// when the plan asks for something nftables cannot express, and an error
// naming the kernel options when the kernel rejects the chain. The rule
// counters restart at zero.
func ApplyTCPlan(ns netns.NsHandle, dev string, p *Plan) error {
	rules, missing, err := nftPlanRules(p, dev)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &UnsupportedError{Lines: missing}
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("netem: nftables: %w", err)
	}
	if err := resetNFTChain(ns, planChain(dev)); err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: nftTable})
	pol := nftables.ChainPolicyAccept
	// Before the loss chain (ChainPriorityFilter): a frame the plan drops
	// is not counted by random loss.
	prio := nftables.ChainPriority(*nftables.ChainPriorityFilter - 1)
	ch := c.AddChain(&nftables.Chain{Name: planChain(dev), Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookEgress, Priority: &prio, Device: dev, Policy: &pol})
	for i, e := range rules {
		r := &nftables.Rule{Table: t, Chain: ch, Exprs: e}
		if i < len(p.Rules) {
			r.UserData = userdata.AppendString(nil, userdata.TypeComment, planRuleComment(p, i))
		}
		c.AddRule(r)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netem: %s: nftables plan chain: %w (needs CONFIG_NF_TABLES_NETDEV, CONFIG_NETFILTER_EGRESS, CONFIG_NFT_NUMGEN)", dev, err)
	}
	return nil
}

// planRuleComment is the nft comment of plan rule i: "rule 3" or "rule 3:
// name".
func planRuleComment(p *Plan, i int) string {
	s := fmt.Sprintf("rule %d", i)
	if n := p.Rules[i].Name; n != "" {
		s += ": " + strings.ReplaceAll(n, `"`, "'")
	}
	return s
}

// DetectPlan returns, one line per feature, what the tc backend cannot do
// of plan p applied to interface dev on the running kernel (empty when
// nftables can express all of it), before anything is changed.
func DetectPlan(p *Plan, dev string) ([]string, error) {
	k, err := ProbeKernel()
	if err != nil {
		return nil, err
	}
	return k.MissingPlan(p, dev)
}

// MissingPlan returns, one line per feature, what the tc backend cannot do
// of plan p on interface dev on a kernel with features k: the kernel's
// nftables egress hook and numgen, and each rule's fields and actions that
// nftables cannot express (see nftPlanRules). The error is p's validation
// error.
func (k KernelFeatures) MissingPlan(p *Plan, dev string) ([]string, error) {
	_, missing, err := nftPlanRules(p, dev)
	if err != nil {
		return nil, err
	}
	if !k.NFTLoss && len(p.Rules) > 0 {
		missing = append([]string{"plan: needs nftables on the egress hook, which this kernel lacks (CONFIG_NF_TABLES_NETDEV, CONFIG_NETFILTER_EGRESS, CONFIG_NFT_NUMGEN); use --backend switch"}, missing...)
	}
	return missing, nil
}

// RemoveTCPlan removes the fault plan ApplyTCPlan put on dev's egress in
// ns, if any (nothing there is not an error).
func RemoveTCPlan(ns netns.NsHandle, dev string) error {
	return resetNFTChain(ns, planChain(dev))
}

// TCPlanHits returns how many frames each plan rule on dev's egress has
// fired on, by rule comment ("rule 0: name"), in rule order; nil when
// there is no plan.
func TCPlanHits(ns netns.NsHandle, dev string) ([]PlanRuleHits, error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return nil, fmt.Errorf("netem: nftables: %w", err)
	}
	rules, err := c.GetRules(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: nftTable}, &nftables.Chain{Name: planChain(dev)})
	if err != nil {
		return nil, nil // no table or chain: no plan
	}
	var out []PlanRuleHits
	for _, r := range rules {
		name, ok := userdata.GetString(r.UserData, userdata.TypeComment)
		if !ok {
			continue
		}
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				out = append(out, PlanRuleHits{Rule: name, Packets: ctr.Packets})
			}
		}
	}
	return out, nil
}

// resetNFTChain removes chain name from table nftTable in ns (and the
// table once it has no chain left). A missing table or chain is not an
// error.
func resetNFTChain(ns netns.NsHandle, name string) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("netem: nftables: %w", err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyNetdev)
	if err != nil {
		return fmt.Errorf("netem: nftables: list chains: %w", err)
	}
	left, found := 0, false
	for _, ch := range chains {
		if ch.Table.Name != nftTable {
			continue
		}
		if ch.Name == name {
			c.DelChain(ch)
			found = true
		} else {
			left++
		}
	}
	if left == 0 {
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: nftTable})
	}
	if !found && left > 0 {
		return nil
	}
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netem: remove nftables chain %s: %w", name, err)
	}
	return nil
}
