//go:build unix

package pcap

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenPathNamedPipe: a capture given as a named pipe (or /dev/fd/N,
// a process substitution) can be read only once; OpenPath spools it on
// first use, so that a second open (check plans its capture point, then
// checks) reads the same frames instead of waiting forever for another
// writer.
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

// TestOpenPathStreams: a stream is read as it comes, not whole first:
// the frames of a named pipe whose writer keeps it open are read before
// its end.
func TestOpenPathStreams(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "live")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.Write(want)
		<-stop
	}()
	r, err := OpenPath(fifo, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for n := range 44 {
		if _, err := r.Next(); err != nil {
			t.Fatalf("frame %d of a pipe still open: %v", n+1, err)
		}
	}
}

// TestOpenPathGarbageStream: a stream that is no capture (/dev/zero,
// /dev/urandom, a pipe of zeros that never ends) fails at once on its
// magic number (ErrFormat) instead of being read to an end it may not
// have, and its spool stops copying it.
func TestOpenPathGarbageStream(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "zeros")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		zeros := make([]byte, 1<<16)
		for {
			if _, err := f.Write(zeros); err != nil {
				return // the reader closed the pipe
			}
		}
	}()
	for _, path := range []string{"/dev/zero", "/dev/urandom", fifo} {
		if _, err := os.Stat(path); err != nil {
			continue // no such device here
		}
		if _, err := OpenPath(path, ReaderOptions{}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", path, err)
		}
		sp, _, _ := stream(path)
		for {
			sp.mu.Lock()
			done, n, more := sp.done, sp.n, sp.more
			sp.mu.Unlock()
			if done {
				if n > 1<<20 {
					t.Errorf("%s: spooled %d bytes of a stream that is no capture", path, n)
				}
				break
			}
			<-more
		}
	}
	// The reader of the spool sees its end, not a wait.
	sp, _, _ := stream(fifo)
	if _, err := io.ReadAll(sp.newReader(nil)); err != nil {
		t.Errorf("reading the spool of %s: %v", fifo, err)
	}
}
