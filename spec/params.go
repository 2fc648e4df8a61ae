package spec

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Params are the protocol parameters a trace is judged against. Names in
// `param` tags are HomaModule's sysctl names (net.homa.<name>) where one
// exists; units are in the field names or docs. Every value can be
// overridden with Set.
type Params struct {
	// Wire is the wire format version (decoding and layout rules).
	Wire wire.Version `param:"wire"`
	// UnschedBytes is unsched_bytes: bytes a sender may send before any
	// GRANT (U = min(length, UnschedBytes)).
	UnschedBytes uint32 `param:"unsched_bytes"`
	// MaxIncoming is max_incoming in bytes: the bound on granted but not
	// yet received bytes over all messages a receiver grants.
	MaxIncoming uint32 `param:"max_incoming"`
	// MaxOvercommit is max_overcommit: messages granted at once.
	MaxOvercommit int `param:"max_overcommit"`
	// MaxRPCsPerPeer is max_rpcs_per_peer: messages from one sending host
	// a receiver may be granting at once while more from that host wait
	// (homa_grant.c homa_grant_manage_rpc; 1 on linux_6.1.38, net-next,
	// linux_6.13.9, linux_4.18.0 and main before 3daedc3, 2026-05-21).
	// 0 = no per-host limit (main since 3daedc3). A waiting message is
	// excused, never required, so the profiles keep 1 to accept both.
	MaxRPCsPerPeer int `param:"max_rpcs_per_peer"`
	// Window is the grant window in bytes; 0 = dynamic
	// (max_incoming/(active+1), HomaModule main since 2026-05).
	Window uint32 `param:"window"`
	// NumPriorities is num_priorities (1..8).
	NumPriorities int `param:"num_priorities"`
	// MaxSchedPrio is max_sched_prio: the highest scheduled level.
	MaxSchedPrio int `param:"max_sched_prio"`
	// UnschedCutoffs is unsched_cutoffs: entry i is the largest message
	// length (bytes) that uses unscheduled priority i.
	UnschedCutoffs [8]uint32 `param:"unsched_cutoffs"`
	// CutoffVersion is cutoff_version of the hosts' cutoffs.
	CutoffVersion uint16 `param:"cutoff_version"`
	// FIFOGrantIncrement is fifo_grant_increment in bytes (0: no FIFO grants).
	FIFOGrantIncrement uint32 `param:"fifo_grant_increment"`
	// GrantFIFOFraction is grant_fifo_fraction in thousandths: the share
	// of link_mbps FIFO grants may take (0: no FIFO grants; HomaModule
	// caps it at 500). With FIFOGrantIncrement and LinkMbps it spaces a
	// receiver's FIFO grants (FIFOGrantInterval).
	GrantFIFOFraction int `param:"grant_fifo_fraction"`
	// LinkMbps is link_mbps, the link rate in Mbit/s a HomaModule host is
	// configured with (homa_grant_update_sysctl_deps derives the FIFO
	// grant interval from it; not the wire's rate).
	LinkMbps int `param:"link_mbps"`
	// MaxGSOSize is max_gso_size in bytes: no skb (GSO batch) a sender
	// transmits carries more data, so a sender may overshoot a grant by
	// less than this (HomaModule main defaults to 0, i.e. one MTU; 10000 is
	// the lab setting and the 2024 default, and the larger is assumed).
	MaxGSOSize uint32 `param:"max_gso_size"`
	// MaxGROSkbs is max_gro_skbs: the most packets a receiver's
	// homa_gro_receive merges into one skb, which homa_softirq hands to
	// homa_dispatch_pkts as one batch, one grant decision per RPC
	// (HomaModule homa_offload.c, homa_utils.c: 20; HOMA-GRANT-024).
	// 0 stands for that default.
	MaxGROSkbs int `param:"max_gro_skbs"`
	// MTU is the hosts' link MTU in bytes (dst_mtu): a DATA segment
	// carries at most max_seg_data = MTU - IP header - 56 bytes
	// (HomaModule homa_outgoing.c homa_message_out_fill).
	MTU uint32 `param:"mtu"`
	// IPv6PrioShift is the shift that puts the priority into the IPv6
	// traffic class: 5 on HomaModule main since 548056f (2025-11-18), 4
	// before and on linux_6.1.38; 0 means either (the capture's own, as
	// the reader infers it).
	IPv6PrioShift uint8 `param:"ipv6_prio_shift"`
	// RankTolerance is how many bytes of "remaining" two messages may
	// differ by before an inverted SRPT ranking counts (main ranks with a
	// cached copy of bytes remaining).
	RankTolerance uint32 `param:"rank_tolerance"`
	// DeferMinBytes is defer_min_bytes in bytes (HomaModule main
	// homa_qdisc.c; throttle_min_bytes before it, homa_utils.c): a message
	// with more bytes left than this is paced, its packets queued in SRPT
	// order while the uplink is backlogged (SND-04); a shorter one goes
	// out at once.
	DeferMinBytes uint32 `param:"defer_min_bytes"`
	// MaxMessageLength is HOMA_MAX_MESSAGE_LENGTH in bytes.
	MaxMessageLength uint32 `param:"max_message_length"`
	// ZeroedHeaders is 1 when the implementation zeroes the header bytes
	// it leaves unused (HomaModule main since 71e14d8 for control
	// packets and 2bb8413 for DATA; the reference implementation, whose
	// hello says so): nonzero ones are then HOMA-WIRE-009 violations. 0,
	// every profile's value: inconclusive, as linux_6.13.9 and earlier
	// builds send those bytes as the stack or skb memory held them.
	ZeroedHeaders int `param:"zeroed_headers"`
	// Tick is the timer tick (nominally 1 ms).
	Tick time.Duration `param:"tick"`
	// ResendTicks is resend_ticks: silence (ticks) before the first RESEND.
	ResendTicks int `param:"resend_ticks"`
	// ResendInterval is resend_interval: ticks between RESEND rounds.
	ResendInterval int `param:"resend_interval"`
	// TimeoutTicks is timeout_ticks: silence (ticks) before an RPC aborts.
	TimeoutTicks int `param:"timeout_ticks"`
	// RequestAckTicks is request_ack_ticks: ticks after a response is sent
	// before the first NEED_ACK.
	RequestAckTicks int `param:"request_ack_ticks"`
	// MaxAcksPerPkt is HOMA_MAX_ACKS_PER_PKT.
	MaxAcksPerPkt int `param:"max_acks_per_pkt"`
	// Slack is the timing tolerance added to every time bound (scheduling
	// delay of the timer thread, capture timestamp noise).
	Slack time.Duration `param:"slack"`
	// Jitter bounds capture timestamp noise and the time a packet needs
	// between the capture point and its host; rules that forbid something
	// happening too EARLY (a RESEND before resend_ticks) allow only this,
	// since timer delays only make things later.
	Jitter time.Duration `param:"jitter"`
	// ResponseTimeout bounds how long a RESEND may wait for its answer
	// (DATA, BUSY or RPC_UNKNOWN).
	ResponseTimeout time.Duration `param:"response_timeout"`
	// TimerDrift is how much longer than tick a timer pass may come, as a
	// fraction of the ticks waited (0.5: 50 %): HomaModule re-arms its
	// hrtimer after each pass and runs it from a kernel thread, so under
	// load ticks stretch. Rules that forbid something happening too LATE
	// (a RESEND round, a NEED_ACK repeat) allow it on top of slack.
	TimerDrift float64 `param:"timer_drift"`
	// Reaction is how long a packet seen delivered to a host may take to
	// reach the host's protocol code: a timer pass running meanwhile
	// decides without it. Judge.Hosts excuses a timing finding at a
	// packet a host sent less than Reaction after a packet of the same RPC
	// was delivered to it (the view cannot order the two), and
	// HOMA-RESEND-001 judges a RESEND less than Reaction after the peer's
	// packet by the silence before that packet. 0: none (the capture's
	// order is the hosts' own, as in the simulator). The profiles' 200 µs
	// is HomaModule's own race: its timer holds the RPC's lock while it
	// decides, and a packet that arrived meanwhile waits for it
	// (homa_timer_check_rpc, homa_dispatch_pkts).
	Reaction time.Duration `param:"reaction"`
}

