package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcess(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 2})
	h := topo.Hosts[1]

	// The child runs in the host's namespace: it sees the host's interface.
	var st unix.Stat_t
	if err := unix.Fstat(int(h.Netns), &st); err != nil {
		t.Fatal(err)
	}
	p, err := h.Start(ProcSpec{Path: "sh", Args: []string{"-c", `stat -L -c %i /proc/self/ns/net; cat /sys/class/net/*/ifindex >/dev/null; while read l; do echo "got $l"; done; echo bye >&2; exit 3`}})
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(p.Stdout())
	line, _ := r.ReadString('\n')
	if want := fmt.Sprint(st.Ino); strings.TrimSpace(line) != want {
		t.Errorf("child's netns inode %q, want host %s's %s", strings.TrimSpace(line), h.Name, want)
	}
	fmt.Fprintln(p.Stdin(), "ping")
	if line, _ = r.ReadString('\n'); line != "got ping\n" {
		t.Errorf("echo: got %q", line)
	}
	p.Stdin().Close()
	rest, _ := io.ReadAll(r)
	if len(rest) != 0 {
		t.Errorf("unexpected output %q", rest)
	}
	var ee *exec.ExitError
	if err := p.Wait(); !errors.As(err, &ee) || p.ExitCode() != 3 {
		t.Errorf("Wait = %v, ExitCode %d; want exit status 3", err, p.ExitCode())
	}
	if b, err := os.ReadFile(p.LogPath()); err != nil || string(b) != "bye\n" {
		t.Errorf("stderr log %s = %q, %v; want \"bye\\n\"", p.LogPath(), b, err)
	}

	// Output written just before exiting is still readable after Wait.
	q, err := h.Start(ProcSpec{Path: "sh", Args: []string{"-c", "echo last words"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Wait(); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(q.Stdout()); err != nil || string(b) != "last words\n" {
		t.Errorf("output read after Wait = %q, %v", b, err)
	}

	// Own process group; Kill reaps; Close kills what is left.
	var stderr bytes.Buffer
	k, err := h.Start(ProcSpec{Path: "sleep", Args: []string{"100"}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if pg, err := syscall.Getpgid(k.Pid()); err != nil || pg != k.Pid() {
		t.Errorf("process group %d (%v), want its own (%d)", pg, err, k.Pid())
	}
	if err := k.Kill(); err != nil {
		t.Fatal(err)
	}
	if k.ExitCode() != -1 {
		t.Errorf("ExitCode after Kill = %d, want -1 (signal)", k.ExitCode())
	}
	left, err := topo.Hosts[0].Start(ProcSpec{Path: "sleep", Args: []string{"100"}})
	if err != nil {
		t.Fatal(err)
	}
	// A daemon that left the process group: Close finds it by namespace.
	d, err := topo.Hosts[1].Start(ProcSpec{Path: "sh", Args: []string{"-c", "setsid sleep 100 </dev/null >/dev/null 2>&1 & echo $!"}})
	if err != nil {
		t.Fatal(err)
	}
	var daemon int
	if _, err := fmt.Fscan(d.Stdout(), &daemon); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	if !eventually(2*time.Second, func() bool { pg, _ := syscall.Getpgid(daemon); return pg == daemon }) {
		t.Fatalf("setsid sleep %d did not get its own process group", daemon)
	}
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-left.Done():
	case <-time.After(scaled(time.Second)):
		t.Fatal("Close returned with a child still running")
	}
	if processAlive(daemon) {
		t.Errorf("daemon %d (own session) alive after Close", daemon)
	}
	if _, err := topo.Hosts[0].Start(ProcSpec{Path: "true"}); err == nil {
		t.Error("Start after Close succeeded")
	}
}
