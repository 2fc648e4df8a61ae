package wire

import "net/netip"

// Role says which end of an RPC sent a packet.
type Role uint8

const (
	// RoleClient: the packet was sent by the client (sender_id even):
	// request DATA, client RESEND, GRANT for a response, ACK.
	RoleClient Role = iota
	// RoleServer: the packet was sent by the server (sender_id odd):
	// response DATA, server RESEND, GRANT for a request, BUSY, NEED_ACK.
	RoleServer
)

// String returns "client" or "server".
func (r Role) String() string {
	if r == RoleServer {
		return "server"
	}
	return "client"
}

// RoleOf returns the role of the sender of a packet whose sender_id is id:
// the low bit is 0 for the client and 1 for the server (HomaModule
// homa_wire.h homa_local_id).
func RoleOf(senderID uint64) Role { return Role(senderID & 1) }

// LocalID returns the id under which the receiver of a packet knows the RPC:
// sender_id XOR 1 (homa_local_id).
func LocalID(senderID uint64) uint64 { return senderID ^ 1 }

// ClientID returns the client's (even) id of the RPC a packet belongs to,
// whichever side sent it.
func ClientID(senderID uint64) uint64 { return senderID &^ 1 }

// ServerID returns the server's (odd) id of the RPC whose client id is id.
func ServerID(clientID uint64) uint64 { return clientID | 1 }

// RPCKey identifies an RPC on the wire: its client's and server's
// addresses and the client's id (HomaModule finds a server RPC by the
// client's address and id, homa_rpc.c homa_find_server_rpc; the client's
// id is even, the server's that id | 1).
type RPCKey struct {
	Client   netip.Addr `json:"client"`
	Server   netip.Addr `json:"server"`
	ClientID uint64     `json:"client_id"`
}

// KeyOf returns the key of the RPC that a packet with sender_id senderID,
// sent from src to dst, belongs to: the sender is the client when the
// role bit says so (RoleOf), else the server.
func KeyOf(src, dst netip.Addr, senderID uint64) RPCKey {
	if RoleOf(senderID) == RoleClient {
		return RPCKey{Client: src, Server: dst, ClientID: ClientID(senderID)}
	}
	return RPCKey{Client: dst, Server: src, ClientID: ClientID(senderID)}
}