// Profile is a named set of parameters.
type Profile struct {
	// Name as given to --profile.
	Name string
	// Description in one line.
	Description string
	// Params are the defaults of the profile.
	Params Params
	// Inert names the parameters whose sysctl that HomaModule version has
	// but never acts on, each with why: an IUT's hello reporting one does
	// not override the profile's value (its FIFO GRANT specs are then
	// unsupported for that reason, not run on a value the module ignores).
	Inert map[string]string
}

// Profiles returns the built-in profiles: linux (HomaModule main), linux-2024
// (branch linux_6.1.38), linux-2025 (main 2024-12..2025-07, branch
// linux_6.10.6) and upstream (the stripped upstream subset).
func Profiles() []Profile {
	linux := Params{
		Wire: wire.VersionCurrent, UnschedBytes: 40000, MaxIncoming: 400000, MaxOvercommit: 8, MaxRPCsPerPeer: 1,
		Window: 0, NumPriorities: 8, MaxSchedPrio: 3,
		UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 1,
		FIFOGrantIncrement: 50000, GrantFIFOFraction: 50, LinkMbps: 25000, MaxGSOSize: 10000, MaxGROSkbs: 20, MTU: 1500, RankTolerance: 20000, DeferMinBytes: 1000, MaxMessageLength: wire.MaxMessageLength,
		Tick: time.Millisecond, ResendTicks: 5, ResendInterval: 5, TimeoutTicks: 100, RequestAckTicks: 2,
		MaxAcksPerPkt: wire.MaxAcksPerPkt, Slack: 2 * time.Millisecond, Jitter: 200 * time.Microsecond, ResponseTimeout: 20 * time.Millisecond,
		TimerDrift: 0.5, Reaction: 200 * time.Microsecond,
	}
	l2024 := linux
	l2024.Wire, l2024.UnschedBytes, l2024.Window, l2024.FIFOGrantIncrement = wire.Version2024, 10000, 10000, 0
	l2024.IPv6PrioShift = 4 // linux_6.1.38 never had 548056f
	// linux_6.1.38 paces a message with throttle_min_bytes (200) or more
	// left (homa_utils.c, homa_outgoing.c homa_xmit_data: >=), so more
	// than 199; the 2025 format's releases are taken to do the same, the
	// smaller bound excusing more.
	l2024.DeferMinBytes = 199
	// main be127d8..04df9e0 and linux_6.10.6: unsched_bytes 40000 since
	// ef09002 (2024-12-16); window 100000 from ef09002, 10000 from
	// 2025-04-18 (the larger bounds GRANT-009); FIFO grants disabled
	// (homa_grant.c homa_choose_fifo_grant unused until 22f6b68).
	l2025 := l2024
	l2025.Wire, l2025.UnschedBytes, l2025.Window = wire.Version2025, 40000, 100000
	up := linux
	up.Wire, up.NumPriorities, up.MaxSchedPrio, up.FIFOGrantIncrement = wire.VersionUpstream, 1, 0, 0
	up.UnschedBytes = wire.MaxMessageLength // no grants: everything is unscheduled
	up.MaxRPCsPerPeer = 0
	up.UnschedCutoffs = [8]uint32{}
	// linux_6.1.38 and main before 22f6b68 keep the fifo_grant_increment
	// sysctl (and homa_choose_fifo_grant, its reader), but nothing calls
	// homa_choose_fifo_grant: no FIFO GRANT is ever sent.
	noFIFO := map[string]string{"fifo_grant_increment": "makes no FIFO GRANTs whatever its fifo_grant_increment sysctl says (homa_choose_fifo_grant, its only reader, is never called)"}
	return []Profile{
		{"linux", "HomaModule main (IP protocol 146): unsched_bytes 40000, dynamic window, 8 priorities", linux, nil},
		{"linux-2024", "HomaModule linux_6.1.38 (IP protocol 253): unsched_bytes 10000, window 10000, no FIFO grants", l2024, noFIFO},
		{"linux-2025", "HomaModule main 2024-12..2025-07 and linux_6.10.6 (IP protocol 146, GRANT with resend_all): unsched_bytes 40000, window 100000, no FIFO grants", l2025, noFIFO},
		{"upstream", "Linux upstream subset: no GRANT/CUTOFFS/FREEZE, no priorities, whole messages unscheduled", up, nil},
	}
}

