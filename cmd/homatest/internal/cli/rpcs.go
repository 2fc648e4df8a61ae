package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/seqplot"
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
	LatencyNs    *int64         `json:"latency_ns,omitempty"` // first packet to the response's last byte; absent if it did not complete
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
// IPv6 priority shifts found by pcap.PrescanPath) through a spec.Trace and returns its
// RPCs in order of their first frame, the time of the first Homa packet,
// the reader options to read it again with, and the read's stats. Once ctx has ended it
// stops within a batch of frames with interruptedRead's error.
func captureRPCs(ctx context.Context, path string, v wire.Version) ([]*spec.RPC, time.Time, pcap.ReaderOptions, pcap.Stats, error) {
	o := pcap.ReaderOptions{Version: v, Context: ctx}
	profile, shift, err := pcap.PrescanPath(ctx, path)
	if err := interruptedRead(ctx, err); err != nil {
		return nil, time.Time{}, o, pcap.Stats{}, err
	}
	if err != nil {
		return nil, time.Time{}, o, pcap.Stats{}, err
	}
	o.IPv6HostShifts = shift
	o, _ = check.SentView(ctx, path, o) // every packet once: as sent, else as delivered
	prof, _ := spec.LookupProfile(profile)
	tr := spec.NewTrace(&prof.Params)
	tr.KeepFinished()
	var first time.Time
	readable := 0 // events with a whole Homa header
	st, err := pcap.StreamPath(path, o, func(e *spec.Event) {
		if e.Err == nil {
			readable++
		}
		if first.IsZero() {
			first = e.Time
		}
		tr.Apply(e)
	})
	if err := interruptedRead(ctx, err); err != nil {
		return nil, first, o, st, err
	}
	damaged, err := pcap.Damage(st, err)
	if err != nil {
		return nil, first, o, st, err
	}
	if readable == 0 {
		// Homa frames, none readable: as empty of Homa as one without them.
		why := fmt.Sprintf("none of its %d Homa frames has a readable Homa header", st.Homa)
		if h := check.SnapHint(st); h != "" {
			why = h
		}
		return nil, first, o, st, fmt.Errorf("%s: %s", path, why)
	}
	rpcs := tr.RPCs()
	sort.Slice(rpcs, func(i, j int) bool { return rpcs[i].FirstFrame < rpcs[j].FirstFrame })
	if damaged != nil {
		return rpcs, first, o, st, damaged
	}
	return rpcs, first, o, st, nil
}

// interruptedRead returns, once ctx has ended, the error (exit 130) of a
// command that reads captures (check, decode, rpcs, plot): it stops
// within a batch of frames and writes no verdict nor output file, as
// homatest scenario run stops its own check; err, when set, is the read's
// error, which the interruption explains. nil while ctx has not ended.
func interruptedRead(ctx context.Context, err error) error {
	if ctx == nil || ctx.Err() == nil {
		return nil
	}
	return &ExitError{Code: 130, Err: errors.New("interrupted: the capture was not read to its end; nothing written, no verdict")}
}

// damagedErr is the error that ends a command which printed what it read
// of a capture cut short (captureRPCs' *pcap.DamagedError): exit 2, its
// one line (pcap.DamagedError.Error), the output covering the frames
// before the damage.
func damagedErr(d *pcap.DamagedError) error {
	return usageErr(d)
}

// rpcOrders are the --sort orders of homatest rpcs.
var rpcOrders = []string{"first", "latency", "size", "id"}

// sortRPCs orders rpcs (given in order of their first frame) by how:
// latency (longest first; RPCs whose response did not complete last),
// size (request plus response bytes, largest first), id (client id, then
// client address) or first (unchanged).
func sortRPCs(rpcs []*spec.RPC, how string) {
	switch how {
	case "latency":
		sort.SliceStable(rpcs, func(i, j int) bool {
			li, lj := seqplot.Latency(rpcs[i]), seqplot.Latency(rpcs[j])
			return li > lj
		})
	case "size":
		size := func(r *spec.RPC) uint64 { return uint64(r.Request.Length) + uint64(r.Response.Length) }
		sort.SliceStable(rpcs, func(i, j int) bool { return size(rpcs[i]) > size(rpcs[j]) })
	case "id":
		sort.SliceStable(rpcs, func(i, j int) bool {
			a, b := rpcs[i].Key, rpcs[j].Key
			if a.ClientID != b.ClientID {
				return a.ClientID < b.ClientID
			}
			return a.Client.Less(b.Client)
		})
	}
}

