package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"strings"
	"testing"

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
