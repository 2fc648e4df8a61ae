package bench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/homatest/homatest/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot draws r the way the Homa papers draw slowdown (SIGCOMM 2018 Fig.
// 12, ATC 2021 Fig. 6): x is the message size placed at its workload
// percentile (each bucket at the cumulative probability of its largest
// size, labelled with that size), y the slowdown on a log scale, one line
// per transport and quantile (p99 solid, p50 dashed, one colour per
// transport). Buckets without RPCs are left out of their lines. path's
// extension picks the format: .png or .svg. Errors: another extension, no
// buckets, no bucket with a completed RPC, or the file cannot be written.
func (r *Report) Plot(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: the file name must end in .png or .svg", path)
	}
	return writePlotFile(path, ext[1:], r.WritePlot)
}

// writePlotFile writes the picture write draws in format (png or svg) to
// path, whole or not at all (internal/atomicfile).
func writePlotFile(path, format string, write func(w io.Writer, format string) error) error {
	return atomicfile.Write(path, func(w io.Writer) error { return write(w, format) })
}

// WritePlot draws r as Plot does, in format "png" or "svg", to w. It
// never panics on any report: slowdowns that are not finite and above 0
// are left out (a log axis cannot place them), and a y range of one value
// is widened by a factor of 2 each way (gonum widens it by ±1, below 0 for
// a slowdown of 1). A panic left in gonum becomes an error.
func (r *Report) WritePlot(w io.Writer, format string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plot: the plotting library failed on this report: %v", p)
		}
	}()
	if format != "png" && format != "svg" {
		return fmt.Errorf("plot: format %q: want png or svg", format)
	}
	if len(r.Buckets) == 0 || len(r.Transports) == 0 {
		return errors.New("plot: the report has no buckets or no transports")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s at load %.2f", r.Workload, r.Load)
	if r.RateBps > 0 {
		p.Title.Text += " of " + FormatBps(r.RateBps)
	}
	p.X.Label.Text = "message size (bytes), placed at workload percentile"
	p.Y.Label.Text = "slowdown"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = 0, 1
	var ticks []plot.Tick
	for _, b := range r.Buckets {
		ticks = append(ticks, plot.Tick{Value: b.CDF, Label: shortSize(b.Hi)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top = true // top right: short messages, on the left, have the highest slowdowns
	p.Add(plotter.NewGrid())
	lines := 0
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for ti, s := range r.Transports {
		for _, q := range []struct {
			name   string
			get    func(BucketStats) float64
			dashed bool
		}{{"p99", func(b BucketStats) float64 { return b.P99 }, false}, {"p50", func(b BucketStats) float64 { return b.P50 }, true}} {
			var xys plotter.XYs
			for _, b := range s.Buckets {
				if v := q.get(b); b.Count > 0 && v > 0 && !math.IsInf(v, 0) {
					xys = append(xys, plotter.XY{X: b.CDF, Y: v})
					ymin, ymax = min(ymin, v), max(ymax, v)
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return fmt.Errorf("plot: %v", err)
			}
			line.Color = plotutil.Color(ti)
			line.Width = vg.Points(1.5)
			points.Color = line.Color
			points.Shape = plotutil.Shape(ti)
			if q.dashed {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(s.Transport+" "+q.name, line, points)
			lines++
		}
	}
	if lines == 0 {
		return errors.New("plot: no bucket has a completed RPC: nothing to draw")
	}
	if ymin == ymax {
		p.Y.Min, p.Y.Max = ymin/2, min(ymax*2, math.MaxFloat64)
	}
	return save(p, w, format)
}

// margin is the space in points above the plot and right of it: gonum
// draws the title from the canvas's top edge, which clips its ascenders,
// and centres the last x tick label on the right edge.
const margin = 6 // points

// save writes p as an 8 × 5 inch image in format ("png" or "svg") to w,
// on a white background, margin below the top edge and left of the right
// one.
func save(p *plot.Plot, w io.Writer, format string) error {
	c, err := draw.NewFormattedCanvas(8*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("plot: %v", err)
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, -vg.Points(margin), 0, -vg.Points(margin)))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: %v", err)
	}
	return nil
}

// shortSize formats a size in bytes for an axis label: "96", "1.4K",
// "40K", "1M".
func shortSize(n int) string {
	switch {
	case n >= 1e6:
		return trimZero(float64(n)/1e6) + "M"
	case n >= 1e3:
		return trimZero(float64(n)/1e3) + "K"
	}
	return fmt.Sprint(n)
}

// trimZero formats v rounded to one decimal, without a trailing ".0".
func trimZero(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}
