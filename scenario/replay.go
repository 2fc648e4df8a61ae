package scenario

import (
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
// file; a folder without scenario.yaml is "not a scenario run folder".
func LoadRun(dir string) (*Scenario, []Drop, error) {
	if _, err := os.Stat(filepath.Join(dir, "scenario.yaml")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("not a scenario run folder (no scenario.yaml): %s: give a folder homatest scenario run wrote", dir)
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
