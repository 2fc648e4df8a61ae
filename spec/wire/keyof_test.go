package wire

import (
	"net/netip"
	"testing"
)

// TestKeyOf: both directions of one RPC map to one key, client first,
// with the client's (even) id; another client id is another RPC.
func TestKeyOf(t *testing.T) {
	c, s := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	want := RPCKey{Client: c, Server: s, ClientID: 42}
	if got := KeyOf(c, s, 42); got != want {
		t.Errorf("client's packet: %+v, want %+v", got, want)
	}
	if got := KeyOf(s, c, 43); got != want {
		t.Errorf("server's packet (sender_id 43): %+v, want %+v", got, want)
	}
	if got := KeyOf(c, s, 44); got == want {
		t.Errorf("client id 44 has the key of 42")
	}
}
