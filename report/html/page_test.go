package html

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/report/html/htmltest"
)

// testPNG is a w × h picture of one colour.
func testPNG(t *testing.T, w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var magenta = color.RGBA{0xd0, 0x10, 0xc0, 0xff}

func samplePage(t *testing.T) *Page {
	return &Page{Title: "homatest check", Subtitle: "x.pcap", Verdict: "FAIL: 1 violation", Command: "homatest check x.pcap",
		Facts: []Fact{{"x.pcap", "profile linux"}}, Notes: []string{"a <warning> & more"},
		Tables: []Table{{Title: "Rules", Head: []string{"rule", "violated"}, Rows: []Row{{Cells: []string{"HOMA-GRANT-010", "1"}, Bad: true}}}},
		Failures: []Failure{{Title: "HOMA-GRANT-010 at frame 33", Rules: []string{"HOMA-GRANT-010"}, Level: "SHOULD",
			Expected: "a receiver grants", Observed: "<script>alert(1)</script> no GRANT",
			Picture: &Picture{Caption: "RPC 4", PNG: testPNG(t, 300, 200, magenta)},
			Rerun:   "homatest check --rules HOMA-GRANT-010 x.pcap", Links: []Link{{"x.pcapng", "x.pcapng"}}}}}
}

// TestWriteSelfContained: the page escapes what it shows, embeds its
// pictures, and names no outside source (its CSP forbids any).
func TestWriteSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, samplePage(t)); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{`<div id="verdict" class="fail">FAIL: 1 violation</div>`, "&lt;script&gt;alert(1)&lt;/script&gt;",
		`src="data:image/png;base64,`, `default-src 'none'; img-src data:`, "homatest check --rules HOMA-GRANT-010 x.pcap", `href="x.pcapng"`} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(s); m != "" {
		t.Errorf("page refers outside itself: %s", m)
	}
}

func TestRel(t *testing.T) {
	for _, c := range []struct{ dir, path, want string }{
		{"runs/a", "runs/a/pass-1/x.pcapng", "pass-1/x.pcapng"},
		{"runs/a", "/elsewhere/x.pcapng", "/elsewhere/x.pcapng"},
		{"runs/a", "runs/b/x.pcapng", "runs/b/x.pcapng"},
		{"", "x.pcapng", "x.pcapng"},
	} {
		if got := Rel(c.dir, c.path); got != c.want {
			t.Errorf("Rel(%q, %q) = %q, want %q", c.dir, c.path, got, c.want)
		}
	}
}

// TestPageInChromium: a headless browser shows the verdict in its colour,
// decodes the embedded picture at its size, and the page is whole.
func TestPageInChromium(t *testing.T) {
	htmltest.Chromium(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := WriteFile(path, samplePage(t)); err != nil {
		t.Fatal(err)
	}
	dom := htmltest.DOM(t, path)
	for _, want := range []string{`class="fail">FAIL: 1 violation<`, `data-rendered="300x200"`, "HOMA-GRANT-010 at frame 33"} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}
	img := htmltest.Screenshot(t, path, 1000, 1400, "")
	red := color.RGBA{0xc6, 0x28, 0x28, 0xff}
	if n := htmltest.Count(img, image.Rect(0, 0, 1000, 150), red, 6); n < 2000 {
		t.Errorf("the FAIL banner: %d red pixels in the header, want a banner", n)
	}
	if n := htmltest.Count(img, image.Rectangle{}, magenta, 6); n < 300*200*9/10 {
		t.Errorf("the picture: %d of its %d pixels on screen", n, 300*200)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteFile("/proc/nope/report.html", samplePage(t)); err == nil {
		t.Error("WriteFile into /proc succeeded")
	}
	os.Remove(path)
}
