//go:build unix

package pcap

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// namedPipe returns a new named pipe and calls write with it opened for
// writing, in another goroutine, once a reader opens it; the pipe is
// closed when write returns.
func namedPipe(t *testing.T, write func(*os.File)) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		write(f)
	}()
	return fifo
}

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
	fifo := namedPipe(t, func(f *os.File) { f.Write(want) })
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
// its end, and a read waiting for more returns the error of its
// context once that has ended (frames read so far stay read).
func TestOpenPathStreams(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	fifo := namedPipe(t, func(f *os.File) {
		f.Write(want)
		<-stop // a capture still being written
	})
	ctx, cancel := context.WithCancel(context.Background())
	r, err := OpenPath(fifo, ReaderOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for n := range 44 {
		if _, err := r.Next(); err != nil {
			t.Fatalf("frame %d of a pipe still open: %v", n+1, err)
		}
	}
	cancel()
	if _, err := r.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("read past the frames sent, context ended: %v, want context.Canceled", err)
	}
}

// TestOpenPathGarbageStream: a stream that is no capture (/dev/zero,
// /dev/urandom, a pipe of zeros that never ends) fails at once on its
// magic number (ErrFormat) instead of being read to an end it may not
// have, and its spool stops copying it.
func TestOpenPathGarbageStream(t *testing.T) {
	fifo := namedPipe(t, func(f *os.File) {
		zeros := make([]byte, 1<<16)
		for {
			if _, err := f.Write(zeros); err != nil {
				return // the reader closed the pipe
			}
		}
	})
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

// TestSpoolTMPDIR: a stream (here /dev/null, a device) spools to a file
// in $TMPDIR; a TMPDIR that does not exist gives one line naming it, not
// the bare "no such file or directory" of a capture that does not exist.
func TestSpoolTMPDIR(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", dir)
	_, err := OpenPath(os.DevNull, ReaderOptions{})
	want := "cannot read capture " + os.DevNull + ": TMPDIR=" + dir + " does not exist (a capture read from a pipe or device is spooled to a temporary file there): set TMPDIR to a writable directory"
	if err == nil || OpenError(os.DevNull, err).Error() != want {
		t.Errorf("got %v, want %q", OpenError(os.DevNull, err), want)
	}
}
