package harness

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

// TesterMark is the socket mark (SO_MARK) of a tester's packets: on a
// silenced host (Host.Silence) only packets carrying it leave as Homa.
const TesterMark = 0x486f6d61 // "Homa"

// silenceTable is the nftables table Silence installs.
const silenceTable = "homatest_silence"

// Silence makes host h answer nothing by itself, whatever Homa stack lives
// in its namespace (HomaModule is loaded for every namespace once it is
// loaded at all; a stray agent may listen): an inet-family output chain
// drops every IP protocol 146 packet (and 253, HomaModule linux_6.1.38's
// Homa) whose socket mark is not mark, and
// every ICMP or ICMPv6 destination-unreachable (HomaModule answers Homa
// packets for a port with no socket with ICMP port unreachable, and the
// IUT's kernel then aborts its RPCs with ENOTCONN). The tester sends with
// the mark (rawip.Transport.SetMark) and is the only voice of the host.
// The table goes with the namespace.
func (h *Host) Silence(mark uint32) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(h.Netns)))
	if err != nil {
		return fmt.Errorf("harness: %s: nftables: %w", h.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: silenceTable})
	pol := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &pol})
	c.FlushChain(ch)
	m := make([]byte, 4)
	binary.NativeEndian.PutUint32(m, mark)
	l4 := func(proto byte) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		}
	}
	drop := []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}
	// Homa (IP protocol 146, or 253 for linux_6.1.38) not from the
	// tester.
	homa := func(proto byte) []expr.Any {
		return append(l4(proto),
			&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: m})
	}
	// ICMP type 3 / ICMPv6 type 1: destination unreachable.
	icmpType := func(typ byte) []expr.Any {
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{typ}},
		}
	}
	for _, r := range [][]expr.Any{
		append(homa(wire.IPProtoHoma), drop...),
		append(homa(wire.IPProtoHoma2024), drop...),
		append(append(l4(unix.IPPROTO_ICMP), icmpType(3)...), drop...),
		append(append(l4(unix.IPPROTO_ICMPV6), icmpType(1)...), drop...),
	} {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("harness: %s: silence (nftables output chain): %w (needs nf_tables)", h.Name, err)
	}
	return nil
}

// SilenceDrops returns the packets the silence rules of h dropped (Homa
// not from the tester, ICMP unreachable), 0 when h is not silenced.
func (h *Host) SilenceDrops() (homa, icmp uint64, err error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(h.Netns)))
	if err != nil {
		return 0, 0, err
	}
	rules, err := c.GetRules(&nftables.Table{Family: nftables.TableFamilyINet, Name: silenceTable}, &nftables.Chain{Name: "output"})
	if err != nil {
		return 0, 0, nil
	}
	for i, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				if i == 0 {
					homa += ctr.Packets
				} else {
					icmp += ctr.Packets
				}
			}
		}
	}
	return homa, icmp, nil
}
