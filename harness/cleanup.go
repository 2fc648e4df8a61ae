package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Leftover is one thing a killed run left behind.
type Leftover struct {
	// Kind is "process", "netns", "link", "lock", or "shadowed": a
	// namespace whose bind mount was hidden by a later bind mount of
	// /run/netns over itself (some tool ran "ip netns add" while
	// /run/netns was not yet a mount point). Cleanup cannot remove a
	// shadowed namespace by path and leaves it (reported, not an error);
	// Build prevents the situation by making /run/netns a mount point
	// first.
	Kind string `json:"kind"`
	// Name is the namespace, interface or lock file name, or for a process
	// its command name.
	Name string `json:"name"`
	// Run is the run id the name carries.
	Run RunID `json:"run"`
	// Pid is the process id (Kind "process").
	Pid int `json:"pid,omitempty"`
	// NS is the namespace a process runs in (Kind "process").
	NS string `json:"netns,omitempty"`
}

// String describes l in one line, e.g. "process 4242 (sleep) in
// namespace ht3f9a1c-h1".
func (l Leftover) String() string {
	switch l.Kind {
	case "process":
		return fmt.Sprintf("process %d (%s) in namespace %s", l.Pid, l.Name, l.NS)
	case "netns":
		return "namespace " + l.Name
	case "link":
		return "interface " + l.Name + " in the root namespace"
	case "shadowed":
		return "namespace " + l.Name + " (hidden under a later bind mount of " + netnsDir + ": cannot be removed by path; " +
			"it goes away at reboot, or after \"umount " + netnsDir + "\" when no other tool uses named namespaces)"
	}
	return l.Kind + " " + l.Name
}

// checkPrefix validates a Leftovers/Cleanup filter.
func checkPrefix(prefix string) error {
	if prefix == "" || nameRe.MatchString(prefix) ||
		(strings.HasPrefix(prefix, "ht") && len(prefix) <= 8 && runIDRe.MatchString((prefix[2:] + "000000")[:6])) {
		return nil
	}
	return fmt.Errorf("harness: cleanup filter %q: want \"\" (every run), \"ht\" and up to 6 lowercase hex digits of a run id, or a full name like ht3f9a1c-h1", prefix)
}

// ours reports whether name is one of our names (ht[0-9a-f]{6}-*) starting
// with prefix, and whose run is not live.
func ours(name, prefix string, live map[RunID]bool) (RunID, bool) {
	id, ok := RunOf(name)
	if !ok || !strings.HasPrefix(name, prefix) {
		return "", false
	}
	l, seen := live[id]
	if !seen {
		l = runIsLive(id)
		live[id] = l
	}
	return id, !l
}

// Leftovers lists what killed runs left: for every namespace in /run/netns
// named ht[0-9a-f]{6}-* (and starting with prefix, "" for all), the
// processes running in it (found by matching /proc/*/ns/net to the
// namespace's inode) and the namespace; interfaces with such names in the
// root namespace; and lock files nobody holds. Runs whose lock is held by
// a live process are skipped (see LiveRuns). The order is the removal
// order: processes, interfaces, namespaces, locks.
func Leftovers(prefix string) ([]Leftover, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	live := map[RunID]bool{}
	var procs, links, nss, locks []Leftover
	inodes := map[uint64]string{}
	shadowed := shadowedNetns()
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("harness: list namespaces: %w", err)
	}
	for _, e := range ents {
		id, ok := ours(e.Name(), prefix, live)
		if !ok {
			continue
		}
		if shadowed[e.Name()] {
			nss = append(nss, Leftover{Kind: "shadowed", Name: e.Name(), Run: id})
			continue
		}
		nss = append(nss, Leftover{Kind: "netns", Name: e.Name(), Run: id})
		var st unix.Stat_t
		if unix.Stat(filepath.Join(netnsDir, e.Name()), &st) == nil {
			inodes[st.Ino] = e.Name()
		}
	}
	procs = processesIn(inodes)
	ls, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("harness: list interfaces: %w", err)
	}
	for _, l := range ls {
		if id, ok := ours(l.Attrs().Name, prefix, live); ok {
			links = append(links, Leftover{Kind: "link", Name: l.Attrs().Name, Run: id})
		}
	}
	lockEnts, _ := os.ReadDir(LockDir)
	for _, e := range lockEnts {
		name := strings.TrimSuffix(e.Name(), ".lock")
		if name == e.Name() {
			continue
		}
		if id, ok := ours(name+"-", prefix, live); ok {
			locks = append(locks, Leftover{Kind: "lock", Name: e.Name(), Run: id})
		}
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].Pid < procs[j].Pid })
	return append(append(append(procs, links...), nss...), locks...), nil
}

