package result

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDecodeNewerFormat: a file of a newer format is named as such, whatever else changed
// in it, and is not called "not a pgceiling results file".
func TestDecodeNewerFormat(t *testing.T) {
	for _, doc := range []string{
		`{"tool":"pgceiling","format_version":2,"sweeps":[]}`,
		// a newer format may change types too: the version still decides the message
		`{"tool":"pgceiling","format_version":7,"sweeps":{"oltp":{"knee":"3000 tx/s"}},"started_at":1764000000}`,
	} {
		_, err := Decode([]byte(doc), "new.json")
		if !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrNotResults) {
			t.Fatalf("Decode(%s) = %v, want ErrNewerFormat only", doc, err)
		}
		want := "new.json was written by a newer pgceiling (results format "
		if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "reads format 1") {
			t.Errorf("Decode(%s) = %q, want %q...reads format 1", doc, msg, want)
		}
	}
}

// TestDecodeTypeErrors: a value of the wrong type is named by its path in the file, with
// the type wanted and the one found, and never by Go's names.
func TestDecodeTypeErrors(t *testing.T) {
	head := `"tool":"pgceiling","format_version":1,`
	probes := `{"target_rate":100},{"target_rate":200},`
	for _, tc := range []struct{ doc, want string }{
		{`{` + head + `"sweeps":[{"probes":[` + probes + `{"target_rate":"300"}]}]}`,
			"sweeps[0].probes[2].target_rate: want a number, got a string"},
		{`{` + head + `"sweeps":[{},{"probes":[{"scheduled":1.5}]}]}`,
			"sweeps[1].probes[0].scheduled: want an integer, got 1.5"},
		{`{` + head + `"sweeps":[{"probes":[{"failed":{"deadlock":"2"}}]}]}`,
			"sweeps[0].probes[0].failed.deadlock: want an integer, got a string"},
		{`{` + head + `"sweeps":[{"probes":[{"failed":{"deadlocks":2}}]}]}`,
			`sweeps[0].probes[0].failed.deadlocks: want an error class (statement_timeout, `},
		{`{` + head + `"sweeps":[{"probes":[{"series":[{"t":0},{"t":1,"phase":3}]}]}]}`,
			"sweeps[0].probes[0].series[1].phase: want a string, got the number 3"},
		{`{` + head + `"sweeps":{"workload":"oltp"}}`, "sweeps: want an array, got an object"},
		{`{` + head + `"started_at":"yesterday"}`, `started_at: want a time (RFC 3339, e.g. 2026-11-30T09:00:00Z), got "yesterday"`},
		{`{` + head + `"config":{"rate":500}}`, "config.rate: want a string, got the number 500"},
		{`{` + head + `"server":{"tables":[{"rows":"many"}]}}`, "server.tables[0].rows: want an integer, got a string"},
		{`{` + head + `"sweeps":[{"probes":[{"observation":{"wal":{"bytes":true}}}]}]}`,
			"sweeps[0].probes[0].observation.wal.bytes: want an integer, got true"},
		{`{` + head + `"sweeps":[{"Converged":"yes"}]}`, "sweeps[0].Converged: want true or false, got a string"},
		{`{` + head + `"sweeps":[{"knee":1e999}]}`, "sweeps[0].knee: want a number in range, got 1e999"},
	} {
		_, err := Decode([]byte(tc.doc), "x.json")
		if err == nil {
			t.Errorf("Decode(%s) = nil, want an error", tc.doc)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrNotResults) || !strings.HasPrefix(msg, "results file x.json: "+tc.want) ||
			strings.Contains(msg, "not a pgceiling results file") {
			t.Errorf("Decode(%s) = %q, want %q", tc.doc, msg, "results file x.json: "+tc.want+"...")
		}
		if strings.Contains(msg, "Go ") || strings.Contains(msg, "float64") || strings.Contains(msg, "Probe.") {
			t.Errorf("Decode(%s) = %q shows Go's names", tc.doc, msg)
		}
	}
}

// TestDecodeAcceptsWhatJSONDoes: the type walk refuses nothing encoding/json accepts:
// nulls, unknown fields, keys that differ in case, integral numbers in float fields.
func TestDecodeAcceptsWhatJSONDoes(t *testing.T) {
	doc := `{"tool":"pgceiling","format_version":1,"run_id":null,"Command":"run","future_field":{"x":[1]},
		"sweeps":[{"probes":[{"target_rate":500,"failed":null,"latency_ms":null,"Target_Rate":500}],"interval":null}]}`
	f, err := Decode([]byte(doc), "ok.json")
	if err != nil {
		t.Fatalf("Decode(%s) = %v", doc, err)
	}
	if f.Command != "run" || f.Sweeps[0].Probes[0].TargetRate != 500 {
		t.Errorf("Decode(%s): command %q, target_rate %v", doc, f.Command, f.Sweeps[0].Probes[0].TargetRate)
	}
}

// TestRunID: new files get distinct ids; a file without one gets the same derived id on
// every read, and Write stores it.
func TestRunID(t *testing.T) {
	a, b := NewFile("search"), NewFile("search")
	b.StartedAt = a.StartedAt
	if a.RunID == b.RunID || !strings.HasPrefix(a.RunID, a.StartedAt.Format("20060102T150405Z-")) {
		t.Errorf("NewFile run ids %q and %q: want distinct, starting with the start time", a.RunID, b.RunID)
	}
	start := time.Date(2026, 11, 30, 9, 0, 0, 123, time.UTC)
	doc := `{"tool":"pgceiling","format_version":1,"command":"run","started_at":"` + start.Format(time.RFC3339Nano) + `"}`
	f1, err1 := Decode([]byte(doc), "old.json")
	f2, err2 := Decode([]byte(doc), "old.json")
	if err1 != nil || err2 != nil {
		t.Fatalf("Decode(%s): %v, %v", doc, err1, err2)
	}
	if f1.RunID == "" || f1.RunID != f2.RunID || !strings.HasPrefix(f1.RunID, "20261130T090000Z-") {
		t.Errorf("derived run ids %q, %q: want equal and starting 20261130T090000Z-", f1.RunID, f2.RunID)
	}
	other := strings.Replace(doc, `"run"`, `"search"`, 1)
	if f3, _ := Decode([]byte(other), "old.json"); f3 == nil || f3.RunID == f1.RunID {
		t.Errorf("a search and a run started together got one run id %q", f1.RunID)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	g := &File{FormatVersion: FormatVersion, Tool: "pgceiling", Command: "run", StartedAt: start}
	if err := Write(path, g); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"run_id": "`+f1.RunID+`"`) {
		t.Errorf("Write stored no run id %q:\n%s", f1.RunID, raw)
	}
}
