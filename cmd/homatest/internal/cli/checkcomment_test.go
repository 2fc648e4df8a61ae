package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/pcap"
)

// TestCheckCaptureComment: check prints a capture's section-header
// comment on one line ("capture comment: ...") and in JSON
// (capture_comment); the report of the same packets without a comment is
// the same report without that line, and its JSON has no such key.
func TestCheckCaptureComment(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")
	const comment = "homatest run: grants GRANT-long-request failed:\nno GRANT within 21ms"
	write := func(name, section string) string {
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		path := filepath.Join(dir, name)
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if _, err := pcap.Annotate(in, out, nil, section); err != nil {
			t.Fatal(err)
		}
		return path
	}
	with, without := write("with.pcapng", comment), write("without.pcapng", "")
	a, _, code := run(t, "check", with)
	b, _, _ := run(t, "check", without)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, a)
	}
	line := "capture comment: homatest run: grants GRANT-long-request failed: no GRANT within 21ms\n"
	if !strings.Contains(a, line) {
		t.Errorf("report lacks %q:\n%s", line, a)
	}
	if strings.Contains(b, "capture comment") {
		t.Errorf("report of a capture without a comment has one:\n%s", b)
	}
	if got := strings.ReplaceAll(strings.Replace(a, line, "", 1), with, without); got != b {
		t.Errorf("report with the comment line taken out:\n%s\nwant the uncommented capture's:\n%s", got, b)
	}
	var ja, jb struct {
		Files []map[string]any `json:"files"`
	}
	for _, c := range []struct {
		path string
		into any
	}{{with, &ja}, {without, &jb}} {
		out, _, _ := run(t, "check", "-o", "json", c.path)
		if err := json.Unmarshal([]byte(out), c.into); err != nil {
			t.Fatal(err)
		}
	}
	if got := ja.Files[0]["capture_comment"]; got != comment {
		t.Errorf("JSON capture_comment %q, want %q", got, comment)
	}
	if _, ok := jb.Files[0]["capture_comment"]; ok {
		t.Errorf("JSON of a capture without a comment has capture_comment")
	}
}
