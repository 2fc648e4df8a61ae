package spec

import "github.com/homatest/homatest/spec/wire"

// idRules: RPC identifiers and ports (HomaModule homa_wire.h homa_local_id,
// homa_rpc.c, homa_sock.c).
func idRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ID-001", Level: Must,
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
				if c.T.rpcs[KeyOf(e)] == nil {
					if r := c.T.rpcs[mirror]; r != nil && r.Packets[0]+r.Packets[1] > 0 {
						return Violation("sender_id %d has the role bit of the %s, but RPC %d from %v to %v is known with the other roles",
							id, e.Packet.Role(), mirror.ClientID, mirror.Client, mirror.Server).With(r.FirstFrame)
					}
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ID-002", Level: Must,
			Statement: "Requests go to a server port below 32768 (ports from 32768 up are the automatically assigned client ports).",
			Source:    "HomaModule homa_sock.c homa_sock_bind (bind to ports ≥ 32768 fails); homa.h HOMA_MIN_DEFAULT_PORT",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return Skip
				}
				if p := e.Packet.Common().Dport(); p >= 32768 || p == 0 {
					return Violation("request DATA to port %d, not a server port (1..32767)", p)
				}
				return Pass()
			}},
		},
	}
}
