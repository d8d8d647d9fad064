package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parseRun(t *testing.T, args ...string) (*Run, error) {
	t.Helper()
	var c Run
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	BindRun(fs, &c)
	if err := Parse(fs, args); err != nil {
		return nil, err
	}
	return &c, c.Validate([]string{"oltp", "transfer", "insert"})
}

func TestRunDefaults(t *testing.T) {
	c, err := parseRun(t, "--rate", "500")
	if err != nil {
		t.Fatalf("run --rate 500: %v", err)
	}
	if c.Workload != "oltp" || c.Duration.String() != "7m0s" || c.Warmup.String() != "30s" || c.Conns != 50 ||
		c.PoolWait.String() != "1s" || c.MaxTries != 1 || c.SyncCommit != "on" || c.Zipf != 1 ||
		c.ExecMode != "cache_statement" || c.Session.StatementTimeout.String() != "5s" || c.Session.LockTimeout.String() != "1s" ||
		c.Session.IdleInTxTimeout.String() != "10s" || c.Session.AppName != "pgceiling" || c.Rows != 200_000 {
		t.Errorf("run --rate 500: defaults %+v", c)
	}
}

func TestRunValidate(t *testing.T) {
	cases := []struct {
		args []string
		want []string // every fragment must appear in the one-line error
	}{
		{nil, []string{"--rate is required"}},
		{[]string{"--rate", "NaN"}, []string{"--rate must be a finite number"}},
		{[]string{"--rate", "+Inf"}, []string{"--rate must be a finite number"}},
		{[]string{"--rate", "-5"}, []string{"--rate must be a finite number"}},
		{[]string{"--rate", "5", "--workload", "tranfser"}, []string{`did you mean "transfer"`}},
		{[]string{"--rate", "5", "--sync-commit", "of"}, []string{"--sync-commit", "valid: on, off"}},
		{[]string{"--rate", "5", "--exec-mode", "simple"}, []string{"--exec-mode"}},
		{[]string{"--rate", "5", "--threads", "-1"}, []string{"--threads must be auto (or 0) or between 1 and 1024"}},
		{[]string{"--rate", "5", "--batch", "10"}, []string{"--batch is only for the insert workload"}},
		{[]string{"--rate", "5", "--workload", "insert", "--batch", "0"}, []string{"--batch must be between 1 and 10000"}},
		{[]string{"--rate", "5", "--workload", "insert", "--batch", "10001"}, []string{"--batch must be between 1 and 10000"}},
		// Every problem at once.
		{[]string{"--rate", "0", "--conns", "0", "--duration", "0s", "--zipf", "-1", "--pool-wait", "0s", "--max-tries", "0", "--lock-timeout", "-1s"},
			[]string{"--rate", "--conns", "--duration", "--zipf", "--pool-wait", "--max-tries", "--lock-timeout"}},
	}
	if c, err := parseRun(t, "--rate", "5", "--workload", "insert", "--batch", "100"); err != nil {
		t.Errorf("run --workload insert --batch 100: %v", err)
	} else if c.Batch != 100 {
		t.Errorf("run --workload insert --batch 100: batch %d", c.Batch)
	}
	for _, c := range cases {
		_, err := parseRun(t, c.args...)
		if err == nil || !IsUsage(err) {
			t.Errorf("run %v: err %v, want a usage error", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("run %v: error %q, want one line containing %q", c.args, err, w)
			}
		}
	}
}

func TestRunConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.conf")
	os.WriteFile(path, []byte("# a probe\nrate = 300\nworkload = transfer\nconns = 8\n"), 0o644)
	c, err := parseRun(t, "--config", path, "--conns", "12")
	if err != nil {
		t.Fatalf("run --config: %v", err)
	}
	if c.Rate != 300 || c.Workload != "transfer" || c.Conns != 12 {
		t.Errorf("run --config %s --conns 12: rate %v workload %s conns %d; want file values, flags winning", path, c.Rate, c.Workload, c.Conns)
	}
}

func TestFraudFlags(t *testing.T) {
	var f Fraud
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.Window != DefaultFraudWindow || f.Limit != DefaultFraudLimit || f.NoBackfill || f.Warning() != "" {
		t.Errorf("defaults: %+v (warning %q)", f, f.Warning())
	}
	if err := fs.Parse([]string{"--fraud-limit", "0", "--fraud-window", "24h"}); err != nil {
		t.Fatal(err)
	}
	var p Problems
	f.Check(&p)
	if p.Err() != nil {
		t.Errorf("--fraud-limit 0 --fraud-window 24h: %v", p.Err())
	}
	if !strings.Contains(f.Warning(), "no steady state") {
		t.Errorf("--fraud-limit 0: warning %q does not say it has no steady state", f.Warning())
	}
}

// TestRunProblemsInOrder: the problems come in the order of the flags' checks, the
// probe's shape before the synchronous_commit setting (the CLI's tests read the line).
func TestRunProblemsInOrder(t *testing.T) {
	_, err := parseRun(t, "--rate", "10", "--conns", "0", "--sync-commit", "maybe")
	if err == nil || !strings.Contains(err.Error(), `--conns must be between 1 and 10000, got 0; unknown --sync-commit value "maybe" (valid: on, off)`) {
		t.Errorf("run --conns 0 --sync-commit maybe: %v", err)
	}
}

// --threads takes auto (0, the default) or a number of cores, on the command line and in
// a config file; anything else is one usage error.
func TestThreadsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"--threads", "auto"}, 0},
		{[]string{"--threads", "AUTO"}, 0},
		{[]string{"--threads", "0"}, 0},
		{[]string{"--threads", "3"}, 3},
		{[]string{"--config", writeFile(t, "threads = auto\n")}, 0},
		{[]string{"--config", writeFile(t, "threads = 2\n")}, 2},
	} {
		got, err := parseRun(t, append([]string{"--rate", "5"}, c.args...)...)
		if err != nil || got.Threads != c.want {
			t.Errorf("run %v: threads %v, %v; want %d", c.args, got, err, c.want)
		}
	}
	for _, bad := range [][]string{{"--threads", "many"}, {"--threads", "1.5"}, {"--config", writeFile(t, "threads = all\n")}} {
		_, err := parseRun(t, append([]string{"--rate", "5"}, bad...)...)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "want auto or a number of cores") || strings.Contains(err.Error(), "\n") {
			t.Errorf("run %v: %v, want one usage line asking for auto or a number", bad, err)
		}
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	BindRun(fs, &Run{})
	if f := fs.Lookup("threads"); f.DefValue != "auto" {
		t.Errorf("--threads default shows as %q, want auto", f.DefValue)
	}
}
