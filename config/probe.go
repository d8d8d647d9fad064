package config

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/pgscript"
	"github.com/pgceiling/pgceiling/result"
)

// Probe is what run and search share about every probe: its shape, the driver's
// connections and sessions, the keys, how the server is watched, oltp's fraud check and
// the safety guard. Both commands embed it, bind it with Bind and check it with Check, and
// the CLI maps it into the driver's config in one place.
type Probe struct {
	Warmup   time.Duration
	Duration time.Duration
	// Conns is the pool size (--conns); 0 = auto: search scans pool sizes per sweep
	// (search.ScanPool). Only search takes auto (AutoConns).
	Conns     int
	AutoConns bool          // --conns auto is allowed (search)
	badConns  string        // search's --conns below 1, as given (Check reports it)
	Threads   int           // cores the driver may use (--threads); 0 = auto
	Engine    result.Engine // auto, loop or pgx
	PoolWait  time.Duration
	MaxTries  int
	ExecMode  ExecMode
	Seed      int64
	Zipf      float64 // wallet skew exponent; 0 = uniform
	Batch     int     // --batch: rows per insert transaction (insert only)

	Session Session
	Observe Observe
	Fraud   Fraud
	Safety  Safety
	Copy    Copy // the copy workload's batches

	MetricsAddr string // --metrics-addr: serve live OpenMetrics here; empty = off

	// Scripts are the --script FILE[@WEIGHT] arguments: pgbench-style custom scripts,
	// run as the workload "script" (docs/scripts.md).
	Scripts []string
}

// ScriptWorkload is the workload name that runs the --script files.
const ScriptWorkload = "script"

// Session is the settings of every driver session (DESIGN.md's defaults in result).
type Session struct {
	StatementTimeout time.Duration // 0 = the server's default
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	AppName          string
}

// ExecMode is a query protocol of pgx (--exec-mode): prepared statements, a describe per
// statement, or the simple protocol.
type ExecMode string

// The exec modes, named as pgx names them.
const (
	ExecCacheStatement ExecMode = "cache_statement"
	ExecCacheDescribe  ExecMode = "cache_describe"
	ExecDescribeExec   ExecMode = "describe_exec"
	ExecExec           ExecMode = "exec"
	ExecSimpleProtocol ExecMode = "simple_protocol"
)

// ExecModes are the values of --exec-mode.
var ExecModes = []ExecMode{ExecCacheStatement, ExecCacheDescribe, ExecDescribeExec, ExecExec, ExecSimpleProtocol}

// Upper bounds on what one probe may ask for. Past them a value is a typo (1e12 tx/s, a
// ten-year window), not a measurement, and would only exhaust the client's memory.
const (
	MaxRate     = 1_000_000      // offered transactions per second
	MaxWindow   = 24 * time.Hour // --warmup, --duration
	MaxPoolWait = time.Minute    // waiting arrivals are kept for this long
	MaxConns    = 10_000
	MaxThreads  = 1024 // --threads (GOMAXPROCS)
	MaxTries    = 100
)

