// Package atomicfile writes a file whole or not at all: into a temporary
// file in the destination's folder, renamed into place once complete, so
// a failed or interrupted write leaves nothing half-written and an
// existing file unchanged (which also lets a file be rewritten from
// itself). A symlink is followed (the link stays, its target gets the
// content) and an existing path that is not a regular file (a device such
// as /dev/null, a FIFO, a socket) is written through, never replaced.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinks bounds how many symlinks Write follows (the kernel's own limit
// for one path lookup, MAXSYMLINKS).
const maxLinks = 40

// Write writes what fn writes to path. A regular or new file (mode 0644)
// is written to a temporary file beside it and renamed into place; a
// symlink is resolved first so the rename happens beside its target; an
// existing device, FIFO or socket is opened for writing and truncated
// (no rename: a rename would replace the node). On any error nothing is
// left behind (for a write-through, whatever the node consumed is gone)
// and the error reads "cannot write PATH: cause" (PATH as given, without
// the temporary file's name), e.g. "no space left on device" for
// /dev/full.
func Write(path string, fn func(io.Writer) error) error {
	target, err := resolve(path)
	if err != nil {
		return wrap(path, err)
	}
	if st, err := os.Stat(target); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return writeThrough(path, target, fn)
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return wrap(path, err)
	}
	err = fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), target)
	}
	if err != nil {
		os.Remove(f.Name())
		return wrap(path, err)
	}
	return nil
}

// writeThrough writes fn's output straight into the existing non-regular
// node target (opened O_WRONLY|O_TRUNC; a FIFO blocks until a reader
// opens it, as any writer's would).
func writeThrough(path, target string, fn func(io.Writer) error) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return wrap(path, err)
	}
	err = fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return wrap(path, err)
	}
	return nil
}

// resolve follows path while it is a symlink (also a dangling one, whose
// target Write then creates) and returns the first path that is not one.
// Errors: a loop or a chain longer than maxLinks, an unreadable link.
func resolve(path string) (string, error) {
	for range maxLinks {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", errors.New("too many levels of symbolic links")
}

// Check reports, before any work starts, whether Write could write path:
// for a new or regular file (after following symlinks), a temporary file
// is created in its folder and removed again (this catches a read-only
// folder or one like /proc that takes no new files); an existing device,
// FIFO or socket is accepted as is (opening a FIFO would wait for a
// reader). Errors: an *Error whose Err is the cause.
func Check(path string) error {
	target, err := resolve(path)
	if err != nil {
		return wrap(path, err)
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir():
		return wrap(path, errors.New("is a directory"))
	case err == nil && !st.Mode().IsRegular():
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return wrap(path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// Error is a failed Write or Check: Path as the caller gave it, Err the
// cause (an errno such as ENOSPC, without the temporary file's name).
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("cannot write %s: %v", e.Path, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func wrap(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{Path: path, Err: err}
}
