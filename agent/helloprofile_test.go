package agent

import "testing"

// TestHelloProfile: an IUT whose hello names the 2024 wire format
// (HomaModule linux_6.1.38, found by the linux agent) is judged under
// profile linux-2024; no wire field is main's "linux"; an unknown name is
// an error that lists the known ones.
func TestHelloProfile(t *testing.T) {
	for wire, want := range map[string]string{"": "linux", "2024": "linux-2024", "2025": "linux-2025", "upstream": "upstream", "current": "linux"} {
		if got, err := (Hello{Wire: wire}).Profile(); err != nil || got != want {
			t.Errorf("wire %q: profile %q, %v; want %q", wire, got, err, want)
		}
	}
	for _, bad := range []string{"1999", "auto"} {
		if _, err := (Hello{Wire: bad}).Profile(); err == nil {
			t.Errorf("wire %q accepted", bad)
		}
	}
}
