package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// fixture is a committed results file of the report package.
func fixture(name string) string { return filepath.Join("..", "..", "report", "testdata", name) }

func TestReportFormats(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", fixture("search.json")}, []string{"Sweeps", "synchronous_commit off/on knee ratio", "Probes: transfer sync=off"}},
		{[]string{"report", fixture("run.json"), "--format", "text"}, []string{"Probe: transfer sync=on at 500 tx/s", "check: balance"}},
		{[]string{"report", fixture("search.json"), "--format", "markdown"}, []string{"# pgceiling search", "| workload |"}},
		{[]string{"report", fixture("search.json"), "--format=csv"}, []string{"workload,sync_commit,probe,target_rate_tx_s", ",transfer,off,"}},
		{[]string{"report", fixture("run.json"), "--format", "series-csv"}, []string{"probe,target_rate_tx_s,t_s,phase", ",transfer,on,1,500,14,measure,"}},
		{[]string{"report", fixture("search.json"), "--format", "html"}, []string{"<!DOCTYPE html>", "data:image/png;base64,"}},
		{[]string{"report", fixture("fsync-off.json")}, []string{"!!! WARNING: fsync=off"}},
	} {
		stdout, stderr, code := cli(t, nil, tc.args...)
		if code != 0 {
			t.Errorf("pgceiling %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("pgceiling %s: stdout lacks %q", strings.Join(tc.args, " "), w)
			}
		}
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	stdout, stderr, code := cli(t, nil, "report", fixture("search.json"), "--format", "json")
	if code != 0 {
		t.Fatalf("pgceiling report --format json: exit %d, %s", code, stderr)
	}
	f, err := result.Decode([]byte(stdout), "stdout")
	if err != nil {
		t.Fatalf("pgceiling report --format json: output does not read back: %v", err)
	}
	if len(f.Sweeps) != 4 || f.Sweeps[0].Knee == 0 {
		t.Errorf("pgceiling report --format json: %d sweeps, first knee %v; want 4 with a knee", len(f.Sweeps), f.Sweeps[0].Knee)
	}
}

func TestReportOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rep")
	stdout, stderr, code := cli(t, nil, "report", fixture("search.json"), "--out", dir)
	if code != 0 {
		t.Fatalf("pgceiling report --out %s: exit %d, %s", dir, code, stderr)
	}
	for _, name := range []string{"report.md", "probes.csv", "series.csv", "report.html", "achieved-oltp.png", "latency-transfer.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("pgceiling report --out: %s not written: %v", name, err)
		}
		if !strings.Contains(stdout, name) {
			t.Errorf("pgceiling report --out: stdout does not list %s", name)
		}
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile(fixture("run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var other map[string]any
	if err := json.Unmarshal(good, &other); err != nil {
		t.Fatal(err)
	}
	other["format_version"] = 99
	future, _ := json.Marshal(other)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"report", filepath.Join(dir, "nope.json")}, 1, "no such file"},
		{"not JSON", []string{"report", write("notjson.json", "hello, world\n")}, 1, "not valid JSON"},
		{"truncated", []string{"report", write("trunc.json", string(good[:len(good)/2]))}, 1, "truncated"},
		{"empty", []string{"report", write("empty.json", "")}, 1, "empty"},
		{"another tool", []string{"report", write("other.json", `{"name":"left-pad","version":"1.3.0"}`)}, 1, "no pgceiling header"},
		{"another version", []string{"report", write("future.json", string(future))}, 1, "results format 99"},
		{"no file", []string{"report"}, 2, "which results file"},
		{"two files", []string{"report", "a.json", "b.json"}, 2, "one results file at a time"},
		{"bad format", []string{"report", fixture("run.json"), "--format", "markdwn"}, 2, `did you mean "markdown"`},
		{"out and format", []string{"report", fixture("run.json"), "--format", "csv", "--out", dir}, 2, "--out writes every format"},
		{"unknown flag", []string{"report", fixture("run.json"), "--fromat", "csv"}, 2, "unknown flag"},
	} {
		stdout, stderr, code := cli(t, nil, tc.args...)
		cmd := "pgceiling " + strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("%s: %s: exit %d, want %d (stderr %q)", tc.name, cmd, code, tc.code, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: %s: stderr %q lacks %q", tc.name, cmd, stderr, tc.want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: %s: want one line on stderr, got %q", tc.name, cmd, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: %s: wrote to stdout on error: %q", tc.name, cmd, stdout)
		}
	}
}

func TestReportHelp(t *testing.T) {
	stdout, _, code := cli(t, nil, "report", "--help")
	if code != 0 || !strings.Contains(stdout, "--format") || !strings.Contains(stdout, "--out") || strings.Count(stdout, "Usage:") != 1 {
		t.Errorf("pgceiling report --help: exit %d, stdout %q", code, stdout)
	}
}
