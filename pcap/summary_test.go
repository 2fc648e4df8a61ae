package pcap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestSummary: the summary line and its JSON carry every count, in the
// singular where it is one, and the error that stopped the read.
func TestSummary(t *testing.T) {
	var s Stats
	s.Frames, s.Homa, s.Retransmits, s.DecodeErrors = 5, 4, 1, 1
	s.ByType[wire.TypeData-wire.MinType] = 3
	s.ByType[wire.TypeGrant-wire.MinType] = 1
	s.GSOFrames, s.Segments, s.Truncated, s.SnapPartial = 1, 6, 2, 1
	s.Other = map[string]int{"udp": 1}
	stop := errors.New("unexpected EOF")
	got := s.Summary("c.pcap", stop)
	want := "c.pcap: 5 frames, 4 Homa: DATA 3 (retransmit 1), GRANT 1, RESEND 0, RPC_UNKNOWN 0, BUSY 0, CUTOFFS 0, FREEZE 0, NEED_ACK 0, ACK 0; " +
		"1 decode error; 1 other (udp 1); 1 GSO frame split into 6 segments; 1 Homa frame with only the payload cut by the snap length (headers whole); 1 Homa frame with part of the Homa header cut by the snap length (common header whole); STOPPED after frame 5: unexpected EOF"
	if got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	n := 3
	j := s.JSONSummary("c.pcap", stop)
	j.RPCPackets = &n
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"decode_errors":1,"error":"unexpected EOF","file":"c.pcap","frames":5,"gso_frames":1,"homa":4`,
		`"other":{"udp":1},"other_total":1,"retransmits":1,"rpc_packets":3,"same_instant_copies":0,"segments":6,"truncated":2,"types":{"ACK":0,`, `"DATA":3,`, `"GRANT":1,`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON lacks %s:\n%s", w, b)
		}
	}
	s.SameInstant = 2
	if got := s.Summary("c.pcap", nil); !strings.Contains(got, "; 1 other (udp 1); 2 Homa frames repeat an earlier frame byte for byte at the same instant; 1 GSO frame") {
		t.Errorf("summary without the same-instant repeats: %s", got)
	}
	if b, _ := json.Marshal(s.JSONSummary("c.pcap", nil)); !strings.Contains(string(b), `"same_instant_copies":2,`) {
		t.Errorf("JSON without the same-instant repeats: %s", b)
	}
	s.SameInstant = 0
	s.CaptureDrops = 4
	if got := s.Summary("c.pcap", nil); !strings.Contains(got, "; the capture says it dropped 4 packets itself (interface statistics)") {
		t.Errorf("summary without the declared drops: %s", got)
	}
	if b, _ := json.Marshal(s.JSONSummary("c.pcap", nil)); !strings.HasPrefix(string(b), `{"capture_drops":4,"decode_errors":1,`) {
		t.Errorf("JSON without the declared drops: %s", b)
	}
	var empty Stats
	if b, _ := json.Marshal(empty.JSONSummary("e", nil)); !strings.Contains(string(b), `"other":{}`) || strings.Contains(string(b), `"error":`) || strings.Contains(string(b), `"rpc_packets"`) {
		t.Errorf("empty summary: %s", b)
	}
}
