package yamlerr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	N     uint16  `yaml:"n"`
	Ratio float64 `yaml:"ratio"`
}

type doc struct {
	Name  string        `yaml:"name"`
	Count int           `yaml:"count"`
	On    bool          `yaml:"on"`
	Wait  time.Duration `yaml:"wait"`
	List  []inner       `yaml:"list"`
	Tags  map[string]int
	Any   any  `yaml:"any"`
	Port  port `yaml:"port"`
}

// port says its own kind (Kinded).
type port uint16

func (port) YAMLKind() string { return "a port 1..65535" }

// TestKind: each type error becomes the field path, the value (whole,
// though yaml cuts it) and the kind wanted, with no Go type name; other
// problems are left alone.
func TestKind(t *testing.T) {
	top := reflect.TypeFor[doc]()
	for _, c := range []struct{ yaml, want string }{
		{"count: many\n", `line 1: count: "many": want a whole number`},
		{"name: x\non: perhaps\n", `line 2: on: "perhaps": want true or false`},
		{"wait: later\n", `line 1: wait: "later": want a duration such as 500us, 10ms or 2s`},
		{"name: [a]\n", "line 1: name: a list: want a single value"},
		{"list: {n: 1}\n", `line 1: list: a mapping: want a list`},
		{"list: [3]\n", `line 1: list[0]: "3": want a mapping of n, ratio`},
		{"list:\n  - {n: 1, ratio: halfandhalf}\n", `line 2: list[0].ratio: "halfandhalf": want a number`},
		{"list:\n  - {ratio: 0.5, n: -1}\n", `line 2: list[0].n: "-1": want a whole number from 0 to 65535`},
		{"port: 70000\n", `line 1: port: "70000": want a port 1..65535`},
		{"tags: [a]\n", "line 1: tags: a list: want a mapping (name: value)"},
	} {
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(c.yaml), &root); err != nil {
			t.Fatal(err)
		}
		var d doc
		err := yaml.Unmarshal([]byte(c.yaml), &d)
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			t.Fatalf("%q: %v, want a type error", c.yaml, err)
		}
		got, ok := Kind(te.Errors[0], &root, top, "x --help")
		if !ok || !strings.HasPrefix(got, c.want) || strings.Contains(got, "yamlerr.") || strings.Contains(got, "unmarshal") {
			t.Errorf("%q: %q (%v), want %q", c.yaml, got, ok, c.want)
		}
		// Without the node tree: no field path, the same kind.
		if got, _ := Kind(te.Errors[0], nil, top, "x --help"); !strings.HasPrefix(got, "line ") || !strings.Contains(got, ": want ") {
			t.Errorf("%q without a node tree: %q", c.yaml, got)
		}
	}
	if got, ok := Kind("line 3: field x not found in type doc", nil, top, "x --help"); ok || got != "line 3: field x not found in type doc" {
		t.Errorf("another problem: %q, %v; want it unchanged", got, ok)
	}
}
