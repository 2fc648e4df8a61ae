package harness

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestArtifacts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "ht3f9a1c")
	a, err := NewArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFile("scenario.yaml", []byte("hosts: 4\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteJSON("sub/result.json", map[string]int{"rpcs": 3}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := a.Write("half.bin", func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Write with a failing writer = %v, want boom", err)
	}
	f, err := a.Create("aborted.bin")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Abort()
	f.Abort()
	for _, bad := range []string{"", "../escape", "/abs", "a/../../b"} {
		if err := a.WriteFile(bad, nil); err == nil {
			t.Errorf("WriteFile(%q) succeeded", bad)
		}
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			r, _ := filepath.Rel(dir, p)
			names = append(names, r)
		}
		return nil
	})
	if want := []string{"scenario.yaml", "sub/result.json"}; !slices.Equal(names, want) {
		t.Errorf("folder holds %v, want %v (nothing half-written)", names, want)
	}
	if b, _ := os.ReadFile(a.Path("sub/result.json")); string(b) != "{\n  \"rpcs\": 3\n}\n" {
		t.Errorf("result.json = %q", b)
	}
	log, err := a.OpenLog("h1.agent.stderr.log")
	if err != nil {
		t.Fatal(err)
	}
	log.WriteString("line\n")
	log.Close()
	if b, _ := os.ReadFile(a.Path("h1.agent.stderr.log")); string(b) != "line\n" {
		t.Errorf("log = %q", b)
	}
	if _, err := NewArtifacts(""); err == nil {
		t.Error("NewArtifacts(\"\") succeeded")
	}
	if got := DefaultArtifactsDir("3f9a1c"); got != filepath.Join("homatest-runs", "ht3f9a1c") {
		t.Errorf("DefaultArtifactsDir = %q", got)
	}
}
