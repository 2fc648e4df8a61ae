package seqplot

import (
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// markPlotter draws marks as vertical strokes from Offset to End at At,
// with an optional glyph at End (or, when Mid is set, halfway up), and an
// optional bar cap at both ends. It implements plot.Plotter,
// plot.DataRanger and plot.Thumbnailer.
type markPlotter struct {
	marks []Mark
	unit  time.Duration
	line  draw.LineStyle // Width 0: no stroke
	glyph draw.GlyphStyle
	mid   bool      // glyph halfway between Offset and End
	cap   vg.Length // half width of the end caps (0: none)
}

func (mp *markPlotter) x(m Mark) float64 { return float64(m.At) / float64(mp.unit) }

// Plot draws the marks (plot.Plotter).
func (mp *markPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, m := range mp.marks {
		x, y0, y1 := trX(mp.x(m)), trY(float64(m.Offset)), trY(float64(m.End))
		if mp.line.Width > 0 {
			c.StrokeLine2(mp.line, x, y0, x, y1)
			if mp.cap > 0 {
				c.StrokeLine2(mp.line, x-mp.cap, y0, x+mp.cap, y0)
				c.StrokeLine2(mp.line, x-mp.cap, y1, x+mp.cap, y1)
			}
		}
		if mp.glyph.Shape != nil {
			y := y1
			if mp.mid {
				y = (y0 + y1) / 2
			}
			c.DrawGlyph(mp.glyph, vg.Point{X: x, Y: y})
		}
	}
}

// DataRange returns the marks' extent (plot.DataRanger).
func (mp *markPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, m := range mp.marks {
		x := mp.x(m)
		xmin, xmax = min(xmin, x), max(xmax, x)
		ymin, ymax = min(ymin, float64(m.Offset)), max(ymax, float64(m.End))
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail draws the legend entry (plot.Thumbnailer).
func (mp *markPlotter) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	if mp.line.Width > 0 {
		c.StrokeLine2(mp.line, x, c.Min.Y, x, c.Max.Y)
		if mp.cap > 0 {
			c.StrokeLine2(mp.line, x-mp.cap, c.Min.Y, x+mp.cap, c.Min.Y)
			c.StrokeLine2(mp.line, x-mp.cap, c.Max.Y, x+mp.cap, c.Max.Y)
		}
	}
	if mp.glyph.Shape != nil {
		c.DrawGlyphNoClip(mp.glyph, c.Center())
	}
}

// Colours of the eight priority levels, p0 (lowest) to p7 (highest);
// red, black and grey are kept for RESEND, retransmissions and grants.
var prioColors = [8]color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // p0 blue
	{0x17, 0xbe, 0xcf, 0xff}, // p1 cyan
	{0x2c, 0xa0, 0x2c, 0xff}, // p2 green
	{0xbc, 0xbd, 0x22, 0xff}, // p3 olive
	{0xff, 0x7f, 0x0e, 0xff}, // p4 orange
	{0x8c, 0x56, 0x4b, 0xff}, // p5 brown
	{0xe3, 0x77, 0xc2, 0xff}, // p6 pink
	{0x94, 0x67, 0xbd, 0xff}, // p7 purple
}

// PriorityColor returns the colour DATA sent at priority level p (0..7)
// is drawn in.
func PriorityColor(p uint8) color.RGBA { return prioColors[p&7] }

var (
	black     = color.RGBA{0, 0, 0, 0xff}
	resendRed = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	grantGrey = color.RGBA{0x55, 0x55, 0x55, 0xff}
	busyColor = color.RGBA{0, 0, 0, 0xff}
)

// dataPlotter draws first transmissions at priority level prio.
func dataPlotter(ms []Mark, unit time.Duration, prio int) *markPlotter {
	c := prioColors[prio&7]
	return &markPlotter{marks: ms, unit: unit,
		line:  draw.LineStyle{Color: c, Width: vg.Points(1.2)},
		glyph: draw.GlyphStyle{Color: c, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}}
}

// retransmitPlotter draws retransmitted DATA in their priority colours
// with a black cross; the legend shows the cross.
type retransmitPlotter struct {
	strokes [8]*markPlotter
	cross   *markPlotter
}

func newRetransmitPlotter(ms []Mark, unit time.Duration) *retransmitPlotter {
	rp := &retransmitPlotter{cross: &markPlotter{marks: ms, unit: unit, mid: true,
		glyph: draw.GlyphStyle{Color: black, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}}}
	var by [8][]Mark
	for _, m := range ms {
		by[m.Priority&7] = append(by[m.Priority&7], m)
	}
	for i := range by {
		if len(by[i]) > 0 {
			rp.strokes[i] = &markPlotter{marks: by[i], unit: unit,
				line: draw.LineStyle{Color: prioColors[i], Width: vg.Points(1.2)}}
		}
	}
	return rp
}

// Plot draws the strokes, then the crosses (plot.Plotter).
func (rp *retransmitPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	for _, s := range rp.strokes {
		if s != nil {
			s.Plot(c, p)
		}
	}
	rp.cross.Plot(c, p)
}

// DataRange returns the marks' extent (plot.DataRanger).
func (rp *retransmitPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	return rp.cross.DataRange()
}

// Thumbnail draws the cross (plot.Thumbnailer).
func (rp *retransmitPlotter) Thumbnail(c *draw.Canvas) { rp.cross.Thumbnail(c) }

// resendPlotter draws RESEND ranges as red bars with caps.
func resendPlotter(ms []Mark, unit time.Duration) *markPlotter {
	return &markPlotter{marks: ms, unit: unit, cap: vg.Points(2.5),
		line: draw.LineStyle{Color: resendRed, Width: vg.Points(2)}}
}

// busyPlotter draws BUSY packets as triangles.
func busyPlotter(ms []Mark, unit time.Duration) *markPlotter {
	return &markPlotter{marks: ms, unit: unit,
		glyph: draw.GlyphStyle{Color: busyColor, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}}
}
