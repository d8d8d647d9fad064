package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// TestRefitTwoFiles: two runs of one sweep 20 % apart, each with a narrow edge: neither
// knee lies inside the other's refitted interval, and the check says so.
func TestRefitTwoFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, knee float64, rates []float64, pass []bool) string {
		f := result.NewFile("search")
		sw := result.Sweep{Workload: "oltp", SyncCommit: "on", Knee: knee, Converged: true}
		for i, r := range rates {
			p := result.Probe{TargetRate: r, Verdict: result.Pass, DurationS: 15, MeasuredS: 15}
			if !pass[i] {
				p.Verdict, p.MeasuredS = result.Fail, 2 // cut short after 2 s
			}
			sw.Probes = append(sw.Probes, p)
		}
		f.Sweeps = append(f.Sweeps, sw)
		path := filepath.Join(dir, name)
		if err := result.Write(path, f); err != nil {
			t.Fatal(err)
		}
		return path
	}
	edge := []bool{true, true, true, false, false, true, false, true, false}
	a := write("a.json", 1000, []float64{900, 950, 1000, 1050, 1100, 1000, 1050, 1000, 1050}, edge)
	b := write("b.json", 800, []float64{720, 760, 800, 840, 880, 800, 840, 800, 840}, edge)
	var out bytes.Buffer
	if err := run(&out, []string{a, b}, 0); err != nil {
		t.Fatalf("run: %v", err)
	}
	s := out.String()
	if !strings.Contains(s, "0 of 2 knees inside") || !strings.Contains(s, "0 of 2 estimates inside") ||
		!strings.Contains(s, "0 of 1 pairs of intervals overlap") || !strings.Contains(s, "| a.json | oltp on | 1000 |") ||
		!strings.Contains(s, "| b.json | oltp on | 800 |") {
		t.Errorf("refit output:\n%s\nwant both files' rows and 0 of 2 knees inside (the runs are 20 %% apart)", s)
	}
	out.Reset()
	if err := run(&out, []string{a, a}, 0); err != nil || !strings.Contains(out.String(), "0 of 0 knees") {
		t.Errorf("run(a, a) = %v:\n%s\nwant a file never compared with itself", err, out.String())
	}
	// Two runs whose files share a name (run1/search.json, run2/search.json) are still
	// two runs, named by their paths: a run of the same probes agrees with itself.
	for _, d := range []string{"run1", "run2"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a1, a2 := write("run1/search.json", 1000, []float64{900, 950, 1000, 1050, 1100, 1000, 1050, 1000, 1050}, edge), filepath.Join(dir, "run2", "search.json")
	if data, err := os.ReadFile(a1); err != nil || os.WriteFile(a2, data, 0o644) != nil {
		t.Fatal("copy run1/search.json to run2:", err)
	}
	out.Reset()
	if err := run(&out, []string{a1, a2}, 0); err != nil || !strings.Contains(out.String(), "2 of 2 knees inside") ||
		!strings.Contains(out.String(), "2 of 2 estimates inside the other file's repeat interval") ||
		!strings.Contains(out.String(), "1 of 1 pairs of intervals overlap") || !strings.Contains(out.String(), "| "+a2+" | oltp on |") {
		t.Errorf("run(run1/search.json, run2/search.json) = %v:\n%s\nwant two runs named by their paths, agreeing", err, out.String())
	}
	// A sweep that did not finish is shown, not counted.
	f, err := result.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	f.Sweeps[0].Converged = false
	unfinished := filepath.Join(dir, "unfinished.json")
	if err := result.Write(unfinished, f); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(&out, []string{a, unfinished}, 0); err != nil || !strings.Contains(out.String(), "0 of 0 knees") ||
		!strings.Contains(out.String(), "0 of 0 pairs of intervals overlap") || !strings.Contains(out.String(), "| oltp on (a sweep did not finish: not counted) |") {
		t.Errorf("run(a, unfinished) = %v:\n%s\nwant the pair shown and not counted", err, out.String())
	}
	// -window: every sweep read against the one window given.
	out.Reset()
	if err := run(&out, []string{a}, 300); err != nil || !strings.Contains(out.String(), "| 300 s |") {
		t.Errorf("run(a, window 300) = %v:\n%s\nwant the 300 s window", err, out.String())
	}
	if err := run(&out, []string{filepath.Join(dir, "missing.json")}, 0); err == nil {
		t.Error("run(missing file) = nil error")
	}
}
