package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// TestCompareCharts overlays a search with a copy whose knees moved: one achieved and one
// latency chart per workload, both files in each (their names in the SVG text), PNGs
// that decode and SVGs that parse.
func TestCompareCharts(t *testing.T) {
	a, b := readFixture(t, "search.json"), readFixture(t, "search.json")
	for i := range b.Sweeps {
		for j := range b.Sweeps[i].Probes {
			b.Sweeps[i].Probes[j].AchievedRate *= 0.9
		}
	}
	dir := filepath.Join(t.TempDir(), "cmp")
	if d := os.Getenv("PGCEILING_KEEP_CHARTS"); d != "" {
		dir = d
	}
	paths, err := WriteCompare(dir, a, b, "base.json", "new.json")
	if err != nil {
		t.Fatalf("WriteCompare: %v", err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	sort.Strings(names)
	want := []string{"compare-achieved-oltp.png", "compare-achieved-oltp.svg", "compare-achieved-transfer.png", "compare-achieved-transfer.svg",
		"compare-latency-oltp.png", "compare-latency-oltp.svg", "compare-latency-transfer.png", "compare-latency-transfer.svg"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("WriteCompare wrote %v, want %v", names, want)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, ".png") {
			if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 960 {
				t.Errorf("%s: not a 960 px PNG: %v", p, err)
			}
			continue
		}
		checkXML(t, p, b)
		for _, w := range []string{"A base.json sync=on", "B new.json sync=off"} {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s: no legend %q", p, w)
			}
		}
	}
}

func TestCompareChartsRun(t *testing.T) {
	a, b := readFixture(t, "run.json"), readFixture(t, "run.json")
	charts, err := CompareCharts(a, b, "a.json", "b.json")
	if err != nil || len(charts) != 1 || charts[0].Name != "compare-timeline" {
		t.Fatalf("CompareCharts(run, run) = %d charts, %v; want the timeline overlay", len(charts), err)
	}
	var svg bytes.Buffer
	if err := charts[0].WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	checkXML(t, "compare-timeline.svg", svg.Bytes())
	if !bytes.Contains(svg.Bytes(), []byte("A a.json")) || !bytes.Contains(svg.Bytes(), []byte("B b.json")) {
		t.Errorf("the run overlay lacks a file's legend")
	}
}

// TestCompareChartsUnits: copy's rates are rows/s on every axis and in the knee's legend,
// the other workloads' tx/s, also in the run overlay.
func TestCompareChartsUnits(t *testing.T) {
	a, b := readFixture(t, "search.json"), readFixture(t, "search.json")
	for _, f := range []*result.File{a, b} {
		f.Sweeps[0].Workload = "copy"
	}
	charts, err := CompareCharts(a, b, "a.json", "b.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		var svg bytes.Buffer
		if err := c.WriteSVG(&svg); err != nil {
			t.Fatal(err)
		}
		copyChart := strings.HasSuffix(c.Name, "-copy")
		if got := bytes.Contains(svg.Bytes(), []byte("offered rate (rows/s)")); got != copyChart {
			t.Errorf("%s: offered rate in rows/s = %v, want %v", c.Name, got, copyChart)
		}
		if got := bytes.Contains(svg.Bytes(), []byte("offered rate (tx/s)")); got == copyChart {
			t.Errorf("%s: offered rate in tx/s = %v, want %v", c.Name, got, !copyChart)
		}
	}
	ra, rb := readFixture(t, "run.json"), readFixture(t, "run.json")
	for _, tc := range []struct {
		wa, wb, want string
	}{{"copy", "copy", "committed (rows/s)"}, {"oltp", "oltp", "committed (tx/s)"}, {"copy", "oltp", "committed (tx/s or rows/s)"}} {
		ra.Sweeps[0].Workload, rb.Sweeps[0].Workload = tc.wa, tc.wb
		charts, err := CompareCharts(ra, rb, "a.json", "b.json")
		if err != nil || len(charts) != 1 {
			t.Fatalf("CompareCharts(run %s, run %s) = %d charts, %v", tc.wa, tc.wb, len(charts), err)
		}
		var svg bytes.Buffer
		if err := charts[0].WriteSVG(&svg); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svg.Bytes(), []byte(tc.want)) {
			t.Errorf("run overlay %s vs %s: no axis label %q", tc.wa, tc.wb, tc.want)
		}
	}
}
