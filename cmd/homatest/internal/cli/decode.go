package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

type decodeOpts struct {
	wire        string
	output      string
	ipv6Shift   int
	summaryOnly bool
	rpc         string
	sel         *rpcSelector // parsed --rpc; nil: every packet
	// selClients are the clients of the RPCs --rpc matched in the file
	// being decoded, in the order first seen: more than one when several
	// clients used the id and no @CLIENT was given.
	selClients []netip.Addr
	// live is set while a stream (pcap.IsStream) is decoded: each
	// packet's lines are flushed as they are printed.
	live bool
}

func newDecodeCmd() *cobra.Command {
	o := &decodeOpts{}
	cmd := &cobra.Command{
		Use:   "decode FILE...",
		Short: "Print every Homa packet of pcap/pcapng captures",
		Long: `Decode prints one line per Homa packet of each capture (pcap or pcapng;
Ethernet, VLAN, Linux cooked SLL/SLL2, BSD loopback or raw IP link types; "-"
reads standard input): frame number, seconds since the file's first Homa
packet, src:port > dst:port, priority pN (from the IP precedence bits), packet
type, sender id, then the type's fields. Multi-segment GSO DATA frames are
split into one line per segment (frame.N).

Homa is recognised as IP protocol 146, 253 and TCP segments carrying
HomaModule's hijack marks (flags 0x06, urgent 0xB97D). Other frames are
counted and skipped. A summary line per file gives the counts per type.

Wire formats (--wire):
  auto      pick per packet: IP protocol 253 → 2024; a 90-byte ACK → 2024;
            a 34-byte GRANT → 2025; no 0x06/0xB97D marks → upstream; else
            current
  current   HomaModule main / linux_6.13.9 (IP protocol 146): GRANT 33 bytes,
            ACK 80 bytes
  2024      HomaModule linux_6.1.38 (IP protocol 253): GRANT 34 bytes with
            resend_all, ACK 90 bytes, DATA acks with client_port
  upstream  the Linux-upstream subset: no GRANT/CUTOFFS/FREEZE, RESEND 36
            bytes; incoming and cutoff_version are reserved fields
  2025      HomaModule main 2024-12..2025-07 and linux_6.10.6 (IP protocol
            146): as current, but GRANT 34 bytes with resend_all

IPv6 priority: HomaModule wrote priority<<4 into the traffic class until
Nov 2025 (linux_6.1.38, linux_6.13.9) and priority<<5 since, and a capture
may hold both. By default each host's shift is taken from its IPv6 Homa
packets whose traffic class only one shift can produce (e.g. control
packets, always at level 7: 0x70 or 0xE0); a host that sent none is printed
with its format's usual shift (4 for the 2024 and 2025 formats, else 5),
then the other reading: p3/6 (JSON priority_or).
--ipv6-prio-shift forces one shift for every host.

--rpc ID or ID@CLIENT prints only the packets of that RPC (the client's id
as homatest rpcs prints it; @CLIENT names the client's address when several
clients used the id, bare or as rpcs prints it: 4@fd00::1, 4@[fd00::1]:32768): its DATA, GRANTs, RESENDs, ... in both directions. The
summary line still counts the whole file, and says how many packets matched;
where several clients used the id and no @CLIENT was given, it prints the
packets of all of them and the summary names the clients (-o json:
rpc_clients), as plot asks for ID@CLIENT there.

A capture of switch ports in both directions (homatest run's and scenario
run's capture.pcapng, directions in epb_flags) prints every frame, but its
summary, with or without --summary-only, counts each packet once, as sent
(the frames as delivered show as "other direction"; --rpc's count too),
and a packet of a host without a port of its own in the capture (a tester
in explore's one-port failure capture) as delivered.
It also counts the Homa frames that repeat an earlier frame byte for byte
at the same instant and capture point ("N Homa frames repeat an earlier
frame ...", JSON same_instant_copies): many of them mean the capture
doubled its frames (a file merged with itself; editcap -d removes them).

A frame the snap length cut (tcpdump -s N) is read as homatest check
reads it: an ACK that lost only the acks slots past num_acks prints as the
ACK it was, "[snap length cut only unused acks slots]" (JSON: its header,
"snap_cut": true), and counts as an ACK, not as a decode error; a header
cut after its common header prints "TYPE id N [Homa header cut by the snap
length: ...]". The summary advises re-capturing only when a header lost a
field.

A capture cut short (e.g. tcpdump killed mid-write) is decoded up to the
damage, its summary says where it stopped, and the exit code is 2. With
several FILEs every one is decoded: one that cannot be read gets a line
"FILE: ERROR: ..." in its summary's place (JSON: a summary with "error"),
and the exit code is 2 at the end, the error line naming each bad file.

Exit codes: 0 decoded; 2 bad input (a bad flag, a capture that cannot be
read, is cut short or damaged, or holds no Homa packet: its summary is
printed, then the error line, as homatest rpcs and check exit 2 on it; an
--rpc with no packet in the files) or output that could not be written;
130 interrupted (the packets printed before it stay).`,
		Example: `  # decode a capture
  homatest decode capture.pcap

  # one JSON object per packet, then a summary object
  homatest decode -o json capture.pcapng | jq 'select(.type=="GRANT")'

  # force the 2022-2024 (linux_6.1.38) header layouts
  homatest decode --wire 2024 old.pcap

  # one RPC: its packets in both directions (ids as homatest rpcs prints them)
  homatest decode --rpc 4 capture.pcap
  homatest decode --rpc 4@10.0.0.11 capture.pcap

  # counts only, for several files
  homatest decode --summary-only a.pcap b.pcap

  # live from tcpdump: each packet printed as it comes (-U: tcpdump writes
  # each packet at once; a stream's IPv6 shifts are not read ahead)
  tcpdump -U -i veth0 -w - 'ip proto 146' | homatest decode -`,
		Args: captureArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDecode(cmd, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.wire, "wire", "auto", "wire format: auto, current, 2024, upstream or 2025 (see above)")
	outputVar(f, &o.output, "json is one object per packet and one per file", "text", "json")
	f.IntVar(&o.ipv6Shift, "ipv6-prio-shift", 0, "shift of the priority in the IPv6 traffic class: 4 or 5; 0 = detect")
	wantValue(f, "ipv6-prio-shift", ipv6ShiftWant)
	f.BoolVar(&o.summaryOnly, "summary-only", false, "print only the per-file summary")
	f.StringVar(&o.rpc, "rpc", "", "print only the packets of this RPC: ID or ID@CLIENT (the client's id, as homatest rpcs prints it, or its server's sender_id, the client's id + 1); not empty")
	return cmd
}

// ipv6ShiftWant says what --ipv6-prio-shift takes.
const ipv6ShiftWant = "4 (HomaModule before 548056f) or 5 (since), or 0 to detect"

func runDecode(cmd *cobra.Command, o *decodeOpts, files []string) error {
	v, err := wire.ParseVersion(o.wire)
	if err != nil {
		return usageErr(fmt.Errorf("--wire: %w", err))
	}
	if o.ipv6Shift != 0 && o.ipv6Shift != 4 && o.ipv6Shift != 5 {
		return usageErr(fmt.Errorf("--ipv6-prio-shift %d: want %s", o.ipv6Shift, ipv6ShiftWant))
	}
	if cmd.Flags().Changed("rpc") && strings.TrimSpace(o.rpc) == "" {
		return usageErr(errors.New("--rpc \"\": empty; give an RPC id as homatest rpcs prints it (--rpc 4) or ID@CLIENT (--rpc 4@10.0.0.11), or drop --rpc to print every packet"))
	}
	if o.rpc != "" {
		sel, err := parseRPCSelector(o.rpc, false)
		if err != nil {
			return usageErr(err)
		}
		o.sel = &sel
	}
	// Every file is decoded in turn: among several, one that cannot be
	// read gets a one-line error in its summary's place (a single file
	// has only the error line), and the exit is 2 at the end (as homatest
	// check does).
	ew := &errWriter{w: cmd.OutOrStdout()}
	w := bufio.NewWriterSize(ew, 1<<16)
	var unreadable, damaged []string
	matched := 0
	for _, name := range files {
		if len(files) > 1 && o.output == "text" && !o.summaryOnly {
			fmt.Fprintf(w, "== %s\n", name)
		}
		o.selClients = o.selClients[:0]
		st, n, rerr, oerr := decodeInputFile(cmd.Context(), w, name, v, len(files) > 1, o)
		if err := interruptedRead(cmd.Context(), nil); err != nil {
			w.Flush() // the packets printed before it: decode's output is a stream
			return err
		}
		matched += n
		if oerr != nil {
			unreadable = append(unreadable, oerr.Error())
			if len(files) == 1 {
				break
			}
			rerr = oerr
		} else if rerr != nil {
			// The one line of a damaged capture every command gives.
			var d *pcap.DamagedError
			if !errors.As(rerr, &d) {
				d = &pcap.DamagedError{Path: name, Frames: st.Frames, Err: rerr}
			}
			damaged = append(damaged, d.Error())
		} else if st.Homa == 0 {
			// Nothing to decode is bad input, as rpcs and check say (exit
			// 2): decode said so in its summary only and exited 0.
			unreadable = append(unreadable, pcap.NoHomaError(name, st).Error())
		}
		switch {
		case o.output == "json":
			sum := st.JSONSummary(name, rerr)
			if o.sel != nil {
				sum.RPCPackets = &n
			}
			out := map[string]any{"summary": sum}
			if o.sel != nil {
				if len(o.selClients) > 1 {
					out["rpc_clients"] = o.selClients // several RPCs matched: one per client
				}
			}
			json.NewEncoder(w).Encode(out)
		case oerr != nil:
			fmt.Fprintf(w, "%s: ERROR: %v\n", name, oerr)
		default:
			line := st.Summary(name, rerr)
			if o.sel != nil {
				line += fmt.Sprintf("; %s of RPC %s", plural.Of(n, "packet", "packets"), o.rpc)
				if len(o.selClients) > 1 {
					// plot refuses such an id; decode prints them all and says so.
					line += " (" + o.sel.several(o.selClients) + ")"
				}
			}
			fmt.Fprintln(w, line)
		}
		if ew.err != nil {
			break
		}
	}
	w.Flush()
	if ew.err != nil {
		return usageErr(fmt.Errorf("write output: %w", ew.err))
	}
	if len(damaged) > 0 {
		unreadable = append(unreadable, damaged...) // the packets before the damage were decoded
	}
	if len(unreadable) > 0 {
		return usageErr(errors.New(strings.Join(unreadable, "; ")))
	}
	if o.sel != nil && matched == 0 {
		return usageErr(fmt.Errorf("--rpc %s: no packet of that RPC in %s (homatest rpcs lists the RPCs)", o.rpc, strings.Join(files, ", ")))
	}
	return nil
}

// decodeInputFile decodes the capture name (wire version v) into w and
// returns its summary's counts, the number of packets of o.sel, the error
// that stopped the read early (a damaged or cut file), and the error that
// kept the file from being read at all (one line naming it). Once ctx has
// ended it stops within a batch of frames.
func decodeInputFile(ctx context.Context, w *bufio.Writer, name string, v wire.Version, multi bool, o *decodeOpts) (st pcap.Stats, n int, rerr, oerr error) {
	ro := pcap.ReaderOptions{Version: v, IPv6PriorityShift: uint8(o.ipv6Shift), Context: ctx}
	live := pcap.IsStream(name)
	if ro.IPv6PriorityShift == 0 && !live {
		// A stream is printed as it comes: its hosts' shifts are not
		// read ahead (each shows its format's usual shift and the other
		// reading, or give --ipv6-prio-shift).
		ro.IPv6HostShifts = pcap.DetectPathShifts(name, ro)
	}
	in, err := openDecodeInput(name, ro, !o.summaryOnly)
	if err != nil {
		return st, 0, nil, pcap.OpenError(name, err)
	}
	defer in.close()
	o.live = live
	if in.show != nil {
		decodeFile(w, in.show, name, multi, o, true)
	}
	st, n, rerr = decodeFile(w, in.count, name, multi, o, in.show == nil && !o.summaryOnly)
	return st, n, rerr, nil
}

// decodeInput is one capture decode reads: count reads each packet once,
// as sent, else as delivered (check.SentView), and its stats and --rpc matches are the file's
// summary, with or without --summary-only; show, set only for a capture
// of switch ports in both directions when packets are printed, reads
// every frame for printing.
type decodeInput struct {
	name        string
	show, count *pcap.Reader
}

// openDecodeInput opens the capture name with options ro; show asks for
// the packets to be printed.
func openDecodeInput(name string, ro pcap.ReaderOptions, show bool) (decodeInput, error) {
	in := decodeInput{name: name}
	cro, ports := check.SentView(ro.Context, name, ro)
	var err error
	if in.count, err = pcap.OpenPath(name, cro); err != nil {
		return in, err
	}
	if show && ports {
		if in.show, err = pcap.OpenPath(name, ro); err != nil {
			in.close()
			return in, err
		}
	}
	return in, nil
}

func (in decodeInput) close() {
	for _, r := range []*pcap.Reader{in.show, in.count} {
		if r != nil {
			r.Close()
		}
	}
}

// decodeFile reads r and, when print is set, prints its packets (those of
// RPC o.sel when set). It returns r's counts, the number of packets of
// o.sel, and the error that stopped it early (a damaged or cut file), if
// any.
func decodeFile(w *bufio.Writer, r *pcap.Reader, name string, multi bool, o *decodeOpts, print bool) (pcap.Stats, int, error) {
	matched := 0
	var start time.Time
	first := true
	var line []byte
	enc := json.NewEncoder(w)
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Stats(), matched, nil
		}
		if err != nil {
			return r.Stats(), matched, err
		}
		if first {
			start, first = f.Time, false
		}
		if o.sel != nil {
			if !o.sel.matchesFrame(f) {
				continue
			}
			matched++
			if c := wire.KeyOf(f.Src, f.Dst, f.Packet.SenderID()).Client.Unmap(); !slices.Contains(o.selClients, c) {
				o.selClients = append(o.selClients, c)
			}
		}
		if !print {
			continue
		}
		for i := range max(1, len(f.Segments)) {
			if o.output == "json" {
				j := f.JSON(start, i)
				if multi {
					j.File = name
				}
				if err := enc.Encode(j); err != nil {
					return r.Stats(), matched, nil // a write error; runDecode reports it
				}
				continue
			}
			line = f.AppendText(line[:0], start, i)
			line = append(line, '\n')
			w.Write(line)
		}
		if o.live {
			w.Flush() // a live capture (tcpdump -U -w - | decode -) shows each packet as it comes
		}
	}
}
