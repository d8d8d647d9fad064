package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/pgceiling/pgceiling/result"
)

// WriteHTML writes one self-contained page (no external resources: styles inline, charts
// as base64 PNG) that a user can attach to a ticket: the warnings on top and at the
// bottom, the exact command line, the disclosure, the tables and every chart. cmdline is
// the command line to show; when empty, the file's own (f.CommandLine) is used.
func WriteHTML(w io.Writer, f *result.File, cmdline []string) error {
	charts, err := Charts(f)
	if err != nil {
		return err
	}
	return writeHTML(w, f, cmdline, charts)
}

const htmlStyle = `*{box-sizing:border-box}
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;padding:1em 2em;color:#222;max-width:1400px;line-height:1.4}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em;vertical-align:top}
thead th{background:#f3f3f3}tbody th{font-weight:normal;background:#fafafa}caption{text-align:left;font-weight:bold;padding:.3em 0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{background:#f6f6f6;padding:.2em .4em;white-space:pre-wrap;overflow-wrap:anywhere}
.warning{background:#fdecea;border:2px solid #d55e00;color:#8b0000;font-weight:bold;padding:.6em 1em;margin:.6em 0}
.problem{color:#8b0000;font-weight:bold}.note{margin:.2em 0;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
.pair{display:flex;flex-wrap:wrap;gap:1em 2em;align-items:flex-start}
.pair>.tables{flex:0 1 auto;max-width:100%;min-width:0}.pair>.charts{flex:1 1 480px;min-width:0}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,480px),1fr));gap:1em}
figure{margin:0}figcaption{font-size:.9em;color:#555}img{max-width:100%;height:auto;border:1px solid #eee}
nav ul{margin:.3em 0;padding-left:1.2em}
.settings-table td{font-family:monospace}
@media (max-width:600px){body{padding:.5em}}`

