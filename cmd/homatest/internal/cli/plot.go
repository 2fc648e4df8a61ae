package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/seqplot"
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
ID@CLIENT when several clients used that id (CLIENT bare or as rpcs prints
it: 4@fd00::1, 4@[fd00::1]:32768), or slowest: the RPC whose
response completed latest after its first packet.

-o names the picture; its extension picks the format (.png, .svg or .pdf;
here -o is a file, not the text|json choice of other commands). Default:
rpc-<id>.png in the current folder. The file is written whole or not at
all. Exit codes: 0 written, 2 for a bad flag, an unreadable capture, or no
such RPC. A capture damaged or cut short is drawn from the frames before the
damage: the picture is written (the output line says so) and the exit code
is 2, the error naming where the file stops.`,
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
			want, err := parseRPCSelector(sel, true)
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
				if err := checkOutputFile("-o", output); err != nil {
					return usageErr(err)
				}
			}
			v, err := wire.ParseVersion(wireName)
			if err != nil {
				return usageErr(fmt.Errorf("--wire: %w", err))
			}
			path := args[0]
			rpcs, _, opts, _, err := captureRPCs(cmd.Context(), path, v)
			var damaged *pcap.DamagedError
			if ee := (*ExitError)(nil); errors.As(err, &ee) {
				return err
			}
			if err != nil && !errors.As(err, &damaged) {
				return usageErr(err)
			}
			r, err := want.pick(rpcs)
			if err != nil && damaged != nil {
				// The damage may be why: say both, in one line.
				return usageErr(fmt.Errorf("%s: %w before the damage; %v", path, err, damaged))
			}
			if err != nil {
				return usageErr(fmt.Errorf("%s: %w", path, err))
			}
			b := seqplot.NewBuilder(r)
			_, err = pcap.StreamPath(path, opts, b.Add)
			if err := interruptedRead(cmd.Context(), err); err != nil {
				return err
			}
			if err != nil && damaged == nil {
				return usageErr(err)
			}
			m := b.Model()
			if output == "" {
				output = fmt.Sprintf("rpc-%d.png", r.Key.ClientID)
			}
			if err := writePlot(m, output); err != nil {
				return usageErr(flagWriteErr("-o", output, err))
			}
			l1, l2 := m.Title()
			if _, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s; %s\n", output, l1, l2); err != nil || damaged == nil {
				return err
			}
			return damagedErr(damaged)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "picture to write: .png, .svg or .pdf (default rpc-<id>.png)")
	cmd.Flags().StringVar(&sel, "rpc", "", "the RPC: its client id, ID@CLIENT address, or slowest")
	cmd.Flags().StringVar(&wireName, "wire", "auto", "wire format: auto, current, 2024, upstream or 2025")
	return cmd
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
