package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
)

// TestSpecParamsJSON: spec params -o json is one object per profile with
// every parameter, each value in the form --param takes (Set accepts it
// and Get gives it back), the same values the text table shows; a
// PROFILE argument narrows it to that profile, and two arguments are a
// one-line usage error.
func TestSpecParamsJSON(t *testing.T) {
	out, err, code := run(t, "spec", "params", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	var got []profileParams
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	profs := spec.Profiles()
	if len(got) != len(profs) {
		t.Fatalf("%d profiles, want %d", len(got), len(profs))
	}
	text, _, _ := run(t, "spec", "params")
	for i, p := range got {
		if p.Profile != profs[i].Name || p.Description != profs[i].Description || len(p.Params) != len(spec.ParamNames()) {
			t.Errorf("profile %d: %s (%q), %d params; want %s, %d", i, p.Profile, p.Description, len(p.Params), profs[i].Name, len(spec.ParamNames()))
		}
		for name, v := range p.Params {
			q := profs[i].Params
			if err := q.Set(name, v); err != nil {
				t.Errorf("%s %s=%q: --param refuses it: %v", p.Profile, name, v, err)
				continue
			}
			if back, _ := q.Get(name); back != v {
				t.Errorf("%s %s=%q reads back as %q", p.Profile, name, v, back)
			}
		}
	}
	if v := got[0].Params["unsched_bytes"]; v == "" || !strings.Contains(text, "unsched_bytes") || !strings.Contains(text, " "+v+" ") {
		t.Errorf("unsched_bytes %q in JSON; text table:\n%s", v, text)
	}
	out, _, _ = run(t, "spec", "params", "-o", "json", profs[len(profs)-1].Name)
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].Profile != profs[len(profs)-1].Name {
		t.Errorf("one profile: %v, %+v", err, got)
	}
	if _, err, code := run(t, "spec", "params", "a", "b"); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "at most one PROFILE, got 2") {
		t.Errorf("two arguments: exit %d, %v", code, err)
	}
}