func writeHTML(w io.Writer, f *result.File, cmdline []string, charts []Chart) error {
	if len(cmdline) == 0 {
		cmdline = f.CommandLine
	}
	m := buildModel(f, false)
	e := html.EscapeString
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", e(m.Title), htmlStyle)
	warn := func() {
		for _, s := range m.Warnings {
			fmt.Fprintf(bw, "<div class=\"warning\" role=\"alert\">WARNING: %s</div>\n", e(s))
		}
	}
	warn()
	fmt.Fprintf(bw, "<h1>%s</h1>\n", e(m.Title))
	if len(cmdline) > 0 {
		fmt.Fprintf(bw, "<p>Command line:</p>\n<pre><code>%s</code></pre>\n", e(strings.Join(cmdline, " ")))
	}
	for _, l := range m.Meta {
		if !strings.HasPrefix(l, "command: ") {
			fmt.Fprintf(bw, "<p class=\"note\">%s</p>\n", e(l))
		}
	}
	for _, p := range m.Problems {
		fmt.Fprintf(bw, "<p class=\"problem\">%s</p>\n", e(p))
	}
	secs := htmlSections(f, m, charts)
	fmt.Fprint(bw, "<nav aria-label=\"contents\"><h2 id=\"contents\">Contents</h2>\n<ul>\n")
	if m.Disclosure != "" {
		fmt.Fprint(bw, "<li><a href=\"#server\">Server</a></li>\n")
	}
	for _, sec := range secs {
		fmt.Fprintf(bw, "<li><a href=\"#%s\">%s</a></li>\n", e(sec.id), e(sec.title))
	}
	fmt.Fprint(bw, "</ul>\n</nav>\n")
	if m.Disclosure != "" {
		fmt.Fprintf(bw, "<h2 id=\"server\">Server</h2>\n<p>%s</p>\n", e(m.Disclosure))
		writeHTMLDisclosure(bw, f.Server)
	}
	for _, sec := range secs {
		fmt.Fprintf(bw, "<section id=\"%s\">\n<h2>%s</h2>\n<div class=\"pair\">\n<div class=\"tables\">\n", e(sec.id), e(sec.title))
		for _, t := range sec.tables {
			writeHTMLTable(bw, t)
		}
		fmt.Fprint(bw, "</div>\n")
		if len(sec.charts) > 0 {
			fmt.Fprint(bw, "<div class=\"charts\">\n")
			for _, c := range sec.charts {
				var b bytes.Buffer
				if err := c.WritePNG(&b); err != nil {
					return err
				}
				fmt.Fprintf(bw, "<figure id=\"%s\"><img alt=\"%s\" width=\"%d\" height=\"%d\" src=\"data:image/png;base64,%s\"><figcaption>%s</figcaption></figure>\n",
					e(c.Name), e(c.Title), int(c.Width.Dots(ChartDPI)), int(c.Height.Dots(ChartDPI)),
					base64.StdEncoding.EncodeToString(b.Bytes()), e(c.Title))
			}
			fmt.Fprint(bw, "</div>\n")
		}
		fmt.Fprint(bw, "</div>\n</section>\n")
	}
	warn()
	fmt.Fprint(bw, "</body>\n</html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// htmlSection is one part of the page: tables with the charts that go with them.
type htmlSection struct {
	id, title string
	tables    []table
	charts    []Chart
}

// htmlSections groups the tables and charts: a search's sweeps table with each
// workload's achieved and latency charts, then each sweep's probes table with its
// timelines and wait events; a run's tables with all its charts.
func htmlSections(f *result.File, m model, charts []Chart) []htmlSection {
	if f.Command == "run" || f.Claim != nil || len(m.Tables) != len(f.Sweeps)+1 {
		if len(m.Tables) == 0 && len(charts) == 0 {
			return nil
		}
		return []htmlSection{{id: "results", title: "Results", tables: m.Tables, charts: charts}}
	}
	taken := map[string]bool{}
	pick := func(prefixes ...string) []Chart {
		var out []Chart
		for _, c := range charts {
			for _, p := range prefixes {
				if !taken[c.Name] && (c.Name == p || strings.HasPrefix(c.Name, p+"-")) {
					out = append(out, c)
					taken[c.Name] = true
				}
			}
		}
		return out
	}
	first := htmlSection{id: "sweeps", title: m.Tables[0].Title, tables: m.Tables[:1]}
	for i := range f.Sweeps {
		first.charts = append(first.charts, pick(slug("achieved", f.Sweeps[i].Workload), slug("latency", f.Sweeps[i].Workload))...)
	}
	secs := []htmlSection{first}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		key := slug(s.Workload, "sync", string(s.SyncCommit))
		secs = append(secs, htmlSection{id: "sweep-" + key, title: m.Tables[i+1].Title, tables: m.Tables[i+1 : i+2],
			charts: pick(slug("timeline", key), slug("waits", key))})
	}
	var rest []Chart
	for _, c := range charts {
		if !taken[c.Name] {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 {
		secs = append(secs, htmlSection{id: "more-charts", title: "More charts", charts: rest})
	}
	return secs
}

// writeHTMLTable writes a table with its caption, column headers (scope col) and, when
// its first column names the row, row headers (scope row); its notes follow.
func writeHTMLTable(w io.Writer, t table) {
	e := html.EscapeString
	numeric := numericColumns(t)
	fmt.Fprintf(w, "<div class=\"scroll\"><table>\n<caption>%s</caption>\n<thead><tr>", e(t.Title))
	for _, h := range t.Header {
		fmt.Fprintf(w, "<th scope=\"col\">%s</th>", e(h))
	}
	fmt.Fprint(w, "</tr></thead>\n<tbody>\n")
	for _, r := range t.Rows {
		fmt.Fprint(w, "<tr>")
		for c, cell := range r {
			switch {
			case c == 0:
				fmt.Fprintf(w, "<th scope=\"row\">%s</th>", e(cell))
			case c < len(numeric) && numeric[c]:
				fmt.Fprintf(w, "<td class=\"num\">%s</td>", e(cell))
			default:
				fmt.Fprintf(w, "<td>%s</td>", e(cell))
			}
		}
		fmt.Fprint(w, "</tr>\n")
	}
	fmt.Fprint(w, "</tbody>\n</table></div>\n")
	for _, n := range t.Notes {
		fmt.Fprintf(w, "<p class=\"note\">%s</p>\n", e(n))
	}
}

// writeHTMLDisclosure lists every setting and table of the disclosure.
func writeHTMLDisclosure(w io.Writer, d *result.Disclosure) {
	if len(d.Settings) > 0 {
		st := table{Title: "Settings", Header: []string{"setting", "value"}}
		for _, k := range sortedKeys(d.Settings) {
			st.Rows = append(st.Rows, []string{k, d.Settings[k]})
		}
		fmt.Fprint(w, "<div class=\"settings-table\">")
		writeHTMLTable(w, st)
		fmt.Fprint(w, "</div>\n")
	}
	if len(d.Tables) > 0 {
		tt := table{Title: "pgceiling tables", Header: []string{"table", "rows", "heap", "indexes", "index size"}}
		for _, t := range d.Tables {
			tt.Rows = append(tt.Rows, []string{t.Name, count(t.Rows), bytesHuman(t.HeapBytes), fmt.Sprint(t.Indexes), bytesHuman(t.IndexBytes)})
		}
		writeHTMLTable(w, tt)
	}
	fmt.Fprintf(w, "<p class=\"note\">data %s, shared_buffers %s (ratio %sx); client %d cores, %s; server %s</p>\n",
		bytesHuman(d.DataBytes), bytesHuman(d.SharedBuffersBytes), num(d.DataToSharedBuffers, 2), d.ClientCores,
		bytesHuman(d.ClientMemBytes), serverMachine(d))
}

func serverMachine(d *result.Disclosure) string {
	if !d.ServerLocal {
		return "remote"
	}
	return fmt.Sprintf("local, %d cores, %s", d.ServerCores, bytesHuman(d.ServerMemBytes))
}

// bytesHuman formats a size in binary units.
func bytesHuman(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, exp := float64(b), 0
	for v >= unit && exp < 5 {
		v /= unit
		exp++
	}
	return fmt.Sprintf("%s %ciB", num(v, 1), "KMGTP"[exp-1])
}