// LiveRuns returns the ids of runs (names starting with prefix) whose lock
// is held by a live process: Cleanup leaves them alone.
func LiveRuns(prefix string) []RunID {
	seen := map[RunID]bool{}
	var ids []RunID
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if id, ok := RunOf(e.Name()); ok && strings.HasPrefix(e.Name(), prefix) && !seen[id] {
			seen[id] = true
			if runIsLive(id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Cleanup removes everything Leftovers(prefix) lists: it SIGKILLs the
// processes and waits (up to 5 s) until they are gone, deletes the
// interfaces and namespaces and removes the lock files. It returns a
// description (Leftover.String) of each thing removed, and the joined
// errors of what could not be removed. It needs root (ErrNotRoot).
func Cleanup(prefix string) (removed []string, err error) {
	if runtime.GOOS != "linux" {
		return nil, ErrNotSupported
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	left, err := Leftovers(prefix)
	if err != nil {
		return nil, err
	}
	removed, errs := killProcesses(left)
	for _, l := range left {
		var err error
		switch l.Kind {
		case "process", "shadowed":
			continue
		case "link":
			var link netlink.Link
			if link, err = netlink.LinkByName(l.Name); err == nil {
				err = netlink.LinkDel(link)
			} else {
				err = nil // gone with its peer
			}
		case "netns":
			err = netns.DeleteNamed(l.Name)
			if err != nil {
				// Not mounted (a stale file): remove it anyway.
				if rerr := os.Remove(filepath.Join(netnsDir, l.Name)); rerr == nil || errors.Is(rerr, os.ErrNotExist) {
					err = nil
				}
			}
		case "lock":
			err = os.Remove(filepath.Join(LockDir, l.Name))
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", l, err))
			continue
		}
		removed = append(removed, l.String())
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("harness: cleanup: %w", errors.Join(errs...))
	}
	return removed, nil
}

// StaleRunAge is the age a dead run must have (from its reservation,
// its lock file's time) before a test binary's start removes what it
// left (RemoveDeadRuns in the TestMain of each package whose tests make
// namespaces): a test that kills a run on purpose looks at its leftovers
// within seconds, and another package's tests, started meanwhile, must
// not take them first.
const StaleRunAge = time.Minute

// RemoveDeadRuns removes what runs that died without cleaning up left on
// this machine (Cleanup: the namespaces, interfaces and processes of runs
// whose lock nobody holds, and those locks; a live run's are never
// touched), of runs reserved at least olderThan ago (0: every dead run),
// and says so in one line on w; when they cannot all be removed, the
// line names them and the command that removes them. Without root it
// does nothing: nothing could be removed, and a run without root made
// no namespaces.
func RemoveDeadRuns(w io.Writer, olderThan time.Duration) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return
	}
	left, err := Leftovers("")
	if err != nil {
		return
	}
	var names []string
	runs := map[RunID]bool{}
	for _, l := range left {
		if l.Kind == "shadowed" {
			continue // cannot be removed; homatest cleanup says why
		}
		old, ok := runs[l.Run]
		if !ok {
			old = olderThan <= 0 || reservedBefore(l.Run, time.Now().Add(-olderThan))
			runs[l.Run] = old
		}
		if old {
			names = append(names, l.String())
		}
	}
	var ids []string
	for id, old := range runs {
		if old {
			ids = append(ids, id.Prefix())
		}
	}
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)
	var removed []string
	var errs []error
	for _, id := range ids {
		r, err := Cleanup(id)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "homatest: killed runs %s left %s: removed %d, could not remove the others (%s): run \"sudo homatest cleanup\"\n",
			strings.Join(ids, ", "), strings.Join(names, ", "), len(removed), strings.ReplaceAll(errors.Join(errs...).Error(), "\n", "; "))
		return
	}
	runsWord := "run"
	if len(ids) > 1 {
		runsWord = "runs"
	}
	fmt.Fprintf(w, "homatest: removed what killed %s %s left: %s\n", runsWord, strings.Join(ids, ", "), strings.Join(removed, ", "))
}

// reservedBefore reports whether run id was reserved before t: its lock
// file was last written then (reserveRunID writes the pid at once), or
// it has none (no run being reserved now lacks one).
func reservedBefore(id RunID, t time.Time) bool {
	st, err := os.Stat(filepath.Join(LockDir, id.Prefix()+".lock"))
	return err != nil || st.ModTime().Before(t)
}

// processesIn lists the processes (other than this one) whose network
// namespace has one of the inodes (mapped to the namespace name).
func processesIn(inodes map[uint64]string) []Leftover {
	if len(inodes) == 0 {
		return nil
	}
	var procs []Leftover
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		ino, ok := netnsInode(pid)
		if !ok {
			continue
		}
		if ns, ok := inodes[ino]; ok && processAlive(pid) {
			id, _ := RunOf(ns)
			procs = append(procs, Leftover{Kind: "process", Name: procName(pid), Run: id, Pid: pid, NS: ns})
		}
	}
	return procs
}

// killProcesses SIGKILLs the "process" entries of left and waits (up to
// 5 s) until they are gone; it returns the descriptions of those killed
// and the errors of the others.
func killProcesses(left []Leftover) (killed []string, errs []error) {
	var sent []Leftover
	for _, l := range left {
		if l.Kind == "process" {
			if err := syscall.Kill(l.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %s: %w", l, err))
				continue
			}
			sent = append(sent, l)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, l := range sent {
		for processAlive(l.Pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if processAlive(l.Pid) {
			errs = append(errs, fmt.Errorf("%s still runs 5 s after SIGKILL", l))
			continue
		}
		killed = append(killed, l.String())
	}
	return killed, errs
}

// shadowedNetns returns the names of namespace bind mounts under
// /run/netns that are hidden by a later mount of /run/netns itself: in
// /proc/self/mountinfo, a mount at /run/netns/NAME whose parent is not the
// topmost mount at /run/netns.
func shadowedNetns() map[string]bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return shadowedIn(b)
}

// shadowedIn is shadowedNetns on the text of a mountinfo file.
func shadowedIn(b []byte) map[string]bool {
	type mnt struct{ id, parent, point string }
	var ms []mnt
	top := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := mnt{f[0], f[1], f[4]}
		ms = append(ms, m)
		if m.point == netnsDir {
			top = m.id // later lines are mounted on top
		}
	}
	if top == "" {
		return nil
	}
	out := map[string]bool{}
	for _, m := range ms {
		if filepath.Dir(m.point) == netnsDir && m.parent != top {
			out[filepath.Base(m.point)] = true
		}
	}
	return out
}

// netnsInode returns the inode of process pid's network namespace.
func netnsInode(pid int) (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// procName returns the command name of pid ("?" if unknown).
func procName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return !(i > 0 && i+2 < len(s) && s[i+2] == 'Z')
}
