package scenario

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/homatest/homatest/internal/yamlerr"
	"go.yaml.in/yaml/v3"
)

// Load reads the scenario file at path, fills in the defaults (Name from
// the file name) and validates it. Errors are one line: "scenario FILE:
// line N: field.path: what is wrong: how to fix it".
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "open FILE: " would say the file twice
		}
		return nil, fmt.Errorf("scenario %s: %v (give a scenario YAML file, e.g. scenario/testdata/w4-half-load.yaml)", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %v", err)
	}
	s, err := parse(data, filepath.Dir(abs), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a scenario from YAML, fills in the defaults and validates
// it (relative manifest paths are relative to the current directory).
// Errors are one line with the YAML line, the field path and the fix.
func Parse(data []byte) (*Scenario, error) {
	return parse(data, ".", "")
}

func parse(data []byte, dir, base string) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(err, nil)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, errors.New("the file is empty: give at least topology, iut and workload (see homatest scenario --help)")
	}
	if err := nonFinite(&root, ""); err != nil {
		return nil, err
	}
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	s := &Scenario{}
	if err := d.Decode(s); err != nil {
		return nil, yamlError(err, &root)
	}
	s.root, s.dir = &root, dir
	if s.Name == "" {
		s.Name = base
	}
	s.fill()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// nonFinite returns a one-line error for the first NaN or infinity
// (.nan, .inf, -.inf) in the document under n, whose dotted path is
// prefix: no field of a scenario takes one (a load, a loss probability, a
// plan rule's probability), and the typed checks after decoding would
// pass a NaN, which compares false with every bound.
func nonFinite(n *yaml.Node, prefix string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := nonFinite(c, prefix); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := nonFinite(n.Content[i+1], strings.TrimPrefix(prefix+"."+n.Content[i].Value, ".")); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := nonFinite(c, fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		var f float64
		if n.ShortTag() == "!!float" && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Errorf("line %d: %s: %s is not a finite number: give a number such as 0.5", n.Line, prefix, n.Value)
		}
	}
	return nil
}

// fill sets the defaults documented on the fields.
func (s *Scenario) fill() {
	if s.Name == "" {
		s.Name = "scenario"
	}
	for s.Seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		s.Seed = binary.LittleEndian.Uint64(b[:]) >> 16 // small enough to type back in
	}
	if s.Topology.Hosts == 0 {
		s.Topology.Hosts = DefaultHosts
	}
	if s.Topology.MTU == 0 {
		s.Topology.MTU = 1500
	}
	if s.Link.Backend == "" {
		s.Link.Backend = BackendSwitch
	}
	if s.Env == "" {
		s.Env = EnvNS
	}
	if s.Link.Priorities == 0 {
		s.Link.Priorities = 8
	}
	if s.IUT.Impl == "" {
		s.IUT.Impl = ImplRef
	}
	w := &s.Workload
	if w.Response == "" && len(w.RPCs) == 0 {
		w.Response = DefaultResponse
	}
	if w.Pattern == "" && len(w.RPCs) == 0 {
		w.Pattern = PatternManyToOne
	}
	if w.Port == 0 {
		w.Port = DefaultPort
	}
	if w.Timeout == 0 {
		w.Timeout = DefaultTimeout
	}
	if len(w.RPCs) == 0 && w.Load == 0 && w.Concurrency == 0 {
		w.Concurrency = 1
	}
	if s.Check.Rules == "" {
		s.Check.Rules = DefaultRules
	}
	if s.Check.Level == "" {
		s.Check.Level = LevelMust
	}
	if s.Check.Profile == "" {
		s.Check.Profile = DefaultProfile
	}
}

// Marshal returns the scenario as YAML: with the defaults filled in by
// Parse, the resolved scenario that Load reads back to replay a run.
func (s *Scenario) Marshal() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# resolved scenario %q: every default filled in; homatest replay reruns it\n", s.Name)
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(s); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// errf returns a one-line error for the field at path (dotted, with list
// indexes: "workload.rpcs[2].client"), prefixed with its YAML line when
// the scenario was parsed.
func (s *Scenario) errf(path, format string, a ...any) error {
	msg := path + ": " + fmt.Sprintf(format, a...)
	if l := lineOf(s.root, path); l > 0 {
		msg = fmt.Sprintf("line %d: %s", l, msg)
	}
	return errors.New(msg)
}