func intsJoin(a []int) string {
	if len(a) == 0 {
		return "-"
	}
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func newRPCsCmd() *cobra.Command {
	var output, wireName, order string
	cmd := &cobra.Command{
		Use:   "rpcs FILE",
		Short: "Print one line per RPC of a capture",
		Long: `Rpcs groups the Homa packets of a capture into RPCs and prints one line per
RPC under a header: the client's id (what --rpc of decode and plot take),
client and server, request and response lengths, start (seconds since the
capture's first Homa packet in text; an absolute time in JSON), duration
(first to last packet), latency (first packet to the response's last byte;
- when the response did not complete), the frame of its first packet,
retransmitted bytes, GRANTs, priorities used (request DATA / response DATA /
GRANTs), the outcome — acked, complete (response received, not acked in the
capture), rpc_unknown (an RPC_UNKNOWN was sent and nothing completed after
it), request-only, or incomplete — and packets by type.

--sort orders the lines: first (order of the first packet, the default),
latency (longest first), size (request plus response, largest first) or id.

A capture of switch ports in both directions (homatest run's and scenario
run's capture.pcapng) is read as sent (inbound frames), so each packet
counts once: the same RPCs and counts as the run's sent.pcapng. A packet
of a host without a port of its own in the capture (a tester in explore's
one-port failure capture) is read as delivered (outbound). A pcapng of
several sections (captures joined with cat or mergecap -a) is read through,
and standard error says so ("pcapng sections: ..."); a section that repeats
an earlier one frame for frame (cat a.pcapng a.pcapng) is read once.

Exit codes: 0 printed; 2 bad input (a bad flag, a capture that cannot be
read or holds no Homa packet with a readable header) or output that could
not be written. A capture damaged or cut short is printed from the frames
before the damage and exits 2, the error naming where the file stops. A
capture whose snap length cut Homa headers gets check's WARNING on
standard error, and exits 2 (incomplete) where check's verdict would be
incomplete for it: the lines then show only what the cut left readable. 130
interrupted (Ctrl-C, SIGINT or SIGTERM) while the capture is read, standard
input included: nothing is printed. Once the lines print, an interrupt lets
them finish.`,
		Example: `  homatest rpcs capture.pcap
  homatest rpcs --sort latency capture.pcap | head -5     # the slowest RPCs
  homatest rpcs -o json capture.pcap | jq 'select(.outcome=="incomplete")'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("rpcs needs exactly one capture file (see homatest rpcs --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(rpcOrders, order) {
				return usageErr(fmt.Errorf("--sort %q: want %s", order, orList(rpcOrders)))
			}
			v, err := wire.ParseVersion(wireName)
			if err != nil {
				return usageErr(fmt.Errorf("--wire: %w", err))
			}
			rpcs, first, _, st, err := captureRPCs(cmd.Context(), args[0], v)
			var damaged *pcap.DamagedError
			if ee := (*ExitError)(nil); errors.As(err, &ee) {
				return err
			}
			if err != nil && !errors.As(err, &damaged) {
				return usageErr(err)
			}
			sortRPCs(rpcs, order)
			w := &errWriter{w: cmd.OutOrStdout()}
			enc := json.NewEncoder(w)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			if output == "text" {
				fmt.Fprintln(tw, "ID\tCLIENT\tSERVER\tREQUEST\tRESPONSE\tSTART\tDURATION\tLATENCY\tFRAME\tRETX\tGRANTS\tPRIO REQ/RESP/GRANT\tOUTCOME\tPACKETS")
			}
			for _, r := range rpcs {
				j := rpcRow(r)
				if output == "json" {
					enc.Encode(j)
					continue
				}
				var parts []string
				for _, t := range wire.AllTypes {
					if n := j.Packets[t.String()]; n > 0 {
						parts = append(parts, fmt.Sprintf("%s=%d", t, n))
					}
				}
				lat := "-"
				if j.LatencyNs != nil {
					lat = time.Duration(*j.LatencyNs).Round(time.Microsecond).String()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%.6f\t%v\t%s\t%d\t%dB\t%d\t%s/%s/%s\t%s\t%s\n",
					j.ClientID, j.Client, j.Server, j.RequestLen, j.ResponseLen, r.First.Sub(first).Seconds(),
					r.Last.Sub(r.First).Round(time.Microsecond), lat, j.FirstFrame, j.RetxBytes, j.Grants,
					intsJoin(j.ReqPrios), intsJoin(j.RespPrios), intsJoin(j.GrantPrios), j.Outcome, strings.Join(parts, " "))
			}
			tw.Flush()
			if w.err != nil {
				return usageErr(fmt.Errorf("write output: %w", w.err))
			}
			if h := check.SnapHint(st); h != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: %s\n", h)
			}
			if h := st.SectionsNote(); h != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "pcapng sections: %s\n", h)
			}
			if damaged != nil {
				return damagedErr(damaged)
			}
			if check.SnapIncomplete(st) != "" {
				// The lines list what the cut left readable: as check's
				// verdict, incomplete (a capture cut to one RPC of five
				// exited 0 in silence).
				return usageErr(fmt.Errorf("%s: incomplete: the snap length cut Homa headers (see its WARNING); the lines show only the RPCs of the frames it left whole", args[0]))
			}
			return nil
		},
	}
	outputVar(cmd.Flags(), &output, "json is one object per RPC", "text", "json")
	cmd.Flags().StringVar(&order, "sort", "first", "order: first (first packet), latency (longest first), size (largest first) or id")
	cmd.Flags().StringVar(&wireName, "wire", "auto", "wire format: auto, current, 2024, upstream or 2025")
	return cmd
}

// rpcRow is the JSON form of r.
func rpcRow(r *spec.RPC) rpcJSON {
	pk := map[string]int{}
	for i, t := range wire.AllTypes {
		if r.Packets[i] > 0 {
			pk[t.String()] = r.Packets[i]
		}
	}
	j := rpcJSON{ClientID: r.Key.ClientID,
		Client: spec.HostPort{Addr: r.Key.Client, Port: r.ClientPort}.String(), Server: spec.HostPort{Addr: r.Key.Server, Port: r.ServerPort}.String(),
		RequestLen: r.Request.Length, ResponseLen: r.Response.Length, Start: r.First, DurationNs: int64(r.Last.Sub(r.First)),
		FirstFrame: r.FirstFrame, Packets: pk, RetxBytes: r.Request.RetxBytes + r.Response.RetxBytes,
		Grants: r.Packets[wire.TypeGrant-wire.MinType], ReqPrios: bits(r.Request.Priorities), RespPrios: bits(r.Response.Priorities),
		GrantPrios: bits(r.Request.GrantPriorities | r.Response.GrantPriorities), Outcome: outcome(r),
		RequestDone: r.Request.Complete, ResponseDone: r.Response.Complete}
	if r.Response.Complete {
		l := int64(seqplot.Latency(r))
		j.LatencyNs = &l
	}
	return j
}
