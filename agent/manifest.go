package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/internal/yamlerr"

	"go.yaml.in/yaml/v3"
)

// Manifest describes an implementation under test: how the harness starts
// its agent on a host. It is read from YAML (LoadManifest), e.g.
//
//	name: myhoma
//	command: [/opt/myhoma/agent, --verbose]
//	env: {MYHOMA_LOG: debug}
//	capabilities: [ipv4, grants, priorities]
//	timeouts: {start: 5s, reply: 10s, shutdown: 5s}
type Manifest struct {
	// Name names the implementation in reports: lower-case letters, digits
	// and '-' (e.g. "myhoma").
	Name string `yaml:"name"`
	// Command is the agent's argv (no shell): the harness runs it inside
	// the host's network namespace, speaking the agent protocol on its
	// standard input and output.
	Command []string `yaml:"command"`
	// Env are extra environment variables for the agent.
	Env map[string]string `yaml:"env,omitempty"`
	// Capabilities the implementation claims (Cap* names). The agent's
	// hello is authoritative; the harness reports a mismatch.
	Capabilities []string `yaml:"capabilities,omitempty"`
	// Params are parameter overrides sent in hello (see Params).
	Params map[string]any `yaml:"params,omitempty"`
	// Timeouts bound the agent's answers (0: defaults).
	Timeouts ManifestTimeouts `yaml:"timeouts,omitempty"`
	// Declares are the parameter names the implementation is known to
	// take (a built-in agent's; a manifest file declares none): the
	// harness's own choices for a run (StartConfig.Defaults, such as the
	// reference implementation's timer tick in real time) are sent only
	// for these, so an implementation gets exactly the parameters its
	// manifest and the user give it.
	Declares []string `yaml:"-"`
}

// HelloParams returns the parameters a hello asks the implementation
// for: defaults for the names it declares (Declares), then the manifest's
// own params, then over (a command's --param, a scenario's iut.params),
// a later one winning over an earlier.
func (m *Manifest) HelloParams(defaults, over Params) Params {
	p := Params{}
	for k, v := range defaults {
		if slices.Contains(m.Declares, k) {
			p[k] = v
		}
	}
	maps.Copy(p, m.Params)
	maps.Copy(p, over)
	return p
}

// WithParams returns a copy of m whose params are its own with extra (a
// command's --param) over them; m is unchanged.
func (m *Manifest) WithParams(extra Params) *Manifest {
	mm := *m
	mm.Params = maps.Clone(m.Params)
	if mm.Params == nil {
		mm.Params = map[string]any{}
	}
	maps.Copy(mm.Params, extra)
	return &mm
}

// environ returns the manifest's env as KEY=value strings, sorted.
func (m *Manifest) environ() []string {
	var env []string
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// ManifestTimeouts bound how long the harness waits for an agent; each is
// multiplied by HOMATEST_TIME_SCALE. YAML values are Go durations ("5s").
type ManifestTimeouts struct {
	// Start bounds the time from starting the process to its hello answer
	// (default 10 s).
	Start time.Duration `yaml:"start,omitempty"`
	// Reply bounds every other reply (default DefaultReplyTimeout).
	Reply time.Duration `yaml:"reply,omitempty"`
	// Shutdown bounds the time from shutdown to the process's exit
	// (default 5 s).
	Shutdown time.Duration `yaml:"shutdown,omitempty"`
}

// Effective returns the timeouts with defaults for the zero ones (start
// 10 s, reply DefaultReplyTimeout, shutdown 5 s), each multiplied by
// HOMATEST_TIME_SCALE.
func (t ManifestTimeouts) Effective() ManifestTimeouts {
	pick := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			d = def
		}
		return timescale.D(d)
	}
	return ManifestTimeouts{Start: pick(t.Start, 10*time.Second), Reply: pick(t.Reply, DefaultReplyTimeout), Shutdown: pick(t.Shutdown, 5*time.Second)}
}

// KnownCapabilities lists every capability name of protocol version 1.
var KnownCapabilities = []string{CapIPv4, CapIPv6, CapGrants, CapPriorities, CapCutoffs, CapNeedAck, CapParams, CapTimeouts, CapFaults, CapReplyDelay}

var manifestName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// LoadManifest reads and validates the YAML manifest at path. Errors are one
// line naming the file, the field and the fix: unreadable file, YAML syntax,
// an unknown field, or a Validate failure.
func LoadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("manifest: %v", err)
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		root = yaml.Node{} // no field paths; Decode says what is wrong
	}
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	var m Manifest
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest %s: %s", path, yamlError(err, &root, data))
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("manifest %s: %v", path, err)
	}
	return &m, nil
}

// unknownFieldRE matches yaml's "field X not found in type agent.T".
var unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)

