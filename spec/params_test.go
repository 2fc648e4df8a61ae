package spec

import (
	"reflect"
	"strings"
	"testing"
)

// TestSetFloatRefusesNaNInf: every float parameter refuses NaN and the
// infinities (no comparison catches NaN, which would make every bound
// derived from it NaN) and keeps its value; a fraction in range is taken.
func TestSetFloatRefusesNaNInf(t *testing.T) {
	var floats []string
	for _, name := range ParamNames() {
		p := Profiles()[0].Params
		f, err := p.field(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind() == reflect.Float64 {
			floats = append(floats, name)
		}
	}
	if len(floats) == 0 {
		t.Fatal("no float parameter found")
	}
	for _, name := range floats {
		p := Profiles()[0].Params
		before, _ := p.Get(name)
		for _, bad := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "1e400"} {
			err := p.Set(name, bad)
			if err == nil || !strings.HasPrefix(err.Error(), "parameter "+name+": ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Set(%s, %s): %v, want a one-line error", name, bad, err)
			}
			if now, _ := p.Get(name); now != before {
				t.Errorf("Set(%s, %s) changed the value to %s", name, bad, now)
			}
		}
		if err := p.Set(name, "0.25"); err != nil {
			t.Errorf("Set(%s, 0.25): %v", name, err)
		}
		if now, _ := p.Get(name); now != "0.25" {
			t.Errorf("Set(%s, 0.25) reads back %s", name, now)
		}
	}
}
