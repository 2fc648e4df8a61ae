package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestCheckCaptureCommentsEscaped: a capture of two sections (two
// captures joined with cat) gets one "capture comment:" line per
// section-header comment, in file order (only one was printed), each with
// its control characters and bidi overrides escaped (a comment's terminal
// escape sequences went to the terminal as they were); the JSON keeps
// capture_comment the first and lists all in capture_comments, its
// control characters escaped by encoding/json.
func TestCheckCaptureCommentsEscaped(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	comments := []string{"first part", "second part \x1b]0;owned\x07\x1b[2J\x1b[31mred\u202eevil\xff\nend"}
	var joined bytes.Buffer
	for _, c := range comments {
		if _, err := pcap.Annotate(bytes.NewReader(src), &joined, nil, c); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "joined.pcapng")
	if err := os.WriteFile(path, joined.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The two sections hold the same frames at the same instants: the
	// second repeats the first, read once, and the capture is judged as
	// the capture alone (it was diagnosed two instances of each host
	// interleaved, INCOMPLETE, before the doubled capture was judged
	// without its copies; then as doubled, every frame's copy skipped).
	out, err, code := run(t, "check", path)
	if code != 0 || !strings.Contains(out, "section 2 (from frame 47) repeats section 1 frame for frame") || strings.Contains(out, "looks like two captures merged") {
		t.Fatalf("exit %d, %v:\n%s\nwant 0 and the repeated section said", code, err, out)
	}
	want := "capture comment: first part\ncapture comment: second part \\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\u202eevil\\xff end\n"
	if !strings.Contains(out, want) {
		t.Errorf("report lacks\n%s\n%s", want, out)
	}
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || r == 0x202e || r == utf8.RuneError {
			t.Fatalf("report holds %q at byte %d:\n%q", r, i, out)
		}
	}
	out, _, _ = run(t, "check", "-o", "json", path)
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("JSON holds a raw control character:\n%q", out)
	}
	var js struct {
		Files []struct {
			Comment  string   `json:"capture_comment"`
			Comments []string `json:"capture_comments"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if f := js.Files[0]; f.Comment != comments[0] || len(f.Comments) != 2 || f.Comments[0] != comments[0] || f.Comments[1] != strings.ToValidUTF8(comments[1], "\ufffd") {
		t.Errorf("JSON capture_comment %q, capture_comments %q; want %q and both", f.Comment, f.Comments, comments[0])
	}
}
