package seqplot

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderFormats: the figure of a lossy RPC decodes as a 960x768 PNG,
// parses as XML with an <svg> root, and starts as a PDF should.
func TestRenderFormats(t *testing.T) {
	m := load(t, filepath.Join(faultsDir, "BR-26-resent-then-sent-again.pcapng"), byID(4))
	var out [3]bytes.Buffer
	for i, f := range Formats {
		if err := m.Render(&out[i], f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	img, err := png.Decode(&out[0])
	if err != nil {
		t.Fatalf("png: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 768 {
		t.Errorf("png %v, want 960x768", b)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.NewDecoder(&out[1]).Decode(&root); err != nil {
		t.Fatalf("svg: %v", err)
	}
	if root.XMLName.Local != "svg" {
		t.Errorf("svg root <%s>, want <svg>", root.XMLName.Local)
	}
	if !bytes.HasPrefix(out[2].Bytes(), []byte("%PDF-")) {
		t.Errorf("pdf starts %q", out[2].Bytes()[:min(8, out[2].Len())])
	}
	if err := m.Render(&out[0], "gif"); err == nil || !strings.Contains(err.Error(), "png, svg, pdf") {
		t.Errorf("gif: %v, want an error naming the formats", err)
	}
}

// TestLegendAndTitle: the legend names what the figure shows (the
// retransmit entry only when there is one) and the title gives the RPC.
func TestLegendAndTitle(t *testing.T) {
	m := load(t, filepath.Join(faultsDir, "BR-26-resent-then-sent-again.pcapng"), byID(4))
	var lg legend
	for _, p := range m.Panels() {
		if _, err := m.panelPlot(p, &lg); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(lg.names, ","), "granted offset,p0,p4,p7,retransmit,RESEND (range)"; got != want {
		t.Errorf("legend %s, want %s", got, want)
	}
	l1, l2 := m.Title()
	if l1 != "RPC 4  10.0.0.11:32768 > 10.0.0.1:4000" || !strings.Contains(l2, "request 100000 B, response 100 B") ||
		!strings.Contains(l2, "in 22 DATA; 2 RESEND, 0 BUSY") {
		t.Errorf("title %q / %q", l1, l2)
	}
	small := load(t, filepath.Join(faultsDir, "BR-26-resent-then-sent-again.pcapng"), byID(2))
	lg = legend{}
	for _, p := range small.Panels() {
		small.panelPlot(p, &lg)
	}
	if strings.Contains(strings.Join(lg.names, ","), "retransmit") || small.Unit().String() != "1µs" {
		t.Errorf("small RPC: legend %v unit %v, want no retransmit entry, µs", lg.names, small.Unit())
	}
}

func TestFormatOf(t *testing.T) {
	for in, want := range map[string]string{"a.png": "png", "dir/B.SVG": "svg", "x.pdf": "pdf", "x.gif": "", "noext": ""} {
		got, err := FormatOf(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
