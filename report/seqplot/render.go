package seqplot

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png
	_ "gonum.org/v1/plot/vg/vgpdf" // pdf
	_ "gonum.org/v1/plot/vg/vgsvg" // svg

	"github.com/homatest/homatest/spec"
)

// Formats lists the formats Render writes, named by their file extension.
var Formats = []string{"png", "svg", "pdf"}

// Figure size: 10 x 8 inches (960 x 768 pixels in PNG, at 96 dpi).
const (
	figWidth  = 10 * vg.Inch
	figHeight = 8 * vg.Inch
	legendW   = 1.7 * vg.Inch
)

// FormatOf returns the format of path from its extension (case-insensitive:
// "png", "svg" or "pdf"), or an error naming the extensions it knows.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	if ext == "" {
		return "", fmt.Errorf("%s: no file extension to tell the picture format: name the file .png, .svg or .pdf", path)
	}
	return "", fmt.Errorf("%s: unknown picture format %q: name the file .png, .svg or .pdf", path, ext)
}

// Unit returns the x axis unit for the model: µs when the RPC spans less
// than 2 ms, ms otherwise.
func (m *Model) Unit() time.Duration {
	if m.Span < 2*time.Millisecond {
		return time.Microsecond
	}
	return time.Millisecond
}

// Title returns the figure's two title lines: the RPC (client's id, client
// > server) and its sizes, latency and losses.
func (m *Model) Title() (string, string) {
	l1 := fmt.Sprintf("RPC %d  %v > %v", m.Key.ClientID, spec.HostPort{Addr: m.Key.Client, Port: m.ClientPort}, spec.HostPort{Addr: m.Key.Server, Port: m.ServerPort})
	lat := "response incomplete"
	if m.Latency > 0 {
		lat = "latency " + fmtDur(m.Latency)
	}
	var retx uint64
	var retxN, resends, busy int
	for _, p := range m.Panels() {
		for _, r := range p.Retransmits {
			retx += uint64(r.End - r.Offset)
		}
		retxN += len(p.Retransmits)
		resends += len(p.Resends)
		busy += len(p.Busy)
	}
	l2 := fmt.Sprintf("request %d B, response %d B; %s (packets span %s); retransmitted %d B in %d DATA; %d RESEND, %d BUSY",
		m.Request.Length, m.Response.Length, lat, fmtDur(m.Span), retx, retxN, resends, busy)
	return l1, l2
}

// fmtDur prints d in ms with µs precision, or in µs below 1 ms.
func fmtDur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.1f µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%.3f ms", float64(d)/1e6)
}

// grantLine returns the granted-offset step line of p, in x units of
// unit: from the first DATA's incoming field, raised by every GRANT above
// it, held to end (the RPC's last packet). It returns nil when p has
// neither.
func grantLine(p *Panel, unit, end time.Duration) plotter.XYs {
	var xy plotter.XYs
	var horizon uint32
	add := func(at time.Duration, off uint32) {
		if off > horizon || len(xy) == 0 {
			horizon = max(horizon, off)
			xy = append(xy, plotter.XY{X: float64(at) / float64(unit), Y: float64(horizon)})
		}
	}
	if p.Unscheduled > 0 {
		add(p.UnscheduledAt, p.Unscheduled)
	}
	for _, g := range p.Grants {
		add(g.At, g.Offset)
	}
	if len(xy) == 0 {
		return nil
	}
	if x := float64(end) / float64(unit); x > xy[len(xy)-1].X {
		xy = append(xy, plotter.XY{X: x, Y: float64(horizon)})
	}
	return xy
}

