package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseRatio(t *testing.T) {
	for in, want := range map[string]float64{"10%": 0.1, "0.1": 0.1, " 2.5 % ": 0.025, "0": 0, "150%": 1.5} {
		if got, err := ParseRatio(in); err != nil || got != want {
			t.Errorf("ParseRatio(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "%", "ten", "-5%", "NaN", "Inf"} {
		if _, err := ParseRatio(in); err == nil {
			t.Errorf("ParseRatio(%q): no error", in)
		}
	}
}

func TestOutputFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		progress time.Duration
		quiet    bool
		problem  string
	}{
		{nil, 10 * time.Second, false, ""},
		{[]string{"--progress", "2", "-q"}, 2 * time.Second, true, ""},
		{[]string{"--progress", "1.5s", "--quiet"}, 1500 * time.Millisecond, true, ""},
		{[]string{"--progress", "0"}, 0, false, "--progress must be between 1 and 3600 seconds"},
		{[]string{"--json", "-", "--summary-json", "-"}, 10 * time.Second, false, "both want stdout"},
	} {
		c, err := parseRun(t, append([]string{"--rate", "5"}, tc.args...)...)
		if tc.problem != "" {
			if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("run %v: %v, want a usage error with %q", tc.args, err, tc.problem)
			}
			continue
		}
		if err != nil || c.Progress != tc.progress || c.Quiet != tc.quiet {
			t.Errorf("run %v: progress %v quiet %v err %v; want %v %v", tc.args, c.Progress, c.Quiet, err, tc.progress, tc.quiet)
		}
	}
	if _, err := parseRun(t, "--rate", "5", "--progress", "soon"); err == nil || !IsUsage(err) {
		t.Errorf("--progress soon: %v, want a usage error", err)
	}
	var s Search
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	BindSearch(fs, &s)
	if fs.Lookup("progress").DefValue != "5" || s.Progress != 5*time.Second {
		t.Errorf("search --progress default %q (%v), want 5 seconds", fs.Lookup("progress").DefValue, s.Progress)
	}
}

func TestRunThresholdFlags(t *testing.T) {
	c, err := parseRun(t, "--rate", "5")
	if err != nil || c.FailOnErrorRate.Set || c.P99SLO != 0 {
		t.Fatalf("run without thresholds: %+v %v", c.FailOnErrorRate, err)
	}
	c, err = parseRun(t, "--rate", "5", "--fail-on-error-rate", "0.5%", "--p99-slo", "50ms")
	if err != nil || !c.FailOnErrorRate.Set || c.FailOnErrorRate.V != 0.005 || c.P99SLO != 50*time.Millisecond {
		t.Errorf("--fail-on-error-rate 0.5%% --p99-slo 50ms: %+v %v %v", c.FailOnErrorRate, c.P99SLO, err)
	}
	for _, args := range [][]string{{"--fail-on-error-rate", "1"}, {"--fail-on-error-rate", "x"}, {"--p99-slo", "-1s"}} {
		if _, err := parseRun(t, append([]string{"--rate", "5"}, args...)...); err == nil || !IsUsage(err) {
			t.Errorf("run %v: %v, want a usage error", args, err)
		}
	}
}

func TestCompareFlags(t *testing.T) {
	var c Compare
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	c.Bind(fs)
	if err := Parse(fs, []string{"--fail-if-knee-drops", "10%", "a.json", "b.json"}); err != nil {
		t.Fatal(err)
	}
	if k, p := c.Gates(); k != 0.1 || p != -1 || fs.NArg() != 2 {
		t.Errorf("compare --fail-if-knee-drops 10%%: gates %v %v, args %v", k, p, fs.Args())
	}
	c = Compare{}
	fs = pflag.NewFlagSet("compare", pflag.ContinueOnError)
	c.Bind(fs)
	if err := Parse(fs, []string{"--fail-if-knee-drops", "100%"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !IsUsage(err) {
		t.Errorf("--fail-if-knee-drops 100%%: %v, want a usage error", err)
	}
}

func TestCheckOutputFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path string
		want string // "" = ok
	}{
		{"", ""},
		{"-", ""},
		{filepath.Join(dir, "r.json"), ""},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "r.json"), "directory"},
	} {
		err := CheckOutputFile("--json", tc.path)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--json")) {
			t.Errorf("CheckOutputFile(%q) = %v, want %q", tc.path, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}

func TestCheckOutputDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{"", ""},
		{dir, ""},
		{filepath.Join(dir, "new", "deeper"), ""},
		{file, "not a directory"},
		{filepath.Join(file, "sub"), "not a directory"},
	} {
		err := CheckOutputDir("--report", tc.dir)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckOutputDir(%q) = %v, want %q", tc.dir, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("CheckOutputDir created the directory it checked")
	}
}
