package wireshark

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// FileName is the name of the generated dissector file.
const FileName = "homa.lua"

// PluginDir returns Wireshark's personal Lua plugins folder: on Windows
// %APPDATA%\Wireshark\plugins, elsewhere ~/.local/lib/wireshark/plugins
// (Wireshark 2.5 and later; "tshark -G folders" prints it as "Personal Lua
// Plugins"). Wireshark loads every .lua file there at start.
func PluginDir() (string, error) {
	if runtime.GOOS == "windows" {
		if d := os.Getenv("APPDATA"); d != "" {
			return filepath.Join(d, "Wireshark", "plugins"), nil
		}
		return "", errors.New("APPDATA is not set: pass the plugins folder with --dir")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder (%v): pass the plugins folder with --dir", err)
	}
	return filepath.Join(home, ".local", "lib", "wireshark", "plugins"), nil
}

// Install writes the generated dissector as dir/homa.lua (creating dir),
// whole or not at all (a temporary file renamed into place), and returns
// its path.
func Install(dir string) (string, error) {
	var b bytes.Buffer
	if err := Generate(&b); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
	}
	path := filepath.Join(dir, FileName)
	f, err := os.CreateTemp(dir, "."+FileName+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	_, err = f.Write(b.Bytes())
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
		return "", fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return path, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
