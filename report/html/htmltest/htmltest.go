// Package htmltest renders report pages in a real browser for tests:
// headless Chromium (Debian's chromium package; .ci/run installs it) takes
// a screenshot of a page and dumps its DOM after the page has loaded, so a
// test can assert what a reader sees, not only what the file holds.
package htmltest

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Chromium returns the path of Chromium, or skips the test when it is not
// installed.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install chromium; .ci/run installs it)")
	return ""
}

// flags are those a closed network and a root user need: no sandbox (root),
// no GPU, and no background connections (refused here, many at a time).
var flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
	"--disable-dev-shm-usage"}

// run runs Chromium on the page with a fresh profile and extra flags and
// returns its standard output.
func run(t testing.TB, bin, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, flags...), "--user-data-dir="+t.TempDir())
	args = append(append(args, extra...), "file://"+abs)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", page, err, stderr.String())
	}
	return out
}

// DOM returns the page's DOM as Chromium holds it after the load event
// (scripts run).
func DOM(t testing.TB, page string) string {
	t.Helper()
	return string(run(t, Chromium(t), page, "--dump-dom"))
}

// Screenshot renders the page in a width × height window and returns the
// picture; it also writes it to shot when shot is not empty.
func Screenshot(t testing.TB, page string, width, height int, shot string) image.Image {
	t.Helper()
	bin := Chromium(t)
	tmp := filepath.Join(t.TempDir(), "shot.png")
	run(t, bin, page, "--screenshot="+tmp, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	b, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if shot != "" {
		if err := os.WriteFile(shot, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// Count returns how many pixels of img inside r (r.Empty(): all of img)
// are within tol of c in every channel.
func Count(img image.Image, r image.Rectangle, c color.RGBA, tol int) int {
	if r.Empty() {
		r = img.Bounds()
	}
	r = r.Intersect(img.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			R, G, B, _ := img.At(x, y).RGBA()
			if near(int(R>>8), int(c.R), tol) && near(int(G>>8), int(c.G), tol) && near(int(B>>8), int(c.B), tol) {
				n++
			}
		}
	}
	return n
}

func near(a, b, tol int) bool { return a-b <= tol && b-a <= tol }

// Available reports whether Chromium is installed (for tests that check a
// page only as an extra, and must not be skipped without it).
func Available() bool {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if _, err := exec.LookPath(name); err == nil {
			return true
		}
	}
	return false
}
