package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

func TestCSVShape(t *testing.T) {
	f := readFixture(t, "search.json")
	var b bytes.Buffer
	if err := WriteCSV(&b, f); err != nil {
		t.Fatalf("WriteCSV(search.json): %v", err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("WriteCSV(search.json) does not parse as CSV: %v", err)
	}
	probes := 0
	for _, s := range f.Sweeps {
		probes += len(s.Probes)
	}
	if len(rows) != probes+1 {
		t.Fatalf("WriteCSV(search.json): %d rows, want a header and %d probes", len(rows), probes)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, r := range rows[1:] {
		if len(r) != len(CSVHeader()) {
			t.Fatalf("row %d has %d columns, want %d", i+1, len(r), len(CSVHeader()))
		}
		// The books balance in every row: scheduled = committed + failed + rejected.
		sum := int64(0)
		for name, j := range col {
			if strings.HasPrefix(name, "failed_") || name == "committed_tx" || name == "rejected_tx" {
				v, err := strconv.ParseInt(r[j], 10, 64)
				if err != nil {
					t.Fatalf("row %d column %s = %q: %v", i+1, name, r[j], err)
				}
				sum += v
			}
		}
		if r[col["scheduled_tx"]] != strconv.FormatInt(sum, 10) {
			t.Errorf("row %d: scheduled %s != committed+failed+rejected %d", i+1, r[col["scheduled_tx"]], sum)
		}
	}
	knees := 0
	for _, r := range rows[1:] {
		if r[col["at_knee"]] == "true" {
			knees++
		}
	}
	if knees != len(f.Sweeps) {
		t.Errorf("WriteCSV(search.json): %d rows marked knee, want one per sweep (%d)", knees, len(f.Sweeps))
	}
	// Every sweep of the fixture has an interval; one probe was cut by its trend.
	trend := 0
	for i, r := range rows[1:] {
		if r[col["knee_lo_tx_s"]] == "" || r[col["knee_hi_tx_s"]] == "" || r[col["interval_level_frac"]] != "0.9" {
			t.Errorf("row %d: knee interval %q-%q at %q, want the sweep's interval", i+1, r[col["knee_lo_tx_s"]], r[col["knee_hi_tx_s"]], r[col["interval_level_frac"]])
		}
		if r[col["cut_by"]] == "trend" {
			trend++
		}
	}
	if trend != 1 {
		t.Errorf("WriteCSV(search.json): %d rows cut by trend, want 1", trend)
	}
}

func TestMarkdownTablesWellFormed(t *testing.T) {
	f := readFixture(t, "search.json")
	f.Sweeps[0].Bottleneck = "a | pipe and *stars*" // must not break the table
	var b bytes.Buffer
	if err := WriteMarkdown(&b, f); err != nil {
		t.Fatal(err)
	}
	cells := -1
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "|") {
			cells = -1
			continue
		}
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		if cells >= 0 && n != cells {
			t.Errorf("markdown table row has %d cells, the table %d: %q", n, cells, line)
		}
		cells = n
	}
}

// realRun is a results file written by a real pgceiling run (60 s at 300 tx/s, engine
// loop), kept by package result.
const realRun = "../../result/testdata/real-run"

// csvTable parses CSV output and indexes its header; col fails the test for a column
// the header does not have.
type csvTable struct {
	t    *testing.T
	rows [][]string
	idx  map[string]int
}

func parseCSV(t *testing.T, what string, b []byte) *csvTable {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s does not parse as CSV (%v):\n%s", what, err, b)
	}
	ct := &csvTable{t: t, rows: rows[1:], idx: map[string]int{}}
	for i, h := range rows[0] {
		ct.idx[h] = i
	}
	return ct
}

func (c *csvTable) col(row int, name string) string {
	c.t.Helper()
	i, ok := c.idx[name]
	if !ok {
		c.t.Fatalf("no column %q in %v", name, c.idx)
	}
	return c.rows[row][i]
}

// unitSuffixes are the units a numeric column's name ends with (docs/results.md).
var unitSuffixes = []string{"_tx_s", "_tx", "_ms", "_s", "_frac", "_rows", "_per_tx", "_ms_per_s"}

