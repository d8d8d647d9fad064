package report

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"image/png"
	"io"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pgceiling/pgceiling/result"
)

func TestCharts(t *testing.T) {
	f := readFixture(t, "search.json")
	charts, err := Charts(f)
	if err != nil {
		t.Fatalf("Charts(search.json): %v", err)
	}
	want := map[string]bool{"achieved-oltp": true, "achieved-transfer": true, "latency-oltp": true,
		"latency-transfer": true, "timeline-oltp-sync-on-knee": true, "timeline-oltp-sync-on-first-fail": true,
		"timeline-transfer-sync-off-knee": true, "waits-oltp-sync-off": true, "waits-transfer-sync-on": true}
	got := map[string]bool{}
	for _, c := range charts {
		got[c.Name] = true
	}
	for n := range want {
		if !got[n] {
			t.Errorf("Charts(search.json): no chart %q (got %v)", n, got)
		}
	}
	if len(charts) != 4+4*3 {
		t.Errorf("Charts(search.json): %d charts, want 16 (2 per workload, 3 per sweep)", len(charts))
	}
	for _, c := range charts {
		var b bytes.Buffer
		if err := c.WritePNG(&b); err != nil {
			t.Fatalf("%s: WritePNG: %v", c.Name, err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: the PNG does not decode: %v", c.Name, err)
		}
		if sz := img.Bounds().Size(); sz.X != 960 || sz.Y != 576 {
			t.Errorf("%s: PNG is %dx%d, want 960x576", c.Name, sz.X, sz.Y)
		}
		b.Reset()
		if err := c.WriteSVG(&b); err != nil {
			t.Fatalf("%s: WriteSVG: %v", c.Name, err)
		}
		checkXML(t, c.Name+".svg", b.Bytes())
	}
}

// checkXML fails unless b is well-formed XML with an <svg> root.
func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", name, root)
	}
}

