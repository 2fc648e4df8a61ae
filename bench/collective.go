package bench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/homatest/homatest/internal/jsonout"
)

// CollectiveReport is a collective benchmark's result: an all-reduce
// (package sim's Collective) run by each transport alone and beside
// background RPC traffic at several loads, on the same simulated links.
type CollectiveReport struct {
	// Algorithm is "ring" or "halving-doubling".
	Algorithm string `json:"algorithm"`
	// Bytes is the data every host all-reduces.
	Bytes int64 `json:"bytes"`
	// Hosts, RateBps and MTU are the topology: hosts under one switch,
	// links of RateBps, MTU bytes.
	Hosts   int     `json:"hosts"`
	RateBps float64 `json:"rate_bps"`
	MTU     int     `json:"mtu"`
	// Iterations is how many all-reduces ran back to back per point.
	Iterations int `json:"iterations"`
	// Background names the background workload ("w4"; "" for none),
	// all-to-all with Poisson arrivals; Buckets are its size buckets.
	Background string   `json:"background,omitempty"`
	Buckets    []Bucket `json:"buckets,omitempty"`
	// Ideal is the completion time with every host sending its share at
	// the link rate and nothing else (no latency, no background).
	Ideal time.Duration `json:"ideal_ns"`
	Seed  uint64        `json:"seed"`
	// Points are the runs, by transport then load.
	Points []CollectivePoint `json:"points"`
}

// CollectivePoint is one transport's collective at one background load.
type CollectivePoint struct {
	Transport string `json:"transport"`
	// Load is the background's offered load, a fraction of each host's
	// downlink (0: none).
	Load float64 `json:"background_load"`
	// Times are the iterations' completion times.
	Times []time.Duration `json:"completion_ns"`
	// Mean is their mean; VsIdeal is Mean over the report's Ideal;
	// VsUnloaded is Mean over the transport's Mean at load 0 (0 when the
	// report has no such point).
	Mean       time.Duration `json:"mean_ns"`
	VsIdeal    float64       `json:"vs_ideal"`
	VsUnloaded float64       `json:"vs_unloaded,omitempty"`
	// Err is the first failed collective message ("" when none).
	Err string `json:"error,omitempty"`
	// Background is the slowdown analysis of the background RPCs (nil at
	// load 0).
	Background *Summary `json:"background,omitempty"`
}

// Finish fills every point's Mean, VsIdeal and VsUnloaded.
func (r *CollectiveReport) Finish() {
	unloaded := map[string]time.Duration{}
	for i := range r.Points {
		p := &r.Points[i]
		var sum time.Duration
		for _, t := range p.Times {
			sum += t
		}
		if len(p.Times) > 0 {
			p.Mean = sum / time.Duration(len(p.Times))
		}
		if r.Ideal > 0 {
			p.VsIdeal = float64(p.Mean) / float64(r.Ideal)
		}
		if p.Load == 0 {
			unloaded[p.Transport] = p.Mean
		}
	}
	for i := range r.Points {
		p := &r.Points[i]
		if u := unloaded[p.Transport]; u > 0 {
			p.VsUnloaded = float64(p.Mean) / float64(u)
		}
	}
}

// WriteJSON writes r as one indented JSON object.
func (r *CollectiveReport) WriteJSON(w io.Writer) error {
	return jsonout.Write(w, r)
}

// WriteText writes r as text: the setup and the ideal, then one line per
// point: transport, background load, mean completion time, its ratios to
// the ideal and to the unloaded run, and the background's RPC count and
// p99 slowdown of its smallest bucket (its short messages) and overall.
func (r *CollectiveReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s all-reduce of %s over %d hosts, %s links, MTU %d, %d iteration(s), simulated, seed %d\n",
		r.Algorithm, shortSize(int(r.Bytes))+"B", r.Hosts, FormatBps(r.RateBps), r.MTU, r.Iterations, r.Seed)
	fmt.Fprintf(w, "ideal completion %v (each host's share at the link rate)", r.Ideal)
	if r.Background != "" {
		fmt.Fprintf(w, "; background %s all-to-all", r.Background)
		if len(r.Buckets) > 0 {
			fmt.Fprintf(w, ", short messages %s bytes", r.Buckets[0])
		}
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tbg load\tcompletion\tvs ideal\tvs unloaded\tbg rpcs\tbg short p99\tbg p99\t")
	for _, p := range r.Points {
		vsu := "-"
		if p.VsUnloaded > 0 {
			vsu = fmt.Sprintf("%.2fx", p.VsUnloaded)
		}
		rpcs, short, all := "-", "-", "-"
		if b := p.Background; b != nil {
			rpcs, all = fmt.Sprint(b.Count), num(b.P99)
			if len(b.Buckets) > 0 {
				short = num(b.Buckets[0].P99)
			}
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%v\t%.2fx\t%s\t%s\t%s\t%s\t\n", p.Transport, p.Load, p.Mean.Round(time.Microsecond),
			p.VsIdeal, vsu, rpcs, short, all)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Points {
		if p.Err != "" {
			fmt.Fprintf(w, "%s at load %.2f: collective failed: %s\n", p.Transport, p.Load, p.Err)
		}
		if p.Background != nil && p.Background.Errors > 0 {
			fmt.Fprintf(w, "%s at load %.2f: %d background RPCs failed (%s)\n", p.Transport, p.Load, p.Background.Errors, p.Background.FirstError)
		}
	}
	return nil
}

// Plot draws the collective's completion time (ms) against the background
// load, one line per transport, with the ideal as a dashed line. path's
// extension picks the format: .png or .svg. Errors: another extension, no
// points, or the file cannot be written.
func (r *CollectiveReport) Plot(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: the file name must end in .png or .svg", path)
	}
	if len(r.Points) == 0 {
		return errors.New("plot: the report has no points")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s all-reduce of %sB, %d hosts, %s", r.Algorithm, shortSize(int(r.Bytes)), r.Hosts, FormatBps(r.RateBps))
	p.X.Label.Text = "background load"
	if r.Background != "" {
		p.X.Label.Text = fmt.Sprintf("background load (%s all-to-all, fraction of each link)", r.Background)
	}
	p.Y.Label.Text = "completion time (ms)"
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var order []string
	byTr := map[string]plotter.XYs{}
	maxLoad := 0.0
	for _, pt := range r.Points {
		if _, ok := byTr[pt.Transport]; !ok {
			order = append(order, pt.Transport)
		}
		if pt.Mean > 0 {
			byTr[pt.Transport] = append(byTr[pt.Transport], plotter.XY{X: pt.Load, Y: float64(pt.Mean) / 1e6})
		}
		maxLoad = max(maxLoad, pt.Load)
	}
	for i, tr := range order {
		xys := byTr[tr]
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(2)
		points.Color = line.Color
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(tr, line, points)
	}
	if r.Ideal > 0 {
		ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(r.Ideal) / 1e6}, {X: max(maxLoad, 0.01), Y: float64(r.Ideal) / 1e6}})
		if err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		ideal.Color = color.Gray{Y: 96}
		ideal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ideal)
		p.Legend.Add("ideal (size at link rate)", ideal)
	}
	return writePlotFile(path, ext[1:], func(w io.Writer, format string) error { return save(p, w, format) })
}
