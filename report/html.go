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

const htmlStyle = `body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{margin-bottom:.2em}table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}
th{background:#f3f3f3}code,pre{background:#f6f6f6;padding:.2em .4em;white-space:pre-wrap;word-break:break-all}
.warning{background:#fdecea;border:2px solid #d62728;color:#8b0000;font-weight:bold;padding:.6em 1em;margin:.6em 0}
.problem{color:#8b0000;font-weight:bold}.note{margin:.2em 0}figure{margin:1em 0}img{max-width:100%;border:1px solid #eee}
table.settings td{font-family:monospace}`

func writeHTML(w io.Writer, f *result.File, cmdline []string, charts []Chart) error {
	if len(cmdline) == 0 {
		cmdline = f.CommandLine
	}
	m := buildModel(f, false)
	e := html.EscapeString
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", e(m.Title), htmlStyle)
	warn := func() {
		for _, s := range m.Warnings {
			fmt.Fprintf(bw, "<div class=\"warning\">WARNING: %s</div>\n", e(s))
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
	if m.Disclosure != "" {
		fmt.Fprintf(bw, "<h2>Server</h2>\n<p>%s</p>\n", e(m.Disclosure))
		writeHTMLDisclosure(bw, f.Server)
	}
	for _, t := range m.Tables {
		fmt.Fprintf(bw, "<h2>%s</h2>\n<table>\n<tr>", e(t.Title))
		for _, h := range t.Header {
			fmt.Fprintf(bw, "<th>%s</th>", e(h))
		}
		fmt.Fprint(bw, "</tr>\n")
		for _, r := range t.Rows {
			fmt.Fprint(bw, "<tr>")
			for _, c := range r {
				fmt.Fprintf(bw, "<td>%s</td>", e(c))
			}
			fmt.Fprint(bw, "</tr>\n")
		}
		fmt.Fprint(bw, "</table>\n")
		for _, n := range t.Notes {
			fmt.Fprintf(bw, "<p class=\"note\">%s</p>\n", e(n))
		}
	}
	if len(charts) > 0 {
		fmt.Fprint(bw, "<h2>Charts</h2>\n")
	}
	for _, c := range charts {
		var b bytes.Buffer
		if err := c.WritePNG(&b); err != nil {
			return err
		}
		fmt.Fprintf(bw, "<figure id=\"%s\"><img alt=\"%s\" src=\"data:image/png;base64,%s\"><figcaption>%s</figcaption></figure>\n",
			e(c.Name), e(c.Title), base64.StdEncoding.EncodeToString(b.Bytes()), e(c.Title))
	}
	warn()
	fmt.Fprint(bw, "</body>\n</html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// writeHTMLDisclosure lists every setting and table of the disclosure.
func writeHTMLDisclosure(w io.Writer, d *result.Disclosure) {
	e := html.EscapeString
	if len(d.Settings) > 0 {
		keys := sortedKeys(d.Settings)
		fmt.Fprint(w, "<table class=\"settings\">\n<tr><th>setting</th><th>value</th></tr>\n")
		for _, k := range keys {
			fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td></tr>\n", e(k), e(d.Settings[k]))
		}
		fmt.Fprint(w, "</table>\n")
	}
	if len(d.Tables) > 0 {
		fmt.Fprint(w, "<table>\n<tr><th>table</th><th>rows</th><th>heap</th><th>indexes</th><th>index size</th></tr>\n")
		for _, t := range d.Tables {
			fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n",
				e(t.Name), count(t.Rows), bytesHuman(t.HeapBytes), t.Indexes, bytesHuman(t.IndexBytes))
		}
		fmt.Fprint(w, "</table>\n")
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
