package spec

import "github.com/homatest/homatest/spec/wire"

// idRules: RPC identifiers and ports (HomaModule homa_wire.h homa_local_id,
// homa_rpc.c, homa_sock.c).
func idRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ID-001", Level: Must,
			Facts:     []string{"ID-01"},
			Statement: "The two directions of an RPC carry ids that differ only in bit 0: the client sends its even id, the server that id plus one.",
			Source:    "HomaModule homa_wire.h homa_local_id; homa_rpc.c homa_rpc_alloc_client",
			Property: Each{Check: func(c *Ctx, e *Event) Result {
				id := e.Packet.SenderID()
				if e.Type() == wire.TypeFreeze && id == 0 {
					return Skip
				}
				// A packet whose role bit puts it on the wrong side of a known
				// RPC: e.g. the server echoing the client's even id back.
				mirror := RPCKey{Client: e.Dst, Server: e.Src, ClientID: wire.ClientID(id)}
				if !e.FromClient() {
					mirror = RPCKey{Client: e.Src, Server: e.Dst, ClientID: wire.ClientID(id)}
				}
				// Client ids come from one counter per host, starting at 2
				// (facts §2), so two hosts that are each other's client
				// and server use the same ids in both directions: that
				// is legal and shows on the wire as a different pair of
				// ports. Only a packet between the known RPC's own two
				// sockets with the role bit flipped is a violation.
				if c.T.rpcs[KeyOf(e)] == nil {
					if r := c.T.rpcs[mirror]; r != nil && r.Packets[0]+r.Packets[1] > 0 && sameSockets(r, e) {
						return Violation("sender_id %d has the role bit of the %s, but RPC %d between these ports (client %v:%d, server %v:%d) is known with the other roles",
							id, e.Packet.Role(), mirror.ClientID, mirror.Client, r.ClientPort, mirror.Server, r.ServerPort).With(r.FirstFrame)
					}
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ID-002", Level: Must,
			Facts:     []string{"ID-03", "ID-04"},
			Statement: "Requests go to a nonzero port; on main a destination port of 32768 or more (the automatically assigned range) is a server only if its socket set SO_HOMA_SERVER, which the wire does not show (inconclusive); linux_6.1.38 sockets all accept requests.",
			Source:    "HomaModule homa_sock.c homa_sock_bind (bind to ports ≥ 32768 fails), homa_plumbing.c SO_HOMA_SERVER; homa.h HOMA_MIN_DEFAULT_PORT",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return Skip
				}
				p := e.Packet.Common().Dport()
				switch {
				case p == 0:
					return Violation("request DATA to port 0, which no Homa socket can have")
				case p < 32768:
					return Pass()
				case c.P.Wire == wire.Version2024:
					// linux_6.1.38: every socket accepts requests.
					return Pass()
				}
				if r := c.T.Lookup(e); r != nil && r.Request.Length != 0 {
					return Skip // judged at the request's first DATA
				}
				return Unsure("request DATA to port %d (≥ 32768, not bound): legal only if that socket enabled SO_HOMA_SERVER", p)
			}},
		},
	}
}

// sameSockets reports whether e travels between the two sockets of RPC r
// (in either direction).
func sameSockets(r *RPC, e *Event) bool {
	sp, dp := e.Packet.Common().Sport(), e.Packet.Common().Dport()
	if e.Src == r.Key.Client {
		return sp == r.ClientPort && dp == r.ServerPort
	}
	return sp == r.ServerPort && dp == r.ClientPort
}
