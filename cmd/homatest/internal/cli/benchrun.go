package cli

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/bench/benchrun"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/report/html"
)

// bench is the measurement the flags describe (benchrun.Bench).
func (o *benchOpts) bench(arts *harness.Artifacts, prog benchrun.Progress) *benchrun.Bench {
	return &benchrun.Bench{Config: benchrun.Config{Env: o.env, Hosts: o.hosts, RateBps: o.rateBps, RTT: o.rtt,
		Dist: o.dist, Load: o.load, Duration: o.duration, Buckets: o.buckets, Unloaded: o.unloaded, Response: o.response,
		Seed: o.seed, Transports: o.trans, Homa: o.homaImpl, TCP: o.tcpImpl, HomaOver: o.homaPar,
		Artifacts: arts, Progress: prog}}
}

// run runs the bench (benchrun.Bench.Run: report.json in the run folder)
// and writes the plot and the report page.
func (o *benchOpts) run(ctx context.Context, prog *benchProgress) (*bench.Report, error) {
	arts, err := harness.NewArtifacts(o.artifacts)
	if err != nil {
		return nil, runFolderErr(err, o.defaulted)
	}
	b := o.bench(arts, prog)
	rep, err := b.Run(ctx)
	o.started = b.Started()
	prog.done()
	if err != nil {
		return nil, err
	}
	if o.plot != "" {
		if err := rep.Plot(o.plot); err != nil {
			return nil, flagWriteErr("--plot", o.plot, err)
		}
	}
	page, err := html.BenchPage(rep, o.artifacts, "homatest "+strings.Join(os.Args[1:], " "), []string{arts.Path("report.json")})
	if err != nil {
		return nil, err
	}
	if err := arts.Write(reportFile, func(w io.Writer) error { return html.Write(w, page) }); err != nil {
		return nil, err
	}
	o.page = page
	return rep, nil
}
