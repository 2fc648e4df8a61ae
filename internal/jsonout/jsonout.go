// Package jsonout writes homatest's JSON documents, the one layout of every
// command's -o json and of the JSON files in a run folder: one value,
// indented by two spaces, ending in a newline.
package jsonout

import (
	"encoding/json"
	"io"
)

// Write writes v to w as JSON indented by two spaces with a final newline
// (encoding/json's Encoder: <, > and & come out as \u003c, \u003e and
// \u0026). Errors: v that does not marshal, and w's write error.
func Write(w io.Writer, v any) error {
	return write(w, v, true)
}

// WriteUnescaped is Write leaving <, > and & as they are, for text a
// reader reads as the tool wrote it, such as tc's "filter u32 ip prio 1
// -> 1:17" (netem show).
func WriteUnescaped(w io.Writer, v any) error {
	return write(w, v, false)
}

func write(w io.Writer, v any, escapeHTML bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	return enc.Encode(v)
}
