package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/result"
)

func init() {
	register(command{name: "report", summary: "render a results file again: table, Markdown, CSV, HTML, charts", run: runReport})
}

var reportFormats = []string{"text", "markdown", "csv", "series-csv", "html", "json"}

const reportSynopsis = `Usage: pgceiling report FILE [--format text|markdown|csv|series-csv|html|json] [--out DIR]

Renders a results file written by 'run', 'search' or 'claim' (a claim's file: its verdict page, then its probes). Without --out, one format goes to
stdout (text by default). With --out DIR, every format is written into DIR (created if
missing): report.md, probes.csv, series.csv, report.html and the charts as PNG and SVG.`

func runReport(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "report", reportSynopsis)
	format := fs.String("format", "text", "output format: text, markdown, csv, series-csv (one row per probe second), html or json")
	out := fs.String("out", "", "write the whole report (Markdown, CSV, HTML, PNG and SVG charts) into this `DIR`")
	wide := fs.Bool("wide", false, "text: print tables whole instead of fitting them to the terminal's width ($COLUMNS, else 100)")
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "%s\n\nFlags:\n%s", reflow(reportSynopsis, env.width()), fs.FlagUsagesWrapped(env.width()))
	}
	// pflag prints the usage itself on --help (and Parse returns pflag.ErrHelp, exit 0).
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return config.Usagef("report: which results file? (usage: pgceiling report FILE [--format text|markdown|csv|series-csv|html|json] [--out DIR])")
	case 1:
	default:
		return config.Usagef("report: one results file at a time, got %d (%q ...)", fs.NArg(), fs.Arg(1))
	}
	if err := config.OneOf("--format", *format, reportFormats); err != nil {
		return err
	}
	if *out != "" && fs.Changed("format") {
		return config.Usagef("report: --out writes every format into the directory; use --format without --out to print one")
	}
	f, err := result.Read(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *out != "" {
		paths, err := report.WriteAll(*out, f)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		for _, p := range paths {
			fmt.Fprintln(env.Stdout, p)
		}
		return nil
	}
	if err := writeReport(env.Stdout, *format, f, env.width(), *wide); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func writeReport(w io.Writer, format string, f *result.File, width int, wide bool) error {
	switch format {
	case "markdown":
		return report.WriteMarkdown(w, f)
	case "csv":
		return report.WriteCSV(w, f)
	case "series-csv":
		return report.WriteSeriesCSV(w, f)
	case "html":
		return report.WriteHTML(w, f, f.CommandLine)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	default:
		return writeText(w, f, width, wide)
	}
}
