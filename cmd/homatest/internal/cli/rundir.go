package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
)

// defaultRunDir is the run folder of a command run without --artifacts:
// homatest-runs/<time>-<pid>, e.g. homatest-runs/20260101-120000-4242.
func defaultRunDir() string {
	return filepath.Join(harness.DefaultRunsDir, fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), os.Getpid()))
}

// defaultRunName matches the name defaultRunDir gives a run folder.
var defaultRunName = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9]+$`)

// pruneRunFolders removes the oldest run folders of homatest run beside
// self (a run folder defaultRunDir made, in homatest-runs/) so that at
// most keep remain, self included, and returns the paths removed; keep 0
// removes none. Only folders homatest run made and has finished with are
// candidates: named as defaultRunDir names them, holding a pass folder
// (conformance.IsPassFolder), without a run-folder lock (a live run's, or
// a killed one's not yet settled); the user's own folders, a bench's, an
// explore's or a scenario's are never touched. Oldest is by name (the
// time the run started). Errors are the file system's; what could be
// removed is.
func pruneRunFolders(self string, keep int) ([]string, error) {
	if keep <= 0 {
		return nil, nil
	}
	self = filepath.Clean(self)
	parent := filepath.Dir(self)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, e := range ents {
		d := filepath.Join(parent, e.Name())
		if !e.IsDir() || d == self || !defaultRunName.MatchString(e.Name()) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(d, runFolderLockFile)); err == nil {
			continue
		}
		passes, _ := os.ReadDir(d)
		if !slices.ContainsFunc(passes, func(p fs.DirEntry) bool { return p.IsDir() && conformance.IsPassFolder(filepath.Join(d, p.Name())) }) {
			continue
		}
		runs = append(runs, d)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(runs))) // newest first
	var removed []string
	var errs []error
	for _, d := range runs[min(len(runs), keep-1):] {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

// pruneRuns prunes the old run folders beside a finished run's default
// folder (--keep-runs, pruneRunFolders) and says so in one line on
// stderr; a run given --artifacts prunes nothing.
func (o *runOpts) pruneRuns() {
	if !o.defaulted {
		return
	}
	removed, err := pruneRunFolders(o.artifacts, o.keepRuns)
	if len(removed) > 0 {
		fmt.Fprintf(o.stderr, "homatest: removed %s (--keep-runs %d keeps the newest %d under %s; 0 keeps all): %s\n",
			plural.Of(len(removed), "old run folder", "old run folders"), o.keepRuns, o.keepRuns, filepath.Dir(o.artifacts), strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(o.stderr, "homatest: could not remove every old run folder (--keep-runs %d): %s\n", o.keepRuns, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
}

// artifactsErr is the error of a run folder that cannot be created.
func artifactsErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe // "mkdir X: not a directory", without the callers' prefixes
	}
	return fmt.Errorf("--artifacts: %w (pass --artifacts DIR somewhere writable)", err)
}

// runFolderErr is artifactsErr for a run folder that may be the
// default one (defaulted: the user passed no --artifacts), which names
// the default folder and how to choose another instead of a flag the
// user never gave.
func runFolderErr(err error, defaulted bool) error {
	if !defaulted {
		return artifactsErr(err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe
	}
	return fmt.Errorf("cannot create the default run folder under %s/: %w (run in a writable folder, or choose another with --artifacts DIR)", harness.DefaultRunsDir, err)
}

// agentOutput reports whether any agent wrote to its stderr log
// (HOST.NAME.stderr.log: run's in its pass folders, bench's in the run
// folder itself) under dir.
func agentOutput(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.stderr.log"))
	top, _ := filepath.Glob(filepath.Join(dir, "*.stderr.log"))
	for _, l := range append(logs, top...) {
		if st, err := os.Stat(l); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

// runFolderLockFile is the lock a run holds in its run folder for its
// lifetime: an flock on the file, which names the run's pid. The kernel
// drops the flock when the process dies, so a lock nobody holds is a killed
// run's and is taken over.
const runFolderLockFile = ".homatest-run.lock"

// folderLock is a held run-folder lock.
type folderLock struct {
	f    *os.File
	path string
}

// lockRunFolder takes dir's run-folder lock. A folder whose lock is held
// (a live run writes there) is an error naming that run's pid and the
// fix. stale is the pid a dead holder left in the file (0 when there was
// none): that run was killed and its folder is taken over.
func lockRunFolder(dir string) (l *folderLock, stale int, err error) {
	path := filepath.Join(dir, runFolderLockFile)
	for try := 0; try < 10; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, 0, artifactsErr(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid, _ := readLockOwner(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				who := "another homatest run"
				switch {
				case pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH):
					// Its pass child holds the lock and got SIGTERM.
					who = fmt.Sprintf("the pass of a killed homatest run (pid %d), which is ending", pid)
				case pid > 0:
					who += fmt.Sprintf(" (pid %d)", pid)
				}
				return nil, 0, folderInUseError(fmt.Sprintf("--artifacts %s is in use by %s: pass another --artifacts folder, or wait until that run ends", dir, who))
			}
			return nil, 0, artifactsErr(err)
		}
		// The holder before us may have removed the file after we opened
		// it (its release): our flock is then on a name nobody sees.
		var fst, pst unix.Stat_t
		if unix.Fstat(int(f.Fd()), &fst) != nil || unix.Stat(path, &pst) != nil || fst.Ino != pst.Ino || fst.Dev != pst.Dev {
			f.Close()
			continue
		}
		pid, boot := readLockOwner(f)
		if st, err := f.Stat(); err == nil && foreignLock(boot, st.ModTime()) {
			f.Close()
			return nil, 0, folderInUseError(fmt.Sprintf("--artifacts %s may be in use by a run on another machine that shares the folder (its lock %s names pid %d of kernel boot %s, not this one's; a lab guest?): pass another --artifacts folder, or remove %s if no run uses it", dir, path, pid, boot, path))
		}
		stale = pid
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, 0, artifactsErr(err)
		}
		if _, err := f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), bootID())), 0); err != nil {
			f.Close()
			return nil, 0, artifactsErr(err)
		}
		return &folderLock{f: f, path: path}, stale, nil
	}
	return nil, 0, fmt.Errorf("--artifacts %s: its run lock %s keeps changing: pass another --artifacts folder", dir, path)
}

// folderInUseError is lockRunFolder's error for a folder whose lock a
// live run holds.
type folderInUseError string

func (e folderInUseError) Error() string { return string(e) }

// folderHoldsMore reports whether dir holds anything besides its
// run-folder lock.
func folderHoldsMore(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != runFolderLockFile {
			return true
		}
	}
	return false
}

// readLockOwner returns the pid (0 if none) and the kernel boot id (""
// in a lock written without one) that a lock file names.
func readLockOwner(f *os.File) (pid int, boot string) {
	b := make([]byte, 80)
	n, _ := f.ReadAt(b, 0)
	fs := strings.Fields(string(b[:n]))
	if len(fs) > 0 {
		pid, _ = strconv.Atoi(fs[0])
	}
	if len(fs) > 1 {
		boot = fs[1]
	}
	return pid, boot
}

// bootID returns this kernel's boot id ("" if unknown). A run-folder
// lock records it beside the pid: flock does not cross a 9p share, so a
// folder that a homatest lab guest writes is unlocked as seen from the
// host (helper-195 lost a live guest run's capture that way).
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// foreignLock reports whether a lock naming kernel boot id boot, last
// written at mtime, may be a live run's on another machine sharing the
// folder, whose flock this kernel cannot see: written by another kernel
// while this one was up. One written before this kernel booted was left
// by an earlier boot, whose runs are gone.
func foreignLock(boot string, mtime time.Time) bool {
	self := bootID()
	if boot == "" || self == "" || boot == self {
		return false
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return true
	}
	return mtime.After(time.Now().Add(-time.Duration(si.Uptime) * time.Second))
}

// release removes the lock file, if it is still this lock's (a usage
// error's undo may have unlinked it, and another run made its own), and
// drops the lock. Safe on nil and twice.
func (l *folderLock) release() {
	if l == nil || l.f == nil {
		return
	}
	var fst, pst unix.Stat_t
	if unix.Fstat(int(l.f.Fd()), &fst) == nil && unix.Stat(l.path, &pst) == nil && fst.Ino == pst.Ino && fst.Dev == pst.Dev {
		os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
}

// settledCaptures is what settleCaptures found in an interrupted run's
// folder.
type settledCaptures struct {
	// Kept counts the captures that read whole (flushed by the pass as it
	// stopped): valid pcapng holding the packets up to the interruption.
	Kept int
	// Partial are the captures that did not read whole (cut short
	// mid-block: a pass killed after InterruptGrace), renamed with their
	// sidecars to NAME.partial.pcapng (check still reads them up to the
	// cut, and nothing takes them for whole captures), as paths relative
	// to the run folder.
	Partial []string
	// Temporary counts the temporary files removed (".capture-*.spool",
	// ".NAME.tmp*": captures and atomic writes never finished).
	Temporary int
}

// String says it in one clause for the interrupted run's last line, ""
// when the folder holds no capture.
func (c settledCaptures) String() string {
	var parts []string
	if c.Kept > 0 {
		parts = append(parts, plural.Of(c.Kept, "complete capture", "complete captures")+" kept (packets up to the interruption)")
	}
	if len(c.Partial) > 0 {
		parts = append(parts, fmt.Sprintf("%s kept as %s (check reads up to the cut)", plural.Of(len(c.Partial), "capture cut short", "captures cut short"), strings.Join(c.Partial, ", ")))
	}
	if c.Temporary > 0 {
		parts = append(parts, plural.Of(c.Temporary, "unfinished temporary file", "unfinished temporary files")+" removed")
	}
	return strings.Join(parts, ", ")
}

// partialCapture ends the name settleCaptures gives a capture cut short.
const partialCapture = ".partial.pcapng"

// settleCaptures leaves in dir, the folder of a run whose pass was
// interrupted (and has ended), no capture that passes for whole but is
// not: each *.pcapng is read to its end (pcap.Reader) and, if it is not
// a whole pcap or pcapng file, renamed with its ".params" and
// ".stalls.json" sidecars to NAME.partial.pcapng; temporary files of
// captures and atomic writes are removed. An earlier run's passes set aside (conformance.EarlierFolder)
// are not touched. Errors are the file system's.
func settleCaptures(dir string) (settledCaptures, error) {
	var c settledCaptures
	var errs []error
	remove := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == conformance.EarlierFolder {
				return filepath.SkipDir
			}
			return nil
		}
		if temp, _ := filepath.Match(".capture-*.spool", name); temp || strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp") {
			remove(path)
			c.Temporary++
			return nil
		}
		if !strings.HasSuffix(name, ".pcapng") || strings.HasSuffix(name, partialCapture) {
			return nil
		}
		if readsWhole(path) {
			c.Kept++
			return nil
		}
		// Renamed, not removed: the frames before the cut are evidence,
		// and a writer still flushing keeps writing to the same file.
		to := strings.TrimSuffix(path, ".pcapng") + partialCapture
		for _, side := range []string{"", ".params", ".stalls.json"} {
			if err := os.Rename(path+side, to+side); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		rel, _ := filepath.Rel(dir, to)
		c.Partial = append(c.Partial, rel)
		return nil
	})
	return c, errors.Join(append(errs, err)...)
}

// readsWhole reports whether the capture at path reads to its end as a
// pcap or pcapng file.
func readsWhole(path string) bool {
	r, err := pcap.Open(path, pcap.ReaderOptions{})
	if err != nil {
		return false
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// settleKilledRun makes the folder dir of a killed run (pid, 0 if
// unknown: its run-folder lock was left unheld) read as what it is: the
// temporary files its captures and atomic writes left in it and its pass
// folders (".capture-*.spool", ".NAME.tmp*") are removed, a capture that
// does not read whole is renamed NAME.partial.pcapng (settleCaptures:
// the kill cut it), and it is marked interrupted (harness.Artifacts.MarkInterrupted) unless it is
// already. Errors are the file system's.
func settleKilledRun(dir string, pid int) error {
	// As an interrupted pass's folder is settled: temporary files
	// removed, and a capture the kill cut (the simulator writes
	// capture.pcapng as it goes) renamed NAME.partial.pcapng, so that
	// none passes for whole.
	_, err := settleCaptures(dir)
	errs := []error{err}
	if _, err := os.Stat(filepath.Join(dir, harness.InterruptedFile)); errors.Is(err, os.ErrNotExist) {
		who := "its process"
		if pid > 0 {
			who = fmt.Sprintf("its process %d", pid)
		}
		arts := &harness.Artifacts{Dir: dir}
		errs = append(errs, arts.MarkInterrupted("this run", fmt.Errorf("killed: %s ended without releasing its run-folder lock", who), "run it again"))
	}
	return errors.Join(errs...)
}

// settleKilledSiblings settles (settleKilledRun) the run folders beside
// self (the other folders in its parent, e.g. homatest-runs/*) whose
// run-folder lock nobody holds, of runs killed without a word, removes
// their locks and says so in one line on w. A lock younger than 2 s, or
// naming no pid, is left: a run may be taking it (lockRunFolder opens,
// then locks, then writes its pid); so is one another kernel wrote
// while this one was up (foreignLock: a lab guest's, over 9p).
func settleKilledSiblings(self string, w io.Writer) {
	parent := filepath.Dir(filepath.Clean(self))
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	var settled []string
	for _, e := range ents {
		d := filepath.Join(parent, e.Name())
		if !e.IsDir() || d == filepath.Clean(self) {
			continue
		}
		path := filepath.Join(d, runFolderLockFile)
		st, err := os.Stat(path)
		if err != nil || time.Since(st.ModTime()) < 2*time.Second {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close() // a live run's
			continue
		}
		pid, boot := readLockOwner(f)
		if pid == 0 || foreignLock(boot, st.ModTime()) {
			f.Close()
			continue
		}
		if err := settleKilledRun(d, pid); err == nil {
			os.Remove(path)
			settled = append(settled, d)
		}
		f.Close()
	}
	if len(settled) > 0 {
		fmt.Fprintf(w, "homatest: marked %s interrupted (killed: their runs ended without releasing their locks; partial captures' temporary files removed, captures cut short renamed NAME.partial.pcapng): %s\n",
			plural.Of(len(settled), "run folder", "run folders"), strings.Join(settled, ", "))
	}
}
