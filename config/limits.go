package config

import (
	"math"
	"time"

	"github.com/spf13/pflag"
)

// Upper bounds on what one probe may ask for. Past them a value is a typo (1e12 tx/s, a
// ten-year window), not a measurement, and would only exhaust the client's memory.
const (
	MaxRate     = 1_000_000      // offered transactions per second
	MaxWindow   = 24 * time.Hour // --warmup, --duration
	MaxPoolWait = time.Minute    // waiting arrivals are kept for this long
	MaxConns    = 10_000
	MaxThreads  = 1024 // --threads (GOMAXPROCS)
)

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

// probeShape is what run and search share about one probe.
type probeShape struct {
	Warmup, Duration, PoolWait time.Duration
	Conns, MaxTries, Threads   int
	Engine, ExecMode           string
}

// Engines are the values of --engine.
var Engines = []string{"auto", "loop", "pgx"}

// bindEngine adds --engine, which run and search share.
func bindEngine(fs *pflag.FlagSet, e *string) {
	fs.StringVar(e, "engine", "auto", "how the driver drives its connections: loop (one goroutine and epoll speaking the wire protocol over prepared statements, like pgbench; the least client CPU, one core), pgx (a goroutine per connection through pgx: every --exec-mode, TLS, all cores) or auto (loop when it can: --exec-mode cache_statement, no TLS, Linux)")
}

// bindThreads adds --threads, which run and search share.
func bindThreads(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "threads", 0, "cores the driver's Go code may use (GOMAXPROCS); 0 = auto: start on one, like pgbench's single thread, and double them whenever it uses 75 % of those it has")
}

func (s probeShape) check(p *Problems) {
	if s.Duration < time.Second || s.Duration > MaxWindow {
		p.Addf("--duration must be between 1s and %v, got %v", MaxWindow, s.Duration)
	}
	if s.Warmup < 0 || s.Warmup > MaxWindow {
		p.Addf("--warmup must be between 0 and %v, got %v", MaxWindow, s.Warmup)
	}
	if s.Conns < 1 || s.Conns > MaxConns {
		p.Addf("--conns must be between 1 and %d, got %d", MaxConns, s.Conns)
	}
	if s.PoolWait <= 0 || s.PoolWait > MaxPoolWait {
		p.Addf("--pool-wait must be > 0 and at most %v, got %v", MaxPoolWait, s.PoolWait)
	}
	if s.Threads < 0 || s.Threads > MaxThreads {
		p.Addf("--threads must be between 0 (auto) and %d, got %d", MaxThreads, s.Threads)
	}
	if err := OneOf("--engine", s.Engine, Engines); err != nil {
		p.Addf("%v", err)
	} else if s.Engine == "loop" && s.ExecMode != "cache_statement" {
		p.Addf("--engine loop prepares its statements (as --exec-mode cache_statement); --exec-mode %s needs --engine pgx or auto", s.ExecMode)
	}
	if s.MaxTries < 1 || s.MaxTries > 100 {
		p.Addf("--max-tries must be between 1 and 100, got %d", s.MaxTries)
	}
}
