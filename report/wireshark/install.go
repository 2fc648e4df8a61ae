package wireshark

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/homatest/homatest/internal/atomicfile"
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
// whole or not at all, and returns its path.
func Install(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("cannot create %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	return path, atomicfile.Write(path, Generate)
}
