package cli

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/seqplot"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

func newPlotCmd() *cobra.Command {
	var output, sel, wireName string
	cmd := &cobra.Command{
		Use:   "plot FILE --rpc ID|ID@CLIENT|slowest [-o OUT.png|OUT.svg|OUT.pdf]",
		Short: "Draw the sequence graph of one RPC of a capture",
		Long: `Plot draws one RPC of a capture the way tcptrace draws a TCP connection:
x is the time since the RPC's first packet (µs, or ms for RPCs longer than
2 ms), y the byte offset in the message, the request in the upper panel and
the response in the lower one. Each DATA segment is a stroke from its offset
to offset+length coloured by its priority level (p0..p7); retransmissions
(retransmit=1) get a black cross; the dashed step line is the granted offset
(the first DATA's incoming field, then each GRANT that raised it); a red bar
is the range a RESEND asked for; a triangle is a BUSY, at the highest offset
sent so far. The title gives the RPC, its sizes, its latency (first packet
to the last missing byte of the response) and its losses.

--rpc picks the RPC: its id as homatest rpcs prints it (the client's id),
ID@CLIENT when several clients used that id, or slowest: the RPC whose
response completed latest after its first packet.

-o names the picture; its extension picks the format (.png, .svg or .pdf;
here -o is a file, not the text|json choice of other commands). Default:
rpc-<id>.png in the current folder. The file is written whole or not at
all. Exit codes: 0 written, 2 for a bad flag, an unreadable capture, or no
such RPC.`,
		Example: `  homatest plot capture.pcapng --rpc slowest
  homatest plot capture.pcapng --rpc 4 -o rpc4.svg
  homatest plot capture.pcapng --rpc 12@10.0.0.11 -o /tmp/rpc12.pdf
  homatest rpcs capture.pcapng    # the ids to choose from`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("plot needs exactly one capture file (see homatest plot --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sel == "" {
				return usageErr(fmt.Errorf("--rpc is required: an RPC id as homatest rpcs prints it, ID@CLIENT, or slowest"))
			}
			want, err := parseRPCSelector(sel)
			if err != nil {
				return usageErr(err)
			}
			if output != "" {
				if _, err := seqplot.FormatOf(output); err != nil {
					if output == "text" || output == "json" {
						return usageErr(fmt.Errorf("-o %s: plot writes a picture; -o names its file (.png, .svg or .pdf)", output))
					}
					return usageErr(fmt.Errorf("-o %w", err))
				}
			}
			v, err := wire.ParseVersion(wireName)
			if err != nil {
				return usageErr(fmt.Errorf("--wire: %w", err))
			}
			path := args[0]
			rpcs, _, opts, err := captureRPCs(path, v)
			if err != nil {
				return usageErr(err)
			}
			r, err := want.pick(rpcs)
			if err != nil {
				return usageErr(fmt.Errorf("%s: %w", path, err))
			}
			b := seqplot.NewBuilder(r)
			if _, err := pcap.StreamPath(path, opts, b.Add); err != nil {
				return usageErr(err)
			}
			m := b.Model()
			if output == "" {
				output = fmt.Sprintf("rpc-%d.png", r.Key.ClientID)
			}
			if err := writePlot(m, output); err != nil {
				return usageErr(err)
			}
			l1, l2 := m.Title()
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s; %s\n", output, l1, l2)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "picture to write: .png, .svg or .pdf (default rpc-<id>.png)")
	cmd.Flags().StringVar(&sel, "rpc", "", "the RPC: its client id, ID@CLIENT address, or slowest")
	cmd.Flags().StringVar(&wireName, "wire", "auto", "wire format: auto, current, 2024 or upstream")
	return cmd
}

// rpcSelector is a parsed --rpc value: slowest, or a client id with an
// optional client address.
type rpcSelector struct {
	slowest bool
	id      uint64
	client  netip.Addr // zero: any client
}

// parseRPCSelector parses "slowest", "ID" or "ID@CLIENT".
func parseRPCSelector(s string) (rpcSelector, error) {
	if s == "slowest" {
		return rpcSelector{slowest: true}, nil
	}
	idText, addrText, hasAddr := strings.Cut(s, "@")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return rpcSelector{}, fmt.Errorf("--rpc %q: want an RPC id (a number, as homatest rpcs prints it), ID@CLIENT or slowest", s)
	}
	sel := rpcSelector{id: id}
	if hasAddr {
		if sel.client, err = netip.ParseAddr(addrText); err != nil {
			return rpcSelector{}, fmt.Errorf("--rpc %q: %q is not an IP address (want ID@CLIENT, e.g. 4@10.0.0.11)", s, addrText)
		}
	}
	return sel, nil
}

// pick returns the RPC of rpcs the selector names, or an error that lists
// some of the ids there are.
func (s rpcSelector) pick(rpcs []*spec.RPC) (*spec.RPC, error) {
	if len(rpcs) == 0 {
		return nil, fmt.Errorf("no RPC in the capture")
	}
	if s.slowest {
		if r := seqplot.Slowest(rpcs); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("no RPC's response completed in the capture, so none is the slowest; pick one with --rpc ID (%s)", someIDs(rpcs))
	}
	var found []*spec.RPC
	for _, r := range rpcs {
		if r.Key.ClientID == s.id && (!s.client.IsValid() || r.Key.Client == s.client) {
			found = append(found, r)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var cs []string
		for _, r := range found {
			cs = append(cs, r.Key.Client.String())
		}
		return nil, fmt.Errorf("%d RPCs have id %d (clients %s): name one with --rpc %d@CLIENT", len(found), s.id, strings.Join(cs, ", "), s.id)
	case s.client.IsValid():
		return nil, fmt.Errorf("no RPC with id %d from client %v (%s)", s.id, s.client, someIDs(rpcs))
	default:
		return nil, fmt.Errorf("no RPC with id %d (%s)", s.id, someIDs(rpcs))
	}
}

// someIDs lists the client ids of the first RPCs: "5 RPCs, ids 2 4 6 8 10"
// (at most 10, then "...").
func someIDs(rpcs []*spec.RPC) string {
	var ids []string
	for i, r := range rpcs {
		if i == 10 {
			ids = append(ids, "...")
			break
		}
		ids = append(ids, strconv.FormatUint(r.Key.ClientID, 10))
	}
	return fmt.Sprintf("%d RPCs, ids %s; see homatest rpcs", len(rpcs), strings.Join(ids, " "))
}

// writePlot renders m into path (format from its extension), written
// whole or not at all.
func writePlot(m *seqplot.Model, path string) error {
	format, err := seqplot.FormatOf(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error { return m.Render(w, format) })
}
