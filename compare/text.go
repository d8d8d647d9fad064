package compare

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/result"
)

// WriteText writes the comparison fitted to width columns (wide: cells whole, however
// wide): the two files, a table per sweep (figure, A, B, change) with the bottlenecks
// under it, the settings that differ, and the regressions.
func (c *Comparison) WriteText(w io.Writer, width int, wide bool) error {
	bw := bufio.NewWriter(w)
	width = max(width, 60)
	fmt.Fprintf(bw, "A: %s\n", fit(c.NameA+" "+fileLine(c.FileA), width-3, wide))
	fmt.Fprintf(bw, "B: %s\n", fit(c.NameB+" "+fileLine(c.FileB), width-3, wide))
	for _, r := range c.Rows {
		fmt.Fprintf(bw, "\n%s sync=%s\n", r.Workload, r.SyncCommit)
		writeTable(bw, c.rowFigures(&r), width, wide)
		if n := flushNote(&r); n != "" {
			writeWrapped(bw, "  ", n, width, wide)
		}
		if r.A.Bottleneck == r.B.Bottleneck && r.A.Bottleneck != "" {
			writeWrapped(bw, "  ", "bottleneck (A and B): "+r.A.Bottleneck, width, wide)
			continue
		}
		for _, s := range []struct {
			name string
			side Side
		}{{"A", r.A}, {"B", r.B}} {
			if s.side.Bottleneck != "" {
				writeWrapped(bw, "  ", "bottleneck "+s.name+": "+s.side.Bottleneck, width, wide)
			}
		}
	}
	if len(c.Differences) > 0 {
		fmt.Fprintln(bw)
		writeWrapped(bw, "", "Settings and flags that differ (the figures may differ because of them):", width, wide)
		rows := [][]string{{"", "A", "B", ""}}
		for _, d := range c.Differences {
			rows = append(rows, []string{d.What, d.A, d.B, ""})
		}
		writeTable(bw, rows, width, wide)
	}
	if len(c.Broken) > 0 {
		fmt.Fprintln(bw, "\nREGRESSIONS:")
		for _, b := range c.Broken {
			writeWrapped(bw, "  ", b, width, wide)
		}
	} else if c.Options.KneeDrop >= 0 || c.Options.P99Rise >= 0 {
		fmt.Fprintln(bw, "\nNo regression past the gates given.")
	}
	return bw.Flush()
}

