package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/pgceiling/pgceiling/result"
)

// WriteText writes the summary the commands print: for a run, the probe's books and
// latency; for a search, the sweeps side by side with their knees' intervals, the sync
// off/on ratios (as ranges when both knees have intervals) and a table per sweep of its
// probes, each probe's further figures under it. Warnings come first and last.
func WriteText(w io.Writer, f *result.File) error {
	m := buildModel(f)
	bw := bufio.NewWriter(w)
	writeTextWarnings(bw, m.Warnings)
	fmt.Fprintln(bw, m.Title)
	for _, l := range m.Meta {
		fmt.Fprintln(bw, "  "+l)
	}
	for _, l := range wrapParts(m.Disclosure, " · ", textWidth) {
		fmt.Fprintln(bw, "  "+l)
	}
	for _, p := range m.Problems {
		fmt.Fprintln(bw, "  "+strings.ToUpper(p[:1])+p[1:])
	}
	for _, t := range m.Tables {
		fmt.Fprintf(bw, "\n%s\n", t.Title)
		opts := []tablewriter.Option{
			tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithHeaderAlignment(tw.AlignLeft),
			tablewriter.WithRowAlignment(tw.AlignLeft),
			tablewriter.WithHeaderAutoWrap(tw.WrapNone),
			tablewriter.WithRowAutoWrap(tw.WrapNone),
		}
		if t.Wrap {
			width := textColumnMax
			if t.WrapAt > 0 {
				width = t.WrapAt
			}
			opts = append(opts, tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithRowMaxWidth(width))
		}
		opts = append(opts, tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: numericRight(t)}))
		tbl := tablewriter.NewTable(bw, opts...)
		tbl.Header(anySlice(t.Header)...)
		for _, r := range t.Rows {
			if err := tbl.Append(anySlice(r)...); err != nil {
				return fmt.Errorf("text report: %w", err)
			}
		}
		if err := tbl.Render(); err != nil {
			return fmt.Errorf("text report: %w", err)
		}
		for _, n := range t.Notes {
			for _, l := range noteLines(n, textWidth) {
				fmt.Fprintln(bw, l)
			}
		}
	}
	if len(m.Warnings) > 0 {
		fmt.Fprintln(bw)
	}
	writeTextWarnings(bw, m.Warnings)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("text report: %w", err)
	}
	return nil
}

func writeTextWarnings(w io.Writer, ws []string) {
	for _, s := range ws {
		fmt.Fprintf(w, "!!! WARNING: %s\n", s)
	}
}

// numericCell matches a cell that is a number: "1,234", "0.07%", "<0.01%", "975 - 1,000".
var numericCell = regexp.MustCompile(`^<?[0-9][0-9,.]*%?( - [0-9][0-9,.]*)?$`)

// numericRight aligns right the columns whose every cell is a number (or "-").
func numericRight(t table) []tw.Align {
	aligns := make([]tw.Align, len(t.Header))
	for c := range t.Header {
		aligns[c] = tw.AlignRight
		numbers := 0
		for _, r := range t.Rows {
			if c >= len(r) || r[c] == "-" {
				continue
			}
			if !numericCell.MatchString(r[c]) {
				aligns[c] = tw.AlignLeft
				break
			}
			numbers++
		}
		if numbers == 0 {
			aligns[c] = tw.AlignLeft
		}
	}
	return aligns
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// textWidth is the width the text report's lines (other than tables) are kept to.
const textWidth = 100

// noteLines breaks a note at its "; " into lines of at most width characters, each
// continuation indented, so the details under a table do not run off a terminal.
func noteLines(n string, width int) []string {
	const indent = "    "
	var lines []string
	for i, l := range wrapParts(n, "; ", width-len(indent)) {
		if i > 0 {
			lines[i-1] += ";"
			l = indent + l
		}
		lines = append(lines, l)
	}
	return lines
}

// textColumnMax is the widest a text table's cell gets before its words wrap, so the
// sweeps table stays readable in a terminal.
const textColumnMax = 34

// wrapParts breaks s at sep into lines of at most width characters (a longer part stays
// whole on its own line).
func wrapParts(s, sep string, width int) []string {
	if s == "" {
		return nil
	}
	var lines []string
	cur := ""
	for _, p := range strings.Split(s, sep) {
		switch {
		case cur == "":
			cur = p
		case len(cur)+len(sep)+len(p) > width:
			lines = append(lines, cur)
			cur = p
		default:
			cur += sep + p
		}
	}
	return append(lines, cur)
}
