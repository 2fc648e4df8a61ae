package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

type rpcJSON struct {
	ClientID     uint64         `json:"client_id"`
	Client       string         `json:"client"`
	Server       string         `json:"server"`
	RequestLen   uint32         `json:"request_length"`
	ResponseLen  uint32         `json:"response_length"`
	Start        time.Time      `json:"start"`
	DurationNs   int64          `json:"duration_ns"`
	FirstFrame   int            `json:"first_frame"`
	Packets      map[string]int `json:"packets"`
	RetxBytes    uint64         `json:"retransmitted_bytes"`
	Grants       int            `json:"grants"`
	ReqPrios     []int          `json:"request_priorities"`
	RespPrios    []int          `json:"response_priorities"`
	GrantPrios   []int          `json:"grant_priorities"`
	Outcome      string         `json:"outcome"`
	RequestDone  bool           `json:"request_complete"`
	ResponseDone bool           `json:"response_complete"`
}

func bits(b uint16) []int {
	out := []int{}
	for i := 0; i < 16; i++ {
		if b&(1<<i) != 0 {
			out = append(out, i)
		}
	}
	return out
}

func outcome(r *spec.RPC) string {
	switch {
	case r.Acked:
		return "acked"
	case r.Response.Complete:
		return "complete"
	case r.Unknown:
		return "rpc_unknown"
	case r.Request.Complete:
		return "request-only"
	default:
		return "incomplete"
	}
}

// captureRPCs reads the capture at path (wire format v, the profile and
// IPv6 priority shift found by prescan) through a spec.Trace and returns its
// RPCs in order of their first frame, the time of the first Homa packet,
// and the reader options to read it again with.
func captureRPCs(path string, v wire.Version) ([]*spec.RPC, time.Time, pcap.ReaderOptions, error) {
	o := pcap.ReaderOptions{Version: v}
	profile, shift, err := prescan(path)
	if err != nil {
		return nil, time.Time{}, o, err
	}
	o.IPv6PriorityShift = shift
	o, _ = sentView(path, o) // every packet once, as sent
	prof, _ := spec.LookupProfile(profile)
	tr := spec.NewTrace(&prof.Params)
	tr.KeepFinished()
	var first time.Time
	if _, err := streamEvents(path, o, func(e *spec.Event) {
		if first.IsZero() {
			first = e.Time
		}
		tr.Apply(e)
	}); err != nil {
		return nil, first, o, err
	}
	rpcs := tr.RPCs()
	sort.Slice(rpcs, func(i, j int) bool { return rpcs[i].FirstFrame < rpcs[j].FirstFrame })
	return rpcs, first, o, nil
}

func newRPCsCmd() *cobra.Command {
	var output, wireName string
	cmd := &cobra.Command{
		Use:   "rpcs FILE",
		Short: "Print one line per RPC of a capture",
		Long: `Rpcs groups the Homa packets of a capture into RPCs and prints one line per
RPC in order of its first packet: client > server, client id, request and
response lengths, start (seconds since the capture's first Homa packet in
text; an absolute time in JSON), duration, the frame
of its first packet, packets by type, retransmitted bytes, GRANTs, priorities
used (request DATA, response DATA, GRANTs), and the outcome: acked, complete
(response received, not acked in the capture), rpc_unknown (an RPC_UNKNOWN
was sent and nothing completed after it), request-only, or incomplete.

A capture of switch ports in both directions (homatest run's and scenario
run's capture.pcapng) is read as sent (inbound frames only), so each packet
counts once: the same RPCs and counts as the run's sent.pcapng.`,
		Example: `  homatest rpcs capture.pcap
  homatest rpcs -o json capture.pcap | jq 'select(.outcome=="incomplete")'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("rpcs needs exactly one capture file (see homatest rpcs --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErr(fmt.Errorf("-o %q: want text or json", output))
			}
			v, err := wire.ParseVersion(wireName)
			if err != nil {
				return usageErr(fmt.Errorf("--wire: %w", err))
			}
			rpcs, first, _, err := captureRPCs(args[0], v)
			if err != nil {
				return usageErr(err)
			}
			w := &errWriter{w: cmd.OutOrStdout()}
			enc := json.NewEncoder(w)
			for _, r := range rpcs {
				pk := map[string]int{}
				for i, t := range wire.AllTypes {
					if r.Packets[i] > 0 {
						pk[t.String()] = r.Packets[i]
					}
				}
				j := rpcJSON{ClientID: r.Key.ClientID,
					Client: fmt.Sprintf("%v:%d", r.Key.Client, r.ClientPort), Server: fmt.Sprintf("%v:%d", r.Key.Server, r.ServerPort),
					RequestLen: r.Request.Length, ResponseLen: r.Response.Length, Start: r.First, DurationNs: int64(r.Last.Sub(r.First)),
					FirstFrame: r.FirstFrame, Packets: pk, RetxBytes: r.Request.RetxBytes + r.Response.RetxBytes,
					Grants: r.Request.Grants + r.Response.Grants, ReqPrios: bits(r.Request.Priorities), RespPrios: bits(r.Response.Priorities),
					GrantPrios: bits(r.Request.GrantPriorities | r.Response.GrantPriorities), Outcome: outcome(r),
					RequestDone: r.Request.Complete, ResponseDone: r.Response.Complete}
				if output == "json" {
					enc.Encode(j)
					continue
				}
				var parts []string
				for _, t := range wire.AllTypes {
					if n := pk[t.String()]; n > 0 {
						parts = append(parts, fmt.Sprintf("%s=%d", t, n))
					}
				}
				fmt.Fprintf(w, "%d %s > %s req %d resp %d start %.6f dur %v frame %d [%s] retx %dB grants %d prio req%v resp%v grant%v %s\n",
					j.ClientID, j.Client, j.Server, j.RequestLen, j.ResponseLen, r.First.Sub(first).Seconds(),
					r.Last.Sub(r.First).Round(time.Microsecond), j.FirstFrame, strings.Join(parts, " "), j.RetxBytes, j.Grants,
					j.ReqPrios, j.RespPrios, j.GrantPrios, j.Outcome)
			}
			if w.err != nil {
				return usageErr(fmt.Errorf("write output: %w", w.err))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output: text or json (one object per line)")
	cmd.Flags().StringVar(&wireName, "wire", "auto", "wire format: auto, current, 2024 or upstream")
	return cmd
}