// yamlError turns a yaml error into one line: a value of the wrong kind
// says its field, the value and the kind wanted (yamlerr.Kind; root is
// the document's node tree, for the field paths).
func yamlError(err error, root *yaml.Node, data []byte) string {
	if err.Error() == "EOF" {
		return "the file is empty: give at least name and command"
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var msgs []string
		for _, e := range te.Errors {
			e, _ = yamlerr.Kind(e, root, reflect.TypeFor[Manifest](), "docs/agent-protocol.md")
			msgs = append(msgs, e)
		}
		msg := strings.Join(msgs, "; ")
		msg = unknownFieldRE.ReplaceAllString(msg, `unknown field "$1": check its spelling and indentation`)
		if strings.Contains(msg, "unknown field") {
			msg += " (known fields: name, command, env, capabilities, params, timeouts; timeouts: start, reply, shutdown)"
		}
		return msg
	}
	// A syntax error: the parser's line and complaint, and what a manifest
	// looks like, since "did not find expected node content" says no more.
	msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", " ")
	if n := tabIndentLine(data); n > 0 {
		if !strings.HasPrefix(msg, "line ") {
			msg = fmt.Sprintf("line %d: %s", n, msg)
		}
		msg += " (YAML forbids tabs for indentation: indent with spaces)"
	}
	return msg + ": not valid YAML; a manifest is a YAML mapping with at least name and command (a list: the agent program and its arguments), see docs/agent-protocol.md"
}

// Validate checks the manifest; the error is one line naming the field and
// the fix.
func (m *Manifest) Validate() error {
	switch {
	case m.Name == "":
		return errors.New(`name: missing: give the implementation a name, e.g. "name: myhoma"`)
	case !manifestName.MatchString(m.Name):
		return fmt.Errorf("name: %q: use 1-40 lower-case letters, digits and '-'", m.Name)
	case len(m.Command) == 0 || m.Command[0] == "":
		return errors.New(`command: missing: give the agent's argv as a list, e.g. "command: [/opt/myhoma/agent]"`)
	}
	for k := range m.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: %q is not a variable name: drop '=' and NUL", k)
		}
	}
	for _, c := range m.Capabilities {
		if !contains(KnownCapabilities, c) {
			return fmt.Errorf("capabilities: unknown capability %q: use %s", c, strings.Join(KnownCapabilities, ", "))
		}
	}
	for name, d := range map[string]time.Duration{"start": m.Timeouts.Start, "reply": m.Timeouts.Reply, "shutdown": m.Timeouts.Shutdown} {
		if d < 0 {
			return fmt.Errorf("timeouts.%s: %v is negative: give a duration such as 10s, or leave it out", name, d)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// BuiltinManifest returns the manifest of a built-in agent (impl "ref",
// "linux" or "tcp") run by the homatest executable exe: command [exe, agent, --impl,
// impl]. Errors: another impl name.
func BuiltinManifest(impl, exe string) (*Manifest, error) {
	switch impl {
	case "ref":
		return &Manifest{Name: "ref", Command: []string{exe, "agent", "--impl", "ref"},
			Capabilities: []string{CapIPv4, CapIPv6, CapGrants, CapPriorities, CapCutoffs, CapNeedAck, CapParams, CapTimeouts, CapFaults, CapReplyDelay},
			Declares:     paramNames()}, nil
	case "linux":
		// ipv6: on a dual-stack host the agent serves IPv6 on the
		// ports listened with ipv6 (its other servers are AF_INET).
		return &Manifest{Name: "linux", Command: []string{exe, "agent", "--impl", "linux"},
			Capabilities: []string{CapIPv4, CapIPv6, CapGrants, CapPriorities, CapCutoffs, CapNeedAck, CapTimeouts, CapReplyDelay}}, nil
	case "tcp":
		return &Manifest{Name: "tcp", Command: []string{exe, "agent", "--impl", "tcp"},
			Capabilities: []string{CapIPv4, CapIPv6, CapTimeouts}}, nil
	}
	return nil, fmt.Errorf("impl %q: the built-in agents are ref, linux and tcp (or give a manifest file)", impl)
}

// ResolveManifest returns the manifest a command's --impl (or a scenario's
// iut.impl) names: a built-in agent run by this executable ("ref" or
// "linux"; BuiltinManifest), else the YAML file at impl, whose agent
// program must be runnable. Errors are one line naming the fix.
func ResolveManifest(impl string) (*Manifest, error) {
	if impl == "ref" || impl == "linux" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cannot find this program to run its agent: %w", err)
		}
		return BuiltinManifest(impl, self)
	}
	if _, err := os.Stat(impl); err != nil {
		return nil, fmt.Errorf("--impl %q: not ref, linux or a readable manifest file (%v)", impl, err)
	}
	m, err := LoadManifest(impl)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(m.Command[0]); err != nil {
		return nil, fmt.Errorf("manifest %s: command: agent program %q cannot be run (%v): fix command[0] to name the agent executable (an absolute path, or a name found in PATH)",
			impl, m.Command[0], errors.Unwrap(err))
	}
	return m, nil
}

// tabIndentLine is the 1-based line of data's first line indented with a
// tab, or 0: yaml's scanner names no line for a tab on line 1.
func tabIndentLine(data []byte) int {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "\t") {
			return i + 1
		}
	}
	return 0
}
