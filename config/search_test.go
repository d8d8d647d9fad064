package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

var testWorkloads = []string{"oltp", "transfer", "insert"}

// parseSearch parses args like the command does: flags, config file, profile.
func parseSearch(t *testing.T, haveDSN bool, args ...string) (*Search, *pflag.FlagSet, error) {
	t.Helper()
	c := &Search{}
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	BindSearch(fs, c)
	if err := Parse(fs, args); err != nil {
		return c, fs, err
	}
	if err := c.ApplyProfile(fs, haveDSN, time.Date(2026, 12, 2, 13, 4, 5, 0, time.UTC)); err != nil {
		return c, fs, err
	}
	return c, fs, c.Validate(testWorkloads)
}

func TestSearchProfiles(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		dsn       bool
		profile   string
		warmup    time.Duration
		duration  time.Duration
		precision float64
		rows      int64
		repeats   int
	}{
		{nil, false, "quick", 5 * time.Second, 15 * time.Second, 0.10, 1_000_000, 2},
		{nil, true, "standard", 30 * time.Second, 7 * time.Minute, 0.05, 50_000_000, 3},
		{[]string{"--profile", "standard"}, false, "standard", 30 * time.Second, 7 * time.Minute, 0.05, 50_000_000, 3},
		{[]string{"--profile=quick", "--duration", "1m", "--precision", "0.02", "--repeats", "1"}, true, "quick", 5 * time.Second, time.Minute, 0.02, 1_000_000, 1},
		{[]string{"--profile", "standard", "--warmup", "0s", "--rows", "5000"}, false, "standard", 0, 7 * time.Minute, 0.05, 5000, 3},
	} {
		c, _, err := parseSearch(t, tc.dsn, tc.args...)
		if err != nil {
			t.Errorf("search %v (dsn %v): %v", tc.args, tc.dsn, err)
			continue
		}
		if c.Profile != tc.profile || c.Warmup != tc.warmup || c.Duration != tc.duration || c.Precision != tc.precision || c.Rows != tc.rows ||
			c.Repeats != tc.repeats {
			t.Errorf("search %v (dsn %v): profile %s warmup %v duration %v precision %v rows %d repeats %d; want %s %v %v %v %d %d",
				tc.args, tc.dsn, c.Profile, c.Warmup, c.Duration, c.Precision, c.Rows, c.Repeats,
				tc.profile, tc.warmup, tc.duration, tc.precision, tc.rows, tc.repeats)
		}
	}
}

