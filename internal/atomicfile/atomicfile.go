// Package atomicfile writes a file whole or not at all: into a temporary
// file in the destination's folder, renamed into place once complete, so
// a failed or interrupted write leaves nothing half-written and an
// existing file unchanged (which also lets a file be rewritten from
// itself).
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write creates path (mode 0644) with what fn writes. On any error nothing
// is left behind and the error reads "cannot write PATH: cause" (without
// the temporary file's name).
func Write(path string, fn func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
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
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return wrap(path, err)
	}
	return nil
}

func wrap(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot write %s: %w", path, err)
}
