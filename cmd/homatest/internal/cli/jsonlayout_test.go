package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONOneLayout: every command whose -o json prints one document
// prints it in internal/jsonout's layout (indented by two spaces, one
// final newline). Before, faults -o json printed its list on one line.
// (decode and rpcs print one object a line, JSON Lines, on purpose.)
func TestJSONOneLayout(t *testing.T) {
	capture := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	for _, args := range [][]string{
		{"faults", "-o", "json"},
		{"spec", "list", "-o", "json"},
		{"spec", "params", "-o", "json"},
		{"spec", "coverage", "-o", "json"},
		{"run", "--list", "--env", "sim", "--focus", "GRANT-long-request", "-o", "json"},
		{"check", "-o", "json", capture},
		{"cleanup", "--dry-run", "-o", "json"},
	} {
		out, err, code := run(t, args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d, %v", args, code, err)
			continue
		}
		var compact, want bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil {
			t.Errorf("%v: not one JSON document: %v", args, err)
			continue
		}
		json.Indent(&want, compact.Bytes(), "", "  ")
		want.WriteByte('\n')
		if out != want.String() {
			first, _, _ := strings.Cut(out, "\n")
			t.Errorf("%v: not jsonout's layout (indented by two spaces, a final newline); its first line: %.120s", args, first)
		}
	}
}
