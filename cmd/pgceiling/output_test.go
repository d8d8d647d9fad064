package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
)

// TestRunJSONToStdoutAndThresholds: --json - puts the results file on stdout and the text
// on stderr; --quiet drops the progress; a broken --p99-slo exits 3 after writing the
// result and the summary, whose thresholds say which held.
func TestRunJSONToStdoutAndThresholds(t *testing.T) {
	dsn := runDB(t)
	env := map[string]string{"PGCEILING_DSN": dsn}
	summary := filepath.Join(t.TempDir(), "summary.json")
	args := []string{"run", "--workload", "insert", "--rate", "20", "--warmup", "0s", "--duration", "1s", "--conns", "4",
		"--json", "-", "--summary-json", summary, "--quiet", "--p99-slo", "100us", "--fail-on-error-rate", "50%"}
	stdout, stderr, code := cli(t, env, args...)
	if code != exitThreshold {
		t.Fatalf("run with a p99 SLO of 100us: code %d, want %d\nstderr:\n%s", code, exitThreshold, stderr)
	}
	f, err := result.Decode([]byte(stdout), "stdout")
	if err != nil || f.Command != "run" || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) != 1 {
		t.Fatalf("--json -: stdout is not the run's results file: %v\n%.300s", err, stdout)
	}
	p := &f.Sweeps[0].Probes[0]
	for _, w := range []string{"threshold p99 <= 0.1 ms (--p99-slo): BROKEN", "threshold error rate <= 50 % (--fail-on-error-rate): ok", "--p99-slo"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	for _, bad := range []string{"pgceiling run: insert at", "last 1s", "result in"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("--quiet: stderr has progress %q:\n%s", bad, stderr)
		}
	}
	var s result.Summary
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Passed || s.Run == nil || s.Run.P99Ms != p.Latency.P99 || len(s.Thresholds) != 2 || !s.Thresholds[0].OK || s.Thresholds[1].OK ||
		s.Thresholds[1].Limit != 0.1 {
		t.Errorf("summary: %s", b)
	}

	// The same probe without a broken threshold, the summary on stdout: exit 0.
	path := filepath.Join(t.TempDir(), "r.json")
	args = []string{"run", "--workload", "insert", "--rate", "20", "--warmup", "0s", "--duration", "1s", "--conns", "4",
		"--json", path, "--summary-json", "-", "--fail-on-error-rate", "0.5"}
	stdout, stderr, code = cli(t, env, args...)
	if code != 0 {
		t.Fatalf("run --fail-on-error-rate 0.5: code %d\n%s", code, stderr)
	}
	s = result.Summary{}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || !s.Passed || s.Command != "run" || len(s.Thresholds) != 1 {
		t.Errorf("--summary-json -: stdout %q (%v), want the summary, passed", stdout, err)
	}
	if !strings.Contains(stderr, "threshold error rate") || !strings.Contains(stderr, "result in "+path) {
		t.Errorf("with --summary-json - the text goes to stderr:\n%s", stderr)
	}
	if _, err := result.Read(path); err != nil {
		t.Errorf("--json %s: %v", path, err)
	}
}

// TestSearchJSONToStdout: a search with --json - writes the results file once, on stdout,
// and no file called "-".
func TestSearchJSONToStdout(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, tinySearch("-", "--max-probes", "2")...)
	if code != 0 {
		t.Fatalf("search --json -: code %d\n%s", code, stderr)
	}
	f, err := result.Decode([]byte(stdout), "stdout")
	if err != nil || f.Command != "search" || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) == 0 {
		t.Fatalf("search --json -: stdout is not the results file (%v):\n%.300s", err, stdout)
	}
	if !strings.Contains(stderr, "insert") || !strings.Contains(stderr, "results in stdout at the end") {
		t.Errorf("search --json -: the summary and progress belong on stderr:\n%s", stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("search --json - left files in the working directory: %v", entries)
	}
}

// TestOutputsCheckedUpFront: an output that cannot be written stops the command before
// it connects (the DSN points nowhere, so reaching it would take the connect timeout),
// and leaves nothing behind.
func TestOutputsCheckedUpFront(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PGCEILING_DSN": "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=10"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "--json", dir}, "--json " + dir + " is a directory"},
		{[]string{"run", "--rate", "5", "--json", dir}, "is a directory"},
		{[]string{"search", "--json", filepath.Join(dir, "s.json"), "--summary-json", dir}, "--summary-json"},
		{[]string{"search", "--json", filepath.Join(dir, "s.json"), "--report", filepath.Join(file, "charts")}, "--report"},
		{[]string{"search", "--json", filepath.Join(dir, "missing", "s.json")}, "results file"},
	} {
		begin := time.Now()
		_, stderr, code := cli(t, env, tc.args...)
		what := strings.Join(tc.args, " ")
		if code != exitError || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") {
			t.Errorf("pgceiling %s: code %d, stderr %q; want 1 and %q", what, code, stderr, tc.want)
		}
		checkOneLine(t, what, stderr)
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("pgceiling %s took %v: the output must be checked before connecting", what, d)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused commands left files behind: %v", entries)
	}
}