// ProfileForWire returns the name of the profile of wire format v:
// linux-2024 for the 2024 format, linux-2025 for the 2025 one, upstream
// for the upstream subset, linux for the current format.
func ProfileForWire(v wire.Version) string {
	switch v {
	case wire.Version2024:
		return "linux-2024"
	case wire.Version2025:
		return "linux-2025"
	case wire.VersionUpstream:
		return "upstream"
	}
	return "linux"
}

// LookupProfile returns the profile called name, or an error listing the
// valid names.
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("unknown profile %q: want one of %s", name, strings.Join(names, ", "))
}

// ParamNames returns the settable parameter names in sorted order.
func ParamNames() []string {
	t := reflect.TypeOf(Params{})
	var n []string
	for i := range t.NumField() {
		n = append(n, t.Field(i).Tag.Get("param"))
	}
	sort.Strings(n)
	return n
}

// Get returns the value of parameter name as text, as Set accepts it.
func (p *Params) Get(name string) (string, error) {
	v, err := p.field(name)
	if err != nil {
		return "", err
	}
	switch x := v.Interface().(type) {
	case wire.Version:
		return x.String(), nil
	case time.Duration:
		return x.String(), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case [8]uint32:
		s := make([]string, len(x))
		for i, c := range x {
			s[i] = strconv.FormatUint(uint64(c), 10)
		}
		return strings.Join(s, ","), nil
	default:
		return fmt.Sprint(x), nil
	}
}

