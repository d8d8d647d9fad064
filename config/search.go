package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Search is the configuration of `pgceiling search`: which sweeps to run (workloads ×
// synchronous_commit settings), the pass rule, the search's precision, each probe's
// shape, and where results go. Conn (--dsn) is bound by the command.
type Search struct {
	Conn        Conn
	Workloads   []string // --workload, in the order given
	SyncCommits []string // --sync-commit: "on", "off"
	Profile     string   // --profile quick|standard; "" = quick embedded, standard with --dsn

	StartRate    float64 // 0 = calibrate
	Growth       float64
	Precision    float64
	MaxErrorRate float64
	P99SLO       time.Duration
	Confirm      int
	Repeats      int    // each final edge is probed this many times in all; 0 = the profile's
	StartFrom    string // a results file whose knee starts the bracket (no calibration)
	MaxProbes    int
	NoEarlyAbort bool
	// NoSteadyCheck judges probes by errors (and --p99-slo) only, without the not_steady
	// rule: for comparing with tools that have no such rule.
	NoSteadyCheck bool

	Conns    int
	Threads  int    // cores the driver may use; 0 = auto
	Engine   string // auto, loop or pgx
	PoolWait time.Duration
	Warmup   time.Duration
	Duration time.Duration
	MaxTries int
	ExecMode string
	Seed     int64
	Zipf     float64

	KeepGrowth   bool
	NoCheckpoint bool
	// AllowUnsafe measures a server with fsync or full_page_writes off anyway (the
	// results then carry the warning).
	AllowUnsafe bool

	Rows    int64 // prefill when the schema is missing
	Wallets int

	StatementTimeout time.Duration
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	AppName          string
	Observe          Observe
	Fraud            Fraud

	JSON   string // results file; default pgceiling-search-YYYYmmdd-HHMMSS.json
	Resume string // continue the search recorded in this results file
	Report string // also render the report into this directory
	Config string // --config file
}

// Profile is a preset of a search's probe length, precision and prefill size.
type Profile struct {
	Name      string
	Warmup    time.Duration
	Duration  time.Duration
	Precision float64
	Rows      int64
	Repeats   int // each final edge probed this many times in all
	Summary   string
}

// Profiles are the presets of --profile. standard is DESIGN.md's methodology (a full
// checkpoint cycle per probe, indexes larger than shared_buffers); quick is sized so the
// embedded four-sweep main job finishes in about five minutes on two cores.
var Profiles = []Profile{
	{Name: "quick", Warmup: 5 * time.Second, Duration: 15 * time.Second, Precision: 0.10, Rows: 1_000_000, Repeats: 2,
		Summary: "5 s warm-up, 15 s probes, 10 % precision, edges probed twice, 1 M rows: a first figure in minutes"},
	{Name: "standard", Warmup: 30 * time.Second, Duration: 7 * time.Minute, Precision: 0.05, Rows: 50_000_000, Repeats: 3,
		Summary: "30 s warm-up, 7 min probes, 5 % precision, edges probed 3 times, 50 M rows: the methodology"},
}

// ProfileByName returns the named profile.
func ProfileByName(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

func profileNames() []string {
	var n []string
	for _, p := range Profiles {
		n = append(n, p.Name)
	}
	return n
}

// ExecModes are the values of --exec-mode: pgx's query exec modes.
var ExecModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// BindSearch adds search's flags (all but --dsn) to fs, bound to c. The flags a profile
// sets (--warmup, --duration, --precision, --rows) get the profile's values in
// ApplyProfile unless they were given.
func BindSearch(fs *pflag.FlagSet, c *Search) {
	fs.StringSliceVar(&c.Workloads, "workload", []string{"oltp", "transfer"}, "workloads to sweep (oltp, transfer, insert), comma-separated")
	fs.StringSliceVar(&c.SyncCommits, "sync-commit", []string{"on", "off"}, "synchronous_commit settings to sweep (on, off), comma-separated")
	fs.StringVar(&c.Profile, "profile", "", "quick ("+Profiles[0].Summary+") or standard ("+Profiles[1].Summary+"); default quick without --dsn, standard with it; explicit flags override it")
	fs.Float64Var(&c.StartRate, "start-rate", 0, "first probe's rate in tx/s; 0 = calibrate with a short saturating probe")
	fs.Float64Var(&c.Growth, "growth", 2, "factor the rate grows by until a probe fails (after a calibration: 1 + 4 × precision)")
	fs.Float64Var(&c.Precision, "precision", 0, "stop bisecting when (hi - lo) / lo <= this (0 < p < 1); default from the profile")
	fs.Float64Var(&c.MaxErrorRate, "max-error-rate", 0.001, "a probe passes when (failed + rejected) / scheduled <= this")
	fs.DurationVar(&c.P99SLO, "p99-slo", 0, "a probe passes only if its p99 latency is <= this (0 = no latency rule)")
	fs.IntVar(&c.Confirm, "confirm", 0, "probe the final bracket's edges this many more times (on top of --repeats); the majority verdict counts, so the knee can move either way")
	fs.IntVar(&c.Repeats, "repeats", 0, "probe each final edge of the bracket this many times in all; the majority verdict per rate counts and feeds the knee's interval; default from the profile")
	fs.StringVar(&c.StartFrom, "start-from", "", "start the bracket at the knees of this earlier results file instead of calibrating")
	fs.IntVar(&c.MaxProbes, "max-probes", 40, "most probes per sweep (retries and repeats included)")
	fs.BoolVar(&c.NoEarlyAbort, "no-early-abort", false, "run failing probes to the end instead of stopping them once their errors exceed the budget")
	fs.BoolVar(&c.NoSteadyCheck, "no-steady-check", false, "judge probes by errors (and --p99-slo) only, without the not_steady rule (growing queue wait); to compare with pgbench")
	fs.IntVar(&c.Conns, "conns", 50, "connections in the pool (the application's pool size)")
	bindThreads(fs, &c.Threads)
	bindEngine(fs, &c.Engine)
	fs.DurationVar(&c.PoolWait, "pool-wait", time.Second, "an arrival not started within this of its intended time is rejected (pool_timeout)")
	fs.DurationVar(&c.Warmup, "warmup", 0, "unmeasured warm-up of each probe; default from the profile")
	fs.DurationVar(&c.Duration, "duration", 0, "measured window of each probe; default from the profile")
	fs.IntVar(&c.MaxTries, "max-tries", 1, "attempts per arrival; only serialization and deadlock failures are retried")
	fs.StringVar(&c.ExecMode, "exec-mode", "cache_statement", "query protocol: "+strings.Join(ExecModes, ", "))
	fs.Int64Var(&c.Seed, "seed", 1, "seed of arrivals and key choices (probe n of a sweep uses seed + n)")
	fs.Float64Var(&c.Zipf, "zipf", 1.0, "wallet skew exponent (0 = uniform)")
	fs.BoolVar(&c.KeepGrowth, "keep-growth", false, "let the tables grow across probes instead of restoring the data before each probe")
	fs.BoolVar(&c.NoCheckpoint, "no-checkpoint", false, "do not CHECKPOINT before each probe")
	fs.BoolVar(&c.AllowUnsafe, "allow-unsafe-server", false, "measure a server with fsync, full_page_writes or its default synchronous_commit off anyway (the results carry a warning)")
	fs.Int64Var(&c.Rows, "rows", 0, "transactions rows to prefill when the schema is missing; default from the profile")
	fs.IntVar(&c.Wallets, "wallets", 10_000, "wallets to create when the schema is missing")
	fs.DurationVar(&c.StatementTimeout, "statement-timeout", 5*time.Second, "statement_timeout of every session")
	fs.DurationVar(&c.LockTimeout, "lock-timeout", time.Second, "lock_timeout of every session")
	fs.DurationVar(&c.IdleInTxTimeout, "idle-in-tx-timeout", 10*time.Second, "idle_in_transaction_session_timeout of every session")
	fs.StringVar(&c.AppName, "application-name", "pgceiling", "application_name of the driver's sessions (the wait-event sampler watches these)")
	c.Observe.Bind(fs)
	c.Fraud.Bind(fs)
	fs.StringVar(&c.JSON, "json", "", "results file, rewritten after every probe (default pgceiling-search-YYYYmmdd-HHMMSS.json; with --resume, the resumed file)")
	fs.StringVar(&c.Resume, "resume", "", "continue the search recorded in this results file, reusing its probes")
	fs.StringVar(&c.Report, "report", "", "also write the report (tables, charts, HTML) into this directory")
	fs.StringVar(&c.Config, "config", "", "file of `name = value` lines setting any of these flags (flags given here win)")
}

// ApplyProfile resolves --profile (quick without a DSN, standard with one, unless given)
// and sets each of the profile's flags that was given neither on the command line nor in
// the config file. It also fills the default results file name from now.
func (c *Search) ApplyProfile(fs *pflag.FlagSet, haveDSN bool, now time.Time) error {
	if c.Profile == "" {
		c.Profile = "quick"
		if haveDSN {
			c.Profile = "standard"
		}
	}
	p, ok := ProfileByName(c.Profile)
	if !ok {
		return OneOf("--profile", c.Profile, profileNames())
	}
	set := func(name, v string) {
		if fl := fs.Lookup(name); fl != nil && !fl.Changed {
			_ = fl.Value.Set(v)
		}
	}
	set("warmup", p.Warmup.String())
	set("duration", p.Duration.String())
	set("precision", strconv.FormatFloat(p.Precision, 'g', -1, 64))
	set("rows", strconv.FormatInt(p.Rows, 10))
	set("repeats", strconv.Itoa(p.Repeats))
	if c.JSON == "" {
		c.JSON = c.Resume
	}
	if c.JSON == "" {
		c.JSON = now.Format("pgceiling-search-20060102-150405.json")
	}
	return nil
}

// Validate reports every problem with the configuration at once. workloads are the valid
// workload names.
func (c *Search) Validate(workloads []string) error {
	var p Problems
	if c.AppName == "" {
		p.Addf("--application-name must not be empty (the sampler finds the driver's sessions by it)")
	}
	c.Observe.Check(&p)
	if len(c.Workloads) == 0 {
		p.Addf("--workload: give at least one of %s", strings.Join(workloads, ", "))
	}
	seen := map[string]bool{}
	for _, w := range c.Workloads {
		if err := OneOf("workload", w, workloads); err != nil {
			p.Addf("--workload: %v", err)
		} else if seen[w] {
			p.Addf("--workload: %s given twice", w)
		}
		seen[w] = true
	}
	if len(c.SyncCommits) == 0 {
		p.Addf("--sync-commit: give on, off or both")
	}
	seen = map[string]bool{}
	for _, s := range c.SyncCommits {
		if err := OneOf("synchronous_commit setting", s, []string{"on", "off"}); err != nil {
			p.Addf("--sync-commit: %v", err)
		} else if seen[s] {
			p.Addf("--sync-commit: %s given twice", s)
		}
		seen[s] = true
	}
	if _, ok := ProfileByName(c.Profile); !ok && c.Profile != "" {
		p.Addf("--profile: %v", OneOf("profile", c.Profile, profileNames()))
	}
	checkRate(&p, "--start-rate", c.StartRate, true)
	if !(c.Growth > 1) {
		p.Addf("--growth must be > 1, got %v", c.Growth)
	}
	if !(c.Precision > 0 && c.Precision < 1) {
		p.Addf("--precision must be between 0 and 1 (0.05 = 5 %%), got %v", c.Precision)
	}
	if !(c.MaxErrorRate >= 0 && c.MaxErrorRate < 1) {
		p.Addf("--max-error-rate must be >= 0 and < 1 (0.001 = 0.1 %%), got %v", c.MaxErrorRate)
	}
	if c.P99SLO < 0 {
		p.Addf("--p99-slo must be >= 0, got %v", c.P99SLO)
	}
	if c.Confirm < 0 {
		p.Addf("--confirm must be >= 0, got %d", c.Confirm)
	}
	if c.Repeats < 0 {
		p.Addf("--repeats must be >= 0, got %d", c.Repeats)
	}
	if c.StartFrom != "" && c.StartRate > 0 {
		p.Addf("--start-from and --start-rate both set the first rate: give one")
	}
	c.Fraud.Check(&p)
	if c.MaxProbes < 1 {
		p.Addf("--max-probes must be >= 1, got %d", c.MaxProbes)
	}
	probeShape{Warmup: c.Warmup, Duration: c.Duration, PoolWait: c.PoolWait, Conns: c.Conns, MaxTries: c.MaxTries, Threads: c.Threads,
		Engine: c.Engine, ExecMode: c.ExecMode}.check(&p)
	if err := OneOf("--exec-mode", c.ExecMode, ExecModes); err != nil {
		p.Addf("%v", err)
	}
	if !(c.Zipf >= 0) {
		p.Addf("--zipf must be >= 0 (0 = uniform), got %v", c.Zipf)
	}
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	if c.Wallets < 2 {
		p.Addf("--wallets must be >= 2 (transfer moves money between two wallets), got %d", c.Wallets)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"--statement-timeout", c.StatementTimeout}, {"--lock-timeout", c.LockTimeout}, {"--idle-in-tx-timeout", c.IdleInTxTimeout}} {
		if t.d < 0 {
			p.Addf("%s must be >= 0 (0 = the server's default), got %v", t.name, t.d)
		}
	}
	return p.Err()
}

// Sweeps lists the sweeps to run in order: each workload with each synchronous_commit
// setting, as (workload, setting) pairs.
func (c *Search) Sweeps() [][2]string {
	var out [][2]string
	for _, w := range c.Workloads {
		for _, s := range c.SyncCommits {
			out = append(out, [2]string{w, s})
		}
	}
	return out
}

// Values returns every flag's value in fs by name, for the results file (the DSN
// redacted).
func (c *Search) Values(fs *pflag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		if f.Name == "dsn" {
			v = RedactDSN(v)
		}
		if f.Value.Type() == "stringSlice" {
			v = strings.Trim(v, "[]")
		}
		m[f.Name] = v
	})
	return m
}

// String describes the search in one line, for progress output.
func (c *Search) String() string {
	return fmt.Sprintf("profile %s: %v warm-up + %v probes, precision %g, edges probed %d times, max error rate %g",
		c.Profile, c.Warmup, c.Duration, c.Precision, max(c.Repeats, 1), c.MaxErrorRate)
}
