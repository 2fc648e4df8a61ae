package tester

import (
	"strings"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// packetOf encodes f in version v and decodes it as the Peer would.
func packetOf(t *testing.T, f wire.Fields, v wire.Version) *Packet {
	t.Helper()
	b, err := wire.Encode(f, wire.EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := wire.Decode(b, wire.DecodeOptions{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	return &Packet{Raw: b, Pkt: pkt}
}

// TestIsReadsLayout: Is and In read any header field by its HomaModule
// name at the offset of the packet's own type and version, and fail a
// packet that lacks the field.
func TestIsReadsLayout(t *testing.T) {
	common := wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101}
	grant := &wire.GrantFields{Common: common, Offset: 20000, Priority: 3}
	resend := &wire.ResendFields{Common: common, Offset: 1400, Length: 2800, Priority: 5}
	data := &wire.DataFields{Common: common, MessageLength: 100000, Incoming: 40000, CutoffVersion: 7, Retransmit: 1,
		SegOffset: 2848, Ack: wire.AckEntry{ClientID: 42, ServerPort: 4000}, Payload: make([]byte, 100)}
	for _, c := range []struct {
		name   string
		p      *Packet
		checks []Check
	}{
		{"GRANT current", packetOf(t, grant, wire.VersionCurrent), []Check{Is("offset", 20000), In("priority", 0, 3), Is("sport", 4000), Is("dport", 33000), Is("sender_id", 101)}},
		{"GRANT 2024", packetOf(t, grant, wire.Version2024), []Check{Is("offset", 20000), Is("priority", 3), Is("resend_all", 0)}},
		{"RESEND current", packetOf(t, resend, wire.VersionCurrent), []Check{Is("offset", 1400), Is("length", 2800), Is("priority", 5)}},
		{"RESEND upstream", packetOf(t, resend, wire.VersionUpstream), []Check{Is("offset", 1400), Is("length", 2800)}},
		{"DATA current", packetOf(t, data, wire.VersionCurrent), []Check{Is("message_length", 100000), Is("incoming", 40000), Is("cutoff_version", 7),
			Is("retransmit", 1), Is("seg.offset", 2848), Is("ack.client_id", 42), Is("ack.server_port", 4000), DataOffset(2848)}},
		{"DATA 2024", packetOf(t, data, wire.Version2024), []Check{Is("cutoff_version", 7), Is("retransmit", 1), Is("ack.client_id", 42)}},
	} {
		for i, ch := range c.checks {
			if err := ch(c.p); err != nil {
				t.Errorf("%s: check %d: %v", c.name, i, err)
			}
		}
	}
	for _, c := range []struct {
		name, want string
		p          *Packet
		check      Check
	}{
		{"wrong value", "offset: want 7, got 20000", packetOf(t, grant, wire.VersionCurrent), Is("offset", 7)},
		{"out of range", "priority: want 4..7, got 3", packetOf(t, grant, wire.VersionCurrent), In("priority", 4, 7)},
		{"field of another version", "resend_all: no such field in GRANT", packetOf(t, grant, wire.VersionCurrent), Is("resend_all", 0)},
		{"field the version lacks", "priority: no such field in RESEND", packetOf(t, resend, wire.VersionUpstream), Is("priority", 0)},
		{"field of another type", "length: no such field in GRANT", packetOf(t, grant, wire.VersionCurrent), Is("length", 0)},
		{"array field", "acks: no such field in ACK", packetOf(t, &wire.AckFields{Common: common}, wire.VersionCurrent), Is("acks", 0)},
	} {
		err := c.check(c.p)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
