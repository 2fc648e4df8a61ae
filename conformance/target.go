package conformance

import (
	"context"
	"github.com/homatest/homatest/agent"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec"
)

// Target is the implementation under test as the specs drive it: the
// operations of the agent protocol (docs/agent-protocol.md). Methods are
// safe for concurrent use.
type Target interface {
	// Info is what the IUT said about itself in its hello.
	Info() TargetInfo
	// Listen makes the IUT serve requests on port (a server socket): every
	// request is answered with a response whose length the request's
	// payload header gives (see PayloadHeader), o.ReplyDelay after it
	// came (capability reply-delay).
	Listen(ctx context.Context, port uint16, o agent.ListenOptions) error
	// Call starts an RPC from the IUT to dst with a request of reqLen bytes
	// asking for respLen bytes back; the result arrives on the channel.
	// A timeout > 0 has the IUT's application give the call up after it
	// (the agent's timeout_ms, capability timeouts; whole ms): the RPC
	// ends with a timeout error, as an application's abort ends it.
	Call(ctx context.Context, dst netip.AddrPort, reqLen, respLen int, timeout time.Duration) (<-chan CallResult, error)
	// Stats returns the IUT's counters (served: requests executed, …).
	Stats(ctx context.Context) (map[string]uint64, error)
	// Close shuts the IUT down.
	Close() error
}

// TargetInfo is the IUT's hello.
type TargetInfo struct {
	// Impl and Version name the implementation.
	Impl, Version string
	// Addr is the IUT host's IPv4 address; Addr6 its IPv6 address if any.
	Addr, Addr6 netip.Addr
	// Capabilities are the features the IUT declares (ipv4, ipv6, grants,
	// priorities, cutoffs, need-ack, faults, …).
	Capabilities []string
	// Params are the protocol parameters in effect, as spec parameters.
	Params spec.Params
	// MTU of the IUT's link in bytes (0: 1500).
	MTU int
}

// Has reports whether the IUT declared capability c.
func (t TargetInfo) Has(c string) bool {
	for _, x := range t.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// CallResult is the completion of one RPC started with Target.Call.
type CallResult struct {
	// Latency from the call to the response, as the IUT measured it (ns).
	Latency time.Duration
	// Response is the response length in bytes received.
	Response int
	// Err is empty on success, else the IUT's error ("timeout: …").
	Err string
}