func TestChartsRun(t *testing.T) {
	f := readFixture(t, "run.json")
	charts, err := Charts(f)
	if err != nil {
		t.Fatalf("Charts(run.json): %v", err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
	}
	want := []string{"achieved-transfer", "latency-transfer", "timeline-transfer-sync-on-probe", "waits-transfer-sync-on"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("Charts(run.json) = %v, want %v", names, want)
	}
}

// Degenerate files (no probes, a probe that never ran, all zeros) still draw, never panic.
func TestChartsDegenerate(t *testing.T) {
	f := result.NewFile("search")
	f.Sweeps = []result.Sweep{
		{Workload: "oltp", SyncCommit: "on"},
		{Workload: "insert", SyncCommit: "off", Probes: []result.Probe{
			{Workload: "insert", SyncCommit: "off", TargetRate: 100, Verdict: result.Fault, Error: "connection refused"},
			{Workload: "insert", SyncCommit: "off", TargetRate: 200, Verdict: result.Fail,
				Series: []result.Second{{T: 0, Phase: result.PhaseMeasure}}, Observation: &result.Observation{}},
		}},
	}
	charts, err := Charts(f)
	if err != nil {
		t.Fatalf("Charts(degenerate): %v", err)
	}
	for _, c := range charts {
		var b bytes.Buffer
		if err := c.WritePNG(&b); err != nil {
			t.Errorf("%s: WritePNG: %v", c.Name, err)
		}
		if err := c.WriteSVG(&b); err != nil {
			t.Errorf("%s: WriteSVG: %v", c.Name, err)
		}
	}
	dir := t.TempDir()
	if _, err := WriteAll(dir, f); err != nil {
		t.Errorf("WriteAll(degenerate): %v", err)
	}
}

// sweepAt is a sweep whose probes run from lo to hi tx/s, passing up to knee, with
// latencies of a few milliseconds and a pool wait of 1 s.
func sweepAt(workload string, sync result.SyncCommit, lo, hi, knee float64) result.Sweep {
	s := result.Sweep{Workload: workload, SyncCommit: sync, Knee: knee}
	for r := lo; r <= hi; r += (hi - lo) / 4 {
		p := result.Probe{Workload: workload, SyncCommit: sync, TargetRate: r, AchievedRate: min(r, knee*1.02),
			Committed: 1000, PoolWaitMs: 1000, Verdict: result.Pass,
			Latency: result.Latency{Count: 1000, P50: 2 + r/1000, P99: 5 + r/500}}
		if r > knee {
			p.Verdict = result.Fail
		}
		s.Probes = append(s.Probes, p)
	}
	return s
}

// Axes start near the data, not at 0, when the data is far from 0.
func TestChartAxesNearData(t *testing.T) {
	f := result.NewFile("search")
	f.Sweeps = []result.Sweep{sweepAt("oltp", result.SyncOn, 2000, 3000, 2500)}
	charts, err := Charts(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		p := c.Panels[0][0]
		switch {
		case strings.HasPrefix(c.Name, "achieved-"):
			if p.X.Min < 1500 || p.Y.Min < 1500 || p.X.Max > 3500 {
				t.Errorf("%s: axes x %.0f-%.0f, y from %.0f, want them near the data (2,000-3,000)", c.Name, p.X.Min, p.X.Max, p.Y.Min)
			}
		case strings.HasPrefix(c.Name, "latency-"):
			if p.X.Min < 1500 {
				t.Errorf("%s: x axis from %.0f, want it near the data (from 2,000)", c.Name, p.X.Min)
			}
		}
	}
	if lo, hi := nearData(0, 100); lo != 0 || hi != 105 {
		t.Errorf("nearData(0, 100) = %v, %v; want 0, 105 (not below 0)", lo, hi)
	}
}

// One colour per wait event in every chart, and a different one for each event of a chart.
func TestWaitColoursAcrossCharts(t *testing.T) {
	charts, err := Charts(readFixture(t, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]color.Color{}
	waits := 0
	for _, c := range charts {
		if !strings.HasPrefix(c.Name, "waits-") {
			continue
		}
		waits++
		used := map[color.Color]string{}
		for ev, col := range c.series {
			if prev, ok := seen[ev]; ok && prev != col {
				t.Errorf("%s: %s is %v, another chart drew it %v", c.Name, ev, col, prev)
			}
			seen[ev] = col
			if other, ok := used[col]; ok {
				t.Errorf("%s: %s and %s share the colour %v", c.Name, ev, other, col)
			}
			used[col] = ev
		}
	}
	if waits != 4 || len(seen) < 5 {
		t.Errorf("Charts(search.json): %d wait charts with %d events, want 4 charts and the fixture's 7 events", waits, len(seen))
	}
	// A class keeps its hue: the events of IO are blues, of Lock vermilions.
	if waitColor("IO:WALSync") != color.Color(okBlue) || waitColor("Lock:transactionid") != color.Color(okVermilion) {
		t.Errorf("waitColor: IO:WALSync %v, Lock:transactionid %v; want the class colours", waitColor("IO:WALSync"), waitColor("Lock:transactionid"))
	}
}

// The latency chart draws the pool wait, and the p99 SLO when the command set one.
func TestLatencyReferenceLines(t *testing.T) {
	f := readFixture(t, "search.json")
	for _, slo := range []string{"", "250ms"} {
		f.Config["p99-slo"] = slo
		charts, err := Charts(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range charts {
			if !strings.HasPrefix(c.Name, "latency-") {
				continue
			}
			want := "pool wait"
			if slo != "" {
				want += ",p99 SLO"
			}
			if got := strings.Join(c.refs, ","); got != want {
				t.Errorf("%s with p99-slo %q: reference lines %q, want %q", c.Name, slo, got, want)
			}
			var b bytes.Buffer
			if err := c.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			for _, label := range []string{"pool wait 1,000 ms", "failed probe"} {
				if !strings.Contains(b.String(), ">"+label+"<") {
					t.Errorf("%s: the SVG has no legend entry %q", c.Name, label)
				}
			}
			if slo != "" && !strings.Contains(b.String(), ">p99 SLO 250 ms<") {
				t.Errorf("%s: the SVG has no legend entry for the p99 SLO", c.Name)
			}
		}
	}
}

// Knee labels that would fall on each other are moved apart, and stay in the plot.
func TestKneeLabelsDoNotOverlap(t *testing.T) {
	p := newPlot("t", "x", "y")
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 100, 0, 100
	k := &kneeLabels{}
	for _, at := range []plotter.XY{{X: 50, Y: 50}, {X: 50.5, Y: 50.5}, {X: 51, Y: 49}, {X: 99, Y: 1}} {
		k.add(at, "knee sync=on: 2,400 tx/s (2,304-2,475, 90 %)", okBlue)
	}
	img := vgimg.New(chartWidth, chartHeight)
	dc := p.DataCanvas(draw.New(img))
	rects := k.layout(dc, p)
	for i, r := range rects {
		if r.Min.X < dc.Min.X || r.Max.X > dc.Max.X || r.Min.Y < dc.Min.Y || r.Max.Y > dc.Max.Y {
			t.Errorf("label %d at %v leaves the data area %v", i, r, dc.Rectangle)
		}
		if overlapsAny(r, rects[:i]) {
			t.Errorf("label %d at %v overlaps an earlier one: %v", i, r, rects[:i])
		}
	}
}

// Every chart's text is sans-serif, and its SVG is twice the PNG's size.
func TestChartFontAndSVGSize(t *testing.T) {
	charts, err := Charts(readFixture(t, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		var b bytes.Buffer
		if err := c.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		svg := b.String()
		if !strings.Contains(svg, `<svg width="1440pt" height="864pt"`) {
			t.Errorf("%s: SVG is not 1440 x 864 pt (2 x 960 x 576 px at 96 dpi): %.120s", c.Name, svg)
		}
		if n := strings.Count(svg, "font-family:"); n == 0 || n != strings.Count(svg, "font-family:Liberation Sans;") {
			t.Errorf("%s: %d texts, %d of them in Liberation Sans", c.Name, n, strings.Count(svg, "font-family:Liberation Sans;"))
		}
	}
}
