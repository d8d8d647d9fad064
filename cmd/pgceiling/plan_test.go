package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/plan"
)

// TestPlan runs plan on the report package's search fixture: the text on stdout, the
// same plan as JSON with --json - (the text then on stderr) and with --json FILE.
func TestPlan(t *testing.T) {
	const file = "../../report/testdata/search.json"
	stdout, stderr, code := cli(t, nil, "plan", file, "--current", "250/s", "--growth", "40%/year", "--peak-factor", "2")
	if code != 0 {
		t.Fatalf("plan: code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"oltp (synchronous_commit=on): knee 975 tx/s (936-997, 90 %)",
		"transfer (synchronous_commit=on)", "what sharding by wallet would buy", "synchronous_commit off moves the knee 2.46×"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = cli(t, nil, "plan", file, "--current", "800", "--growth", "40%", "--peak-factor", "3", "--workload", "oltp", "--json", "-")
	if code != 0 {
		t.Fatalf("plan --json -: code %d, stderr %q", code, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("plan --json - wrote no JSON on stdout: %v\n%s", err, stdout)
	}
	if len(p.Workloads) != 1 || p.Workloads[0].Workload != "oltp" || p.Workloads[0].Reach.Status != plan.ReachPast || p.PeakTxS != 2400 {
		t.Errorf("plan --json -: %+v, want oltp alone, already past at a peak of 2,400", p)
	}
	if !strings.Contains(stderr, "already past") {
		t.Errorf("plan --json -: the text should go to stderr, got %q", stderr)
	}
	out := filepath.Join(t.TempDir(), "plan.json")
	if _, stderr, code = cli(t, nil, "plan", file, "--current", "800", "--growth", "0", "--json", out); code != 0 {
		t.Fatalf("plan --json FILE: code %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !json.Valid(b) {
		t.Fatalf("plan --json %s: %v, valid JSON %v", out, err, json.Valid(b))
	}
}

// TestPlanBadInput: every bad value is one line on stderr and exit 2; a missing file
// exits 1.
func TestPlanBadInput(t *testing.T) {
	const file = "../../report/testdata/search.json"
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"plan", "--current", "800", "--growth", "40%"}, "which results file", 2},
		{[]string{"plan", file, "--current", "800/min", "--growth", "40%"}, `invalid argument "800/min" for "--current"`, 2},
		{[]string{"plan", file, "--current", "-3", "--growth", "40%"}, `"--current"`, 2},
		{[]string{"plan", file, "--current", "800", "--growth", "forty"}, `invalid argument "forty" for "--growth"`, 2},
		{[]string{"plan", file, "--growth", "40%"}, "--current is required", 2},
		{[]string{"plan", file, "--current", "800"}, "--growth is required", 2},
		{[]string{"plan", file, "--current", "800", "--growth", "4%", "--peak-factor", "0"}, "--peak-factor must be", 2},
		{[]string{"plan", file, "--current", "800", "--growth", "4%", "--workload", "insert"}, `no sweep of workload "insert"`, 2},
		{[]string{"plan", "../../result/testdata/real-run.json", "--current", "800", "--growth", "4%"}, "no knee to plan against", 2},
		{[]string{"plan", "no-such.json", "--current", "800", "--growth", "4%"}, "no-such.json", 1},
	} {
		_, stderr, code := cli(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %s: code %d, stderr %q; want %d and one line with %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}