// fileLine describes a results file in one line: command, start, tool version, state.
func fileLine(f *result.File) string {
	parts := []string{f.Command, "started " + f.StartedAt.UTC().Format("2006-01-02 15:04 UTC"), "pgceiling " + f.ToolVersion}
	if f.Interrupted {
		parts = append(parts, "INTERRUPTED")
	}
	if f.Error != "" {
		parts = append(parts, "ended in an error")
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// rowFigures is the table of one sweep: a header, then one line per figure.
func (c *Comparison) rowFigures(r *Row) [][]string {
	rows := [][]string{{"", "A", "B", "change"}}
	add := func(label, a, b, ch string) { rows = append(rows, []string{label, a, b, ch}) }
	val := func(s Side, f func(Side) string) string {
		if !s.Found {
			return "(no such sweep)"
		}
		return f(s)
	}
	u := " " + result.RateUnit(r.Workload) // rows/s for copy, whose arrivals are rows
	if singleProbes(c.Kind) {
		add("offered", val(r.A, func(s Side) string { return rate(s.Target) + u }), val(r.B, func(s Side) string { return rate(s.Target) + u }), "")
		add("achieved", val(r.A, func(s Side) string { return rate(s.Rate) + u }), val(r.B, func(s Side) string { return rate(s.Rate) + u }), signed(r.RateChange))
		add("errors", val(r.A, func(s Side) string { return pct(s.ErrorRate) }), val(r.B, func(s Side) string { return pct(s.ErrorRate) }), "")
		add("p99", val(r.A, func(s Side) string { return msOrDash(s.P99Ms) }), val(r.B, func(s Side) string { return msOrDash(s.P99Ms) }), signed(r.P99Change))
		addFlush(r, add)
		return rows
	}
	knee := func(s Side) string {
		if s.Rate <= 0 {
			return "none passed"
		}
		return rate(s.Rate) + u
	}
	iv := func(s Side) string {
		if s.Interval == nil {
			return "-"
		}
		return fmt.Sprintf("%s-%s (%.0f %%)", rate(s.Interval.Lo), rate(s.Interval.Hi), 100*s.Interval.Level)
	}
	br := func(s Side) string {
		switch {
		case s.Bracket.Lo == 0 && s.Bracket.Hi == 0:
			return "-"
		case s.Bracket.Hi == 0:
			return "[" + rate(s.Bracket.Lo) + ", ?)"
		case s.Bracket.Lo == 0:
			return "(?, " + rate(s.Bracket.Hi) + "]"
		}
		return "[" + rate(s.Bracket.Lo) + ", " + rate(s.Bracket.Hi) + "]"
	}
	overlap := ""
	if r.HaveIntervals {
		overlap = "apart"
		if r.Overlap {
			overlap = "overlap"
		}
	}
	add("knee", val(r.A, knee), val(r.B, knee), signed(r.RateChange))
	add("interval", val(r.A, iv), val(r.B, iv), overlap)
	if r.HaveRepeats {
		rep := func(s Side) string {
			return fmt.Sprintf("%s-%s, estimate %s", rate(s.Interval.RepeatLo), rate(s.Interval.RepeatHi), rate(s.Interval.Midpoint))
		}
		both := "an estimate outside"
		if r.Repeatable {
			both = "each inside"
		}
		add("a repeat lands", val(r.A, rep), val(r.B, rep), both)
	}
	add("bracket", val(r.A, br), val(r.B, br), "")
	add("p99 at knee", val(r.A, func(s Side) string { return msOrDash(s.P99Ms) }), val(r.B, func(s Side) string { return msOrDash(s.P99Ms) }), signed(r.P99Change))
	add("probes", val(r.A, func(s Side) string { return fmt.Sprint(s.Probes) }), val(r.B, func(s Side) string { return fmt.Sprint(s.Probes) }), "")
	addFlush(r, add)
	return rows
}

// FlushShift is the change of the WAL flush time per sync between the two sides beyond
// which the comparison says the storage differed.
const FlushShift = 0.15

// flushNote says when the storage's WAL flush time differed by more than FlushShift
// between the sides of a synchronous_commit=on sweep, and the figure moved the other way
// (a slower flush, a lower knee or rate): "" otherwise.
func flushNote(r *Row) string {
	if r.SyncCommit == result.SyncOff {
		return ""
	}
	fc := change(r.A.FlushMs, r.B.FlushMs)
	if math.IsNaN(fc) || math.Abs(fc) < FlushShift || math.IsNaN(r.RateChange) || fc*r.RateChange >= 0 {
		return ""
	}
	how, at := "less", "higher" // fc < 0 here means the rate rose
	if fc > 0 {
		how, at = "more", "lower"
	}
	return fmt.Sprintf("each WAL flush took %.0f %% %s time in B, at a %s rate: every commit here waits for a flush, so "+
		"the flush (the disk's speed that hour, or the CPU contention around it) explains part of the change, "+
		"not PostgreSQL's work per transaction", 100*math.Abs(fc), how, at)
}

// addFlush adds the WAL flush time per sync (at the knee, or over the probe) when either
// side recorded it and the sweep's commits wait for it (synchronous_commit on).
func addFlush(r *Row, add func(label, a, b, ch string)) {
	if r.SyncCommit == result.SyncOff || (r.A.FlushMs <= 0 && r.B.FlushMs <= 0) {
		return
	}
	f := func(s Side) string {
		if s.FlushMs <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f ms", s.FlushMs)
	}
	add("WAL flush per sync", f(r.A), f(r.B), signed(change(r.A.FlushMs, r.B.FlushMs)))
}

// writeTable writes rows (the first is the header) as aligned columns in at most width
// characters: the first and last columns keep their width, the two middle ones share the
// rest and longer cells are cut with "…" (wide: nothing is cut).
func writeTable(w io.Writer, rows [][]string, width int, wide bool) {
	widths := make([]int, 4)
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], runes(c))
		}
	}
	if !wide {
		const indent, gaps = 2, 6
		room := width - 1 - indent - gaps - widths[0] - widths[3]
		half := max(room/2, 8)
		widths[1], widths[2] = min(widths[1], half), min(widths[2], half)
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			if !wide {
				c = fit(c, widths[i], false)
			}
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-runes(c)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// writeWrapped writes indent+s in lines of at most width characters, continuation lines
// indented 4 more (wide: one line).
func writeWrapped(w io.Writer, indent, s string, width int, wide bool) {
	if wide {
		fmt.Fprintln(w, indent+s)
		return
	}
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = indent + word
		case runes(cur)+1+runes(word) > width-1:
			fmt.Fprintln(w, fit(cur, width-1, false))
			cur = indent + "    " + word
		default:
			cur += " " + word
		}
	}
	if cur != "" {
		fmt.Fprintln(w, fit(cur, width-1, false))
	}
}

// fit cuts s to n characters, ending in "…" when cut (wide: s whole).
func fit(s string, n int, wide bool) string {
	r := []rune(s)
	if wide || len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-1]) + "…"
}

func runes(s string) int { return len([]rune(s)) }

func rate(v float64) string {
	if v >= 100 || v == 0 {
		return thousands.Format(v, 0)
	}
	return thousands.Format(v, 1)
}

func count(v int64) string { return thousands.Format(float64(v), 0) }

func ms(v float64) string {
	switch {
	case v < 10:
		return thousands.Format(v, 2)
	case v < 100:
		return thousands.Format(v, 1)
	}
	return thousands.Format(v, 0)
}

func msOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return ms(v) + " ms"
}

func pct(v float64) string {
	if v == 0 {
		return "0 %"
	}
	return thousands.Format(100*v, 2) + " %"
}

// share formats a share as a percentage ("10 %").
func share(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", 100*v), "0"), ".") + " %"
}

// signed formats a change as a signed percentage ("-9.7 %"), "" when unknown.
func signed(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%+.1f %%", 100*v)
}