// Bind adds the probe's flags to fs with DESIGN.md's defaults. With fromProfile the
// warm-up and window default to 0, to be set by a search profile (ApplyProfile).
func (p *Probe) Bind(fs *pflag.FlagSet, fromProfile bool) {
	warmup, duration, why := result.DefaultWarmup, result.DefaultDuration, ""
	if fromProfile {
		warmup, duration, why = 0, 0, "; default from the profile"
	}
	fs.DurationVar(&p.Warmup, "warmup", warmup, "unmeasured warm-up before each probe's measured window; the offered rate rises linearly from 0 over its first half"+why)
	fs.DurationVar(&p.Duration, "duration", duration, "measured window of each probe (7 min covers a full checkpoint cycle)"+why)
	if fromProfile {
		p.AutoConns = true
		fs.Var(connsValue{p}, "conns", "connections in the pool: `auto` (each sweep first scans pools of 4, 8, 16, ... connections with short overload probes and measures each twice, up and back, and uses the smallest whose mean saturated throughput is within 3 % of the best: a larger pool lowers many servers' ceiling and makes a hot row's lock queue metastable) or N (your application's pool size)")
	} else {
		fs.IntVar(&p.Conns, "conns", result.DefaultConns, "connections in the pool (the application's pool size)")
	}
	fs.Var(threadsValue{&p.Threads}, "threads", "cores the driver may use: `auto` (or 0) starts on one and adds cores as it needs them (loop: another loop when the loops are 75 % busy; pgx: doubles GOMAXPROCS at 75 % CPU); N fixes them (loop: N loops, like pgbench -j N; pgx: GOMAXPROCS N)")
	bindChoice(fs, &p.Engine, "engine", result.EngineAuto, "how the driver drives its connections: loop (one goroutine and epoll speaking the wire protocol over prepared statements, like pgbench; the least client CPU, a core per loop: --threads), pgx (a goroutine per connection through pgx: every --exec-mode, TLS, all cores) or auto (loop when it can: --exec-mode cache_statement, no TLS, Linux)")
	fs.DurationVar(&p.PoolWait, "pool-wait", result.DefaultPoolWait, "an arrival not started within this of its intended time is rejected (pool_timeout)")
	fs.IntVar(&p.MaxTries, "max-tries", result.DefaultMaxTries, "attempts per arrival; only serialization and deadlock failures are retried")
	bindChoice(fs, &p.ExecMode, "exec-mode", ExecCacheStatement, "query protocol: "+joined(ExecModes))
	fs.Int64Var(&p.Seed, "seed", 1, "seed of the arrivals and key choices (probe n of a search uses seed + n)")
	fs.Float64Var(&p.Zipf, "zipf", 1.0, "wallet skew exponent (0 = uniform)")
	bindBatch(fs, &p.Batch)
	fs.DurationVar(&p.Session.StatementTimeout, "statement-timeout", result.DefaultStatementTimeout, "statement_timeout of every session")
	fs.DurationVar(&p.Session.LockTimeout, "lock-timeout", result.DefaultLockTimeout, "lock_timeout of every session")
	fs.DurationVar(&p.Session.IdleInTxTimeout, "idle-in-tx-timeout", result.DefaultIdleInTxTimeout, "idle_in_transaction_session_timeout of every session")
	fs.StringVar(&p.Session.AppName, "application-name", result.DefaultAppName, "application_name of the driver's sessions (the wait-event sampler watches these)")
	p.Safety.Bind(fs)
	p.Observe.Bind(fs)
	p.Fraud.Bind(fs)
	p.Copy.Bind(fs)
	fs.StringArrayVar(&p.Scripts, "script", nil, "run this pgbench-style custom script (`FILE[@WEIGHT]`, repeatable: each arrival picks one by weight) as the workload \"script\"; a subset of pgbench's language, see docs/scripts.md")
	fs.StringVar(&p.MetricsAddr, "metrics-addr", "", "serve live OpenMetrics (Prometheus) at http://`HOST:PORT`/metrics while the command runs, e.g. 127.0.0.1:9187 (port 0: any free port, printed at start); see docs/metrics.md")
}

// Check records every problem with the probe's settings.
func (p *Probe) Check(pr *Problems) {
	if p.Duration < time.Second || p.Duration > MaxWindow {
		pr.Addf("--duration must be between 1s and %v, got %v", MaxWindow, p.Duration)
	}
	if p.Warmup < 0 || p.Warmup > MaxWindow {
		pr.Addf("--warmup must be between 0 and %v, got %v", MaxWindow, p.Warmup)
	}
	switch {
	case p.badConns != "":
		pr.Addf("--conns must be auto or between 1 and %d, got %s", MaxConns, p.badConns)
	case (p.Conns < 1 && !(p.AutoConns && p.Conns == 0)) || p.Conns > MaxConns:
		auto := ""
		if p.AutoConns {
			auto = "auto or "
		}
		pr.Addf("--conns must be %sbetween 1 and %d, got %d", auto, MaxConns, p.Conns)
	}
	if p.PoolWait <= 0 || p.PoolWait > MaxPoolWait {
		pr.Addf("--pool-wait must be > 0 and at most %v, got %v", MaxPoolWait, p.PoolWait)
	}
	if p.Threads < 0 || p.Threads > MaxThreads {
		pr.Addf("--threads must be auto (or 0) or between 1 and %d, got %d", MaxThreads, p.Threads)
	}
	if p.MaxTries < 1 || p.MaxTries > MaxTries {
		pr.Addf("--max-tries must be between 1 and %d, got %d", MaxTries, p.MaxTries)
	}
	modeOK := OneOf("--exec-mode", p.ExecMode, ExecModes)
	if modeOK != nil {
		pr.Addf("%v", modeOK)
	}
	if err := OneOf("--engine", p.Engine, result.Engines); err != nil {
		pr.Addf("%v", err)
	} else if p.Engine == result.EngineLoop && modeOK == nil && p.ExecMode != ExecCacheStatement {
		pr.Addf("--engine loop prepares its statements (as --exec-mode cache_statement); --exec-mode %s needs --engine pgx or auto", p.ExecMode)
	}
	if !(p.Zipf >= 0) || math.IsInf(p.Zipf, 0) {
		pr.Addf("--zipf must be a finite number >= 0 (0 = uniform), got %v", p.Zipf)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"--statement-timeout", p.Session.StatementTimeout}, {"--lock-timeout", p.Session.LockTimeout}, {"--idle-in-tx-timeout", p.Session.IdleInTxTimeout}} {
		if t.d < 0 {
			pr.Addf("%s must be >= 0 (0 = the server's default), got %v", t.name, t.d)
		}
	}
	if p.Session.AppName == "" {
		pr.Addf("--application-name must not be empty (the sampler finds the driver's sessions by it)")
	}
	p.Observe.Check(pr)
	p.Fraud.Check(pr)
	p.Copy.Check(pr)
	checkListenAddr(pr, "--metrics-addr", p.MetricsAddr)
	total := 0
	for _, a := range p.Scripts {
		_, w, err := pgscript.ParseWeight(a)
		if err != nil {
			pr.Addf("%v", err)
		}
		total += w
	}
	if len(p.Scripts) > 0 && total == 0 {
		pr.Addf("--script: the weights add up to 0; at least one script needs a weight above 0")
	}
}

