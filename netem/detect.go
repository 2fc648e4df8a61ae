package netem

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// KernelFeatures says which kernel pieces the tc backend can use.
type KernelFeatures struct {
	HTB   bool `json:"htb"`   // CONFIG_NET_SCH_HTB
	TBF   bool `json:"tbf"`   // CONFIG_NET_SCH_TBF
	Prio  bool `json:"prio"`  // CONFIG_NET_SCH_PRIO
	Netem bool `json:"netem"` // CONFIG_NET_SCH_NETEM
	U32   bool `json:"u32"`   // CONFIG_NET_CLS_U32
	// NFTLoss: nftables random drops on a device's egress
	// (CONFIG_NF_TABLES_NETDEV, CONFIG_NETFILTER_EGRESS, CONFIG_NFT_NUMGEN),
	// used for random loss when the kernel has no sch_netem.
	NFTLoss bool `json:"nft_loss"`
	// Source says where the answer came from ("/proc/config.gz" or
	// "probe in a scratch namespace").
	Source string `json:"source"`
}

// parseKernelConfig reads a kernel config (the text of /proc/config.gz);
// options built in (=y) or as modules (=m) count as present.
func parseKernelConfig(r io.Reader) (KernelFeatures, error) {
	k := KernelFeatures{Source: "/proc/config.gz"}
	var nftNetdev, egress, numgen bool
	opts := map[string]*bool{
		"CONFIG_NET_SCH_HTB": &k.HTB, "CONFIG_NET_SCH_TBF": &k.TBF, "CONFIG_NET_SCH_PRIO": &k.Prio,
		"CONFIG_NET_SCH_NETEM": &k.Netem, "CONFIG_NET_CLS_U32": &k.U32,
		"CONFIG_NF_TABLES_NETDEV": &nftNetdev, "CONFIG_NETFILTER_EGRESS": &egress, "CONFIG_NFT_NUMGEN": &numgen,
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), "=")
		if p := opts[name]; ok && p != nil {
			*p = val == "y" || val == "m"
		}
	}
	k.NFTLoss = nftNetdev && egress && numgen
	return k, sc.Err()
}

func readKernelConfigGz(r io.Reader) (KernelFeatures, error) {
	z, err := gzip.NewReader(r)
	if err != nil {
		return KernelFeatures{}, err
	}
	defer z.Close()
	return parseKernelConfig(z)
}

// lossByNFT reports whether the tc backend implements cfg's loss with
// nftables (random loss on a kernel without sch_netem).
func (k KernelFeatures) lossByNFT(cfg LinkConfig) bool {
	return cfg.Loss.Model == "random" && !k.Netem && k.NFTLoss
}

// Missing returns, one line per feature, what the tc backend cannot do
// for cfg on a kernel with features k (empty when everything is possible).
// Each line names the feature, the kernel option it needs and what to use
// instead, e.g. "delay: needs sch_netem, which this kernel lacks
// (CONFIG_NET_SCH_NETEM); use --backend switch".
func (k KernelFeatures) Missing(cfg LinkConfig) []string {
	var out []string
	lacks := func(feature, what, option string) {
		out = append(out, fmt.Sprintf("%s: needs %s, which this kernel lacks (%s); use --backend switch", feature, what, option))
	}
	if !k.HTB {
		for _, f := range []string{"rate", "priorities"} {
			if f == "priorities" && cfg.Queues() == 1 || f == "rate" && cfg.Rate == 0 {
				continue
			}
			lacks(f, "sch_htb", "CONFIG_NET_SCH_HTB")
		}
	}
	if cfg.Queues() > 1 && !k.U32 {
		lacks("priorities", "cls_u32 to classify by TOS", "CONFIG_NET_CLS_U32")
	}
	netemFeatures := []struct {
		on   bool
		name string
	}{
		{cfg.Delay > 0, "delay"}, {cfg.Jitter > 0, "jitter"},
		{cfg.Loss.Model != "" && cfg.Loss.Model != "none", "loss"},
		{cfg.Duplicate > 0, "duplicate"}, {cfg.Reorder.Probability > 0, "reorder"}, {cfg.Corrupt > 0, "corrupt"},
	}
	for _, f := range netemFeatures {
		if f.name == "loss" && k.lossByNFT(cfg) {
			continue // nftables does it
		}
		if f.name == "loss" && cfg.Loss.isGE() && !k.Netem {
			lacks("loss", "sch_netem's gemodel for gilbert-elliott (nftables keeps no loss state between frames)", "CONFIG_NET_SCH_NETEM")
			continue
		}
		if f.on && !k.Netem {
			lacks(f.name, "sch_netem", "CONFIG_NET_SCH_NETEM")
		}
	}
	// Limits of the netlink library, whatever the kernel has.
	unsupported := func(feature, why string) {
		out = append(out, fmt.Sprintf("%s: %s; use --backend switch", feature, why))
	}
	if k.Netem {
		if cfg.JitterDist == "normal" {
			unsupported("jitter_dist", "netem's normal distribution needs iproute2's distribution table, which the tc backend does not load")
		}
		if cfg.CorruptMode == "drop" {
			unsupported("corrupt_mode", "netem can only flip bits (corrupt_mode flip)")
		}
	}
	if cfg.MTU > 0 {
		unsupported("mtu", "the tc backend does not drop by size (set the interface MTU instead)")
	}
	if cfg.PriorityMap == "scale" && !k.U32 {
		unsupported("priority_map", "needs cls_u32")
	}
	return out
}

// UnsupportedError lists features the tc backend cannot provide here, one
// line each.
type UnsupportedError struct{ Lines []string }

func (e *UnsupportedError) Error() string {
	return "netem: tc backend cannot provide: " + strings.Join(e.Lines, "; ")
}

// TCState is what ShowTC reports: one line per qdisc, class and filter in
// the style of tc(8) ("htb 1: root", "class htb 1:10 parent 1:1 prio 7 rate
// 100kbit ceil 100mbit", "filter u32 ip prio 1 -> 1:17").
type TCState struct {
	Dev     string   `json:"dev"`
	Qdiscs  []string `json:"qdiscs"`
	Classes []string `json:"classes"`
	Filters []string `json:"filters"`
	// Netem holds every netem qdisc's values in real units (the text in
	// Qdiscs prints them as tc -s qdisc show does).
	Netem []NetemQdisc `json:"netem,omitempty"`
	// NFTLossDrops counts frames dropped by the nftables loss rule.
	NFTLossDrops uint64 `json:"nft_loss_drops,omitempty"`
	// PlanHits counts, per fault-plan rule, the frames it fired on (the
	// tc backend's nftables plan chain; see ApplyTCPlan).
	PlanHits []PlanRuleHits `json:"plan_hits,omitempty"`
}

// PlanRuleHits is one plan rule's firing count in the tc backend.
type PlanRuleHits struct {
	// Rule is "rule <index>" or "rule <index>: <name>".
	Rule string `json:"rule"`
	// Packets is the number of frames the rule fired on.
	Packets uint64 `json:"packets"`
}

// isGE reports whether l is the Gilbert-Elliott model.
func (l LossConfig) isGE() bool { return l.Model == "gilbert-elliott" || l.Model == "ge" }
