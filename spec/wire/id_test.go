package wire

import "testing"

// facts.md §2: client ids are even; the server's id is client id + 1 (low
// bit set); sender_id is the sender's id; the receiver's id is sender_id ^ 1.
func TestIDs(t *testing.T) {
	for _, tc := range []struct {
		sender   uint64
		role     Role
		local    uint64
		clientID uint64
	}{
		{0, RoleClient, 1, 0},
		{1, RoleServer, 0, 0},
		{2, RoleClient, 3, 2},
		{3, RoleServer, 2, 2},
		{40, RoleClient, 41, 40},
		{41, RoleServer, 40, 40},
		{0xFFFFFFFFFFFFFFFE, RoleClient, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE},
		{0xFFFFFFFFFFFFFFFF, RoleServer, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFE},
	} {
		if got := RoleOf(tc.sender); got != tc.role {
			t.Errorf("RoleOf(%d): got %v, want %v", tc.sender, got, tc.role)
		}
		if got := LocalID(tc.sender); got != tc.local {
			t.Errorf("LocalID(%d): got %d, want %d", tc.sender, got, tc.local)
		}
		if got := ClientID(tc.sender); got != tc.clientID {
			t.Errorf("ClientID(%d): got %d, want %d", tc.sender, got, tc.clientID)
		}
		if got := ServerID(tc.clientID); got != tc.clientID+1 {
			t.Errorf("ServerID(%d): got %d, want %d", tc.clientID, got, tc.clientID+1)
		}
		if got := LocalID(LocalID(tc.sender)); got != tc.sender {
			t.Errorf("LocalID is not an involution at %d: got %d", tc.sender, got)
		}
	}
	if RoleClient.String() != "client" || RoleServer.String() != "server" {
		t.Errorf("Role.String: got %q %q, want client server", RoleClient.String(), RoleServer.String())
	}
	if RoleClient != 0 || RoleServer != 1 {
		t.Errorf("Role values: got %d %d, want 0 1", RoleClient, RoleServer)
	}
}

// TestRoleOfRealPackets: in the captures the client (port ≥ 32768) sends
// even sender_ids and the server (port 4000) odd ones.
func TestRoleOfRealPackets(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		role Role
	}{
		{"6.13 DATA request", realData613Hex, RoleClient},
		{"6.13 GRANT", realGrant613Hex, RoleServer},
		{"6.13 RESEND from client", realResend613Hex, RoleClient},
		{"6.13 BUSY", realBusy613Hex, RoleServer},
		{"6.13 ACK", realAck613Hex, RoleClient},
		{"6.1 NEED_ACK", realNeedAck61Hex, RoleServer},
		{"6.1 UNKNOWN", realRPCUnknown61Hex, RoleServer},
	} {
		p := mustDecode(t, hexBytes(t, tc.hex), DecodeOptions{})
		if p.Role() != tc.role {
			t.Errorf("%s: Role got %v, want %v", tc.name, p.Role(), tc.role)
		}
		sport := p.Common().Sport()
		if (sport >= 32768) != (tc.role == RoleClient) {
			t.Errorf("%s: sport %d inconsistent with role %v", tc.name, sport, tc.role)
		}
	}
}
