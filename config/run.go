package config

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// Run is the configuration of `pgceiling run`: one probe of one workload at a fixed
// offered rate. Conn (--dsn) is bound by the command.
type Run struct {
	Conn       Conn
	Workload   string
	Rate       float64 // offered arrivals per second; required
	SyncCommit result.SyncCommit
	Probe
	Wallets int   // 0 = the schema's; when the schema is made here, 10,000
	Rows    int64 // prefill when the schema is missing

	JSON   string // results file; empty = none; "-" = stdout
	Config string // --config file
	Output

	// FailOnErrorRate and P99SLO are thresholds on the probe, like k6's: the result is
	// written, and the command fails (exit 3) when the probe breaks one.
	FailOnErrorRate Ratio
	P99SLO          time.Duration
}

// BindRun adds run's flags (all but --dsn) to fs, bound to c, with their defaults.
func BindRun(fs *pflag.FlagSet, c *Run) {
	fs.StringVar(&c.Workload, "workload", "oltp", "transaction shape: oltp, transfer, insert or copy (rows batched into COPY; --rate in rows/s); script with --script")
	fs.Float64Var(&c.Rate, "rate", 0, "offered rate in transactions per second (Poisson arrivals); required")
	bindChoice(fs, &c.SyncCommit, "sync-commit", result.SyncOn, "synchronous_commit of each transaction (SET LOCAL): on or off")
	c.Probe.Bind(fs, false)
	fs.IntVar(&c.Wallets, "wallets", 0, "wallets to pick from; 0 = all of the schema's (10,000 when the schema is created here)")
	fs.Int64Var(&c.Rows, "rows", 200_000, "transactions rows to prefill when the schema is missing (the embedded server)")
	BindRatio(fs, &c.FailOnErrorRate, "fail-on-error-rate", "exit 3 when (failed + rejected) / scheduled exceeds this share (`R`: 0.001 or 0.1%); the result is still written")
	fs.DurationVar(&c.P99SLO, "p99-slo", 0, "exit 3 when the probe's p99 latency exceeds this (0 = no threshold); the result is still written")
	fs.StringVar(&c.JSON, "json", "", "write the result to this JSON `FILE` (- = stdout, the text then goes to stderr); checked writable before the probe")
	c.Output.Bind(fs, 10*time.Second)
	bindConfigFlag(fs, &c.Config)
}

// Validate reports every problem with the configuration at once. workloads are the valid
// workload names.
func (c *Run) Validate(workloads []string) error {
	var p Problems
	if err := OneOf("workload", c.Workload, workloads); err != nil {
		p.Addf("--workload: %v", err)
	}
	checkRate(&p, "--rate", c.Rate, false)
	c.Probe.Check(&p)
	checkBatch(&p, c.Batch, []string{c.Workload})
	checkCopy(&p, []string{c.Workload}, &c.Probe)
	c.Probe.checkScriptWorkload(&p, []string{c.Workload})
	checkSyncCommit(&p, c.SyncCommit)
	if c.Wallets < 0 {
		p.Addf("--wallets must be >= 0 (0 = the schema's), got %d", c.Wallets)
	}
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	if c.FailOnErrorRate.Set && c.FailOnErrorRate.V >= 1 {
		p.Addf("--fail-on-error-rate must be a share below 1 (0.001 or 0.1%%), got %v", c.FailOnErrorRate.V)
	}
	if c.P99SLO < 0 {
		p.Addf("--p99-slo must be >= 0 (0 = no threshold), got %v", c.P99SLO)
	}
	c.Output.Check(&p, c.JSON)
	return p.Err()
}