// checkScriptWorkload records a problem when the workloads and --script do not go
// together: "script" needs --script, and --script needs "script" among the workloads.
func (p *Probe) checkScriptWorkload(pr *Problems, workloads []string) {
	has := slices.Contains(workloads, ScriptWorkload)
	switch {
	case has && len(p.Scripts) == 0:
		pr.Addf("--workload script needs --script FILE[@WEIGHT]")
	case !has && len(p.Scripts) > 0:
		pr.Addf("--script is run as the workload \"script\": add it to --workload (or leave --workload out)")
	}
}

// checkListenAddr records a problem when addr is neither empty nor HOST:PORT.
func checkListenAddr(pr *Problems, flag, addr string) {
	if addr == "" {
		return
	}
	_, port, err := net.SplitHostPort(addr)
	if _, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil {
		pr.Addf("%s must be HOST:PORT (e.g. 127.0.0.1:9187, or :0 for any free port), got %q", flag, addr)
	}
}

// checkRate validates a rate flag; zero is allowed only when zeroOK (e.g. "calibrate").
func checkRate(p *Problems, flag string, v float64, zeroOK bool) {
	switch {
	case v == 0 && zeroOK:
	case v == 0:
		p.Addf("%s is required: the offered rate in transactions per second, e.g. %s 500", flag, flag)
	case !(v > 0) || math.IsInf(v, 0):
		p.Addf("%s must be a finite number > 0, got %v", flag, v)
	case v > MaxRate:
		p.Addf("%s %v is beyond what one client can offer (at most %d tx/s)", flag, v, MaxRate)
	}
}

// checkSyncCommit records a problem when s is not a synchronous_commit setting.
func checkSyncCommit(p *Problems, s result.SyncCommit) bool {
	if err := OneOf("--sync-commit value", s, result.SyncCommits); err != nil {
		p.Addf("%v", err)
		return false
	}
	return true
}

func joined[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// connsValue is search's --conns: "auto" (stored as 0) or a pool size. A number below 1
// is kept in p.badConns for Check, which reports it with every other problem.
type connsValue struct{ p *Probe }

func (v connsValue) String() string {
	if v.p == nil || v.p.Conns == 0 {
		return "auto"
	}
	return strconv.Itoa(v.p.Conns)
}

func (v connsValue) Set(s string) error {
	v.p.badConns = ""
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		v.p.Conns = 0
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want auto or a number of connections, got %q", s)
	}
	if n < 1 {
		v.p.Conns, v.p.badConns = 0, strconv.Itoa(n)
		return nil
	}
	v.p.Conns = n
	return nil
}

func (connsValue) Type() string { return "conns" }

// threadsValue is --threads: "auto" (stored as 0, which the flag also takes) or a number
// of cores.
type threadsValue struct{ n *int }

func (v threadsValue) String() string {
	if v.n == nil || *v.n == 0 {
		return "auto"
	}
	return strconv.Itoa(*v.n)
}

func (v threadsValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		*v.n = 0
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want auto or a number of cores, got %q", s)
	}
	*v.n = n
	return nil
}

func (threadsValue) Type() string { return "threads" }
