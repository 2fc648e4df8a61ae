package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
)

// ProcSpec describes a child process to start in a host.
type ProcSpec struct {
	// Path is the program (looked up in PATH if it has no slash).
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is added to the harness's environment ("KEY=value"; later
	// entries win).
	Env []string
	// Dir is the working directory ("" = the harness's).
	Dir string
	// Name names the process in logs; "" means the base name of Path.
	Name string
	// Stderr receives the child's standard error. If nil, it goes to the
	// artifact log "<host>.<name>.stderr.log" in the run folder (see
	// Process.LogPath).
	Stderr io.Writer
	// Tee, when set with a nil Stderr, also receives the child's standard
	// error, beside the log (an agent's last lines for its errors).
	Tee io.Writer
}

// Process is a child started in a host's namespace by Host.Start. Its
// standard input and output are pipes for the agent protocol; it runs in
// its own process group and gets SIGKILL when the harness dies
// (Pdeathsig). Topology.Close kills and reaps it.
type Process struct {
	// Host is the host it runs in.
	Host *Host
	// Name is ProcSpec.Name or the program's base name.
	Name string

	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error
}

// Pid returns the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdin returns the write end of the child's standard input. Closing it
// signals end of input to the child.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout returns the read end of the child's standard output. It stays
// readable after the child exits (until the topology closes), so
// everything the child wrote can be read up to io.EOF.
func (p *Process) Stdout() io.Reader { return p.stdout }

// LogPath returns the stderr log file path, or "" when ProcSpec.Stderr was
// given.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns nil for exit status 0, or
// an *exec.ExitError (exit status or signal). It may be called many times
// and from many goroutines.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// ExitCode returns the exit status, -1 if it was killed by a signal, or -2
// while it runs.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -2
	}
}

// Signal sends sig to the process's whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("harness: signal %s on %s: %w", p.Name, p.Host.Name, err)
	}
	return nil
}

// Kill sends SIGKILL to the process group and waits (up to 10 s) until the
// process is reaped. It returns nil if the process had already exited.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("harness: %s on %s (pid %d) not reaped 10 s after SIGKILL", p.Name, p.Host.Name, p.Pid())
	}
}

// Start starts a child process in the host's namespace. The child is
// forked from a long-lived OS thread that stays in the namespace for the
// topology's lifetime (one per host), because Pdeathsig fires when the
// forking thread exits, not when the harness process does; that thread
// only exits after Topology.Close has killed every child.
func (h *Host) Start(spec ProcSpec) (*Process, error) {
	name := spec.Name
	if name == "" {
		name = filepath.Base(spec.Path)
	}
	p := &Process{Host: h, Name: name, done: make(chan struct{})}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	if len(spec.Env) > 0 {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	cmd.SysProcAttr = childAttr()
	// Our own pipes rather than cmd.StdinPipe/StdoutPipe: exec closes
	// those when the process is reaped, which would lose output the child
	// wrote just before exiting. The parent's ends stay open until the
	// topology closes.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("harness: start %s on %s: %w", name, h.Name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("harness: start %s on %s: %w", name, h.Name, err)
	}
	p.stdin, p.stdout = inW, outR
	cmd.Stdin, cmd.Stdout = inR, outW
	closeChildEnds := func() { inR.Close(); outW.Close() }
	closeAll := func() {
		closeChildEnds()
		p.closePipes()
		if p.logFile != nil {
			p.logFile.Close()
		}
	}
	cmd.Stderr = spec.Stderr
	if spec.Stderr == nil {
		f, err := h.topo.Artifacts.OpenLog(h.Name + "." + name + ".stderr.log")
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("harness: start %s on %s: %w", name, h.Name, err)
		}
		p.logFile, p.logPath, cmd.Stderr = f, f.Name(), f
		if spec.Tee != nil {
			cmd.Stderr = io.MultiWriter(f, spec.Tee)
		}
	}
	p.cmd = cmd
	fk, err := h.startForker()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("harness: start %s on %s: %w", name, h.Name, err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		closeAll()
		return nil, fmt.Errorf("harness: start %s on %s: topology closed", name, h.Name)
	}
	if err := fk.do(cmd.Start); err != nil {
		h.mu.Unlock()
		closeAll()
		return nil, fmt.Errorf("harness: start %s on %s: %w", name, h.Name, err)
	}
	closeChildEnds()
	h.procs[p] = struct{}{}
	h.started = append(h.started, p)
	h.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		if p.logFile != nil {
			p.logFile.Close()
		}
		h.mu.Lock()
		delete(h.procs, p)
		h.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// closePipes closes the parent's ends of stdin and stdout.
func (p *Process) closePipes() {
	p.stdin.Close()
	p.stdout.Close()
}

// Processes returns the host's running processes.
func (h *Host) Processes() []*Process {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []*Process
	for p := range h.procs {
		ps = append(ps, p)
	}
	return ps
}

// forker is a goroutine locked to an OS thread that lives in one host's
// namespace and runs fork requests there.
type forker struct {
	req  chan func() error
	res  chan error
	stop chan struct{}
	exit chan struct{}
}

// startForker returns the host's forker, starting it on first use.
func (h *Host) startForker() (*forker, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.forker != nil {
		return h.forker, nil
	}
	if h.closed {
		return nil, errors.New("topology closed")
	}
	fk := &forker{req: make(chan func() error), res: make(chan error), stop: make(chan struct{}), exit: make(chan struct{})}
	ready := make(chan error, 1)
	ns := h.Netns
	go func() {
		defer close(fk.exit)
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns the runtime ends the
		// thread, which fires the children's Pdeathsig (they are dead by
		// then).
		if err := netns.Set(ns); err != nil {
			ready <- fmt.Errorf("enter namespace: %w", err)
			return
		}
		ready <- nil
		for {
			select {
			case f := <-fk.req:
				fk.res <- f()
			case <-fk.stop:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	h.forker = fk
	return fk, nil
}

func (fk *forker) do(f func() error) error {
	select {
	case fk.req <- f:
		return <-fk.res
	case <-fk.exit:
		return errors.New("process starter stopped")
	}
}

// stopForker ends the host's forker thread; processes must be dead.
func (h *Host) stopForker() error {
	h.mu.Lock()
	fk := h.forker
	h.forker = nil
	h.closed = true
	started := h.started
	h.started = nil
	h.mu.Unlock()
	for _, p := range started {
		p.closePipes()
	}
	if fk != nil {
		close(fk.stop)
		<-fk.exit
	}
	return nil
}

// killAll kills and reaps every process of every host.
func (t *Topology) killAll() error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, h := range t.Hosts {
		h.mu.Lock()
		h.closed = true // no new processes from here on
		h.mu.Unlock()
		for _, p := range h.Processes() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Kill(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	// Processes that left their process group (setsid, daemons) but still
	// run in one of the run's namespaces would keep it alive, unnamed,
	// after the namespace is deleted: find them by namespace inode.
	inodes := map[uint64]string{}
	for _, h := range t.Hosts {
		if ino, ok := nsInode(h.Netns); ok {
			inodes[ino] = h.NS
		}
	}
	if ino, ok := nsInode(t.Switch); ok {
		inodes[ino] = t.SwitchNS
	}
	_, kerrs := killProcesses(processesIn(inodes))
	return errors.Join(append(errs, kerrs...)...)
}
