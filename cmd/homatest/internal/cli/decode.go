package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

type decodeOpts struct {
	wire        string
	output      string
	ipv6Shift   uint8
	summaryOnly bool
}

func newDecodeCmd() *cobra.Command {
	o := &decodeOpts{}
	cmd := &cobra.Command{
		Use:   "decode FILE...",
		Short: "Print every Homa packet of pcap/pcapng captures",
		Long: `Decode prints one line per Homa packet of each capture (pcap or pcapng;
Ethernet, VLAN, Linux cooked SLL/SLL2 or raw IP link types): frame number,
time since the first frame, src:port > dst:port, priority (from the IP
precedence bits), packet type, sender id, then the type's fields. Multi-segment
GSO DATA frames are split into one line per segment (frame.N).

Homa is recognised as IP protocol 146, 253 (the 2024 format) and TCP segments
carrying HomaModule's hijack marks (flags 0x06, urgent 0xB97D). Other frames
are counted and skipped. A summary line per file gives the counts per type.`,
		Example: `  # decode a capture
  homatest decode capture.pcap

  # one JSON object per packet, then a summary object
  homatest decode -o json capture.pcapng | jq 'select(.type=="GRANT")'

  # force the 2022-2024 (linux_6.1.38) header layouts
  homatest decode --wire 2024 old.pcap

  # counts only
  homatest decode --summary-only a.pcap b.pcap`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runDecode(cmd, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.wire, "wire", "auto", "wire format: auto, current (proto 146), 2024 (proto 253, linux_6.1.38) or upstream")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json (JSON lines)")
	f.Uint8Var(&o.ipv6Shift, "ipv6-prio-shift", 0, "shift of the priority in the IPv6 traffic class: 4 (2024 and linux_6.13.9) or 5 (main since Nov 2025); 0 = by wire version")
	f.BoolVar(&o.summaryOnly, "summary-only", false, "print only the per-file summary")
	return cmd
}

func runDecode(cmd *cobra.Command, o *decodeOpts, files []string) error {
	v, err := wire.ParseVersion(o.wire)
	if err != nil {
		return usageErr(fmt.Errorf("--wire: %w", err))
	}
	if o.output != "text" && o.output != "json" {
		return usageErr(fmt.Errorf("-o %q: want text or json", o.output))
	}
	if o.ipv6Shift != 0 && o.ipv6Shift != 4 && o.ipv6Shift != 5 {
		return usageErr(fmt.Errorf("--ipv6-prio-shift %d: want 4 or 5 (or 0 for auto)", o.ipv6Shift))
	}
	// Open every file first, so a bad path fails before any output.
	readers := make([]*pcap.Reader, 0, len(files))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for _, name := range files {
		r, err := pcap.Open(name, pcap.ReaderOptions{Version: v, IPv6PriorityShift: o.ipv6Shift})
		if err != nil {
			return usageErr(fmt.Errorf("cannot read capture %v (want a pcap or pcapng file)", err))
		}
		readers = append(readers, r)
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	defer w.Flush()
	for i, r := range readers {
		name := files[i]
		if len(files) > 1 && o.output == "text" && !o.summaryOnly {
			fmt.Fprintf(w, "== %s\n", name)
		}
		st, err := decodeFile(w, r, name, len(files) > 1, o)
		if err != nil {
			w.Flush()
			return usageErr(fmt.Errorf("%s: %w (capture damaged or cut short?)", name, err))
		}
		if o.output == "json" {
			writeJSONSummary(w, name, st)
		} else {
			fmt.Fprintln(w, summaryLine(name, st))
		}
	}
	return nil
}

func decodeFile(w *bufio.Writer, r *pcap.Reader, name string, multi bool, o *decodeOpts) (pcap.Stats, error) {
	var start time.Time
	first := true
	var segs []wire.Segment
	var line []byte
	enc := json.NewEncoder(w)
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Stats(), nil
		}
		if err != nil {
			return r.Stats(), err
		}
		if first {
			start, first = f.Time, false
		}
		if o.summaryOnly {
			continue
		}
		segs = segs[:0]
		if f.Err == nil && f.Packet.Type() == wire.TypeData {
			var serr error
			segs, serr = f.Packet.Data().Segments(segs, f.MaxSegData())
			if serr != nil {
				f.Err = serr
				segs = segs[:0]
			}
		}
		if len(segs) == 0 {
			segs = append(segs, wire.Segment{})
		}
		for i, s := range segs {
			if o.output == "json" {
				j := f.JSON(start, s, i, len(segs))
				if multi {
					j.File = name
				}
				if err := enc.Encode(j); err != nil {
					return r.Stats(), err
				}
				continue
			}
			line = f.AppendText(line[:0], start, s, i, len(segs))
			line = append(line, '\n')
			w.Write(line)
		}
	}
}

func summaryLine(name string, st pcap.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d frames, %d Homa:", name, st.Frames, st.Homa)
	for i, t := range wire.AllTypes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %d", t, st.Count(t))
		if t == wire.TypeData {
			fmt.Fprintf(&b, " (retransmit %d)", st.Retransmits)
		}
	}
	fmt.Fprintf(&b, "; %d decode errors; %d other", st.DecodeErrors, st.NonHoma())
	if len(st.Other) > 0 {
		keys := make([]string, 0, len(st.Other))
		for k := range st.Other {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, st.Other[k])
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if st.Truncated > 0 {
		fmt.Fprintf(&b, "; %d Homa frames cut by the snap length", st.Truncated)
	}
	return b.String()
}

func writeJSONSummary(w io.Writer, name string, st pcap.Stats) {
	types := map[string]int{}
	for _, t := range wire.AllTypes {
		types[t.String()] = st.Count(t)
	}
	other := st.Other
	if other == nil {
		other = map[string]int{}
	}
	json.NewEncoder(w).Encode(map[string]any{"summary": map[string]any{
		"file": name, "frames": st.Frames, "homa": st.Homa, "types": types,
		"retransmits": st.Retransmits, "decode_errors": st.DecodeErrors,
		"truncated": st.Truncated, "other": other, "other_total": st.NonHoma(),
	}})
}
