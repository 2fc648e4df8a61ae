package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
)

// Report is a benchmark's result: the setup, the buckets and one Summary
// per transport (all analysed with the same buckets).
type Report struct {
	// Workload names the request-size distribution ("w4", "1000").
	Workload string `json:"workload"`
	// Load is the offered load as a fraction of RateBps.
	Load float64 `json:"load"`
	// RateBps is the emulated link rate in bit/s (0: unlimited).
	RateBps float64 `json:"rate_bps"`
	// Hosts is the number of hosts (clients plus the server).
	Hosts int `json:"hosts"`
	// Impl names the Homa implementation ("ref", "linux", a manifest's).
	Impl string `json:"impl,omitempty"`
	// Env is "sim" when the hosts were simulated (package sim, virtual
	// time), "" for agents in network namespaces.
	Env string `json:"env,omitempty"`
	// Params are the parameter overrides the Homa agents were given
	// (name → integer or list of integers).
	Params map[string]any `json:"params,omitempty"`
	// Seed drew the sizes and arrivals, the same for every transport.
	Seed       uint64    `json:"seed"`
	Buckets    []Bucket  `json:"buckets"`
	Transports []Summary `json:"transports"`
	// Warnings are the signs of a skewed baseline Warn found, one line
	// each (empty before Warn runs).
	Warnings []string `json:"warnings,omitempty"`
	// Saturated names the transports that did not keep up with the
	// offered load (Summary.Saturated; set by Warn): while it is not
	// empty the report's ratios do not compare the transports.
	Saturated []string `json:"saturated,omitempty"`
	// Artifacts is the run folder (agents' logs, topology, report.json),
	// as the caller set it.
	Artifacts string `json:"artifacts,omitempty"`
}

// Ratio returns the p99 slowdown of the last transport divided by the
// first's in bucket i (TCP/Homa when the transports are homa,tcp), and
// false when there are fewer than two transports or either has no RPC in
// the bucket.
func (r *Report) Ratio(i int) (float64, bool) {
	if len(r.Transports) < 2 || i < 0 || i >= len(r.Buckets) {
		return 0, false
	}
	a, b := r.Transports[0].Buckets[i], r.Transports[len(r.Transports)-1].Buckets[i]
	if a.Count == 0 || b.Count == 0 || a.P99 == 0 {
		return 0, false
	}
	return b.P99 / a.P99, true
}

// WriteJSON writes r as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	return jsonout.Write(w, r)
}

// Setup says how the bench ran, in one line: the workload, load, links,
// hosts, the Homa implementation when withImpl, whether the hosts were
// simulated, and the seed ("workload W4 at load 0.50, 10 Gbit/s links,
// 4 hosts (3 clients, 1 server), simulated, seed 1"). The text report and
// the HTML page's subtitle both start with it.
func (r *Report) Setup(withImpl bool) string {
	rate := "unlimited links"
	if r.RateBps > 0 {
		rate = FormatBps(r.RateBps) + " links"
	}
	more := ""
	if withImpl && r.Impl != "" {
		more = ", homa impl " + r.Impl
	}
	if r.Env == "sim" {
		more += ", simulated"
	}
	return fmt.Sprintf("workload %s at load %.2f, %s, %d hosts (%s, 1 server)%s, seed %d",
		r.Workload, r.Load, rate, r.Hosts, Clients(r.Hosts-1), more, r.Seed)
}

// WriteText writes r as text: a setup line, one line per transport (RPCs,
// errors, elapsed time, offered and achieved throughput, overall
// slowdowns), then the table of buckets: size range, workload CDF, and per
// transport the RPC count and p50/p99 slowdown, and the p99 ratio of the
// last transport to the first, then one "warning: " line per Warnings
// entry and the run folder when Artifacts is set. The warnings of
// transports that did not keep up (the first len(Saturated) of Warnings)
// come first, once, as "WARNING: " lines before the tables.
func (r *Report) WriteText(w io.Writer) error {
	r.WriteSetup(w)
	sat := min(len(r.Saturated), len(r.Warnings))
	for _, l := range r.Warnings[:sat] {
		fmt.Fprintf(w, "\nWARNING: %s\n", l)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head, rows := r.TransportTable()
	writeRows(tw, head, rows)
	tw.Flush()
	for _, s := range r.Transports {
		if s.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", s.Transport, s.FirstError)
		}
		if len(s.Counters) > 0 {
			fmt.Fprintf(w, "%s: %s\n", s.Transport, joinKV(s.Counters))
		}
	}
	fmt.Fprintln(w)
	head, rows = r.BucketTable()
	writeRows(tw, head, rows)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range r.Warnings[sat:] {
		fmt.Fprintf(w, "warning: %s\n", l)
	}
	if r.Artifacts != "" {
		_, err := fmt.Fprintf(w, "\nrun folder: %s\n", r.Artifacts)
		return err
	}
	return nil
}

