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
