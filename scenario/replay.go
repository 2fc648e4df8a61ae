package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadRun reads a run folder written by Run: its resolved scenario
// (scenario.yaml, with the seed it ran with) and the frames its switch
// dropped or altered (drops.json), so the run can be replayed and the
// replay's drops compared (CompareDrops). Errors name the missing or bad
// file; a folder without scenario.yaml is "not a scenario run folder",
// one with InterruptedFile a run that did not finish.
func LoadRun(dir string) (*Scenario, []Drop, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no such folder: %s: give a folder homatest scenario run wrote", dir)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a file, not a scenario run folder: give a folder homatest scenario run wrote (an explore script replays with homatest explore --replay FILE)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "scenario.yaml")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("not a scenario run folder (no scenario.yaml): %s: give a folder homatest scenario run wrote", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, InterruptedFile)); err == nil {
		return nil, nil, fmt.Errorf("%s holds a run that was interrupted before it finished (see its file %s), so there is nothing to compare: run it again with homatest scenario run %s", dir, InterruptedFile, filepath.Join(dir, "scenario.yaml"))
	}
	s, err := Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "drops.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("%v: the run did not finish, so there is nothing to compare: rerun it with homatest scenario run", err)
	}
	var drops []Drop
	if err := json.Unmarshal(b, &drops); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", filepath.Join(dir, "drops.json"), err)
	}
	return s, drops, nil
}

// SimFiles are the run-folder files a simulated run (Env sim) reproduces
// byte for byte from its scenario and seed: everything but versions.json
// (which names the homatest build) and summary.json's "dir".
var SimFiles = []string{"scenario.yaml", "seed", "topology.json", "hellos.json", "sent.pcapng", "delivered.pcapng",
	"capture.pcapng", "switch-notes.pcapng", "switch.json", "drops.json", "rpcs.json", "check.json", "summary.json"}

// CompareFiles compares the SimFiles of run folders a and b byte for byte
// (summary.json without its "dir" field) and returns one line per file
// that differs or is missing ("sent.pcapng differs (56918176 and 56918180
// bytes)"); nil means identical.
func CompareFiles(a, b string) []string {
	var diff []string
	for _, name := range SimFiles {
		x, errA := os.ReadFile(filepath.Join(a, name))
		y, errB := os.ReadFile(filepath.Join(b, name))
		if errA != nil || errB != nil {
			diff = append(diff, fmt.Sprintf("%s: %v", name, errors.Join(errA, errB)))
			continue
		}
		if name == "summary.json" {
			x, y = withoutDir(x), withoutDir(y)
		}
		if !bytes.Equal(x, y) {
			diff = append(diff, fmt.Sprintf("%s differs (%d and %d bytes)", name, len(x), len(y)))
		}
	}
	return diff
}

// withoutDir returns summary.json's bytes with its "dir" value emptied.
func withoutDir(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	delete(m, "dir")
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}
