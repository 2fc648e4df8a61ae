package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/homatest/homatest/internal/jsonout"
)

// DefaultRunsDir is the folder under which runs keep their artifacts when
// no directory is given: ./homatest-runs/<run id>.
const DefaultRunsDir = "homatest-runs"

// Artifacts is a run's artifact folder. Files written through it appear
// under their final name only when complete (written to a temporary file
// in the same folder, synced, then renamed), so a failed or killed run
// never leaves a half-written artifact. Logs opened with OpenLog are the
// exception: they are appended to as the process writes, so a crash keeps
// everything written before it.
type Artifacts struct {
	// Dir is the folder (created by NewArtifacts).
	Dir string
}

// NewArtifacts creates dir (and its parents) and returns it as a run
// folder. An empty dir is an error; use DefaultArtifactsDir for the default.
func NewArtifacts(dir string) (*Artifacts, error) {
	if dir == "" {
		return nil, fmt.Errorf("artifacts: empty directory name (use harness.DefaultArtifactsDir(id))")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	return &Artifacts{Dir: dir}, nil
}

// DefaultArtifactsDir returns ./homatest-runs/<run id prefix>, e.g.
// "homatest-runs/ht3f9a1c".
func DefaultArtifactsDir(id RunID) string { return filepath.Join(DefaultRunsDir, id.Prefix()) }

// Path returns the path of artifact name inside the folder. name must be a
// plain relative path (no "..").
func (a *Artifacts) Path(name string) string { return filepath.Join(a.Dir, name) }

func (a *Artifacts) check(name string) error {
	if name == "" || filepath.IsAbs(name) || strings.Contains(filepath.ToSlash(filepath.Clean(name)), "..") {
		return fmt.Errorf("artifacts: bad file name %q: want a relative name inside the run folder", name)
	}
	return nil
}

// AtomicFile is a file being written that becomes visible under its name
// only on Commit.
type AtomicFile struct {
	*os.File
	path string
	done bool
}

// Create starts writing artifact name (see AtomicFile). Subdirectories in
// name are created.
func (a *Artifacts) Create(name string) (*AtomicFile, error) {
	if err := a.check(name); err != nil {
		return nil, err
	}
	path := a.Path(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	// CreateTemp makes the file 0600; a run folder is for whoever reads
	// it after (a CI job uploading artifacts as another user), as the
	// files written with internal/atomicfile are.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	return &AtomicFile{File: f, path: path}, nil
}

// Commit syncs, closes and renames the file to its final name. On error the
// temporary file is removed and nothing appears. Later calls return nil.
func (f *AtomicFile) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("artifacts: write %s: %w", f.path, err)
	}
	return nil
}

// Abort discards the file; safe after Commit (then a no-op).
func (f *AtomicFile) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.Name())
}

// Write writes artifact name by calling fn with the file, atomically: if fn
// or the write fails nothing is left.
func (a *Artifacts) Write(name string, fn func(io.Writer) error) error {
	f, err := a.Create(name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Abort()
		return fmt.Errorf("artifacts: write %s: %w", name, err)
	}
	return f.Commit()
}

