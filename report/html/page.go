// Package html renders what a homatest command found as one self-contained
// HTML page (report.html): the verdict, tables (specs by area, rules),
// every failure with what the spec requires against what happened, its
// sequence graph (report/seqplot) and the command that reruns it, links to
// the annotated captures, and for benchmarks the slowdown plot and table.
//
// The page fetches nothing when opened: styles are inline, pictures are
// PNG data URIs, and a Content-Security-Policy forbids any other source.
// Links to captures are relative to the page's folder. A few lines of
// inline script only record, on each picture, the size the browser decoded
// it at (data-rendered), so that a test in a headless browser can tell the
// pictures were drawn.
//
// Builders: CheckPage (homatest check) and BenchPage (homatest bench) from
// their results; the CLI fills a Page for homatest run and scenario run.
// SequenceGraphs draws RPCs of a capture for the failures.
package html

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/spec"
)

// Page is one report page.
type Page struct {
	// Title names what ran, e.g. "homatest run".
	Title string
	// Subtitle says against what: implementation, environment, capture.
	Subtitle string
	// Pass is the verdict; Verdict its words ("PASS", "FAIL: 2 of 28
	// specs failed").
	Pass    bool
	Verdict string
	// Incomplete marks a verdict that is neither pass nor fail (INCOMPLETE:
	// not judged whole, specs not run): shown amber, not red.
	Incomplete bool
	// Facts are name/value lines under the verdict.
	Facts []Fact
	// Notes are warnings about the run (one line each).
	Notes []string
	// Pictures of the whole run (a bench's slowdown plot).
	Pictures []Picture
	// Tables, in order (specs by area, rules, slowdown buckets …).
	Tables []Table
	// Failures, each with its evidence.
	Failures []Failure
	// Links to the run's files (captures, JSON results).
	Links []Link
	// Command is the command line that made the page.
	Command string
	// Generated is when (zero: now).
	Generated time.Time
}

// Fact is one name/value line.
type Fact struct{ Name, Value string }

// Table is a titled table; a Bad row is highlighted.
type Table struct {
	Title string
	Head  []string
	Rows  []Row
}

// Row is one table row.
type Row struct {
	Cells []string
	Bad   bool
}

// Failure is one failed spec or violated rule.
type Failure struct {
	// Title names it (a spec, or rule and frame).
	Title string
	// Rules are the rule IDs involved, each shown with its own level
	// from the rule book (a spec's rules may differ in level); Level is
	// the level of what failed (a run's spec, check's or a scenario's
	// rule), shown for a rule the rule book lacks.
	Rules []string
	Level string
	// Violated are the rule IDs the failure names, shown beside Rules
	// when they are others (a spec fails on any rule's MUST finding,
	// not only its own): the rules the exchange broke.
	Violated []string
	// Expected is what the spec requires (the statements of Rules and
	// Violated);
	// Observed what happened (one line, or a test's expected-against-
	// observed message).
	Expected string
	Observed string
	// Picture is the sequence graph of the RPC involved, if one could be
	// drawn. Failures of the same RPC share one *Picture: Write embeds it
	// once, at the first, and links the others to it.
	Picture *Picture
	// SameGraphAs is set by Write: the number (1-based) of the earlier
	// failure whose embedded graph is this one's, 0 for none.
	SameGraphAs int
	// Rerun is the command that reruns it.
	Rerun string
	// Links to its captures (annotated pcapng).
	Links []Link
}

// Picture is a PNG image with a caption.
type Picture struct {
	Caption string
	PNG     []byte
}

// Link is a link to a file (relative to the page) or an anchor.
type Link struct{ Text, Href string }

// Rel returns path relative to dir when it is inside dir (for links in a
// page written to dir), else path unchanged.
func Rel(dir, path string) string {
	if dir == "" || path == "" {
		return path
	}
	a, err1 := filepath.Abs(dir)
	b, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	r, err := filepath.Rel(a, b)
	if err != nil || r == ".." || filepath.IsAbs(r) || len(r) > 2 && r[:3] == ".."+string(filepath.Separator) {
		return path
	}
	return filepath.ToSlash(r)
}

var funcs = template.FuncMap{
	"png": func(b []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	},
	"anchor": func(i int) string { return fmt.Sprintf("failure-%d", i+1) },
	"add1":   func(i int) int { return i + 1 },
	// ruleLevel is rule id's level in the rule book, else fallback.
	"ruleLevel": func(id, fallback string) string {
		if r := spec.RuleByID(id); r != nil {
			return r.Level.String()
		}
		return fallback
	},
}

var page = template.Must(template.New("page").Funcs(funcs).Parse(pageTemplate))

// Write renders p as HTML to w.
func Write(w io.Writer, p *Page) error {
	c := *p
	if c.Generated.IsZero() {
		c.Generated = time.Now()
	}
	// Each picture once: a failure whose picture an earlier one shows
	// links to it instead of embedding the same PNG again.
	c.Failures = slices.Clone(p.Failures)
	first := map[*Picture]int{}
	for i := range c.Failures {
		f := &c.Failures[i]
		if f.Picture == nil {
			continue
		}
		if n, ok := first[f.Picture]; ok {
			f.Picture, f.SameGraphAs = nil, n
		} else {
			first[f.Picture] = i + 1
		}
	}
	return page.Execute(w, &c)
}

