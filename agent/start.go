package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/timescale"
)

// StartConfig says how Start runs an implementation's agent on a host.
type StartConfig struct {
	// Manifest is the implementation: its agent's command line and
	// environment, its parameters, the capabilities it claims and the
	// timeouts the harness keeps with it.
	Manifest *Manifest
	// Defaults are the harness's own parameter choices for this run (the
	// reference implementation's timer tick in real time, a bench's link
	// rate): sent only for the names the implementation declares
	// (Manifest.HelloParams).
	Defaults Params
	// Params override the manifest's params (a command's --param, a
	// scenario's iut.params).
	Params Params
	// Faults are fault knobs asked for in hello (the reference
	// implementation's, homa.Faults).
	Faults []string
	// Addrs are the addresses hello gives the agent (at most one per
	// family); nil means the host's IPv4 address.
	Addrs []netip.Addr
	// LogName names the agent's standard error log in the run folder,
	// "<host>.<LogName>.stderr.log"; "" means "agent".
	LogName string
}

// Agent is an implementation's agent running on a harness host, past its
// hello: the one way homatest starts an implementation under test (gVisor's
// packetimpact NewDUT is the model). The topology kills its process when
// it closes; Close ends it sooner.
type Agent struct {
	// Client speaks the agent protocol with it.
	Client *Client
	// Hello is its answer to hello: implementation, version,
	// capabilities and every parameter in effect.
	Hello Hello
	// Host is the host it runs on, Proc its process.
	Host *harness.Host
	Proc *harness.Process
	// Manifest is the implementation it runs; Timeouts are the
	// manifest's, defaults filled in and scaled (ManifestTimeouts.Effective).
	Manifest *Manifest
	Timeouts ManifestTimeouts
	// Params are the parameters its hello asked for, Addrs the addresses.
	Params Params
	Addrs  []netip.Addr

	tail     *TailWriter
	closing  sync.Once
	closeErr error
}

// Start runs cfg.Manifest's agent on host h and says hello: the process
// in h's namespace with the manifest's environment (its standard error
// logged in the run folder, and its last lines added to every error of the
// session), a Client whose replies are bounded by the manifest's
// timeouts.reply and whose hello by timeouts.start, and a hello with the
// flattened parameters (Manifest.HelloParams), cfg.Faults and cfg.Addrs.
//
// Every Homa implementation but the built-in ref (the linux agent, a
// manifest's) gets generic receive offload on h's link
// (harness.Host.SetGRO), as a kernel stack has from a real NIC.
//
// Errors (one line, naming the host and the agent's log): the process
// cannot start, hello fails or is silent within timeouts.start, ctx ends,
// GRO cannot be turned on, and a *CannotRunError when the agent's hello
// says its implementation cannot run here. Nothing is left running on
// error.
func Start(ctx context.Context, h *harness.Host, cfg StartConfig) (*Agent, error) {
	m := cfg.Manifest
	if m == nil || len(m.Command) == 0 {
		return nil, errors.New("agent: Start needs a manifest with a command")
	}
	name := cfg.LogName
	if name == "" {
		name = "agent"
	}
	a := &Agent{Host: h, Manifest: m, Timeouts: m.Timeouts.Effective(), Params: m.HelloParams(cfg.Defaults, cfg.Params),
		tail: NewTailWriter(5, 4096)}
	proc, err := h.Start(harness.ProcSpec{Path: m.Command[0], Args: m.Command[1:], Env: m.environ(), Name: name, Tee: a.tail})
	if err != nil {
		return nil, fmt.Errorf("starting the agent %s on %s: %w", m.Name, h.Name, err)
	}
	a.Proc = proc
	a.Client = NewClient(proc.Stdout(), proc.Stdin(), ClientOptions{ReplyTimeout: a.Timeouts.Reply,
		HelloTimeout: a.Timeouts.Start, StderrTail: a.tail.String, Exit: a.ExitStatus})
	a.Addrs = cfg.Addrs
	if a.Addrs == nil {
		a.Addrs = []netip.Addr{h.Addr4}
	}
	hello, err := a.Client.Hello(ctx, HelloRequest{Host: h.Name, Addrs: a.Addrs, Params: a.Params, Faults: cfg.Faults})
	switch {
	case err != nil && strings.Contains(err.Error(), proc.LogPath()): // ExitStatus named it
		err = fmt.Errorf("agent %s on %s: hello: %w", m.Name, h.Name, err)
	case err != nil:
		err = fmt.Errorf("agent %s on %s: hello: %w (its log: %s)", m.Name, h.Name, err, proc.LogPath())
	case hello.Unsupported != "":
		err = &CannotRunError{Impl: m.Name, Reason: hello.Unsupported}
	case hello.Impl != "ref" && hello.Impl != "tcp":
		// A kernel Homa stack reads packets as the kernel's receive
		// path hands them over, GRO included, as from a real NIC (GRO is
		// on by default there; veth leaves it off): HomaModule takes a
		// DATA packet's offset only as its GRO handler wrote it
		// (harness.Host.SetGRO). The built-in ref reads raw IP packets
		// and splits what it gets itself; the TCP baseline keeps the
		// links the benchmarks measured it on.
		if e := h.SetGRO(true); e != nil {
			err = fmt.Errorf("agent %s on %s: turning GRO on for its link, which a kernel Homa stack needs: %w", m.Name, h.Name, e)
		}
	}
	if err != nil {
		// Killed before its input closes: an agent told nothing more
		// writes no goodbye to its log, which would keep a failed run's
		// folder as if the log held evidence.
		proc.Kill()
		a.Client.Close()
		return nil, err
	}
	a.Hello = hello
	return a, nil
}