func TestSearchDefaults(t *testing.T) {
	c, fs, err := parseSearch(t, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sweeps(); len(got) != 4 || got[0] != (result.SweepKey{Workload: "oltp", SyncCommit: result.SyncOn}) || got[3] != (result.SweepKey{Workload: "transfer", SyncCommit: result.SyncOff}) {
		t.Errorf("default sweeps %v, want oltp/transfer × on/off", got)
	}
	if c.JSON != "pgceiling-search-20261202-130405.json" {
		t.Errorf("default results file %q", c.JSON)
	}
	if c.MaxErrorRate != 0.001 || c.Conns != 0 || !c.AutoConns || c.PoolWait != time.Second || c.StartRate != 0 {
		t.Errorf("defaults: %+v", c)
	}
	v := Values(fs)
	if v["workload"] != "oltp,transfer" || v["precision"] != "0.1" || v["profile"] != "quick" || v["conns"] != "auto" {
		t.Errorf("Values: workload %q precision %q profile %q conns %q", v["workload"], v["precision"], v["profile"], v["conns"])
	}
	c, _, _ = parseSearch(t, false, "--resume", "old.json")
	if c.JSON != "old.json" {
		t.Errorf("--resume old.json: results file %q, want the resumed file", c.JSON)
	}
}

func TestSearchConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "search.conf")
	if err := os.WriteFile(path, []byte("# quick but longer\nprofile = quick\nduration = 20s\nworkload = insert\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := parseSearch(t, false, "--config", path, "--workload", "oltp")
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != 20*time.Second || len(c.Workloads) != 1 || c.Workloads[0] != "oltp" || c.Warmup != 5*time.Second {
		t.Errorf("config file + flags: duration %v workloads %v warmup %v; want 20s from the file, oltp from the flag, 5s from the profile",
			c.Duration, c.Workloads, c.Warmup)
	}
}

func TestSearchValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // every one must appear in the one-line error
	}{
		{[]string{"--workload", "oltpp"}, []string{`did you mean "oltp"`}},
		{[]string{"--workload", "oltp,oltp"}, []string{"oltp given twice"}},
		{[]string{"--sync-commit", "offf"}, []string{`did you mean "off"`}},
		{[]string{"--profile", "quik"}, []string{`did you mean "quick"`}},
		{[]string{"--precision", "1.5", "--max-error-rate", "-1", "--conns", "0"}, []string{"--precision", "--max-error-rate", "--conns"}},
		{[]string{"--precision", "0"}, []string{"--precision must be between 0 and 1"}},
		{[]string{"--duration", "0s", "--pool-wait", "0s", "--confirm", "-1", "--p99-slo", "-1ms"}, []string{"--duration", "--pool-wait", "--confirm", "--p99-slo"}},
		{[]string{"--exec-mode", "simple"}, []string{"--exec-mode"}},
		{[]string{"--threads", "5000"}, []string{"--threads must be auto (or 0) or between 1 and 1024"}},
		{[]string{"--wallets", "1", "--rows", "0", "--start-rate", "-5", "--growth", "1"}, []string{"--wallets", "--rows", "--start-rate", "--growth"}},
		{[]string{"--lock-timeout", "-1s", "--max-tries", "0", "--zipf", "-1"}, []string{"--lock-timeout", "--max-tries", "--zipf"}},
		{[]string{"--fraud-window", "25h", "--fraud-limit", "-1", "--repeats", "-2"}, []string{"--fraud-window", "--fraud-limit", "--repeats"}},
		{[]string{"--fraud-window", "0s"}, []string{"--fraud-window must be > 0"}},
		{[]string{"--workload", "oltp,transfer", "--batch", "10"}, []string{"--batch is only for the insert workload"}},
		{[]string{"--workload", "insert", "--batch", "-1"}, []string{"--batch must be between 1 and 10000"}},
		{[]string{"--start-from", "old.json", "--start-rate", "500"}, []string{"--start-from and --start-rate"}},
	} {
		_, _, err := parseSearch(t, false, tc.args...)
		if err == nil || !IsUsage(err) {
			t.Errorf("search %v: err %v, want a usage error", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("search %v: %q does not mention %q", tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("search %v: error is not one line: %q", tc.args, err)
		}
	}
	if _, _, err := parseSearch(t, false, "--workload", "insert,oltp", "--batch", "10000", "--sync-commit", "off", "--p99-slo", "50ms", "--confirm", "2"); err != nil {
		t.Errorf("valid search flags rejected: %v", err)
	}
}

// TestTypedFlags: the typed flags parse as the string flags they replace, and the results
// file records them as before.
func TestTypedFlags(t *testing.T) {
	c, fs, err := parseSearch(t, false, "--sync-commit", "off", "--sync-commit", "on", "--engine", "pgx", "--exec-mode", "simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SyncCommits) != 2 || c.SyncCommits[0] != result.SyncOff || c.SyncCommits[1] != result.SyncOn ||
		c.Engine != result.EnginePGX || c.ExecMode != ExecSimpleProtocol || !c.SweepsOn() {
		t.Errorf("search --sync-commit off --sync-commit on --engine pgx --exec-mode simple_protocol: %v %q %q", c.SyncCommits, c.Engine, c.ExecMode)
	}
	if v := Values(fs); v["sync-commit"] != "off,on" || v["engine"] != "pgx" || v["exec-mode"] != "simple_protocol" {
		t.Errorf("Values: sync-commit %q engine %q exec-mode %q", v["sync-commit"], v["engine"], v["exec-mode"])
	}
	c, fs, err = parseSearch(t, false, "--sync-commit", "off")
	if err != nil || len(c.SyncCommits) != 1 || c.SweepsOn() || Values(fs)["sync-commit"] != "off" {
		t.Errorf("search --sync-commit off: %v %v, sweeps on %v", err, c.SyncCommits, c.SweepsOn())
	}
	c, fs, err = parseSearch(t, false)
	if err != nil || Values(fs)["sync-commit"] != "on,off" || Values(fs)["engine"] != "auto" || c.ExecMode != ExecCacheStatement {
		t.Errorf("search defaults: %v, sync-commit %q engine %q exec mode %q", err, Values(fs)["sync-commit"], Values(fs)["engine"], c.ExecMode)
	}
	if fl := fs.Lookup("sync-commit"); fl.DefValue != "[on,off]" || fl.Value.Type() != "stringSlice" {
		t.Errorf("--sync-commit: default %q type %q, want pflag's string slice", fl.DefValue, fl.Value.Type())
	}
	if fl := fs.Lookup("engine"); fl.DefValue != "auto" || fl.Value.Type() != "string" {
		t.Errorf("--engine: default %q type %q, want a string flag", fl.DefValue, fl.Value.Type())
	}
}

// TestEngineLoopNeedsPreparedStatements: --engine loop with another exec mode is refused,
// and a bad exec mode is reported once.
func TestEngineLoopNeedsPreparedStatements(t *testing.T) {
	_, err := parseRun(t, "--rate", "5", "--engine", "loop", "--exec-mode", "exec")
	if err == nil || !strings.Contains(err.Error(), "--engine loop prepares its statements") {
		t.Errorf("run --engine loop --exec-mode exec: %v", err)
	}
	_, err = parseRun(t, "--rate", "5", "--engine", "loop", "--exec-mode", "simple")
	if err == nil || strings.Count(err.Error(), "--exec-mode") != 1 {
		t.Errorf("run --engine loop --exec-mode simple: %v, want one problem naming --exec-mode", err)
	}
}

func TestHoldWindow(t *testing.T) {
	for _, tc := range []struct {
		hold, ct string
		dur      time.Duration
		want     time.Duration
		bad      bool
	}{
		{HoldAuto, "5min", 15 * time.Second, 6 * time.Minute, false},
		{HoldAuto, "30s", 15 * time.Second, 90 * time.Second, false},
		{HoldAuto, "1h", time.Minute, 61 * time.Minute, false},
		{HoldAuto, "5min", 7 * time.Minute, 0, false}, // the probes already cover a cycle
		{HoldAuto, "5min", 6 * time.Minute, 0, false},
		{"off", "5min", time.Minute, 0, false},
		{"0", "5min", time.Minute, 0, false},
		{"10m", "5min", time.Minute, 10 * time.Minute, false},
		{"ten", "5min", time.Minute, 0, true},
		{"500ms", "5min", time.Minute, 0, true},
		{HoldAuto, "", time.Minute, 0, true},
		{HoldAuto, "5 fortnights", time.Minute, 0, true},
	} {
		c := Search{Hold: tc.hold}
		c.Duration = tc.dur
		got, err := c.HoldWindow(tc.ct)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("--hold %s, checkpoint_timeout %q, --duration %v: %v, %v; want %v (error %v)", tc.hold, tc.ct, tc.dur, got, err, tc.want, tc.bad)
		}
	}
}

func TestPGDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{"5min": 5 * time.Minute, "30s": 30 * time.Second, "1h": time.Hour,
		"1d": 24 * time.Hour, "200ms": 200 * time.Millisecond, "2.5min": 150 * time.Second} {
		if got, err := PGDuration(v); err != nil || got != want {
			t.Errorf("PGDuration(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "min", "5", "5 parsecs", "-5min"} {
		if got, err := PGDuration(v); err == nil {
			t.Errorf("PGDuration(%q) = %v, want an error", v, got)
		}
	}
}

// TestSearchStringSaysTheRule: the search's one-line description names pgbench's rule
// when --count-late is given, so the progress output says which error rule the knees
// come from.
func TestSearchStringSaysTheRule(t *testing.T) {
	for _, late := range []bool{false, true} {
		args := []string{"--workload", "oltp"}
		if late {
			args = append(args, "--count-late")
		}
		c, _, err := parseSearch(t, false, args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(c.String(), "late commits counted"); got != late || c.CountLate != late {
			t.Errorf("search %v: CountLate %v, String %q", args, c.CountLate, c.String())
		}
	}
}