// WriteSetup writes the first lines of WriteText: the setup (Setup) and
// the homa params when any were set. An interrupted bench that finished
// no transport prints only these.
func (r *Report) WriteSetup(w io.Writer) {
	fmt.Fprintln(w, r.Setup(true))
	if len(r.Params) > 0 {
		fmt.Fprintf(w, "homa params: %s\n", joinKV(r.Params))
	}
}

// Clients is "1 client" or "N clients": a bench's client hosts.
func Clients(n int) string { return plural.Of(n, "client", "clients") }

// writeRows writes a header and rows of cells to tw, tab-terminated.
func writeRows(tw *tabwriter.Writer, head []string, rows [][]string) {
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
}

// TransportTable returns the per-transport summary as a header and rows
// of cells: RPCs issued, done and failed, elapsed time, offered,
// delivered and achieved throughput, p50 and p99 slowdown over all
// buckets (WriteText prints it; report pages show it). A transport that
// did not keep up (Summary.Saturated) has "!" after its name.
func (r *Report) TransportTable() (head []string, rows [][]string) {
	head = []string{"transport", "issued", "done", "failed", "elapsed", "offered", "delivered", "achieved", "p50", "p99"}
	for _, s := range r.Transports {
		name := s.Transport
		if s.Saturated {
			name += "!"
		}
		delivered := "-"
		if s.DeliveredBps > 0 {
			delivered = FormatBps(s.DeliveredBps)
		}
		rows = append(rows, []string{name, fmt.Sprint(s.Issued), fmt.Sprint(s.Count), fmt.Sprint(s.Errors),
			s.Elapsed.Round(time.Millisecond).String(), FormatBps(s.OfferedBps), delivered, FormatBps(s.AchievedBps), num(s.P50), num(s.P99) + fewMark(s.FewForP99)})
	}
	return head, rows
}

// BucketTable returns the slowdown table as a header and rows of cells:
// per bucket the size range and workload CDF, per transport the count of
// successful RPCs (and of failed ones, not in the quantiles, when the
// transport had any) and p50/p99 slowdown, and the p99 ratio of the last
// transport to the first ("-" where a side has no RPC). A p99 from fewer than
// MinP99Count RPCs, and a ratio resting on one, ends in "*" (Warn
// explains the mark); every ratio ends in "!" when a transport did not
// keep up (Report.Saturated: the ratios then compare backlogs).
func (r *Report) BucketTable() (head []string, rows [][]string) {
	head = []string{"size (bytes)", "cdf"}
	for _, s := range r.Transports {
		head = append(head, s.Transport+" n")
		if s.Errors > 0 {
			head = append(head, "failed")
		}
		head = append(head, "p50", "p99")
	}
	if len(r.Transports) >= 2 {
		head = append(head, fmt.Sprintf("p99 %s/%s", r.Transports[len(r.Transports)-1].Transport, r.Transports[0].Transport))
	}
	for i, b := range r.Buckets {
		row := []string{b.String(), fmt.Sprintf("%.2f", b.CDF)}
		for _, s := range r.Transports {
			st := s.Buckets[i]
			row = append(row, fmt.Sprint(st.Count))
			if s.Errors > 0 {
				row = append(row, fmt.Sprint(st.Errors))
			}
			row = append(row, num(st.P50), num(st.P99)+fewMark(st.FewForP99))
		}
		if len(r.Transports) >= 2 {
			if ratio, ok := r.Ratio(i); ok {
				few := r.Transports[0].Buckets[i].FewForP99 || r.Transports[len(r.Transports)-1].Buckets[i].FewForP99
				mark := fewMark(few)
				if len(r.Saturated) > 0 {
					mark += "!"
				}
				row = append(row, fmt.Sprintf("%.1fx", ratio)+mark)
			} else {
				row = append(row, "-")
			}
		}
		rows = append(rows, row)
	}
	return head, rows
}

// fewMark is the mark of a p99 from too few RPCs (BucketStats.FewForP99).
func fewMark(few bool) string {
	if few {
		return "*"
	}
	return ""
}

// joinKV returns m as "name value" pairs sorted by name, comma-separated.
func joinKV[V any](m map[string]V) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(kv, ", ")
}

// num formats a slowdown with 3 significant digits, "-" for 0 (no RPC).
func num(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g", v)
}

// FormatBps formats a rate in bit/s with a decimal unit ("812 Mbit/s",
// "1.5 Gbit/s").
func FormatBps(bps float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bps >= u.div {
			return fmt.Sprintf("%.3g %s", bps/u.div, u.name)
		}
	}
	return fmt.Sprintf("%.3g bit/s", bps)
}