// CannotRunError is Start's error when the agent's hello says its
// implementation cannot run here (Hello.Unsupported: the linux agent on a
// kernel without Homa). Its text is the one line every command prints for
// it, what and the fix: "implementation linux cannot run here: Linux
// kernel has no Homa (...); load homa.ko".
type CannotRunError struct {
	// Impl is the manifest's name, Reason the hello's (it names the fix).
	Impl, Reason string
}

func (e *CannotRunError) Error() string {
	return "implementation " + e.Impl + " cannot run here: " + e.Reason
}

// cannotRunText matches a CannotRunError's text (a manifest's name has no
// spaces).
var cannotRunText = regexp.MustCompile(`^implementation (\S+) cannot run here: (.+)$`)

// ParseCannotRun reads a CannotRunError back from its text, msg (a
// conformance pass hands its setup error to the run as text); nil when
// msg is not one.
func ParseCannotRun(msg string) *CannotRunError {
	m := cannotRunText.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	return &CannotRunError{Impl: m[1], Reason: m[2]}
}

// Unclaimed returns the capabilities the manifest claims that the hello
// does not declare, in the manifest's order (the hello is what counts; a
// report names the difference).
func (a *Agent) Unclaimed() []string {
	var missing []string
	for _, c := range a.Manifest.Capabilities {
		if !contains(a.Hello.Capabilities, c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// ExitStatus says how the agent's process ended, naming the agent, its
// host and its standard error log: "agent ref on h1 exited with status 2
// (its log: …)" or "… was killed by signal killed (…)". A process not yet
// reaped gets a moment (its standard output closes as it exits); one
// still running after it is "… closed its standard output but is still
// running (…)".
func (a *Agent) ExitStatus() string {
	who := fmt.Sprintf("agent %s on %s", a.Manifest.Name, a.Host.Name)
	log := fmt.Sprintf(" (its log: %s)", a.Proc.LogPath())
	select {
	case <-a.Proc.Done():
	case <-time.After(timescale.D(time.Second)):
		return who + " closed its standard output but is still running" + log
	}
	return who + " " + describeExit(a.Proc.Wait()) + log
}

// logMention is how an error names an agent's standard error log:
// " (its log: PATH)" (Start, ExitStatus).
var logMention = regexp.MustCompile(` \(its log: [^()]*\)`)

// LogRemoved rewrites the mentions of agents' logs in msg, an error's
// text, for a command that removed its folder because every log was empty
// (nothing there to read): " (its log was empty)".
func LogRemoved(msg string) string {
	return logMention.ReplaceAllString(msg, " (its log was empty)")
}

// describeExit words a process's Wait error: "exited with status N" or
// "was killed by signal S".
func describeExit(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return "ended: " + err.Error()
		}
		return "exited with status 0"
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// Tail returns the last lines the agent wrote to its standard error.
func (a *Agent) Tail() string { return a.tail.String() }

// Close ends the agent: shutdown (calls in flight end "aborted"), the
// session closed, and the process killed if it has not exited within the
// manifest's timeouts.shutdown. It returns the shutdown's error (nil when
// the agent said bye). Close may be called more than once.
func (a *Agent) Close() error {
	a.closing.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.Timeouts.Shutdown)
		defer cancel()
		a.closeErr = a.Client.Shutdown(ctx)
		a.Client.Close()
		select {
		case <-a.Proc.Done():
		case <-ctx.Done():
			a.Proc.Kill()
		}
	})
	return a.closeErr
}