// checkColumns: every numeric column names its unit, and every row's numeric cells are
// rounded to the column's decimals and hold the figure they come from (to the rounding).
func checkColumns[T any](t *testing.T, what string, cols []column[T], rows []T, table *csvTable) {
	t.Helper()
	if len(table.rows) != len(rows) {
		t.Fatalf("%s: %d rows, want %d", what, len(table.rows), len(rows))
	}
	for _, c := range cols {
		if c.num == nil {
			continue
		}
		if c.name != "conns" && c.name != "probe" && !slices.ContainsFunc(unitSuffixes, func(u string) bool { return strings.HasSuffix(c.name, u) }) {
			t.Errorf("%s: column %s names no unit (%v)", what, c.name, unitSuffixes)
		}
		for i, r := range rows {
			cell := table.col(i, c.name)
			want, ok := c.num(r)
			if !ok {
				if cell != "" {
					t.Errorf("%s row %d %s = %q, want empty", what, i+1, c.name, cell)
				}
				continue
			}
			if _, frac, dot := strings.Cut(cell, "."); (dot && len(frac) > c.dec) || len(cell) > 16 {
				t.Errorf("%s row %d %s = %q: more than %d decimals", what, i+1, c.name, cell, c.dec)
			}
			got, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.Abs(got-want) > 0.5*math.Pow(10, -float64(c.dec))+1e-9 {
				t.Errorf("%s row %d %s = %q (%v), want %v rounded to %d decimals", what, i+1, c.name, cell, err, want, c.dec)
			}
		}
	}
}

// TestCSVColumns: probes.csv of every fixture has a unit in each numeric header, rounded
// numbers that hold the results file's figures, and the run id, start time, engine and
// connections on every row.
func TestCSVColumns(t *testing.T) {
	for _, fx := range []string{"search", "run", "fsync-off", realRun} {
		f := readFixture(t, fx+".json")
		f.Sweeps[0].Probes[0].Engine = result.EngineLoop
		var b bytes.Buffer
		if err := WriteCSV(&b, f); err != nil {
			t.Fatalf("WriteCSV(%s.json): %v", fx, err)
		}
		table := parseCSV(t, "WriteCSV("+fx+".json)", b.Bytes())
		checkColumns(t, "WriteCSV("+fx+".json)", probeColumns(), probeRows(f), table)
		i := 0
		for _, s := range f.Sweeps {
			for _, p := range s.Probes {
				if id := table.col(i, "run_id"); id == "" || id != f.RunID {
					t.Errorf("WriteCSV(%s.json) row %d run_id %q, want the file's %q", fx, i+1, id, f.RunID)
				}
				if got, err := time.Parse(time.RFC3339, table.col(i, "started_at_utc")); err != nil || !got.Equal(p.StartedAt.Truncate(time.Second)) {
					t.Errorf("WriteCSV(%s.json) row %d started_at_utc %q, want %v", fx, i+1, table.col(i, "started_at_utc"), p.StartedAt)
				}
				if table.col(i, "engine") != string(p.Engine) || table.col(i, "conns") != strconv.Itoa(p.Conns) ||
					table.col(i, "workload") != s.Workload || table.col(i, "committed_tx") != strconv.FormatInt(p.Committed, 10) ||
					table.col(i, "target_rate_tx_s") != strconv.FormatFloat(p.TargetRate, 'f', -1, 64) {
					t.Errorf("WriteCSV(%s.json) row %d: engine %q conns %q workload %q committed %q rate %q, want %q %d %q %d %v", fx, i+1,
						table.col(i, "engine"), table.col(i, "conns"), table.col(i, "workload"), table.col(i, "committed_tx"),
						table.col(i, "target_rate_tx_s"), p.Engine, p.Conns, s.Workload, p.Committed, p.TargetRate)
				}
				i++
			}
		}
		if table.col(0, "engine") != "loop" {
			t.Errorf("WriteCSV(%s.json): engine %q, want loop", fx, table.col(0, "engine"))
		}
	}
}

// TestSeriesCSV: series.csv has one row per second of every probe, in order, with the
// probe's identity, the second's time, and the series' figures to their rounding.
func TestSeriesCSV(t *testing.T) {
	for _, fx := range []string{"search", "run", realRun} {
		f := readFixture(t, fx+".json")
		var b bytes.Buffer
		if err := WriteSeriesCSV(&b, f); err != nil {
			t.Fatalf("WriteSeriesCSV(%s.json): %v", fx, err)
		}
		if fx == "run" {
			golden(t, "run.golden.series.csv", b.Bytes())
		}
		what := "WriteSeriesCSV(" + fx + ".json)"
		table := parseCSV(t, what, b.Bytes())
		var rows []secondRow
		for _, pr := range probeRows(f) {
			for i := range pr.p.Series {
				rows = append(rows, secondRow{probeRow: pr, sec: &pr.p.Series[i]})
			}
		}
		if len(rows) < 10 {
			t.Fatalf("%s: the fixture has %d seconds, too few to test", what, len(rows))
		}
		checkColumns(t, what, seriesColumns(), rows, table)
		i := 0
		for si, s := range f.Sweeps {
			for pi, p := range s.Probes {
				for _, sec := range p.Series {
					if table.col(i, "run_id") != f.RunID || table.col(i, "workload") != s.Workload ||
						table.col(i, "sync_commit") != string(s.SyncCommit) || table.col(i, "probe") != strconv.Itoa(pi+1) ||
						table.col(i, "t_s") != strconv.Itoa(sec.T) || table.col(i, "phase") != sec.Phase {
						t.Fatalf("%s row %d = %v, want sweep %d probe %d second %d (%s)", what, i+1, table.rows[i], si, pi+1, sec.T, sec.Phase)
					}
					want := p.StartedAt.Add(time.Duration(sec.T) * time.Second).UTC().Format(time.RFC3339)
					if got := table.col(i, "time_utc"); got != want {
						t.Errorf("%s row %d time_utc %s, want %s", what, i+1, got, want)
					}
					if got := table.col(i, "rejected_tx"); got != strconv.FormatInt(sec.Failed[result.PoolTimeout], 10) {
						t.Errorf("%s row %d rejected_tx %s, want %d", what, i+1, got, sec.Failed[result.PoolTimeout])
					}
					i++
				}
			}
		}
	}
}

