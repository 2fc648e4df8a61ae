package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/report/wireshark"
)

func newWiresharkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wireshark",
		Short: "Wireshark support: a Homa dissector",
		Long: `Wireshark support. "homatest wireshark dissector" prints a Lua dissector for
Homa generated from homatest's wire format tables (every packet type and
field of the current format, IP protocol 146; the 2022-2024 format, IP
protocol 253; the upstream subset; TCP-hijacked frames), which every
Wireshark build runs without compiling.`,
		Example: `  homatest wireshark dissector > homa.lua
  tshark -X lua_script:homa.lua -r capture.pcapng
  homatest wireshark dissector --install     # then restart Wireshark`,
	}
	cmd.AddCommand(newDissectorCmd())
	return cmd
}

func newDissectorCmd() *cobra.Command {
	var install bool
	var dir string
	cmd := &cobra.Command{
		Use:   "dissector [--install [--dir DIR]]",
		Short: "Print (or install) the Homa dissector for Wireshark (Lua)",
		Long: `Dissector prints homa.lua, a Wireshark dissector for Homa generated from
spec/wire (the repository holds a copy: report/wireshark/homa.lua).

Display filters use HomaModule's homa_wire.h names: homa.type,
homa.sender_id, homa.sport, homa.data.message_length, homa.data.seg.offset,
homa.data.retransmit, homa.grant.offset, homa.grant.priority,
homa.resend.offset, homa.cutoffs.unsched_cutoffs, homa.ack.num_acks,
homa.ack.acks.client_id, ...; and derived fields: homa.rpc_id (the client's
id), homa.role (client or server sent it), homa.priority (from the IP
header), homa.data.offset and homa.data.len (per segment: a multi-segment
GSO frame shows one Homa tree per segment, as homatest decode prints one
line per segment), homa.wire, homa.hijacked and homa.error. Findings that
homatest check --annotate wrote as packet comments show as Expert Info.

--install writes it into Wireshark's personal Lua plugins folder
(~/.local/lib/wireshark/plugins; %APPDATA%\Wireshark\plugins on Windows;
--dir picks another), where Wireshark and tshark load it at start: no
-X lua_script: needed. A copy named with -X as well is loaded second and
stands aside (the installed one dissects).

Exit codes: 0 printed (with --install: written, whole or not at all); 2 an
argument, --dir without --install, a --dir whose parent folder is missing,
a folder homa.lua cannot be written in, or output that could not be
written. It is done at once: an interrupt (Ctrl-C, SIGINT or SIGTERM) lets
it finish.`,
		Example: `  homatest wireshark dissector > homa.lua
  wireshark -X lua_script:homa.lua capture.pcapng
  tshark -X lua_script:homa.lua -r capture.pcapng -Y 'homa.type == 0x11 && homa.grant.priority < 3'

  homatest wireshark dissector --install     # then restart Wireshark`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir != "" && !install {
				return usageErr(fmt.Errorf("--dir names where --install writes homa.lua: add --install"))
			}
			if !install {
				ew := &errWriter{w: cmd.OutOrStdout()}
				w := bufio.NewWriter(ew)
				err := wireshark.Generate(w)
				if err == nil {
					err = w.Flush()
				}
				if ew.err != nil {
					return usageErr(fmt.Errorf("write output: %w", ew.err))
				}
				return err
			}
			if dir != "" {
				// The folder given may be made, not its parents: a
				// mistyped path would be made whole.
				if st, err := os.Stat(filepath.Dir(dir)); err != nil || !st.IsDir() {
					return usageErr(fmt.Errorf("--dir %s: no folder %s to make it in (create it first, or drop --dir for Wireshark's personal plugins folder)", dir, filepath.Dir(dir)))
				}
			} else {
				d, err := wireshark.PluginDir()
				if err != nil {
					return usageErr(err)
				}
				dir = d
			}
			path, err := wireshark.Install(dir)
			if err != nil {
				return usageErr(fmt.Errorf("%v (pass --dir somewhere writable)", err))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s; restart Wireshark (or Analyze > Reload Lua Plugins) to load it\n", path)
			return err
		},
	}
	cmd.Flags().BoolVar(&install, "install", false, "write homa.lua into Wireshark's personal Lua plugins folder instead of printing it")
	cmd.Flags().StringVar(&dir, "dir", "", "with --install: the folder to write homa.lua into")
	return cmd
}
