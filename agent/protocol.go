package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// ProtocolVersion is the version of the agent protocol this package speaks.
// The harness sends it in hello; an agent that cannot speak it answers with
// an error event. Adding optional fields, capabilities, counters or ops does
// not change the version; changing or removing the meaning of a field does.
const ProtocolVersion = 1

// Ops: the "op" of a Request (harness → agent).
const (
	OpHello    = "hello"
	OpListen   = "listen"
	OpCall     = "call"
	OpStats    = "stats"
	OpShutdown = "shutdown"
)

// Events: the "event" of an Event (agent → harness).
const (
	// EventHello answers hello.
	EventHello = "hello"
	// EventListening answers listen.
	EventListening = "listening"
	// EventAccepted answers call at once: the RPC has started.
	EventAccepted = "accepted"
	// EventDone reports the end of a call (no seq; carries the call's id).
	EventDone = "done"
	// EventStats answers stats.
	EventStats = "stats"
	// EventBye answers shutdown; the agent then exits with status 0.
	EventBye = "bye"
	// EventError answers any op the agent cannot carry out.
	EventError = "error"
)

// Capabilities an agent may list in its hello. A test that needs a
// capability the IUT lacks is reported "unsupported", not failed.
const (
	CapIPv4       = "ipv4"       // calls to and from IPv4 addresses
	CapIPv6       = "ipv6"       // calls to and from IPv6 addresses (a server port listened with ipv6, on a host with both families)
	CapGrants     = "grants"     // receiver-driven GRANTs beyond unsched_bytes
	CapPriorities = "priorities" // IP priorities (precedence bits) by level
	CapCutoffs    = "cutoffs"    // CUTOFFS packets and cutoff_version
	CapNeedAck    = "need-ack"   // NEED_ACK / ACK
	CapParams     = "params"     // applies parameter overrides from hello
	CapTimeouts   = "timeouts"   // per-call timeout_ms
	CapFaults     = "faults"     // fault knobs from hello (reference implementation)
	// CapReplyDelay: listen's reply_delay_ms holds each response back as
	// an application that takes time to compute it would.
	CapReplyDelay = "reply-delay"
)

