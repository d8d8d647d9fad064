// Package driver runs one probe: open-loop Poisson arrivals at a fixed rate against a
// workload, over a fixed set of connection workers, with a pool-wait rejection, latency
// from the intended start in HDR histograms, errors by SQLSTATE class, a per-second
// series, and books that always balance.
//
// # Semantics
//
// Arrivals are Poisson: exponential gaps accumulated as absolute intended times from the
// probe start (never sleep(gap)); at high rates the rate is split into k independent
// streams of rate/k. An arrival becomes a timestamp in a bounded queue; one of Conns
// connections (opened before the probe starts, reopened after a connection error) takes
// it. An arrival that has not started within PoolWait of its intended time is rejected
// (pool_timeout) without running, at that moment, whether or not a connection frees up
// later; so is an arrival that finds the queue full. QueueDepth is the most arrivals that
// waited for a connection beyond the idle ones, the new arrival included.
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
// An arrival's values are drawn once, when a connection takes it (Script.Start; a plain
// Workload draws in Do, and its connection's RNG is rewound for a retry); a retry of a
// serialization failure or deadlock (MaxTries > 1) sends the same transaction again, as
// an application retries its request. Retries counts the retries of the window's
// arrivals only.
//
// # Engines
//
// Two engines drive the connections behind one small interface (engine, engine.go), and
// share everything but how they wait:
//
//   - the loop (loop_linux.go, loops_linux.go; the default where it can run): k loops
//     (Config.Threads; by default one, and more as they get busy: loops_grow_linux.go),
//     each one goroutine on its own thread that issues its own streams' arrivals, waits
//     for its connections' sockets in its own epoll and
//     speaks the protocol itself (wire.go, on internal/pgwire, on pgx's pgproto3):
//     pgbench's design, the cheapest on client CPU; the loops share one pool through
//     the lobby (loops_linux.go);
//   - pgx (engine_pgx.go): a goroutine per connection over pgx, a goroutine per arrival
//     stream, and a reaper that rejects waiting arrivals on time; every exec mode, TLS,
//     and workloads that are not scripts.
//
// Who owns what. The probe (Run, probeRun in run.go) opens Conns pooled connections, one
// per worker (engine.go), before the probe starts, and hands the workers to the engine,
// which owns them until its run returns and gives them back to the pool (the loop
// borrows each one's socket from pgx meanwhile). The probe's own goroutine only keeps
// time: it opens and closes the window, summarises seconds, asks StopIf, prints
// progress, watches the server, and at the end of the drain sets books.cut and calls
// engine.cut.
//
// How an arrival flows:
//
//	scheduler (engine.go: a goroutine per stream for pgx, scheduler.due on each loop's goroutine)
//	  -> books.arrive, engine.offer (the bounded queue), books.offered
//	  -> a connection takes it: books.admit (the pool-wait rule), job.start (values drawn once)
//	  -> workload.Txn, the one transaction state machine (BEGIN, SET LOCAL, steps, COMMIT,
//	     rollback or close), run over pgx (Txn.Run) or over the wire (wireConn)
//	  -> books.retry (the retry rule), then books.finish (or noConn, cancelled, reject)
//
// Where the books are kept. books (books.go) holds every count: the phases' tallies, the
// per-second series (second), the scheduler's lag, the window's commits, the uncertain
// and connection-failure counts; each worker's sheet holds its connection's histograms
// and retries, merged by fill (finish.go) when the probe ends. Nothing else books an
// outcome.
//
// Where to make a change:
//
//   - when an arrival is rejected, retried or how an outcome is counted: books.go;
//   - what a transaction sends and when it rolls back: workload/txn.go (both engines);
//   - the bytes on the wire: wire.go and internal/pgwire;
//   - how connections are waited for: engine_pgx.go or loop_linux.go (and rawsys_linux.go,
//     the raw system calls and why they are raw);
//   - a new engine (several loops at once): a type that implements engine, chosen in
//     newEngine;
//   - how the copy workload's rows are batched and when a row is rejected waiting for its
//     batch: batch.go (the copy engine, chosen in newEngine for a workload.Copier);
//   - the result's fields: fill and check in finish.go.
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
// The loop engine is the cheapest: no goroutine switch per statement, and a transaction
// allocates nothing on its way (TestWireTransactionAllocatesNothing). For the pgx engine
// three things keep the driver's own CPU down: the pool's sockets read and write without
// the runtime's syscall bookkeeping (rawConn), a probe starts on one P and takes more
// only when it uses them (Config.Threads), and transactions run on a context that never
// ends, so pgx does not arm a context watcher per statement; the end of the drain
// interrupts in-flight statements through their sockets' deadlines instead (the loop
// sends a cancel request and closes the connection).
package driver
