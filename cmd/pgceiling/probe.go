package main

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// The one mapping of a probe's configuration (config.Probe, shared by run and search)
// into what the driver, its pool, the sampler and the search take.

// execModes maps --exec-mode to pgx's query exec modes.
var execModes = map[config.ExecMode]pgx.QueryExecMode{
	config.ExecCacheStatement: pgx.QueryExecModeCacheStatement,
	config.ExecCacheDescribe:  pgx.QueryExecModeCacheDescribe,
	config.ExecDescribeExec:   pgx.QueryExecModeDescribeExec,
	config.ExecExec:           pgx.QueryExecModeExec,
	config.ExecSimpleProtocol: pgx.QueryExecModeSimpleProtocol,
}

// driverConfig is a probe's driver settings at synchronous_commit sync; the caller adds
// the rate, the observer and the callbacks. The drain lets the last arrival start a pool
// wait late and then run up to the statement timeout (at least a second).
func driverConfig(p *config.Probe, sync result.SyncCommit) driver.Config {
	return driver.Config{Warmup: p.Warmup, Duration: p.Duration, Conns: p.Conns, Threads: p.Threads,
		Engine: p.Engine, PoolWait: p.PoolWait, Seed: p.Seed, MaxTries: p.MaxTries,
		SyncCommit: sync, Drain: p.PoolWait + max(p.Session.StatementTimeout, time.Second),
		CopyBatch: p.Copy.Batch, CopyWait: copyWait(p.Copy.Wait)}
}

// copyWait is --copy-wait for the driver, whose zero is its default and whose "no wait"
// is negative.
func copyWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// driverSession is the settings of every driver session.
func driverSession(s config.Session) driver.Session {
	return driver.Session{StatementTimeout: s.StatementTimeout, LockTimeout: s.LockTimeout,
		IdleInTxTimeout: s.IdleInTxTimeout, AppName: s.AppName}
}

// samplerOptions is how the sampler watches the driver's sessions on dsn.
func samplerOptions(dsn string, p *config.Probe, local observe.LocalInfo) observe.SamplerOptions {
	return observe.SamplerOptions{DSN: dsn, AppName: p.Session.AppName, Interval: p.Observe.SampleInterval, Local: local}
}

// searchConfig is one sweep's search rules; the caller adds the start and the callbacks.
func searchConfig(c *config.Search) search.Config {
	return search.Config{StartRate: c.StartRate, Growth: c.Growth, Precision: c.Precision,
		MaxErrorRate: c.MaxErrorRate, P99SLO: c.P99SLO, Confirm: c.Confirm, Repeats: c.Repeats, MaxProbes: c.MaxProbes,
		Warmup: c.Warmup, Duration: c.Duration, PoolWait: c.PoolWait, NoEarlyAbort: c.NoEarlyAbort,
		Steady: search.SteadyRule{Off: c.NoSteadyCheck}, PoolScan: c.Conns == 0, CountLate: c.CountLate}
}

// poolSize is the pool the driver opens for p: --conns, or with --conns auto the largest
// pool the scan may try (search.PoolScanMax).
func poolSize(p *config.Probe) int {
	if p.Conns == 0 {
		return search.PoolScanMax
	}
	return p.Conns
}