func (p *Params) field(name string) (reflect.Value, error) {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("param") == name {
			return v.Field(i), nil
		}
	}
	hint := ""
	if base, ok := strings.CutSuffix(name, "_ns"); ok {
		// The agents' hello names the tick tick_ns; the checker's is a
		// duration.
		if _, err := p.field(base); err == nil {
			hint = fmt.Sprintf(" (did you mean %s, a duration such as 5ms?)", base)
		}
	}
	if near := CloseNames(name, append(ParamNames(), "tick_ns", "link_bps")); hint == "" && len(near) > 0 {
		hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	}
	return reflect.Value{}, fmt.Errorf("unknown parameter %q%s (known: %s)", name, hint, strings.Join(ParamNames(), ", "))
}

// Set sets parameter name from text (Assign) and checks the whole set
// (Validate). Errors name the parameter and the expected form. To set
// several parameters that must agree (num_priorities and
// max_sched_prio), Assign each and Validate once: one at a time, the
// first set is checked against the other's old value.
func (p *Params) Set(name, value string) error {
	if err := p.Assign(name, value); err != nil {
		return err
	}
	return p.Validate()
}

// CanonicalParam returns the checker's name of parameter name: tick for
// the agents' tick_ns, link_mbps for link_bps, name itself otherwise.
func CanonicalParam(name string) string {
	switch name {
	case "tick_ns":
		return "tick"
	case "link_bps":
		return "link_mbps"
	}
	return name
}

// maxTick bounds the tick: HomaModule's is 1 ms, and a tick of hours
// times timeout_ticks overflows a time.Duration (negative deadlines).
const maxTick = time.Hour

