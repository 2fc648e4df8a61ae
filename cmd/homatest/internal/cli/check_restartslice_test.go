package cli

import "testing"

// TestCheckSliceFromRestart: a slice of a real capture that begins at a
// restarted request (e2-server-forgets-request.pcap from frame 54, the
// client's DATA at offset 0 with retransmit=1 after the server's
// RPC_UNKNOWN) missed what asked for the copy: the RPC is judged as joined
// mid-way, so it passes (exit 0, no MUST violation). Before, the copy
// counted as the request's start and check failed it with 19 MUST
// violations (16 HOMA-RESEND-003 "retransmitted DATA with no earlier
// RESEND", 3 HOMA-GRANT-005).
func TestCheckSliceFromRestart(t *testing.T) {
	frames := readCapFrames(t, "../../../../pcap/testdata/real/linux-6.1-proto253/e2-server-forgets-request.pcap")
	if len(frames) < 60 {
		t.Fatalf("%d frames", len(frames))
	}
	p := writeCapFrames(t, t.TempDir(), "restart.pcapng", frames[53:], nil)
	v, code := checkJSON(t, p)
	if code != 0 || v.Verdict != "pass" || v.Must != 0 {
		t.Errorf("from frame 54: exit %d verdict %q must %d, want 0 pass 0", code, v.Verdict, v.Must)
	}
}
