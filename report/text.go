package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/pgceiling/pgceiling/result"
)

// TextOptions says how the text report fits the terminal it is printed on.
type TextOptions struct {
	// Width is the widest a line may be, in terminal columns: 0 is DefaultWidth, and a
	// width below MinWidth counts as MinWidth. The command passes $COLUMNS or the
	// terminal's width.
	Width int
	// Wide shows every table cell whole on one line, however wide the tables get
	// (--wide): for a wide terminal, a pager or grep. The lines around the tables still
	// wrap at Width.
	Wide bool
}

// DefaultWidth is the width a text report fits when none is given: every line, tables
// included, is at most 100 columns.
const DefaultWidth = 100

// MinWidth is the narrowest width a text report is laid out for; a narrower terminal
// gets lines of MinWidth columns.
const MinWidth = 40

// width is the width the options ask for, within [MinWidth, ∞).
func (o TextOptions) width() int {
	if o.Width == 0 {
		return DefaultWidth
	}
	return max(o.Width, MinWidth)
}

// WriteText writes the summary the commands print, at most DefaultWidth columns wide:
// WriteTextOpts with the default options.
func WriteText(w io.Writer, f *result.File) error { return WriteTextOpts(w, f, TextOptions{}) }

// WriteTextOpts writes the summary the commands print: for a run, the probe's books and
// latency; for a claim, its verdict page (WriteClaim), then each shape's probe as a run's
// and the short searches' probes; for a search, the sweeps side by side with their knees'
// intervals, the sync off/on ratios (as ranges when both knees have intervals) and a
// table per sweep of its probes, each probe's further figures under it. Warnings come
// first and last.
//
// No line is wider than o.Width (unless o.Wide): a table too wide for it first wraps its
// headers, then wraps or cuts its long cells (a cut cell ends in "… [n]" and is printed
// whole as note [n] under the table), and when even that does not fit, it is printed as
// one small field/value table per row, like psql's expanded display.
func WriteTextOpts(w io.Writer, f *result.File, o TextOptions) error {
	width := o.width()
	m := buildModel(f, !o.Wide)
	bw := bufio.NewWriter(w)
	writeTextWarnings(bw, m.Warnings, width)
	fmt.Fprintln(bw, m.Title)
	for _, l := range m.Meta {
		writeLines(bw, wrapWords(l, width-2, 4), "  ")
	}
	for _, l := range wrapParts(m.Disclosure, " · ", width-2) {
		writeLines(bw, wrapWords(l, width-2, 4), "  ")
	}
	for _, p := range m.Problems {
		writeLines(bw, wrapWords(strings.ToUpper(p[:1])+p[1:], width-2, 4), "  ")
	}
	tables := m.Tables
	if f.Claim != nil && len(tables) > 0 {
		// A claim's file: its verdict page stands for the table of its verdicts.
		fmt.Fprintln(bw)
		writeClaimPage(bw, f, width)
		tables = tables[1:]
	}
	for _, t := range tables {
		fmt.Fprintln(bw)
		writeLines(bw, wrapWords(t.Title, width, 4), "")
		if err := writeTextTable(bw, t, width, o.Wide); err != nil {
			return fmt.Errorf("text report: %w", err)
		}
	}
	if len(m.Warnings) > 0 {
		fmt.Fprintln(bw)
	}
	writeTextWarnings(bw, m.Warnings, width)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("text report: %w", err)
	}
	return nil
}

// writeLines writes each line with a prefix.
func writeLines(w io.Writer, lines []string, prefix string) {
	for _, l := range lines {
		fmt.Fprintln(w, prefix+l)
	}
}

func writeTextWarnings(w io.Writer, ws []string, width int) {
	for _, s := range ws {
		writeLines(w, wrapWords("!!! WARNING: "+s, width, 4), "")
	}
}

// writeTextTable renders a table, fitted to width unless wide, then its notes: first the
// cells cut short ("[n] ..."), then the table's own.
func writeTextTable(w io.Writer, t table, width int, wide bool) error {
	notes := t.Notes
	switch fitted, cut, ok := fitTable(t, width); {
	case wide:
		if err := renderTable(w, t, numericRight(t)); err != nil {
			return err
		}
	case ok:
		if err := renderTable(w, fitted, numericRight(t)); err != nil {
			return err
		}
		notes = append(cut, notes...)
	default:
		if err := writeExpanded(w, t, width); err != nil {
			return err
		}
	}
	for _, n := range notes {
		writeLines(w, noteLines(n, width), "")
	}
	return nil
}