// Assign sets parameter name from text: integers in decimal, durations
// as Go durations ("1ms", "250us"), unsched_cutoffs as 8 comma-separated
// byte counts, wire as a wire version name. It checks the value alone,
// not against the other parameters: call Validate after the last.
// Errors name the parameter and the expected form.
func (p *Params) Assign(name, value string) error {
	// The agents' names (homatest run and explore's --param, an IUT's
	// hello) are aliases of the checker's: one vocabulary for every command.
	switch name {
	case "tick_ns":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("parameter tick_ns: %q is not a positive whole number of nanoseconds (or give tick=1ms)", value)
		}
		return p.Assign("tick", value+"ns")
	case "link_bps":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return fmt.Errorf("parameter link_bps: %q is not a whole number of bit/s from 0 to 2^40 (or give link_mbps=1000)", value)
		}
		// Rounded up to whole Mbit/s, as an IUT's hello is
		// (agent.Params.Spec): a faster link paces FIFO grants closer,
		// so the checker expects no fewer than the IUT may send.
		return p.Assign("link_mbps", strconv.FormatInt((n+999_999)/1_000_000, 10))
	}
	f, err := p.field(name)
	if err != nil {
		return err
	}
	switch f.Interface().(type) {
	case wire.Version:
		v, err := wire.ParseVersion(value)
		if err != nil {
			return fmt.Errorf("parameter wire: %w", err)
		}
		f.Set(reflect.ValueOf(v))
	case time.Duration:
		d, err := time.ParseDuration(value)
		switch {
		case err != nil:
			return fmt.Errorf("parameter %s: %q is not a duration such as 1ms or 250us", name, value)
		case name == "tick" && d <= 0: // Validate's rule, said here with the value
			return fmt.Errorf("parameter tick: %q: the tick must be positive, e.g. 10ms", value)
		case d < 0:
			return fmt.Errorf("parameter %s: %q is negative: it must be 0 or positive, e.g. 1ms", name, value)
		}
		f.SetInt(int64(d))
	case float64:
		x, err := strconv.ParseFloat(value, 64)
		// !(0 <= x <= 10) also refuses NaN, which no comparison catches.
		if err != nil || !(x >= 0 && x <= 10) {
			return fmt.Errorf("parameter %s: %q is not a fraction between 0 and 10 such as 0.5", name, value)
		}
		f.SetFloat(x)
	case [8]uint32:
		parts := strings.Split(value, ",")
		if len(parts) != 8 {
			return fmt.Errorf("parameter %s: want 8 comma-separated byte counts, got %d values", name, len(parts))
		}
		var a [8]uint32
		for i, s := range parts {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
			if err != nil {
				return fmt.Errorf("parameter %s: entry %d %q is not a byte count", name, i, s)
			}
			a[i] = uint32(n)
		}
		f.Set(reflect.ValueOf(a))
	default:
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			// The field still holds the profile's value: an example.
			cur := fmt.Sprint(f.Interface())
			return fmt.Errorf("parameter %s: %q is not a whole number ≥ 0: give one such as %s=%s (the profile's; homatest spec params lists them)", name, value, name, cur)
		}
		if f.Kind() == reflect.Int {
			if n > 1<<31 {
				return fmt.Errorf("parameter %s: %d is too large", name, n)
			}
			f.SetInt(int64(n))
		} else {
			if f.OverflowUint(n) {
				return fmt.Errorf("parameter %s: %d is too large", name, n)
			}
			f.SetUint(n)
		}
	}
	return nil
}

// Validate checks the parameters for consistency: 1..8 priorities,
// max_sched_prio below num_priorities, positive tick, an MTU of at least
// 576 bytes, an IPv6 priority shift of 4, 5 or 0.
func (p *Params) Validate() error {
	switch {
	case p.NumPriorities < 1 || p.NumPriorities > wire.MaxPriorities:
		return fmt.Errorf("parameter num_priorities: %d is not in 1..8", p.NumPriorities)
	case p.MaxSchedPrio >= p.NumPriorities:
		// Both may come from different places (the profile's
		// max_sched_prio, a --param num_priorities): name the fix.
		return fmt.Errorf("parameter max_sched_prio: %d must be below num_priorities %d: %s", p.MaxSchedPrio, p.NumPriorities, wire.MaxSchedPrioFix(p.MaxSchedPrio, p.NumPriorities))
	case p.Tick <= 0:
		return fmt.Errorf("parameter tick: must be positive")
	case p.Tick > maxTick:
		return fmt.Errorf("parameter tick: %v is above %v (HomaModule's tick is 1ms)", p.Tick, maxTick)
	case p.MTU < 576:
		return fmt.Errorf("parameter mtu: %d is below 576, the smallest MTU an IP host must accept", p.MTU)
	case p.IPv6PrioShift != 0 && p.IPv6PrioShift != 4 && p.IPv6PrioShift != 5:
		return fmt.Errorf("parameter ipv6_prio_shift: %d: want 4 (HomaModule before 548056f), 5 (since) or 0 (either, told per host)", p.IPv6PrioShift)
	}
	return nil
}

