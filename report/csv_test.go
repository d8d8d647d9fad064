package report

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
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
			if strings.HasPrefix(name, "failed_") || name == "committed" || name == "rejected" {
				v, err := strconv.ParseInt(r[j], 10, 64)
				if err != nil {
					t.Fatalf("row %d column %s = %q: %v", i+1, name, r[j], err)
				}
				sum += v
			}
		}
		if r[col["scheduled"]] != strconv.FormatInt(sum, 10) {
			t.Errorf("row %d: scheduled %s != committed+failed+rejected %d", i+1, r[col["scheduled"]], sum)
		}
	}
	knees := 0
	for _, r := range rows[1:] {
		if r[col["knee"]] == "true" {
			knees++
		}
	}
	if knees != len(f.Sweeps) {
		t.Errorf("WriteCSV(search.json): %d rows marked knee, want one per sweep (%d)", knees, len(f.Sweeps))
	}
	// Every sweep of the fixture has an interval; one probe was cut by its trend.
	trend := 0
	for i, r := range rows[1:] {
		if r[col["knee_lo_txs"]] == "" || r[col["knee_hi_txs"]] == "" || r[col["interval_level"]] != "0.9" {
			t.Errorf("row %d: knee interval %q-%q at %q, want the sweep's interval", i+1, r[col["knee_lo_txs"]], r[col["knee_hi_txs"]], r[col["interval_level"]])
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