// panelPlot builds the plot of one panel and adds its legend entries to
// lg (each kind once).
func (m *Model) panelPlot(p *Panel, lg *legend) (*plot.Plot, error) {
	unit := m.Unit()
	pl := plot.New()
	who, name := "client", "request"
	if p.Role != 0 {
		who, name = "server", "response"
	}
	pl.Title.Text = fmt.Sprintf("%s (sent by the %s), %d B", name, who, p.Length)
	if p.Length == 0 && p.DataCount() == 0 {
		pl.Title.Text = name + ": no DATA in the capture"
	}
	pl.X.Label.Text = "time since the RPC's first packet (" + map[time.Duration]string{time.Microsecond: "µs", time.Millisecond: "ms"}[unit] + ")"
	pl.Y.Label.Text = name + " offset (bytes)"
	pl.Add(plotter.NewGrid())
	if xy := grantLine(p, unit, m.Span); xy != nil {
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("granted-offset line: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: grantGrey, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		pl.Add(l)
		lg.add("granted offset", l)
	}
	for prio, ms := range p.Data {
		if len(ms) > 0 {
			dp := dataPlotter(ms, unit, prio)
			pl.Add(dp)
			lg.add(fmt.Sprintf("p%d", prio), dp)
		}
	}
	if len(p.Retransmits) > 0 {
		rp := newRetransmitPlotter(p.Retransmits, unit)
		pl.Add(rp)
		for prio, s := range rp.strokes {
			if s != nil {
				lg.add(fmt.Sprintf("p%d", prio), dataPlotter(nil, unit, prio))
			}
		}
		lg.add("retransmit", rp)
	}
	if len(p.Resends) > 0 {
		rs := resendPlotter(p.Resends, unit)
		pl.Add(rs)
		lg.add("RESEND (range)", rs)
	}
	if len(p.Busy) > 0 {
		bp := busyPlotter(p.Busy, unit)
		pl.Add(bp)
		lg.add("BUSY", bp)
	}
	xmax := float64(m.Span) / float64(unit)
	pl.X.Min, pl.X.Max = min(0, pl.X.Min), max(xmax, pl.X.Max)*1.02
	if pl.X.Max <= pl.X.Min {
		pl.X.Max = pl.X.Min + 1
	}
	pl.Y.Min, pl.Y.Max = 0, max(float64(p.Top())*1.03, 1)
	pl.Y.Tick.Marker = plainTicks{}
	return pl, nil
}

// plainTicks are plot.DefaultTicks labelled without trailing zeros
// (byte offsets read "250000", not "250000.00").
type plainTicks struct{}

// Ticks returns the ticks for [lo, hi] (plot.Ticker).
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// legend collects one entry per name, in a fixed order: p0..p7 first,
// then the other kinds as they come.
type legend struct {
	names  []string
	thumbs map[string]plot.Thumbnailer
}

func (l *legend) add(name string, t plot.Thumbnailer) {
	if l.thumbs == nil {
		l.thumbs = map[string]plot.Thumbnailer{}
	}
	if _, ok := l.thumbs[name]; !ok {
		l.names = append(l.names, name)
		l.thumbs[name] = t
	}
}

// build returns a plot.Legend with the entries, priority levels first.
func (l *legend) build(sty text.Style) plot.Legend {
	pl := plot.NewLegend()
	pl.TextStyle = sty
	pl.Top, pl.Left = true, true
	pl.Padding = vg.Points(4)
	for prio := 0; prio < 8; prio++ {
		if t, ok := l.thumbs[fmt.Sprintf("p%d", prio)]; ok {
			pl.Add(fmt.Sprintf("DATA p%d", prio), t)
		}
	}
	for _, n := range l.names {
		if !strings.HasPrefix(n, "p") {
			pl.Add(n, l.thumbs[n])
		}
	}
	return pl
}

// Render draws m in format (one of Formats) as one 10 x 8 inch figure (a
// title, the request panel above the response panel on a shared time
// axis, the legend on the right) and writes it to w. Errors: an unknown
// format, or w's write error.
func (m *Model) Render(w io.Writer, format string) error {
	var lg legend
	req, err := m.panelPlot(&m.Request, &lg)
	if err != nil {
		return err
	}
	resp, err := m.panelPlot(&m.Response, &lg)
	if err != nil {
		return err
	}
	// One time axis for both panels.
	req.X.Min, resp.X.Min = min(req.X.Min, resp.X.Min), min(req.X.Min, resp.X.Min)
	req.X.Max, resp.X.Max = max(req.X.Max, resp.X.Max), max(req.X.Max, resp.X.Max)

	cw, err := draw.NewFormattedCanvas(figWidth, figHeight, format)
	if err != nil {
		return fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	dc := draw.New(cw)
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})

	sty := req.Title.TextStyle
	sty.Font.Size = vg.Points(13)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	small := sty
	small.Font.Size = vg.Points(10)
	l1, l2 := m.Title()
	pad := vg.Points(8)
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad}, l1)
	dc.FillText(small, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad - sty.Height(l1) - vg.Points(3)}, l2)
	titleH := 2*pad + sty.Height(l1) + small.Height(l2) + vg.Points(3)

	area := draw.Crop(dc, 0, -legendW, 0, -titleH)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	cs := plot.Align([][]*plot.Plot{{req}, {resp}}, tiles, area)
	req.Draw(cs[0][0])
	resp.Draw(cs[1][0])

	lsty := req.Legend.TextStyle
	lsty.Font.Size = vg.Points(10)
	pl := lg.build(lsty)
	pl.Draw(draw.Crop(dc, figWidth-legendW+pad, -pad, 0, -titleH-2*pad))

	if _, err := cw.WriteTo(w); err != nil {
		return fmt.Errorf("write %s: %w", format, err)
	}
	return nil
}
