package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/seqplot"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// rpcSelector is a parsed --rpc value: slowest, or a client id with an
// optional client address.
type rpcSelector struct {
	slowest bool
	id      uint64     // the RPC's client id
	given   uint64     // the id as given (a server's sender_id is id+1)
	client  netip.Addr // zero: any client
}

// parseRPCSelector parses "ID", "ID@CLIENT" or, when slowest is true
// (the command can pick the slowest RPC), "slowest". ID is the RPC's
// client id (even, as homatest rpcs prints it) or the sender_id its
// server's packets carry (odd: the client's id XOR 1, HomaModule's
// homa_local_id), which names the same RPC. Errors name only the forms
// the command takes.
func parseRPCSelector(s string, slowest bool) (rpcSelector, error) {
	if s == "slowest" && slowest {
		return rpcSelector{slowest: true}, nil
	}
	idText, addrText, hasAddr := strings.Cut(s, "@")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		forms := "an RPC id (a number, as homatest rpcs prints it), ID@CLIENT or slowest"
		if !slowest {
			forms = "an RPC id (a number, as homatest rpcs prints it) or ID@CLIENT; homatest rpcs --sort latency lists the slowest"
		}
		return rpcSelector{}, fmt.Errorf("--rpc %q: want %s", s, forms)
	}
	// A server's sender_id names its RPC by the client's id.
	sel := rpcSelector{id: wire.ClientID(id), given: id}
	if hasAddr {
		if sel.client, err = parseClient(addrText); err != nil {
			return rpcSelector{}, fmt.Errorf("--rpc %q: %q is not an IP address (want ID@CLIENT, e.g. 4@10.0.0.11 or 4@fd00::1)", s, addrText)
		}
	}
	return sel, nil
}

// parseClient parses the CLIENT of ID@CLIENT: an address, bracketed or
// not, or an address and port as homatest rpcs prints a client
// (10.0.0.11:32768, [fd00::1]:32768); the port is dropped, since an RPC's
// id is unique per client host (HomaModule's per-host next_outgoing_id).
func parseClient(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, nil
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), nil
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok := strings.CutSuffix(inner, "]"); ok {
			return netip.ParseAddr(inner)
		}
	}
	return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
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
		var cs []netip.Addr
		for _, r := range found {
			cs = append(cs, r.Key.Client)
		}
		return nil, errors.New(s.several(cs))
	case s.client.IsValid():
		return nil, fmt.Errorf("no RPC with id %d from client %v (%s)", s.given, s.client, someIDs(rpcs))
	default:
		return nil, fmt.Errorf("no RPC with id %d (%s)", s.given, someIDs(rpcs))
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
	noun := "ids"
	if len(rpcs) == 1 {
		noun = "id"
	}
	return fmt.Sprintf("%s, %s %s; see homatest rpcs", plural.Of(len(rpcs), "RPC", "RPCs"), noun, strings.Join(ids, " "))
}

// matchesFrame reports whether frame f belongs to the RPC s names: the
// client id of its RPC (wire.KeyOf) is s's and, with a client address,
// that address is the RPC's client. Frames that did not decode belong to
// no RPC.
func (s *rpcSelector) matchesFrame(f *pcap.Frame) bool {
	if f.Err != nil {
		return false
	}
	k := wire.KeyOf(f.Src, f.Dst, f.Packet.SenderID())
	return k.ClientID == s.id && (!s.client.IsValid() || k.Client.Unmap() == s.client.Unmap())
}

// several says that the RPCs of clients (more than one) all have the
// selector's id, and how to name one: plot's error, decode's note.
func (s *rpcSelector) several(clients []netip.Addr) string {
	cs := make([]string, len(clients))
	for i, c := range clients {
		cs[i] = c.String()
	}
	return fmt.Sprintf("%d RPCs have id %d (clients %s): name one with --rpc %d@CLIENT", len(clients), s.id, strings.Join(cs, ", "), s.id)
}
