package netem

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nftTable is the name of the netdev table the tc backend uses for loss;
// one chain per interface ("loss_" + the interface name).
const nftTable = "homatest_netem"

// lossScale is the numgen modulus: loss probabilities resolve to 1e-6.
const lossScale = 1_000_000

// nftLossRule returns the expressions of a rule that drops a frame with
// probability p: numgen random mod 1e6, converted to network order (nft
// compares registers bytewise), < p*1e6, counter, drop. This is what the
// nft tool makes of "numgen random mod 1000000 < K counter drop".
func nftLossRule(p float64) []expr.Any {
	k := make([]byte, 4)
	binary.BigEndian.PutUint32(k, uint32(math.Round(p*lossScale)))
	return []expr.Any{
		&expr.Numgen{Register: 1, Modulus: lossScale, Type: unix.NFT_NG_RANDOM},
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: k},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// applyNFTLoss installs random loss with probability p on the egress of
// dev in ns (netdev family, egress hook; Linux >= 5.16 with
// CONFIG_NETFILTER_EGRESS). It replaces an earlier chain for dev.
func applyNFTLoss(ns netns.NsHandle, dev string, p float64) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("netem: nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: nftTable})
	pol := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: "loss_" + dev, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookEgress, Priority: nftables.ChainPriorityFilter, Device: dev, Policy: &pol})
	c.FlushChain(ch)
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: nftLossRule(p)})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netem: %s: nftables loss chain: %w (needs CONFIG_NETFILTER_EGRESS and CONFIG_NFT_NUMGEN)", dev, err)
	}
	return nil
}

// resetNFTLoss removes dev's loss chain (and the table once it is empty).
func resetNFTLoss(ns netns.NsHandle, dev string) error { return resetNFTChain(ns, "loss_"+dev) }

// nftLossCounter returns the packets dropped by dev's loss rule (0 when
// there is none).
func nftLossCounter(ns netns.NsHandle, dev string) (uint64, error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return 0, err
	}
	rules, err := c.GetRules(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: nftTable}, &nftables.Chain{Name: "loss_" + dev})
	if err != nil {
		return 0, nil
	}
	for _, r := range rules {
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				return ctr.Packets, nil
			}
		}
	}
	return 0, nil
}
