package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// TestCompareCommand: the exit codes of compare on the report fixtures and a copy whose
// oltp sync=on knee dropped 20 %.
func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	base, run := "../../report/testdata/search.json", "../../report/testdata/run.json"
	f, err := result.Read(base)
	if err != nil {
		t.Fatal(err)
	}
	sw := &f.Sweeps[0]
	for i := range sw.Probes {
		if sw.Probes[i].TargetRate == sw.Knee {
			sw.Probes[i].TargetRate *= 0.8
		}
	}
	sw.Knee *= 0.8
	dropped := filepath.Join(dir, "dropped.json")
	if err := result.Write(dropped, f); err != nil {
		t.Fatal(err)
	}
	charts := filepath.Join(dir, "charts")
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout (code 0 or 3) or stderr (else)
	}{
		{[]string{"compare", base, base}, 0, "oltp sync=on"},
		{[]string{"compare", base, base, "--fail-if-knee-drops", "10%", "--fail-if-p99-rises", "20%"}, 0, "No regression"},
		{[]string{"compare", base, dropped}, 0, "-20.0 %"},
		{[]string{"compare", base, dropped, "--fail-if-knee-drops", "10%"}, 3, "REGRESSIONS:"},
		{[]string{"compare", base, dropped, "--fail-if-knee-drops", "25%"}, 0, "-20.0 %"},
		{[]string{"compare", base, dropped, "--fail-if-knee-drops", "0.1", "--report", charts}, 3, "knee dropped 20 %"},
		{[]string{"compare", base}, 2, "want two results files"},
		{[]string{"compare", base, run}, 2, "compare like with like"},
		{[]string{"compare", base, base, "--fail-if-knee-drops", "lots"}, 2, "fail-if-knee-drops"},
		{[]string{"compare", base, filepath.Join(dir, "nope.json")}, 1, "nope.json"},
		{[]string{"compare", base, base, "--report", dropped}, 1, "not a directory"},
	} {
		stdout, stderr, code := cli(t, nil, tc.args...)
		where := stdout
		if code != 0 && code != 3 {
			where = stderr
			checkOneLine(t, strings.Join(tc.args, " "), stderr)
		}
		if code != tc.code || !strings.Contains(where, tc.want) {
			t.Errorf("pgceiling %s: code %d, want %d and %q in\nstdout %s\nstderr %s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout, stderr)
		}
		if code == 3 && (!strings.Contains(stderr, "regression") || strings.Count(strings.TrimSpace(stderr), "\n") > 1) {
			t.Errorf("pgceiling %s: stderr %q, want the regression on one line", strings.Join(tc.args, " "), stderr)
		}
	}
	if entries, err := os.ReadDir(charts); err != nil || len(entries) != 8 {
		t.Errorf("compare --report %s: %d files (%v), want 8 charts (PNG and SVG of 2 per workload)", charts, len(entries), err)
	}
}

// TestCompareRefit: --refit reads every search sweep's interval with the current method.
// old.json has the report fixture's logistic intervals, one of them replaced by a made-up
// 111-113; new.json the collapse-rate model's. Without --refit compare prints the made-up
// interval and names the two methods as a difference; with it, neither.
func TestCompareRefit(t *testing.T) {
	dir := t.TempDir()
	old, err := result.Read("../../report/testdata/search.json")
	if err != nil {
		t.Fatal(err)
	}
	old.Sweeps[0].Interval = &result.Interval{Lo: 111, Hi: 113, Level: 0.9, Midpoint: 112, Method: "logistic fit", Probes: 10}
	fresh, err := result.Read("../../report/testdata/search.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range fresh.Sweeps {
		if fresh.Sweeps[i].Interval = search.Refit(fresh.Sweeps[i], 0); fresh.Sweeps[i].Interval == nil {
			t.Fatalf("sweep %d of the fixture: no interval refitted", i)
		}
	}
	oldPath, freshPath := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	if err := result.Write(oldPath, old); err != nil {
		t.Fatal(err)
	}
	if err := result.Write(freshPath, fresh); err != nil {
		t.Fatal(err)
	}
	for _, refit := range []bool{false, true} {
		args := []string{"compare", oldPath, freshPath, "--wide"}
		if refit {
			args = append(args, "--refit")
		}
		stdout, stderr, code := cli(t, nil, args...)
		if code != 0 {
			t.Fatalf("pgceiling %s: code %d, stderr %s", strings.Join(args, " "), code, stderr)
		}
		made, method := strings.Contains(stdout, "111-113 (90 %)"), strings.Contains(stdout, "knee interval")
		if made != !refit || method != !refit {
			t.Errorf("pgceiling %s: made-up interval printed %v, methods named as a difference %v; want %v and %v:\n%s",
				strings.Join(args, " "), made, method, !refit, !refit, stdout)
		}
	}
}
