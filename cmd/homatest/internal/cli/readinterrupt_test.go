//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCtx is run with the command's context ctx (Main's ends on SIGINT
// and SIGTERM); it fails the test if the command has not returned
// within a minute (a read that ignores ctx never does).
func runCtx(t *testing.T, ctx context.Context, args ...string) (string, error, int) {
	t.Helper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		cmd := New()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		done <- result{out.String(), err}
	}()
	select {
	case r := <-done:
		return r.out, r.err, ExitCode(r.err)
	case <-time.After(time.Minute):
		t.Fatalf("homatest %s: still running a minute after its context ended", strings.Join(args, " "))
		return "", nil, 0
	}
}

// openFIFO returns a named pipe whose writer sends data and then keeps
// it open (a capture still being written: tcpdump -w - | ...), until
// the test ends.
func openFIFO(t *testing.T, data []byte) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "live")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.Write(data)
		<-stop
	}()
	return fifo
}

// writerlessFIFO returns a named pipe that nothing ever opens for
// writing (mkfifo f; homatest check f): opening it waits for a writer.
// Cleanup opens and closes a writer's end, which lets a waiting open
// return.
func writerlessFIFO(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "nowriter")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return fifo
}

// TestReadCommandsInterrupted: check, decode and rpcs stop once their
// context ends (SIGINT or SIGTERM in Main) with exit 130 and one line,
// printing no verdict and writing no --annotate file: on a regular
// capture of 4600 frames (the check stops within a batch of frames, not
// at the end), and on a named pipe whose writer never closes it, where
// a read waits for frames that never come, and on a named pipe that no
// writer ever opens, where opening it waits.
func TestReadCommandsInterrupted(t *testing.T) {
	frames := readCapFrames(t, realDir+"/linux-6.13-proto146/a-small-rpcs.pcap")
	var many []capFrame
	for range 100 {
		many = append(many, frames...)
	}
	dir := t.TempDir()
	big := writeCapFrames(t, dir, "big.pcapng", many, nil)
	live, err := os.ReadFile(realDir + "/linux-6.13-proto146/a-small-rpcs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"check", "--annotate", "ANN"}, {"decode"}, {"rpcs"}} {
		for _, input := range []string{"big", "fifo", "nowriter"} {
			path := big
			ctx := ended
			if input != "big" {
				path = openFIFO(t, live)
				if input == "nowriter" {
					path = writerlessFIFO(t)
				}
				c, cancel := context.WithCancel(context.Background())
				time.AfterFunc(200*time.Millisecond, cancel) // any time: the pipe never ends
				ctx = c
			}
			ann := filepath.Join(dir, args[0]+input+".pcapng")
			a := append(append([]string{}, args...), path)
			for i := range a {
				if a[i] == "ANN" {
					a[i] = ann
				}
			}
			out, err, code := runCtx(t, ctx, a...)
			if code != 130 || err == nil || !strings.HasPrefix(err.Error(), "interrupted") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s on %s: exit %d, %v; want 130 with one line", args[0], input, code, err)
			}
			if strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") || strings.Contains(out, "INCOMPLETE") || args[0] == "rpcs" && out != "" {
				t.Errorf("%s on %s printed a verdict or table:\n%.400s", args[0], input, out)
			}
			if _, err := os.Stat(ann); err == nil {
				t.Errorf("%s on %s wrote %s", args[0], input, ann)
			}
		}
	}
}

// lineWriter passes each write to lines as text (decode writes whole
// lines).
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestDecodeLive: decode of a stream whose writer is still writing
// (tcpdump -U -w - | homatest decode -) prints its packets as they come,
// before the stream ends. Before, it printed nothing until the end: the
// IPv6 shift and ports prescans read up to 100000 frames, and the lines
// waited in a 64 KiB buffer.
func TestDecodeLive(t *testing.T) {
	live, err := os.ReadFile(realDir + "/linux-6.13-proto146/a-small-rpcs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	path := openFIFO(t, live) // its writer never closes it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(lineWriter, 1024)
	done := make(chan error, 1)
	go func() {
		cmd := New()
		cmd.SetOut(lines)
		cmd.SetErr(lines)
		cmd.SetArgs([]string{"decode", path})
		done <- cmd.ExecuteContext(ctx)
	}()
	deadline := time.After(time.Minute) // a bound on a stalled test, not a timing assertion
	for got := ""; !strings.Contains(got, "DATA"); {
		select {
		case s := <-lines:
			got += s
		case err := <-done:
			t.Fatalf("decode returned %v before the stream ended, having printed %q", err, got)
		case <-deadline:
			t.Fatalf("no packet printed within a minute of a stream of %d bytes still open: decode waits for its end", len(live))
		}
	}
	cancel()
	if err := <-done; ExitCode(err) != 130 {
		t.Errorf("after the interrupt: %v (exit %d), want 130", err, ExitCode(err))
	}
}
