package jsonout

import (
	"errors"
	"strings"
	"testing"
)

// TestWrite: two-space indentation, a final newline, HTML characters
// escaped by Write and kept by WriteUnescaped.
func TestWrite(t *testing.T) {
	v := map[string]any{"filter": "u32 -> 1:17 & <x>", "n": []int{1, 2}}
	var b strings.Builder
	if err := Write(&b, v); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"filter\": \"u32 -\\u003e 1:17 \\u0026 \\u003cx\\u003e\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n"
	if b.String() != want {
		t.Errorf("Write: %q; want %q", b.String(), want)
	}
	b.Reset()
	if err := WriteUnescaped(&b, v); err != nil {
		t.Fatal(err)
	}
	want = "{\n  \"filter\": \"u32 -> 1:17 & <x>\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n"
	if b.String() != want {
		t.Errorf("WriteUnescaped: %q; want %q", b.String(), want)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

// TestWriteErrors: a value that does not marshal and a failing writer are
// errors, and nothing is written for the first.
func TestWriteErrors(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, make(chan int)); err == nil || b.Len() != 0 {
		t.Errorf("a channel: %v, wrote %q; want an error and nothing written", err, b.String())
	}
	if err := Write(failWriter{}, 1); !errors.Is(err, errDiskFull) {
		t.Errorf("a failing writer: %v; want %v", err, errDiskFull)
	}
}
