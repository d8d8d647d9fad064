package config

import (
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

	JSON   string // results file; empty = none
	Config string // --config file
}

// BindRun adds run's flags (all but --dsn) to fs, bound to c, with their defaults.
func BindRun(fs *pflag.FlagSet, c *Run) {
	fs.StringVar(&c.Workload, "workload", "oltp", "transaction shape: oltp, transfer or insert")
	fs.Float64Var(&c.Rate, "rate", 0, "offered rate in transactions per second (Poisson arrivals); required")
	bindChoice(fs, &c.SyncCommit, "sync-commit", result.SyncOn, "synchronous_commit of each transaction (SET LOCAL): on or off")
	c.Probe.Bind(fs, false)
	fs.IntVar(&c.Wallets, "wallets", 0, "wallets to pick from; 0 = all of the schema's (10,000 when the schema is created here)")
	fs.Int64Var(&c.Rows, "rows", 200_000, "transactions rows to prefill when the schema is missing (the embedded server)")
	fs.StringVar(&c.JSON, "json", "", "write the result to this JSON file (checked writable before the probe)")
	fs.StringVar(&c.Config, "config", "", "file of `name = value` lines setting any of these flags (flags given here win)")
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
	checkSyncCommit(&p, c.SyncCommit)
	if c.Wallets < 0 {
		p.Addf("--wallets must be >= 0 (0 = the schema's), got %d", c.Wallets)
	}
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	return p.Err()
}
