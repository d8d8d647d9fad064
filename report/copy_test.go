package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// A copy sweep's rates are rows/s wherever the report names a unit, the other workloads'
// stay tx/s, and a copy probe shows its batches.
func TestCopyRatesInRows(t *testing.T) {
	f := readFixture(t, "search.json")
	f.Sweeps = f.Sweeps[:3] // oltp on and off, and one to call copy
	f.Sweeps[2].Workload = "copy"
	for i := range f.Sweeps[2].Probes {
		p := &f.Sweeps[2].Probes[i]
		p.Workload = "copy"
		p.Copy = &result.CopyBatches{MaxRows: 1000, MaxWaitMs: 50, Batches: 1200, Rows: 600_000, BatchRate: 20,
			MeanRows: 500, ByRows: 900, ByWait: 300}
	}
	var out bytes.Buffer
	if err := WriteTextOpts(&out, f, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	text := squash(out.String())
	for _, want := range []string{
		"knee /s", "rates are rows/s for copy (its arrivals are rows, batched into COPY), tx/s for the other workloads",
		"Probes: copy sync=on", "# rate rows/s verdict", "# rate tx/s verdict", "bottleneck above the knee, at 600 rows/s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if s := KneeText(f.Sweeps[2]); !strings.Contains(s, " rows/s") {
		t.Errorf("KneeText(copy) = %q, want rows/s", s)
	}
	if s := KneeText(f.Sweeps[0]); !strings.Contains(s, " tx/s") {
		t.Errorf("KneeText(oltp) = %q, want tx/s", s)
	}

	run := readFixture(t, "run.json")
	p := &run.Sweeps[0].Probes[0]
	p.Workload, run.Sweeps[0].Workload = "copy", "copy"
	p.Copy = f.Sweeps[2].Probes[0].Copy
	out.Reset()
	if err := WriteTextOpts(&out, run, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	text = squash(out.String())
	for _, want := range []string{"Probe: copy sync=on at", "rows/s (", "copy batches 20.0 batches/s, 500.0 rows each on average"} {
		if !strings.Contains(text, want) {
			t.Errorf("the run report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(text, "tx/s") {
		t.Errorf("a copy run's report says tx/s:\n%s", out.String())
	}
}
