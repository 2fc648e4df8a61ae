package harness

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// RunID identifies one harness run: 6 lowercase hex digits (24 random
// bits). Every namespace, interface and lock file of the run carries it
// behind the prefix "ht", e.g. namespace "ht3f9a1c-h1".
type RunID string

// Prefix returns "ht" + the run id, e.g. "ht3f9a1c": the common start of
// every name the run creates.
func (id RunID) Prefix() string { return "ht" + string(id) }

// SwitchNS returns the name of the run's switch namespace, "ht3f9a1c-sw".
func (id RunID) SwitchNS() string { return id.Prefix() + "-sw" }

// HostNS returns the name of host i's namespace (i from 1), "ht3f9a1c-h1".
func (id RunID) HostNS(i int) string { return id.Prefix() + "-h" + strconv.Itoa(i) }

// HostIf returns the name of host i's veth end inside its namespace,
// "ht3f9a1c-h1" (the same as the namespace name; at most 12 bytes for
// i ≤ 64, within the kernel's 15-byte IFNAMSIZ limit).
func (id RunID) HostIf(i int) string { return id.HostNS(i) }

// PortIf returns the name of the switch port to host i, the veth end inside
// the switch namespace: "ht3f9a1c-p1".
func (id RunID) PortIf(i int) string { return id.Prefix() + "-p" + strconv.Itoa(i) }

// BridgeIf returns the name of the kernel bridge in the switch namespace,
// "ht3f9a1c-br".
func (id RunID) BridgeIf() string { return id.Prefix() + "-br" }

// Valid reports whether id is 6 lowercase hex digits.
func (id RunID) Valid() bool { return runIDRe.MatchString(string(id)) }

var (
	runIDRe = regexp.MustCompile(`^[0-9a-f]{6}$`)
	// nameRe matches every name a run creates: "ht" + 6 lowercase hex
	// digits + "-" + anything. Cleanup only ever touches names matching it.
	nameRe = regexp.MustCompile(`^ht([0-9a-f]{6})-`)
)

// RunOf returns the run id carried by a namespace or interface name, and
// false when name is not one of ours (does not match ht[0-9a-f]{6}-*).
func RunOf(name string) (RunID, bool) {
	m := nameRe.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return RunID(m[1]), true
}

// LockDir holds one lock file per live run, "<LockDir>/ht3f9a1c.lock". A
// run holds an exclusive flock on its file for its lifetime; the kernel
// drops the lock when the process dies, which is how Cleanup tells a killed
// run (lock free) from a live one (lock held).
var LockDir = "/run/homatest"

// runLock is a reserved run id and its held lock file.
type runLock struct {
	id   RunID
	f    *os.File
	path string
}

// reserveRunID picks a fresh random run id and locks it. It tries again
// (up to 32 times) when the id's lock file or switch namespace already
// exists, so two runs at once never share an id. want, if not empty, is
// used instead of a random id (an error if it is taken).
func reserveRunID(want RunID) (*runLock, error) {
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("create lock directory: %w", err)
	}
	for try := 0; try < 32; try++ {
		id := want
		if id == "" {
			var b [3]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, err
			}
			id = RunID(hex.EncodeToString(b[:]))
		} else if !id.Valid() {
			return nil, fmt.Errorf("run id %q: want 6 lowercase hex digits", id)
		}
		if _, err := os.Stat(filepath.Join(netnsDir, id.SwitchNS())); err == nil {
			if want != "" {
				return nil, fmt.Errorf("run id %s: namespace %s exists (run homatest cleanup)", id, id.SwitchNS())
			}
			continue
		}
		path := filepath.Join(LockDir, id.Prefix()+".lock")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, os.ErrExist) {
			if want != "" {
				return nil, fmt.Errorf("run id %s is in use (lock %s exists)", id, path)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create run lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		fmt.Fprintf(f, "%d\n", os.Getpid())
		return &runLock{id: id, f: f, path: path}, nil
	}
	return nil, errors.New("no free run id after 32 tries (run homatest cleanup)")
}

// ReserveRun reserves a fresh run id, locked for this process's lifetime
// or until release is called, for code that makes its own namespaces or
// interfaces outside Build (other packages' tests): names starting with
// id.Prefix()+"-" are then left alone while the process lives and removed
// by Cleanup (homatest cleanup) once it died without removing them.
func ReserveRun() (id RunID, release func(), err error) {
	l, err := reserveRunID("")
	if err != nil {
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	return l.id, l.release, nil
}

// release removes the lock file and drops the lock. Safe to call twice.
func (l *runLock) release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
	l.f = nil
}

// runIsLive reports whether some process holds the lock of run id.
func runIsLive(id RunID) bool {
	f, err := os.Open(filepath.Join(LockDir, id.Prefix()+".lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	// reserveRunID creates the file, then locks it and writes its pid: an
	// empty file made a moment ago is a run being reserved, not a dead one
	// (a cleanup at the start of another run must not take it).
	if st, err := f.Stat(); err == nil && st.Size() == 0 && time.Since(st.ModTime()) < reserveGrace {
		return true
	}
	return false
}

// reserveGrace is how long an unlocked, empty lock file counts as a run
// being reserved (runIsLive).
const reserveGrace = 10 * time.Second