// renderTable draws a table with tablewriter, cells as given (a "\n" breaks a line).
func renderTable(w io.Writer, t table, aligns []tw.Align) error {
	tbl := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}))
	if t.Header != nil {
		tbl.Header(anySlice(t.Header)...)
	}
	for _, r := range t.Rows {
		if err := tbl.Append(anySlice(r)...); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// tableFrame is the width tablewriter's borders and padding add to n columns:
// "│ a │ b │" is 3 per column plus 1.
func tableFrame(n int) int { return 3*n + 1 }

// fitTable narrows t to at most width columns: it wraps headers wider than their cells,
// then shrinks the columns t.Narrow allows, widest first, wrapping their cells at words
// (wrapCell) or cutting them short with a numbered note (cutToNote). It returns the table
// to draw, the notes for the cut cells, and false when the table cannot be that narrow.
func fitTable(t table, width int) (table, []string, bool) {
	n := len(t.Header)
	cellW, colW := make([]int, n), make([]int, n)
	for _, r := range t.Rows {
		for c := 0; c < n && c < len(r); c++ {
			cellW[c] = max(cellW[c], dw(r[c]))
		}
	}
	for c := range n {
		colW[c] = max(cellW[c], dw(t.Header[c]))
	}
	total := func() int {
		s := tableFrame(n)
		for _, v := range colW {
			s += v
		}
		return s
	}
	if total() <= width {
		return t, nil, true
	}
	mode := func(c int) narrowing {
		if c < len(t.Narrow) {
			return t.Narrow[c]
		}
		return keepWhole
	}
	// 1. Headers wider than their cells wrap at their words, the greatest saving first.
	for total() > width {
		best, save := -1, 0
		for c := range n {
			if s := colW[c] - max(cellW[c], longestWord(t.Header[c])); s > save {
				best, save = c, s
			}
		}
		if best < 0 {
			break
		}
		colW[best] -= save
	}
	// 2. Narrowable columns shrink, the widest first, down to their floor: the longest
	// word of a wrapping column (words are never broken), or room for a note's number.
	floor := make([]int, n)
	for c := range n {
		switch mode(c) {
		case keepWhole:
			floor[c] = colW[c]
		case wrapCell:
			floor[c] = longestWord(t.Header[c])
			for _, r := range t.Rows {
				if c < len(r) {
					floor[c] = max(floor[c], longestWord(r[c]))
				}
			}
		case cutToNote:
			floor[c] = max(longestWord(t.Header[c]), dw(noteRef(len(t.Rows)*n)))
		}
		floor[c] = min(floor[c], colW[c])
	}
	// Wrapping loses nothing, so wrapping columns give way before cut ones.
	for _, shrink := range []narrowing{wrapCell, cutToNote} {
		for total() > width {
			best := -1
			for c := range n {
				if mode(c) == shrink && colW[c] > floor[c] && (best < 0 || colW[c] > colW[best]) {
					best = c
				}
			}
			if best < 0 {
				break
			}
			colW[best]--
		}
	}
	if total() > width {
		return table{}, nil, false
	}
	// 3. Lay the cells out in the widths found.
	out := table{Title: t.Title, Header: make([]string, n), Notes: t.Notes}
	for c, h := range t.Header {
		out.Header[c] = strings.Join(wrapWords(h, colW[c], 0), "\n")
	}
	var notes []string
	for _, r := range t.Rows {
		row := make([]string, len(r))
		for c, cell := range r {
			switch {
			case c >= n || dw(cell) <= colW[c]:
				row[c] = cell
			case mode(c) == cutToNote:
				ref := noteRef(len(notes) + 1)
				row[c] = cutCell(cell, colW[c], ref)
				notes = append(notes, ref+" "+cell)
			default:
				row[c] = strings.Join(wrapWords(cell, colW[c], 0), "\n")
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out, notes, true
}

// noteRef is the reference to cut cell i's note: "[i]".
func noteRef(i int) string { return fmt.Sprintf("[%d]", i) }

// cutCell shortens cell to width columns ending in "… [n]", cut at a word when it can;
// when too little of it would be left, the cell is the reference alone.
func cutCell(cell string, width int, ref string) string {
	room := width - dw("… "+ref)
	if room < 3 {
		return ref
	}
	runes := []rune(cell)
	end := 0
	for end < len(runes) && dw(string(runes[:end+1])) <= room {
		end++
	}
	head := string(runes[:end])
	if end < len(runes) && runes[end] != ' ' {
		if sp := strings.LastIndexByte(head, ' '); sp > 0 {
			head = head[:sp] // cut at a word
		}
	}
	return strings.TrimRight(head, " ,;:") + "… " + ref
}

// writeExpanded prints a table too wide for width as one field/value table per row.
func writeExpanded(w io.Writer, t table, width int) error {
	fieldW := 0
	for _, h := range t.Header {
		fieldW = max(fieldW, dw(h))
	}
	fieldW = min(fieldW, width/3)
	valueW := width - tableFrame(2) - fieldW
	for _, r := range t.Rows {
		var kv table
		for c, cell := range r {
			h := ""
			if c < len(t.Header) {
				h = t.Header[c]
			}
			kv.Rows = append(kv.Rows, []string{strings.Join(wrapWords(h, fieldW, 0), "\n"),
				strings.Join(wrapWords(cell, valueW, 0), "\n")})
		}
		if err := renderTable(w, kv, nil); err != nil {
			return err
		}
	}
	return nil
}

// dw is the width of s on a terminal, in columns.
func dw(s string) int {
	m := 0
	for _, l := range strings.Split(s, "\n") {
		m = max(m, twwidth.Width(l))
	}
	return m
}

// longestWord is the width of the widest space-separated word of s.
func longestWord(s string) int {
	m := 0
	for _, f := range strings.Fields(s) {
		m = max(m, dw(f))
	}
	return m
}

// wrapWords breaks s at spaces into lines of at most width columns, every line after
// the first indented by indent spaces (which count towards the width); a word longer
// than a line is broken.
func wrapWords(s string, width, indent int) []string {
	if dw(s) <= width {
		return []string{s}
	}
	pad := strings.Repeat(" ", indent)
	var lines []string
	cur, limit := "", width
	flush := func() {
		if len(lines) > 0 {
			cur = pad + cur
		}
		lines = append(lines, cur)
		cur, limit = "", width-indent
	}
	for _, word := range strings.Fields(s) {
		for dw(word) > limit && cur == "" {
			head, tail := splitAt(word, limit)
			cur = head
			flush()
			word = tail
		}
		switch {
		case word == "":
		case cur == "":
			cur = word
		case dw(cur)+1+dw(word) <= limit:
			cur += " " + word
		default:
			flush()
			for dw(word) > limit {
				head, tail := splitAt(word, limit)
				cur = head
				flush()
				word = tail
			}
			cur = word
		}
	}
	if cur != "" {
		flush()
	}
	return lines
}

// splitAt splits s after its first width columns (at least one rune).
func splitAt(s string, width int) (string, string) {
	runes := []rune(s)
	i := 1
	for i < len(runes) && dw(string(runes[:i+1])) <= width {
		i++
	}
	return string(runes[:i]), string(runes[i:])
}

// numericCell matches a cell that is a number: "1,234", "0.07%", "<0.01%", "975 - 1,000".
var numericCell = regexp.MustCompile(`^<?[0-9][0-9,.]*%?( - [0-9][0-9,.]*)?$`)

// numericColumns says which columns have only numbers (or "-") in their cells: those are
// aligned right.
func numericColumns(t table) []bool {
	numeric := make([]bool, len(t.Header))
	for c := range t.Header {
		numbers, other := 0, false
		for _, r := range t.Rows {
			if c >= len(r) || r[c] == "-" {
				continue
			}
			if !numericCell.MatchString(r[c]) {
				other = true
				break
			}
			numbers++
		}
		numeric[c] = numbers > 0 && !other
	}
	return numeric
}

// numericRight aligns right the numeric columns.
func numericRight(t table) []tw.Align {
	aligns := make([]tw.Align, len(t.Header))
	for c, n := range numericColumns(t) {
		aligns[c] = tw.AlignLeft
		if n {
			aligns[c] = tw.AlignRight
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

// noteLines breaks a note at its "; " into lines of at most width columns, each
// continuation indented, so the details under a table do not run off a terminal; a part
// longer than a line wraps at its words.
func noteLines(n string, width int) []string {
	const indent = 4
	var lines []string
	for i, part := range wrapParts(n, "; ", width-indent) {
		if i > 0 {
			lines[len(lines)-1] += ";"
		}
		lim := width - 1 // room for the ";" that joins the next part
		if i > 0 {
			lim -= indent
		}
		for j, l := range wrapWords(part, lim, indent) {
			if i > 0 && j == 0 {
				l = strings.Repeat(" ", indent) + l
			}
			lines = append(lines, l)
		}
	}
	return lines
}

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
		case dw(cur)+dw(sep)+dw(p) > width:
			lines = append(lines, cur)
			cur = p
		default:
			cur += sep + p
		}
	}
	return append(lines, cur)
}