func TestRoundText(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		want string
	}{
		{494.90000000000003, decRate, "494.9"}, {1.0 / 3, decMs, "0.333"}, {2.0 / 3, decMs, "0.667"},
		{12, decMs, "12"}, {-0.00001, decMs, "0"}, {0.00099951, decFrac, "0.001"}, {1e-7, decFrac, "0"},
		{-2.5, decSlope, "-2.5"}, {5939, 0, "5939"}, {1e15, 0, "1000000000000000"},
	} {
		if got := roundText(tc.v, tc.dec); got != tc.want {
			t.Errorf("roundText(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}

// TestCSVDocumented: docs/results.md names every column of both CSV files in its section.
func TestCSVDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatalf("read docs/results.md: %v", err)
	}
	for heading, cols := range map[string][]string{"probes.csv": CSVHeader(), "series.csv": SeriesCSVHeader()} {
		_, sec, ok := strings.Cut(string(b), "\n### "+heading+"\n")
		if !ok {
			t.Fatalf("docs/results.md has no section ### %s", heading)
		}
		if i := strings.Index(sec, "\n#"); i >= 0 {
			sec = sec[:i]
		}
		for _, c := range cols {
			if strings.HasPrefix(c, "failed_") && strings.Contains(sec, "`failed_<class>_tx`") {
				continue // one row names the pattern for every class
			}
			if !strings.Contains(sec, "`"+c+"`") {
				t.Errorf("docs/results.md section %s does not name column %s", heading, c)
			}
		}
	}
}

// TestCSVRepeatInterval: a sweep whose interval records a repeat interval carries it on
// every one of its probe rows; a sweep without one leaves both columns empty.
func TestCSVRepeatInterval(t *testing.T) {
	f := readFixture(t, "search.json")
	if len(f.Sweeps) < 2 || f.Sweeps[0].Interval == nil {
		t.Fatalf("fixture search.json: want at least two sweeps, the first with an interval")
	}
	iv := *f.Sweeps[0].Interval
	iv.RepeatLo, iv.RepeatHi = iv.Lo*0.9, iv.Hi*1.1
	f.Sweeps[0].Interval = &iv
	for i := 1; i < len(f.Sweeps); i++ {
		if s := f.Sweeps[i].Interval; s != nil && s.HasRepeat() {
			t.Fatalf("fixture sweep %d already has a repeat interval", i)
		}
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, f); err != nil {
		t.Fatalf("WriteCSV: %v", err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("WriteCSV does not parse as CSV: %v", err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	lo, hi := col["repeat_lo_tx_s"], col["repeat_hi_tx_s"]
	if lo == 0 || hi == 0 {
		t.Fatalf("probes.csv has no repeat_lo_tx_s/repeat_hi_tx_s columns: %v", rows[0])
	}
	row := 1
	for si, s := range f.Sweeps {
		for range s.Probes {
			r := rows[row]
			row++
			if si > 0 {
				if r[lo] != "" || r[hi] != "" {
					t.Errorf("sweep %d (no repeat interval): repeat columns %q-%q, want empty", si, r[lo], r[hi])
				}
				continue
			}
			gotLo, err1 := strconv.ParseFloat(r[lo], 64)
			gotHi, err2 := strconv.ParseFloat(r[hi], 64)
			if err1 != nil || err2 != nil || math.Abs(gotLo-iv.RepeatLo) > 0.5 || math.Abs(gotHi-iv.RepeatHi) > 0.5 {
				t.Errorf("sweep 0: repeat columns %q-%q, want %.1f-%.1f", r[lo], r[hi], iv.RepeatLo, iv.RepeatHi)
			}
		}
	}
}