// Ms returns d as the protocol's whole milliseconds (timeout_ms,
// reply_delay_ms), rounded up so that a nonzero d stays nonzero.
func Ms(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// MaxReplyDelayMs bounds listen's reply_delay_ms (a minute).
const MaxReplyDelayMs = 60_000

// ListenOptions are listen's options beyond the port.
type ListenOptions struct {
	// ReplyDelay holds each response back that long after its request
	// arrived, as an application that takes time to compute it would
	// (capability "reply-delay"; the request's RPC stays with the
	// server meanwhile: HomaModule answers the client's RESENDs with
	// BUSY). 0: at once. Sent in whole milliseconds.
	ReplyDelay time.Duration
	// IPv6 makes the port serve IPv6 clients on a host with both
	// families, where an agent may serve one family per port (the
	// linux agent: HomaModule routes a socket's packets by its family,
	// homa_peer.c, and binds a port once for both, so its servers are
	// AF_INET unless asked). An agent whose servers answer both
	// families on every port ignores it.
	IPv6 bool
}

// Params are protocol parameters by HomaModule sysctl name (net.homa.<name>:
// unsched_bytes, max_incoming, max_overcommit, max_rpcs_per_peer, window,
// num_priorities,
// max_sched_prio, unsched_cutoffs, cutoff_version, fifo_grant_increment,
// grant_fifo_fraction, link_mbps, resend_ticks, resend_interval,
// timeout_ticks, request_ack_ticks, defer_min_bytes) plus tick_ns (timer period in ns), mtu
// (bytes) and link_bps (pacer rate in bit/s). Values are JSON numbers, except
// unsched_cutoffs: a list of 8 numbers (bytes).
type Params map[string]any

// Int returns the integer value of parameter name; ok is false when it is
// missing or not an integer.
func (p Params) Int(name string) (v int64, ok bool) { return toInt(p[name]) }

// Ints returns the list value of parameter name (unsched_cutoffs); ok is
// false when it is missing or not a list of integers.
func (p Params) Ints(name string) ([]int64, bool) {
	list, ok := p[name].([]any)
	if !ok {
		if l, ok := p[name].([]int64); ok {
			return l, true
		}
		return nil, false
	}
	out := make([]int64, len(list))
	for i, x := range list {
		if out[i], ok = toInt(x); !ok {
			return nil, false
		}
	}
	return out, true
}

// toInt converts the number types a JSON decoder or a Go caller produces.
func toInt(x any) (int64, bool) {
	switch v := x.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		return int64(v), v < 1<<63
	case uint32:
		return int64(v), true
	case uint16:
		return int64(v), true
	case float64:
		return int64(v), v == float64(int64(v))
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

// HelloRequest is the body of the hello op, the first line the harness
// sends.
type HelloRequest struct {
	// Protocol is the protocol version the harness speaks (ProtocolVersion).
	Protocol int `json:"protocol,omitempty"`
	// Host is the host's name in the topology (for logs), e.g. "h1".
	Host string `json:"host,omitempty"`
	// Addrs are the host's addresses (at most one per family): the agent
	// opens its Homa endpoint on them.
	Addrs []netip.Addr `json:"addrs,omitempty"`
	// Params are overrides the agent applies if it can (capability
	// "params"); an unknown name gets an error event.
	Params Params `json:"params,omitempty"`
	// Faults are fault knobs to enable (capability "faults"; the reference
	// implementation's names are homa.FaultNames).
	Faults []string `json:"faults,omitempty"`
}

// Hello is the agent's answer to hello.
type Hello struct {
	// Protocol is the version the agent speaks (ProtocolVersion).
	Protocol int `json:"protocol,omitempty"`
	// Impl names the implementation ("ref", "linux", or the manifest's
	// name); Version is its version string.
	Impl    string `json:"impl,omitempty"`
	Version string `json:"version,omitempty"`
	// Capabilities lists what the IUT supports (Cap* constants).
	Capabilities []string `json:"capabilities,omitempty"`
	// Params are every parameter in effect (see Params).
	Params Params `json:"params,omitempty"`
	// Wire names the Homa wire format the implementation speaks when it
	// is not the current one (IP protocol 146): a wire.Version name, e.g.
	// "2024" for HomaModule linux_6.1.38 (IP protocol 253). The harness
	// then tests it with that format and judges it under that format's
	// profile.
	Wire string `json:"wire,omitempty"`
	// Unsupported, when not empty, says in one line why the implementation
	// cannot run on this machine (e.g. a kernel without Homa); the harness
	// then reports its tests "unsupported", not failed, and sends only
	// shutdown.
	Unsupported string `json:"unsupported,omitempty"`
}

// Has reports whether the agent listed capability c.
func (h Hello) Has(c string) bool {
	for _, x := range h.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// Call is the body of the call op: one RPC from this host.
type Call struct {
	// ID is the call's id, chosen by the harness and unique among this
	// agent's calls; it is echoed in accepted and done, and written into
	// the payload header. It is not Homa's RPC id.
	ID uint64 `json:"id,omitempty"`
	// Dst and Port are the server's address and Homa port.
	Dst  netip.Addr `json:"dst,omitzero"`
	Port uint16     `json:"port,omitempty"`
	// Request and Response are the message lengths in bytes (1..1,000,000).
	// A request shorter than PayloadHeaderLen carries no response length,
	// so its response must be as long as the request (see FillPayload).
	Request  int `json:"request,omitempty"`
	Response int `json:"response,omitempty"`
	// TimeoutMs bounds the call in milliseconds (0: the implementation's
	// own timeout only; capability "timeouts").
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// Check reports what is wrong with c's fields, as every agent refuses
// the call op (nil: nothing): message lengths outside 1..MaxMessage, a
// request too short for the payload header with another response
// length, no server address or port, a negative timeout.
func (c Call) Check() error {
	switch {
	case c.Request < 1 || c.Request > MaxMessage || c.Response < 1 || c.Response > MaxMessage:
		return fmt.Errorf(`"request" (%d) and "response" (%d) must be 1..%d bytes`, c.Request, c.Response, MaxMessage)
	case c.Request < PayloadHeaderLen && c.Response != c.Request:
		return fmt.Errorf(`a request shorter than %d bytes carries no response length: "response" must equal "request" (%d)`, PayloadHeaderLen, c.Request)
	case !c.Dst.IsValid() || c.Port == 0:
		return errors.New(`"dst" (an IP address) and "port" (1..65535) are required`)
	case c.TimeoutMs < 0:
		return errors.New(`"timeout_ms" must be >= 0`)
	}
	return nil
}

// Completion is the done event of a call.
type Completion struct {
	// ID is the call's id.
	ID uint64 `json:"id,omitempty"`
	// LatencyNs is the time from sending the request to receiving the
	// whole response, in nanoseconds.
	LatencyNs int64 `json:"latency_ns,omitempty"`
	// Request and Response are the bytes sent and received (Response is 0
	// when the call failed).
	Request  int `json:"request,omitempty"`
	Response int `json:"response,omitempty"`
	// Error is empty for success, else "<code>: <text>" with code one of
	// timeout, aborted, payload, unreachable, error, or exited and silent
	// set by the Client (see Code).
	Error string `json:"error,omitempty"`
}

// Error codes at the start of Completion.Error.
const (
	CodeTimeout     = "timeout"     // the IUT or timeout_ms gave up waiting
	CodeAborted     = "aborted"     // the call was cancelled (shutdown, socket closed)
	CodePayload     = "payload"     // the response's length or bytes are wrong
	CodeUnreachable = "unreachable" // no route, no such address family
	CodeExited      = "exited"      // the agent exited before the call finished (set by Client)
	CodeSilent      = "silent"      // no done within ClientOptions.DoneTimeout (set by Client)
	CodeError       = "error"       // anything else
)

// Code returns the error code of the completion ("" for success): the text
// before the first colon of Error.
func (c Completion) Code() string {
	code, _, _ := strings.Cut(c.Error, ":")
	return code
}

// Latency returns LatencyNs as a duration.
func (c Completion) Latency() time.Duration { return time.Duration(c.LatencyNs) }

// Stats are an agent's counters since hello. Calls = Completed + Failed +
// calls in flight.
type Stats struct {
	// Calls is the number of call ops accepted; Completed and Failed count
	// their done events by outcome.
	Calls     uint64 `json:"calls"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	// Served is the number of requests the server executed (handed to the
	// application); with at-most-once semantics it equals the number of
	// distinct calls that reached it. ServedDuplicates counts requests
	// executed again for a (client, call id) already served.
	Served           uint64 `json:"served"`
	ServedDuplicates uint64 `json:"served_duplicates"`
	// PayloadErrors counts requests and responses whose bytes were wrong.
	PayloadErrors uint64 `json:"payload_errors"`
	// PacketsSent and PacketsReceived count Homa packets (0 when the IUT
	// cannot tell); Retransmitted counts DATA packets sent again; Timeouts
	// counts RPCs the IUT aborted for silence.
	PacketsSent     uint64 `json:"packets_sent"`
	PacketsReceived uint64 `json:"packets_received"`
	Retransmitted   uint64 `json:"retransmitted"`
	Timeouts        uint64 `json:"timeouts"`
	// Extra holds implementation-specific counters by name.
	Extra map[string]uint64 `json:"extra,omitempty"`
}

// Request is one line from the harness to the agent: an op with its seq
// and the op's fields (hello: HelloRequest; listen: Port; call: Call).
type Request struct {
	// Op is one of the Op* constants.
	Op string `json:"op"`
	// Seq numbers the request; the reply to it echoes it.
	Seq uint64 `json:"seq"`
	HelloRequest
	// Call holds the call fields; its Port is also listen's port.
	Call
	// ReplyDelayMs is listen's ListenOptions.ReplyDelay in ms
	// (0..MaxReplyDelayMs; capability "reply-delay").
	ReplyDelayMs int64 `json:"reply_delay_ms,omitempty"`
	// IPv6 is listen's ListenOptions.IPv6.
	IPv6 bool `json:"ipv6,omitempty"`
}

// Event is one line from the agent to the harness: an event with the seq of
// the request it answers (none for done) and the event's fields (hello:
// Hello; listening: Port; accepted: ID; done: Completion; stats: Stats;
// error: Op and Error).
type Event struct {
	// Event is one of the Event* constants.
	Event string `json:"event"`
	// Seq is the seq of the request answered (0 and omitted for done).
	Seq uint64 `json:"seq,omitempty"`
	// Op is the op an error event answers.
	Op string `json:"op,omitempty"`
	Hello
	// Port is the port of a listening event.
	Port uint16 `json:"port,omitempty"`
	// Completion holds accepted's id and done's fields; its Error is also
	// the one-line message of an error event.
	Completion
	// Stats is the body of a stats event.
	Stats *Stats `json:"stats,omitempty"`
}
