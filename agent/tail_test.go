package agent

import (
	"fmt"
	"testing"
)

func TestTailWriter(t *testing.T) {
	w := NewTailWriter(3, 64)
	for i := range 20 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got := w.String(); got != "line 17\nline 18\nline 19" {
		t.Errorf("tail = %q", got)
	}
	w.Write([]byte("partial"))
	if got := w.String(); got != "line 18\nline 19\npartial" {
		t.Errorf("tail with a partial line = %q", got)
	}
	if got := NewTailWriter(0, 0).String(); got != "" {
		t.Errorf("empty tail = %q", got)
	}
}
