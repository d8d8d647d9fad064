// Package driver runs one probe: open-loop Poisson arrivals at a fixed rate against a
// workload, over a fixed set of connection workers, with a pool-wait rejection, latency
// from the intended start in HDR histograms, errors by SQLSTATE class, a per-second
// series, and books that always balance.
//
// # Semantics
//
// Arrivals are Poisson: exponential gaps accumulated as absolute intended times from the
// probe start (never sleep(gap)); at high rates the rate is split into k independent
// streams of rate/k, each scheduled by its own goroutine. An arrival becomes a timestamp
// in a bounded queue; one of Conns workers, each holding one pooled connection (opened
// before the probe starts, reopened after a connection error), takes it.
// An arrival that has not started within PoolWait of its intended time is rejected
// (pool_timeout) without running; so is an arrival that finds the queue full.
//
// Latency runs from the intended start to the end of COMMIT; service time from the actual
// start; queue wait from the intended to the actual start. Latency and service time are
// recorded for committed transactions, queue wait for every arrival that started.
//
// # Books
//
// The measured window is [Warmup, W) on the probe's clock, where W is Warmup+Duration, or
// the moment the probe was stopped early (interrupted, the error budget exhausted, a trend
// decided by Config.StopIf, the server gone). Every arrival the scheduler generated with an intended time in the window is Scheduled
// and ends in exactly one outcome: committed; failed by class; or rejected (pool_timeout:
// queue full, not started within PoolWait, or still queued when the drain grace ran out).
// After the window closes the driver stops issuing, lets workers finish the queue and
// in-flight work within Drain, then cancels what is left: a transaction cancelled that way
// counts as failed (class other) and as uncertain in the checks, because its COMMIT may or
// may not have reached the server. So Scheduled == Committed + Failed.Total() + Rejected
// holds in every result, interrupted or cut short included.
//
// Commits are also counted by when their COMMIT ended: CommittedInWindow counts those that
// ended inside the window, whatever the arrival's intended time (a warm-up arrival that
// commits just after Warmup counts), and DrainCommitted the window's arrivals that
// committed after W, in the drain. The achieved rate is CommittedInWindow / (W - Warmup):
// the server's throughput during the window. Past the knee the queue at W is long, and
// crediting the window with what the drain committed would overstate it.
//
// An arrival's values are drawn once (Script.Start); a retry of a serialization failure
// or deadlock (MaxTries > 1) sends the same transaction again, as an application retries
// its request. Retries counts the retries of the window's arrivals only.
//
// # Driver limits
//
// A probe is driver_limited when the scheduler's lag behind intended times has a p99 above
// LagBound (the driver could not issue arrivals on time), or when the process used more
// than 90 % of the cores it had (GOMAXPROCS at the probe's end) over the probe (the
// client, not the server, was saturated). Such a probe measures the driver and is not a
// valid knee.
//
// # Client CPU
//
// Three things keep the driver's own CPU near pgbench's on the same SQL: the pool's
// sockets read and write without the runtime's syscall bookkeeping (rawConn), a probe
// starts on one P and takes more only when it uses them (Config.Threads), and
// transactions run on a context that never ends, so pgx does not arm a context watcher
// per statement; the end of the drain interrupts in-flight statements through their
// sockets' deadlines instead.
package driver
