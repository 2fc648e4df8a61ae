//go:build unix

package pcap

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenPathNamedPipe: a capture given as a named pipe (or /dev/fd/N,
// a process substitution) can be read only once; OpenPath reads it into
// memory on first use, so that a second open (check plans its capture
// point, then checks) reads the same frames instead of waiting forever
// for another writer.
func TestOpenPathNamedPipe(t *testing.T) {
	src := filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "capture")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(want)
		f.Close()
	}()
	count := func() int {
		r, err := OpenPath(fifo, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		return n
	}
	first, second := count(), count()
	if first != 44 || second != first {
		t.Fatalf("read %d then %d frames from the pipe, want its 44 Homa frames twice", first, second)
	}
}