// WriteFile writes every parameter of p as NAME=VALUE lines after a
// "# comment" line: the sidecar path (a capture's name plus ".params")
// that homatest check reads before its --param flags.
func (p *Params) WriteFile(path, comment string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", comment)
	vals := p.Values()
	for _, n := range ParamNames() {
		fmt.Fprintf(&b, "%s=%s\n", n, vals[n])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Values returns every parameter of p by name (ParamNames), each in the
// form Set takes.
func (p *Params) Values() map[string]string {
	out := make(map[string]string, len(ParamNames()))
	for _, n := range ParamNames() {
		if v, err := p.Get(n); err == nil {
			out[n] = v
		}
	}
	return out
}

// Unsched returns a message's unscheduled bytes U = min(length,
// unsched_bytes).
func (p *Params) Unsched(length uint32) uint32 { return min(length, p.UnschedBytes) }

// GrantWindow returns the largest window, in bytes, a receiver may grant
// one message beyond what it received: WindowFor(1), max_incoming/2 when
// window is dynamic.
func (p *Params) GrantWindow() uint32 { return p.WindowFor(1) }

// WindowFor returns the grant window, in bytes, of a receiver granting n
// messages (n below 1 counts as 1): window if set, else the dynamic
// window max_incoming/(n+1) (HomaModule homa_grant.c
// homa_grant_update_sysctl_deps: windows[n] = max_incoming/(n+1)).
func (p *Params) WindowFor(n int) uint32 {
	if p.Window > 0 {
		return p.Window
	}
	return p.MaxIncoming / uint32(max(1, n)+1)
}

// Ticks returns n ticks as a duration.
func (p *Params) Ticks(n int) time.Duration { return time.Duration(n) * p.Tick }

// HighPriority is the next-to-highest priority level, which FIFO GRANTs
// and buffer-wakeup RESENDs use: num_priorities-2, or 0 with at most two
// levels (HomaModule homa_impl.h homa_high_priority).
func (p *Params) HighPriority() int {
	if p.NumPriorities <= 2 {
		return 0
	}
	return p.NumPriorities - 2
}

// FIFOGrantInterval is the least time between two FIFO grant decisions of
// a receiver: fifo_grant_increment·8 bits at grant_fifo_fraction/1000
// (capped at 500) of link_mbps, 320 µs at the defaults (HomaModule
// homa_grant.c homa_grant_update_sysctl_deps; homa_grant_check_fifo sets
// fifo_grant_time = now + that interval). 0 when the parameters give no
// FIFO grants or no link rate.
func (p *Params) FIFOGrantInterval() time.Duration {
	frac := min(p.GrantFIFOFraction, 500)
	if p.FIFOGrantIncrement == 0 || frac <= 0 || p.LinkMbps <= 0 {
		return 0
	}
	// Mbit/s · thousandths = bits per µs · 1e-3: ns = bits·1e6/(mbps·frac).
	return time.Duration(int64(p.FIFOGrantIncrement) * 8 * 1_000_000 / (int64(p.LinkMbps) * int64(frac)))
}

// RoundWindow is how long after a timer RESEND round's first RESEND the
// round's others may come: one tick, or half a tick when resend_ticks or
// resend_interval is 1, since rounds may then come a tick apart
// (homa_timer_check_rpc asks at silent_ticks resend_ticks, then every
// resend_interval; DATA from the peer restarts the count) and an RPC's
// place in the timer pass varies from pass to pass, so the next round may
// begin a little less than a tick after this one. homa_request_retrans
// sends a whole round in one call.
func (p *Params) RoundWindow() time.Duration {
	if min(p.ResendTicks, p.ResendInterval) <= 1 {
		return p.Tick / 2
	}
	return p.Tick
}

// AnswerBound is how long an answer (to a RESEND, a stale cutoff_version,
// a GRANT ...) may take: ResponseTimeout plus Slack.
func (p *Params) AnswerBound() time.Duration { return p.ResponseTimeout + p.Slack }

// NeedAckAnswerBound is how long a client may take to answer a NEED_ACK
// the server repeated (HOMA-ACK-002): an ACK at once when it has the
// whole response, RESENDs for what it lacks at once on main, or at its
// next timer round on linux_6.1.38, which ignores the NEED_ACK
// (HomaModule homa_need_ack_pkt): the larger of AnswerBound and
// resend_ticks+1 ticks plus Slack. The conformance suite's tester waits
// as long, so that its verdict and homatest check's agree.
func (p *Params) NeedAckAnswerBound() time.Duration {
	return max(p.AnswerBound(), p.Ticks(p.ResendTicks+1)+p.Slack)
}

// LateTicks returns the latest n timer ticks can take: n ticks stretched
// by TimerDrift, plus Slack.
func (p *Params) LateTicks(n int) time.Duration {
	return time.Duration(float64(p.Ticks(n))*(1+p.TimerDrift)) + p.Slack
}

var paramDocs = map[string]string{
	"wire":                 "wire format version (current, 2024, 2025, upstream)",
	"unsched_bytes":        "bytes a sender may send before any GRANT",
	"max_incoming":         "bound on granted but not received bytes over all messages a receiver grants",
	"max_overcommit":       "messages a receiver grants at once",
	"max_rpcs_per_peer":    "messages from one sending host a receiver may grant at once while more from it wait; 0 = no per-host limit (main since 2026-05-21)",
	"window":               "grant window in bytes; 0 = dynamic, max_incoming/(active+1)",
	"num_priorities":       "priority levels in use (1..8)",
	"max_sched_prio":       "highest scheduled priority level",
	"unsched_cutoffs":      "8 cutoffs: entry i is the largest message length using unscheduled level i",
	"cutoff_version":       "version of the hosts' cutoffs",
	"fifo_grant_increment": "bytes per FIFO grant; 0 = no FIFO grants",
	"grant_fifo_fraction":  "thousandths of link_mbps FIFO grants may take (they come once per fifo_grant_increment·8 bits at that rate); 0 = no FIFO grants",
	"link_mbps":            "link rate in Mbit/s the hosts are configured with (spaces FIFO grants)",
	"max_gso_size":         "largest skb (GSO batch) a sender builds; bounds overshoot past a grant",
	"max_gro_skbs":         "most packets a receiver merges into one skb, a batch it makes one grant decision for (HOMA-GRANT-024 allows two batches per GRANT); 0 = HomaModule's 20",
	"max_message_length":   "largest message in bytes",
	"mtu":                  "link MTU in bytes; a DATA segment carries at most MTU - IP header - 56 bytes",
	"ipv6_prio_shift":      "shift of the priority in the IPv6 traffic class: 5 (main since 2025-11-18), 4 (before; linux_6.1.38), 0 = either",
	"rank_tolerance":       "bytes of remaining by which two messages may differ before an inverted SRPT ranking counts",
	"zeroed_headers":       "1: the implementation zeroes the header bytes it leaves unused (HomaModule main since 2026-06-26; the reference implementation), so nonzero ones are violations; 0: inconclusive (earlier builds send memory as it was)",
	"defer_min_bytes":      "a message with more bytes left than this is paced (SRPT may hold it behind shorter ones); before main, throttle_min_bytes - 1 (those pace from throttle_min_bytes)",
	"tick":                 "timer tick",
	"resend_ticks":         "ticks of silence before the first RESEND",
	"resend_interval":      "ticks between RESEND rounds",
	"timeout_ticks":        "ticks of silence before an RPC is aborted",
	"request_ack_ticks":    "ticks after a response is sent before the first NEED_ACK",
	"max_acks_per_pkt":     "ack slots in an ACK packet",
	"slack":                "tolerance for late events and packets in flight (timer-thread delay)",
	"jitter":               "tolerance for early events (capture timestamp noise, capture-to-host latency)",
	"response_timeout":     "how long an answer (to RESEND, NEED_ACK, stale cutoff_version ...) may take",
	"timer_drift":          "how much later than its ticks a timer action may come, as a fraction of the ticks (timer passes stretch under load)",
	"reaction":             "how long a packet delivered to a host may take to reach its protocol code (host views excuse timer actions racing it; HOMA-RESEND-001 judges a RESEND that close after the peer's packet by the silence before it)",
}

// ParamDoc returns a one-line description of parameter name ("" if unknown).
func ParamDoc(name string) string { return paramDocs[name] }

// CloseNames returns the names of known that name may have meant: those
// that contain it or that it contains, or that share its words (split at
// '_') but one, in known's order.
func CloseNames(name string, known []string) []string {
	var out []string
	lower := strings.ToLower(name)
	flat := strings.ReplaceAll(lower, "_", "")
	// The name in another case or without its underscores (TICK,
	// linkbps) is that name alone.
	for _, k := range known {
		if k != name && (lower == k || flat == strings.ReplaceAll(k, "_", "")) {
			return []string{k}
		}
	}
	words := strings.Split(lower, "_")
	for _, k := range known {
		if len(name) < 3 || k == name {
			continue
		}
		if strings.Contains(k, lower) || strings.Contains(lower, k) || editDistance(lower, k) <= 2 {
			out = append(out, k)
			continue
		}
		kw := strings.Split(k, "_")
		shared := 0
		for _, w := range words {
			if w != "" && slices.Contains(kw, w) {
				shared++
			}
		}
		if shared > 0 && shared >= max(len(words), len(kw))-1 {
			out = append(out, k)
		}
	}
	return out
}

// editDistance is the Levenshtein distance of a and b (bytes): a typo's
// dropped, added or changed letters.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