// WriteFile writes p to path, whole or not at all (internal/atomicfile).
func WriteFile(path string, p *Page) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, p) })
}

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}: {{.Verdict}}</title>
<style>
body { font-family: "Liberation Sans", "DejaVu Sans", Arial, sans-serif; margin: 0; color: #1d2330; background: #f4f5f7; }
header { padding: 18px 32px 14px; background: #fff; border-bottom: 1px solid #d8dbe2; }
header h1 { margin: 0; font-size: 22px; }
header .sub { color: #555d6e; margin-top: 4px; }
main { padding: 16px 32px 40px; max-width: 1200px; }
#verdict { display: inline-block; margin-top: 12px; padding: 8px 18px; border-radius: 6px; font-size: 20px; font-weight: bold; color: #fff; }
#verdict.pass { background: #1f8a3b; }
#verdict.fail { background: #c62828; }
#verdict.incomplete { background: #b26a00; }
section { background: #fff; border: 1px solid #d8dbe2; border-radius: 6px; padding: 12px 18px; margin: 16px 0; }
h2 { font-size: 17px; margin: 4px 0 10px; }
h3 { font-size: 15px; margin: 0 0 8px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e5ea; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #eef0f4; }
tr.bad td { background: #fdecea; }
td.num, th.num { text-align: right; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 0; font-size: 14px; }
dl.facts dt { color: #555d6e; }
dl.facts dd { margin: 0; }
.failure { border-left: 5px solid #c62828; }
.label { color: #555d6e; font-size: 13px; margin: 8px 0 2px; }
pre { background: #f6f7f9; border: 1px solid #e3e5ea; padding: 8px; white-space: pre-wrap; word-break: break-word; font-size: 12.5px; margin: 0; }
code { font-family: "Liberation Mono", "DejaVu Sans Mono", monospace; }
code.cmd { display: block; background: #1d2330; color: #e8eaf0; padding: 6px 10px; border-radius: 4px; font-size: 13px; }
img { max-width: 100%; border: 1px solid #e3e5ea; display: block; margin-top: 6px; }
figure { margin: 8px 0; }
figcaption { color: #555d6e; font-size: 13px; }
.notes li { color: #8a5a00; }
footer { color: #8a90a0; font-size: 12px; padding: 0 32px 24px; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{if .Subtitle}}<div class="sub">{{.Subtitle}}</div>{{end}}
<div id="verdict" class="{{if .Pass}}pass{{else if .Incomplete}}incomplete{{else}}fail{{end}}">{{.Verdict}}</div>
</header>
<main>
{{if or .Facts .Links}}<section id="summary">
<h2>Summary</h2>
<dl class="facts">{{range .Facts}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}
{{range .Links}}<dt>file</dt><dd><a href="{{.Href}}">{{.Text}}</a></dd>{{end}}</dl>
</section>{{end}}
{{if .Notes}}<section id="notes"><h2>Warnings</h2><ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{if gt (len .Failures) 3}}<section id="failures-index"><h2>Failures ({{len .Failures}})</h2><ol>{{range $i, $f := .Failures}}<li><a href="#{{anchor $i}}">{{$f.Title}}</a></li>{{end}}</ol></section>{{end}}
{{range $i, $f := .Failures}}<section class="failure" id="{{anchor $i}}">
<h3>{{add1 $i}}. {{$f.Title}}</h3>
{{if $f.Rules}}<div class="label">Rules</div><div>{{range $j, $r := $f.Rules}}{{if $j}}, {{end}}<code>{{$r}}</code> ({{ruleLevel $r $f.Level}}){{end}}</div>{{end}}
{{if $f.Violated}}<div class="label">Violated</div><div>{{range $j, $r := $f.Violated}}{{if $j}}, {{end}}<code>{{$r}}</code> ({{ruleLevel $r $f.Level}}){{end}}</div>{{end}}
{{if $f.Expected}}<div class="label">Expected (what the spec requires)</div><pre class="expected">{{$f.Expected}}</pre>{{end}}
{{if $f.Observed}}<div class="label">Observed</div><pre class="observed">{{$f.Observed}}</pre>{{end}}
{{with $f.Picture}}<figure><img alt="{{.Caption}}" src="{{png .PNG}}"><figcaption>{{.Caption}}</figcaption></figure>{{else}}{{if $f.SameGraphAs}}<div class="label">Sequence graph</div><div><a href="#failure-{{$f.SameGraphAs}}">the same RPC's graph, at failure {{$f.SameGraphAs}}</a></div>{{end}}{{end}}
{{if $f.Rerun}}<div class="label">Rerun</div><code class="cmd">{{$f.Rerun}}</code>{{end}}
{{if $f.Links}}<div class="label">Captures</div><ul>{{range $f.Links}}<li><a href="{{.Href}}">{{.Text}}</a></li>{{end}}</ul>{{end}}
</section>{{end}}
{{range .Pictures}}<section class="picture"><figure><img alt="{{.Caption}}" src="{{png .PNG}}"><figcaption>{{.Caption}}</figcaption></figure></section>{{end}}
{{range .Tables}}<section class="table"><h2>{{.Title}}</h2>
<table><thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr{{if .Bad}} class="bad"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody></table>
</section>{{end}}
</main>
<footer>{{if .Command}}<code>{{.Command}}</code> · {{end}}generated {{.Generated.Format "2006-01-02 15:04:05 MST"}} by homatest</footer>
<script>
window.addEventListener("load", function () {
  document.querySelectorAll("img").forEach(function (img) {
    img.setAttribute("data-rendered", img.naturalWidth + "x" + img.naturalHeight);
  });
});
</script>
</body>
</html>
`