// givenZero reports whether the parsed file sets the number at the dotted
// path (no list indexes) to 0, which decoding cannot tell from an absent
// field (and fill may then replace).
func (s *Scenario) givenZero(path string) bool {
	n := s.given(path)
	var f float64
	return n != nil && n.Kind == yaml.ScalarNode && n.Decode(&f) == nil && f == 0
}

// givenEmpty reports whether the document gives path as an empty list
// ("rpcs: []"), which decodes as no list at all.
func (s *Scenario) givenEmpty(path string) bool {
	n := s.given(path)
	return n != nil && n.Kind == yaml.SequenceNode && len(n.Content) == 0
}

// given returns the node of the parsed file at the dotted path (no list
// indexes), or nil when the file does not give it.
func (s *Scenario) given(path string) *yaml.Node {
	if s.root == nil || len(s.root.Content) == 0 {
		return nil
	}
	n := s.root.Content[0]
	for _, part := range strings.Split(path, ".") {
		if _, n = child(n, part); n == nil {
			return nil
		}
	}
	return n
}

var indexRE = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// lineOf returns the line of the deepest key (or list item) of path that
// exists in the document (0 when none does).
func lineOf(root *yaml.Node, path string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	n, line := root.Content[0], 0
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if m := indexRE.FindStringSubmatch(part); m != nil {
			part = m[1]
			idx, _ = strconv.Atoi(m[2])
		}
		key, next := child(n, part)
		if next == nil {
			return line
		}
		line, n = key.Line, next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// child returns the key node and the value of key in mapping n, or nils.
func child(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// pathAt returns the dotted path of the first, deepest key on line in the
// document, or of the key named key there when key is not "" ("" if none).
func pathAt(n *yaml.Node, line int, key, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := pathAt(c, line, key, prefix); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(prefix+"."+k.Value, ".")
			if q := pathAt(v, line, key, p); q != "" {
				return q
			}
			if k.Line == line && (key == "" || k.Value == key) {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if q := pathAt(c, line, key, fmt.Sprintf("%s[%d]", prefix, i)); q != "" {
				return q
			}
		}
	}
	return ""
}

var (
	lineRE    = regexp.MustCompile(`^line (\d+): `)
	unknownRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	keyRE     = regexp.MustCompile(`^(?:[a-z]+: )?([a-z_]+)\b`)
)

// yamlError turns a YAML error into one line: the first problem, with the
// field path where the line has one, and for an unknown field the known
// ones.
func yamlError(err error, root *yaml.Node) error {
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	msg := strings.ReplaceAll(msgs[0], "\n", " ")
	if m, ok := yamlerr.Kind(msg, root, reflect.TypeFor[Scenario](), "homatest scenario --help"); ok {
		msg = m
	} else if m := unknownRE.FindStringSubmatch(msg); m != nil {
		known := ""
		if t, ok := yamlerr.Lookup(m[3], reflect.TypeFor[Scenario]()); ok && t.Kind() == reflect.Struct {
			known = "; known fields: " + strings.Join(yamlerr.Fields(t), ", ")
		}
		where := ""
		if l, _ := strconv.Atoi(m[1]); root != nil {
			if p := pathAt(root, l, m[2], ""); p != "" && p != m[2] { // a top-level key is its own path
				where = " (" + p + ")"
			}
		}
		msg = fmt.Sprintf("line %s: unknown field %q%s: check its spelling and indentation%s", m[1], m[2], where, known)
	} else if m := lineRE.FindStringSubmatch(msg); m != nil && root != nil {
		l, _ := strconv.Atoi(m[1])
		// The line may hold several keys ("link: {backend: tc, rate:
		// 1gbt}"): prefer the one the message starts with ("netem: rate
		// …" names rate).
		p := ""
		if k := keyRE.FindStringSubmatch(strings.TrimPrefix(msg, m[0])); k != nil {
			p = pathAt(root, l, k[1], "")
		}
		if p == "" {
			p = pathAt(root, l, "", "")
		}
		if p != "" {
			rest := strings.TrimPrefix(msg, m[0])
			// "line 3: rpc 0: …" names its key, which the path now says.
			rest = strings.TrimPrefix(rest, p[strings.LastIndex(p, ".")+1:]+" ")
			msg = fmt.Sprintf("line %d: %s: %s", l, p, rest)
		}
	}
	switch len(msgs) {
	case 1:
	case 2:
		msg += " (and 1 more problem)"
	default:
		msg += fmt.Sprintf(" (and %d more problems)", len(msgs)-1)
	}
	return errors.New(msg)
}