// WriteFile writes data as artifact name, atomically.
func (a *Artifacts) WriteFile(name string, data []byte) error {
	return a.Write(name, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// WriteJSON writes v as indented JSON (with a final newline) as artifact
// name, atomically.
func (a *Artifacts) WriteJSON(name string, v any) error {
	return a.Write(name, func(w io.Writer) error {
		return jsonout.Write(w, v)
	})
}

// OpenLog opens (creating or appending) the log file name for a process's
// output. Unlike the other writers it is not atomic: see Artifacts.
func (a *Artifacts) OpenLog(name string) (*os.File, error) {
	if err := a.check(name); err != nil {
		return nil, err
	}
	path := a.Path(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	return f, nil
}

// InterruptedFile marks the run folder of a command interrupted (Ctrl-C,
// SIGINT or SIGTERM) after it began writing there: the folder is kept with
// what was written so far, and this file says that it is partial, when
// and why (MarkInterrupted). homatest replay refuses such a folder.
const InterruptedFile = "interrupted"

// MarkInterrupted writes InterruptedFile into a's folder: that the run
// (what: "this run", "this bench") was interrupted by cause at the
// current time, that its files are partial, and fix, what to do instead
// (one sentence). It is the one way every command (run, scenario, replay,
// bench) marks the folder it keeps after an interrupt.
func (a *Artifacts) MarkInterrupted(what string, cause error, fix string) error {
	note := fmt.Sprintf("%s was interrupted (%v) at %s before it finished: its files are partial; %s\n", what, cause, time.Now().Format(time.RFC3339), fix)
	return a.WriteFile(InterruptedFile, []byte(note))
}

// DirUndo remembers what a folder held before a command wrote into it, so
// that a command failing before its work started can remove exactly what
// it created (Remove): the folder and the parents it made, or, in a folder
// that existed (a user's --artifacts DIR), only the entries added since.
// It is the one way every command (run, bench, explore, scenario) undoes
// its run folder: a usage error or a failed setup leaves nothing it
// created, and a folder the user pointed at keeps what it held.
type DirUndo struct {
	dir     string
	created []string // dir and the parents that did not exist, deepest first
	before  map[string]bool
	last    string // removed last, alone, and never recursively (RemoveLast)
}

// RemoveLast makes Remove remove the entry name of the folder (a lock
// file) after everything else, and the folder it created only if it is
// then empty, instead of recursively: another command that takes the
// lock once this one unlinked it keeps its folder and files.
func (u *DirUndo) RemoveLast(name string) { u.last = name }

// RecordDir records the state of dir (which may not exist yet); call it
// before anything creates or writes dir.
func RecordDir(dir string) *DirUndo {
	u := &DirUndo{dir: filepath.Clean(dir)}
	for d := u.dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		u.created = append(u.created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(u.created) == 0 {
		u.before = map[string]bool{}
		if ents, err := os.ReadDir(u.dir); err == nil {
			for _, e := range ents {
				u.before[e.Name()] = true
			}
		}
	}
	return u
}

// MakeDir records dir (RecordDir) and creates it with its missing
// parents. On error it removes what it made and returns the error of
// os.MkdirAll.
func MakeDir(dir string) (*DirUndo, error) {
	u := RecordDir(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		u.Remove()
		return nil, err
	}
	return u, nil
}

// Changed reports whether the recorded folder holds anything it did not
// hold at RecordDir: a command that wrote nothing (Changed false) may
// Remove the empty folders it made and lose nothing.
func (u *DirUndo) Changed() bool {
	ents, err := os.ReadDir(u.dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !u.before[e.Name()] {
			return true
		}
	}
	return false
}

// Remove removes what was created under the recorded folder since
// RecordDir: the whole folder when it did not exist (and each parent it
// needed that is now empty: another run may share homatest-runs), else
// the entries it did not hold then.
func (u *DirUndo) Remove() error {
	if len(u.created) > 0 && u.last != "" {
		var errs []error
		ents, _ := os.ReadDir(u.dir)
		for _, e := range ents {
			if e.Name() != u.last {
				errs = append(errs, os.RemoveAll(filepath.Join(u.dir, e.Name())))
			}
		}
		os.Remove(filepath.Join(u.dir, u.last))
		for _, d := range u.created {
			os.Remove(d) // fails, as it should, when something else is in it
		}
		return errors.Join(errs...)
	}
	if len(u.created) > 0 {
		err := os.RemoveAll(u.dir)
		for _, d := range u.created[1:] {
			os.Remove(d) // fails, as it should, when something else is in it
		}
		return err
	}
	ents, err := os.ReadDir(u.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if !u.before[e.Name()] && e.Name() != u.last {
			if err := os.RemoveAll(filepath.Join(u.dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
