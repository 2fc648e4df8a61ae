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

// TestDirUndo: Remove takes away a folder RecordDir saw missing, with the
// parents it needed (not a parent another run also uses), and in a folder
// that existed only the entries added since.
func TestDirUndo(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	dir := filepath.Join(runs, "a")
	u := RecordDir(dir)
	if err := os.MkdirAll(filepath.Join(dir, "pass-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Errorf("%s after Remove: %v; want it gone", runs, err)
	}
	u = RecordDir(dir)
	other := filepath.Join(runs, "b")
	for _, d := range []string{dir, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after Remove: %v; want it gone", dir, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another run's %s after Remove: %v; want it kept", other, err)
	}
	if err := os.WriteFile(filepath.Join(other, "mine"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	u = RecordDir(other)
	if err := os.WriteFile(filepath.Join(other, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(other)
	if len(ents) != 1 || ents[0].Name() != "mine" {
		t.Errorf("existing folder after Remove holds %v; want only mine", ents)
	}
}

// TestMakeDirChanged: MakeDir creates a missing folder with its parents;
// Changed reports only entries added since (none in a new folder until
// one is written; a folder's earlier entries do not count).
func TestMakeDirChanged(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "runs", "a")
	u, err := MakeDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("MakeDir(%s): %v", dir, err)
	}
	if u.Changed() {
		t.Error("Changed = true for a new empty folder")
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !u.Changed() {
		t.Error("Changed = false after a file was written")
	}
	u, err = MakeDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Changed() {
		t.Error("Changed = true for an existing folder nothing was added to")
	}
	if _, err := MakeDir(filepath.Join(dir, "x", "y")); err == nil {
		t.Error("MakeDir under a file succeeded")
	}
}

// TestArtifactsReadable: a run folder's files are readable by others
// (0644), as a CI job that uploads artifacts as another user needs; a
// new-user trial found scenario folders' files 0600.
func TestArtifactsReadable(t *testing.T) {
	a, err := NewArtifacts(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFile("summary.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(a.Path("summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o644 {
		t.Errorf("summary.json mode %v, want 0644", m)
	}
}

// TestDirUndoRemoveLast: with RemoveLast(lock), Remove takes a folder it
// made away entry by entry, the lock last, and the folder only if empty
// then (a run that took the lock once it was unlinked keeps its files);
// in a folder that existed it leaves the lock to its holder.
func TestDirUndoRemoveLast(t *testing.T) {
	base := t.TempDir()
	made := filepath.Join(base, "a", "made")
	u := RecordDir(made)
	u.RemoveLast(".lock")
	os.MkdirAll(filepath.Join(made, "pass-1"), 0o755)
	for _, f := range []string{".lock", "pass-1/pass.json"} {
		os.WriteFile(filepath.Join(made, f), []byte("x"), 0o644)
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "a")); !os.IsNotExist(err) {
		t.Errorf("the folder it made and its parent: %v; want both gone", err)
	}
	u = RecordDir(base)
	u.RemoveLast(".lock")
	for _, f := range []string{".lock", "new"} {
		os.WriteFile(filepath.Join(base, f), []byte("x"), 0o644)
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(base)
	if len(ents) != 1 || ents[0].Name() != ".lock" {
		t.Errorf("the existing folder holds %v; want its holder's .lock alone", ents)
	}
}
