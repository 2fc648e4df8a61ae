// Package yamlerr turns the type errors of go.yaml.in/yaml/v3 ("line 6:
// cannot unmarshal !!str `high` into float64") into what the person who
// wrote the file needs: the field path, the value given and the kind of
// value the field takes, without Go's type names. The scenario files and
// the agent manifests both use it.
package yamlerr

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// unmarshalRE matches yaml's "line 6: cannot unmarshal !!str `high` into
// float64" (the value is cut to 7 characters and "..." when longer; !!seq
// and !!map come without one).
var unmarshalRE = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)$")

// Kind rewrites msg, one problem of a yaml.TypeError, when it is a type
// mismatch: "line 6: workload.load: "high": want a number". root is the
// document as a node tree (nil: no field path), top the Go type the
// document decodes into (the Go type names in msg are looked up among its
// fields' types, every level down), help the command whose --help
// describes the fields (for a type Kind cannot describe). ok is false,
// and msg returned as it is, for any other problem.
func Kind(msg string, root *yaml.Node, top reflect.Type, help string) (string, bool) {
	m := unmarshalRE.FindStringSubmatch(msg)
	if m == nil {
		return msg, false
	}
	line, _ := strconv.Atoi(m[1])
	tag, val, goType := m[2], m[3], m[4]
	// The node yaml complains about: the one on that line with that
	// value (a cut value matches by its prefix), or for a list or a
	// mapping, the one of that kind starting there.
	cut := strings.TrimSuffix(val, "...")
	match := func(n *yaml.Node) bool {
		switch tag {
		case "seq":
			return n.Kind == yaml.SequenceNode
		case "map":
			return n.Kind == yaml.MappingNode
		}
		return n.Kind == yaml.ScalarNode && (n.Value == val || (cut != val && strings.HasPrefix(n.Value, cut)))
	}
	path := ""
	if root != nil {
		var n *yaml.Node
		path, n = nodeAt(root, line, match, "")
		if n != nil && n.Kind == yaml.ScalarNode {
			val = n.Value
		}
	}
	given := strconv.Quote(val)
	switch tag {
	case "seq":
		given = "a list"
	case "map":
		given = "a mapping"
	}
	where := fmt.Sprintf("line %d: ", line)
	if path != "" {
		where += path + ": "
	}
	return fmt.Sprintf("%s%s: want %s", where, given, kindOf(goType, top, help)), true
}

// nodeAt returns the dotted path and the node of the first value node on
// line for which match holds ("", nil if none).
func nodeAt(n *yaml.Node, line int, match func(*yaml.Node) bool, prefix string) (string, *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, v := nodeAt(c, line, match, prefix); v != nil {
				return p, v
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(prefix+"."+k.Value, ".")
			if v.Line == line && match(v) {
				return p, v
			}
			if q, w := nodeAt(v, line, match, p); w != nil {
				return q, w
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			if c.Line == line && match(c) {
				return p, c
			}
			if q, w := nodeAt(c, line, match, p); w != nil {
				return q, w
			}
		}
	}
	return "", nil
}

// Lookup returns the type named name (reflect's String, as yaml's errors
// name it: "scenario.Topology", "[]scenario.RPC") among top and its
// fields' types, every level down.
func Lookup(name string, top reflect.Type) (reflect.Type, bool) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type) reflect.Type
	walk = func(t reflect.Type) reflect.Type {
		if seen[t] {
			return nil
		}
		seen[t] = true
		if t.String() == name {
			return t
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			return walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() {
					if r := walk(f.Type); r != nil {
						return r
					}
				}
			}
		}
		return nil
	}
	t := walk(top)
	return t, t != nil
}

// Kinded is a type that says what a value of it looks like, for a type
// error on it, when its Go kind would say less (a port: "a port number
// 1..65535", not "a whole number from 0 to 65535").
type Kinded interface{ YAMLKind() string }

// kindOf says what a value of the Go type named goType looks like in a
// YAML file whose document decodes into top.
func kindOf(goType string, top reflect.Type, help string) string {
	if goType == "time.Duration" {
		return "a duration such as 500us, 10ms or 2s"
	}
	other := "another kind of value (see " + help + ")"
	t, ok := Lookup(goType, top)
	if !ok {
		return other
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k, ok := reflect.New(t).Elem().Interface().(Kinded); ok {
		return k.YAMLKind()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint16:
		return "a whole number from 0 to 65535"
	case reflect.Uint, reflect.Uint8, reflect.Uint32, reflect.Uint64:
		return "a whole number ≥ 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a single value (a word or a number), not a list or a mapping"
	case reflect.Slice, reflect.Array:
		return `a list ([a, b], or one "- item" line each)`
	case reflect.Struct:
		return "a mapping of " + strings.Join(Fields(t), ", ")
	case reflect.Map:
		return "a mapping (name: value)"
	}
	return other
}

// Fields lists the YAML field names of struct t (inline structs
// expanded).
func Fields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			out = append(out, Fields(f.Type)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name != "-" {
			out = append(out, name)
		}
	}
	return out
}
