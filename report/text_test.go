package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgceiling/pgceiling/result"
)

// fixtures are every committed results fixture.
var fixtures = []string{"search", "run", "fsync-off"}

// checkWidth fails for every line of out wider than width (in runes: the reports hold
// no double-width characters).
func checkWidth(t *testing.T, what string, out string, width int) {
	t.Helper()
	for i, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > width {
			t.Errorf("%s: line %d is %d columns, more than %d:\n%s", what, i+1, n, width, l)
		}
	}
}

// squash drops table borders and collapses runs of white space, so text wrapped onto
// indented lines (or onto the lines of an expanded display's value cell) compares with
// the text it came from.
func squash(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "│", " ")), " ")
}

// Every fixture fits 100 and 80 columns (and a narrow 50), and every cell cut short in a
// table is printed whole under it.
func TestTextFitsWidth(t *testing.T) {
	for _, fx := range fixtures {
		f := readFixture(t, fx+".json")
		for _, width := range []int{0, 100, 80, 50} {
			var b bytes.Buffer
			if err := WriteTextOpts(&b, f, TextOptions{Width: width}); err != nil {
				t.Fatalf("WriteTextOpts(%s.json, width %d): %v", fx, width, err)
			}
			what := fmt.Sprintf("WriteTextOpts(%s.json, width %d)", fx, width)
			limit := width
			if width == 0 {
				limit = DefaultWidth
			}
			checkWidth(t, what, b.String(), limit)
			out := squash(b.String())
			for _, tb := range buildModel(f, true).Tables {
				for _, r := range tb.Rows {
					for c, cell := range r {
						if c < len(tb.Narrow) && tb.Narrow[c] == cutToNote && !strings.Contains(out, squash(cell)) {
							t.Errorf("%s: the cell %q of table %q is not shown whole anywhere", what, cell, tb.Title)
						}
					}
				}
			}
		}
	}
}

// The wide form shows every cell of every table whole, on one line.
func TestTextWide(t *testing.T) {
	for _, fx := range fixtures {
		f := readFixture(t, fx+".json")
		var b bytes.Buffer
		if err := WriteTextOpts(&b, f, TextOptions{Wide: true}); err != nil {
			t.Fatalf("WriteTextOpts(%s.json, wide): %v", fx, err)
		}
		for _, tb := range buildModel(f, false).Tables {
			for _, r := range tb.Rows {
				for _, cell := range r {
					if !strings.Contains(b.String(), "│ "+cell+" ") && !strings.Contains(b.String(), " "+cell+" │") {
						t.Errorf("WriteTextOpts(%s.json, wide): the cell %q of table %q is not whole in its cell", fx, cell, tb.Title)
					}
				}
			}
		}
		if fx == "search" && !strings.Contains(b.String(), "errors at first failing rate") {
			t.Errorf("WriteTextOpts(search.json, wide): the sweeps table lacks its errors column")
		}
	}
}

// A table too wide for the terminal even when narrowed is printed one row at a time, and
// cells cut short point at their notes.
func TestFitTable(t *testing.T) {
	tb := table{Header: []string{"#", "reason"}, Rows: [][]string{{"1", "error rate 40.22 % > 0.10 %"}, {"2", "-"}},
		Narrow: []narrowing{keepWhole, cutToNote}}
	got, notes, ok := fitTable(tb, 25)
	if !ok || got.Rows[0][1] != "error rate… [1]" || got.Rows[1][1] != "-" ||
		len(notes) != 1 || notes[0] != "[1] error rate 40.22 % > 0.10 %" {
		t.Errorf("fitTable(%v, 25) = %q, %q, %v; want the reason cut to \"error rate… [1]\" and note [1]", tb.Rows, got.Rows, notes, ok)
	}
	wrap := tb
	wrap.Narrow = []narrowing{keepWhole, wrapCell}
	if got, notes, ok := fitTable(wrap, 25); !ok || got.Rows[0][1] != "error rate 40.22\n% > 0.10 %" || notes != nil {
		t.Errorf("fitTable(wrapping, 25) = %q, %q, %v; want the reason wrapped at 16", got.Rows, notes, ok)
	}
	if _, _, ok := fitTable(table{Header: []string{"a very long header", "another"},
		Rows: [][]string{{"unbreakable-cell-value", "x"}}}, 20); ok {
		t.Errorf("fitTable of a table of whole cells wider than 20: ok, want false (expanded display)")
	}
	var b bytes.Buffer
	long := table{Header: []string{"workload", "value"}, Rows: [][]string{{"oltp", strings.Repeat("word ", 30)}}}
	if err := writeTextTable(&b, long, 40, false); err != nil {
		t.Fatal(err)
	}
	checkWidth(t, "writeTextTable(expanded, 40)", b.String(), 40)
	if !strings.Contains(b.String(), "│ workload │ oltp") {
		t.Errorf("writeTextTable of a table too wide for 40 columns is not one field per line:\n%s", b.String())
	}
}

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		s             string
		width, indent int
		want          []string
	}{
		{"short", 10, 2, []string{"short"}},
		{"one two three four", 9, 2, []string{"one two", "  three", "  four"}},
		{"postgres://bench:xxxxx@db.example", 12, 0, []string{"postgres://b", "ench:xxxxx@d", "b.example"}},
		{"a averyveryverylongword b", 8, 0, []string{"a", "averyver", "yverylon", "gword b"}},
	} {
		if got := wrapWords(tc.s, tc.width, tc.indent); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapWords(%q, %d, %d) = %q, want %q", tc.s, tc.width, tc.indent, got, tc.want)
		}
	}
}

// The disclosure and the table sizes fit 100 and 80 columns too.
func TestDisclosureFitsWidth(t *testing.T) {
	for _, fx := range []string{"search", "fsync-off"} {
		d := readFixture(t, fx+".json").Server
		d.Settings["shared_preload_libraries"] = strings.Repeat("pg_stat_statements,", 8) + "auto_explain"
		for _, width := range []int{100, 80} {
			var b bytes.Buffer
			if err := WriteDisclosureOpts(&b, d, settingOrder, TextOptions{Width: width}); err != nil {
				t.Fatal(err)
			}
			if err := WriteTableSizes(&b, d.Tables, d.SharedBuffersBytes); err != nil {
				t.Fatal(err)
			}
			checkWidth(t, fmt.Sprintf("WriteDisclosureOpts(%s.json, %d)", fx, width), b.String(), width)
		}
		var b bytes.Buffer
		if err := WriteDisclosureOpts(&b, d, settingOrder, TextOptions{Wide: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), d.Settings["shared_preload_libraries"]+"\n") {
			t.Errorf("WriteDisclosureOpts(%s.json, wide) does not show a long setting whole on its line", fx)
		}
	}
}

// A run with a long probe error still fits.
func TestTextFitsLongError(t *testing.T) {
	f := readFixture(t, "run.json")
	f.Sweeps[0].Probes[0].Error = strings.Repeat("connection reset by peer; ", 10)
	f.Sweeps[0].Probes[0].Verdict = result.Fault
	f.Error = strings.Repeat("x", 300)
	var b bytes.Buffer
	if err := WriteTextOpts(&b, f, TextOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	checkWidth(t, "WriteTextOpts(run with a long error, 80)", b.String(), 80)
}
