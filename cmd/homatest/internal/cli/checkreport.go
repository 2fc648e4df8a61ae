package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/report/html"
	"github.com/homatest/homatest/spec"
)

// writeAnnotated writes the capture at path ("-": standard input, as read
// by pcap.OpenPath) to out with rep's violations as packet comments, and says
// so on w.
func writeAnnotated(w io.Writer, out, path string, rep *spec.Report) error {
	in, err := pcap.OpenRawPath(path)
	if err != nil {
		return pcap.OpenError(path, err)
	}
	defer in.Close()
	section := fmt.Sprintf("homatest check %s (profile %s): %s", path, rep.Profile, plural.Of(len(rep.Violations), "violation", "violations"))
	n, err := annotate.Write(in, out, rep.Violations, section)
	if err != nil {
		return flagWriteErr("--annotate", out, err)
	}
	fmt.Fprintf(w, "annotated capture: %s (%s on %s)\n", out,
		plural.Of(len(rep.Violations), "violation", "violations"), plural.Of(n, "frame", "frames"))
	return nil
}

// writeCheckHTML writes check's report page (report/html) for reports.
func writeCheckHTML(w io.Writer, o *checkOpts, reports []check.FileReport) error {
	var files []html.CheckFile
	for i := range reports {
		fr := &reports[i]
		cf := html.CheckFile{File: fr.File, Error: fr.Error, Damaged: fr.Damaged, Report: fr.Report, Rerun: o.rerunFor(fr.File),
			Strict: o.strict, Tester: fr.TesterCharged}
		if fr.Stats != nil {
			cf.Homa = fr.HomaCount()
		}
		if fr.Error == "" && fr.Verdict == "incomplete" {
			cf.Incomplete = incompleteWhy(*fr)
		}
		if len(reports) == 1 {
			cf.Annotated = o.annotate
		}
		files = append(files, cf)
	}
	return html.Write(w, html.CheckPage(files, "", "homatest "+strings.Join(os.Args[1:], " ")))
}

// rerunFor returns the command that checks file for one rule with o's
// profile, parameters and wire format.
func (o *checkOpts) rerunFor(file string) func(rule string) string {
	return func(rule string) string {
		c := "homatest check"
		if o.profile != "auto" {
			c += " --profile " + o.profile
		}
		for _, p := range o.params {
			c += " --param " + shellQuote(p)
		}
		if o.wire != "" {
			c += " --wire " + o.wire
		}
		if o.captureDrops > 0 {
			c += fmt.Sprintf(" --capture-drops %d", o.captureDrops)
		}
		return c + " --rules " + rule + " " + shellQuote(file)
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
