package config

import (
	"math"
	"time"

	"github.com/spf13/pflag"
)

// Run is the configuration of `pgceiling run`: one probe of one workload at a fixed
// offered rate. Conn (--dsn) is bound by the command.
type Run struct {
	Conn     Conn
	Workload string
	Rate     float64 // offered arrivals per second; required
	Duration time.Duration
	Warmup   time.Duration
	Conns    int
	Threads  int    // cores the driver may use; 0 = auto
	Engine   string // auto, loop or pgx
	PoolWait time.Duration
	Seed     int64
	MaxTries int

	SyncCommit string // "on" or "off"
	Zipf       float64
	Wallets    int   // 0 = the schema's; when the schema is made here, 10,000
	Rows       int64 // prefill when the schema is missing
	ExecMode   string

	StatementTimeout time.Duration
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	AppName          string

	JSON   string // results file; empty = none
	Config string // --config file

	Safety  Safety
	Observe Observe
	Fraud   Fraud
}

// BindRun adds run's flags (all but --dsn) to fs, bound to c, with their defaults.
func BindRun(fs *pflag.FlagSet, c *Run) {
	fs.StringVar(&c.Workload, "workload", "oltp", "transaction shape: oltp, transfer or insert")
	fs.Float64Var(&c.Rate, "rate", 0, "offered rate in transactions per second (Poisson arrivals); required")
	fs.DurationVar(&c.Duration, "duration", 7*time.Minute, "measured window (7 min covers a full checkpoint cycle)")
	fs.DurationVar(&c.Warmup, "warmup", 30*time.Second, "unmeasured warm-up before the window")
	fs.IntVar(&c.Conns, "conns", 50, "connections in the pool (the application's pool size)")
	bindThreads(fs, &c.Threads)
	bindEngine(fs, &c.Engine)
	fs.DurationVar(&c.PoolWait, "pool-wait", time.Second, "an arrival not started within this of its intended time is rejected (pool_timeout)")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the arrivals and key choices")
	fs.IntVar(&c.MaxTries, "max-tries", 1, "attempts per arrival; only serialization and deadlock failures are retried")
	fs.StringVar(&c.SyncCommit, "sync-commit", "on", "synchronous_commit of each transaction (SET LOCAL): on or off")
	fs.Float64Var(&c.Zipf, "zipf", 1.0, "wallet skew exponent (0 = uniform)")
	fs.IntVar(&c.Wallets, "wallets", 0, "wallets to pick from; 0 = all of the schema's (10,000 when the schema is created here)")
	fs.Int64Var(&c.Rows, "rows", 200_000, "transactions rows to prefill when the schema is missing (the embedded server)")
	fs.StringVar(&c.ExecMode, "exec-mode", "cache_statement", "query protocol: cache_statement, cache_describe, describe_exec, exec or simple_protocol")
	fs.DurationVar(&c.StatementTimeout, "statement-timeout", 5*time.Second, "statement_timeout of every session")
	fs.DurationVar(&c.LockTimeout, "lock-timeout", time.Second, "lock_timeout of every session")
	fs.DurationVar(&c.IdleInTxTimeout, "idle-in-tx-timeout", 10*time.Second, "idle_in_transaction_session_timeout of every session")
	fs.StringVar(&c.AppName, "application-name", "pgceiling", "application_name of the driver's sessions")
	fs.StringVar(&c.JSON, "json", "", "write the result to this JSON file (checked writable before the probe)")
	fs.StringVar(&c.Config, "config", "", "file of `name = value` lines setting any of these flags (flags given here win)")
	c.Safety.Bind(fs)
	c.Observe.Bind(fs)
	c.Fraud.Bind(fs)
}

// Validate reports every problem with the configuration at once. workloads are the valid
// workload names.
func (c *Run) Validate(workloads []string) error {
	var p Problems
	if err := OneOf("workload", c.Workload, workloads); err != nil {
		p.Addf("--workload: %v", err)
	}
	checkRate(&p, "--rate", c.Rate, false)
	probeShape{Warmup: c.Warmup, Duration: c.Duration, PoolWait: c.PoolWait, Conns: c.Conns, MaxTries: c.MaxTries, Threads: c.Threads,
		Engine: c.Engine, ExecMode: c.ExecMode}.check(&p)
	if err := OneOf("--sync-commit value", c.SyncCommit, []string{"on", "off"}); err != nil {
		p.Addf("%v", err)
	}
	if !(c.Zipf >= 0) || math.IsInf(c.Zipf, 0) {
		p.Addf("--zipf must be a finite number >= 0 (0 = uniform), got %v", c.Zipf)
	}
	if c.Wallets < 0 {
		p.Addf("--wallets must be >= 0 (0 = the schema's), got %d", c.Wallets)
	}
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	if err := OneOf("--exec-mode", c.ExecMode, ExecModes); err != nil {
		p.Addf("%v", err)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"--statement-timeout", c.StatementTimeout}, {"--lock-timeout", c.LockTimeout}, {"--idle-in-tx-timeout", c.IdleInTxTimeout}} {
		if t.d < 0 {
			p.Addf("%s must be >= 0 (0 = none), got %v", t.name, t.d)
		}
	}
	if c.AppName == "" {
		p.Addf("--application-name must not be empty")
	}
	c.Observe.Check(&p)
	c.Fraud.Check(&p)
	return p.Err()
}

// Values returns every flag's value for the results file, the DSN's password redacted.
func (c *Run) Values(fs *pflag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		if f.Name == "dsn" {
			v = RedactDSN(v)
		}
		m[f.Name] = v
	})
	return m
}
