package agent

import (
	"net/netip"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
)

// openRawIP opens the default transport of the ref agent: a raw IP socket
// for IP protocol 146 on addr in the current network namespace.
func openRawIP(addr netip.Addr) (homa.Transport, error) { return rawip.Open(addr) }
