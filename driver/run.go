package driver

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// Config is one probe's settings. Zero values take the documented defaults.
type Config struct {
	Rate   float64       // offered arrivals per second; required, > 0
	Warmup time.Duration // unmeasured lead-in
	// Ramp is how long the offered rate takes to rise, linearly from 0, to Rate at the
	// warm-up's start: 0 is half the warm-up, a negative value none, and it never exceeds
	// the warm-up (the measured window always runs at Rate). Every probe opens fresh
	// sessions, whose first statements load the catalog and plan anew, right after a
	// CHECKPOINT, whose first changes to each page write full-page images: at full rate from
	// the first instant that cost the server about a quarter-second of service, and the
	// backlog it leaves drains slowly near the knee, so without a ramp a probe's verdict
	// near the knee depended on its own start (k6's ramping-arrival-rate does the same).
	Ramp     time.Duration
	Duration time.Duration // measured window; required, > 0
	Conns    int           // connection workers, each holding one pooled connection; default 50
	PoolWait time.Duration // an arrival not started within this of its intended time is rejected; default 1 s
	Seed     int64         // seeds the arrival streams and the workers' key choosers
	MaxTries int           // attempts per arrival; only serialization and deadlock failures are retried; default 1
	Streams  int           // arrival streams of Rate/Streams each; 0 = one per 5,000/s, at most 8

	// ErrorBudget, when > 0, stops the probe early (CutShort, CutBy errors) as soon as
	// failed + rejected in the measured window exceed it: the probe can no longer pass, so
	// it stops costing time. A probe within budget always runs its full length.
	ErrorBudget int64
	// StopIf, if set, is asked about once a second, while the measured window runs and the
	// probe is not already stopping, whether a trend in the measured window's seconds is
	// decided (the steady-state rule). It is called from the driver's own goroutine, only
	// when seconds were summarised since the last call, with every measured second
	// summarised so far; it may read the slice but not keep it. A non-empty answer stops
	// the probe as the error budget does: the result is CutShort with CutBy trend and the
	// answer as CutReason. It must return quickly.
	StopIf func(measured []result.Second) string
	// Drain is the grace for queued and in-flight work after the window closes; then what
	// remains is cancelled. The last arrival may start a pool wait late and then run up to
	// the statement timeout, so callers size it as PoolWait + statement_timeout; the
	// default, PoolWait + 5 s, assumes the default statement timeout.
	Drain time.Duration
	// GoneAfter is how long every outcome may be a connection failure, with no commit,
	// before the driver tries one fresh connection and, when that fails too, stops the
	// probe as "server went away" instead of waiting out the window; default 5 s.
	GoneAfter time.Duration
	// LagBound is the scheduler lag p99 above which the probe is driver_limited; default a
	// tenth of PoolWait, at least 10 ms. Lag counts against the arrival's pool wait (queue
	// wait runs from the intended time), so a lag well inside the pool wait does not hide
	// server trouble; a lag near it means the driver, not the server, rejected arrivals.
	LagBound time.Duration
	// Threads is how many cores (GOMAXPROCS) the probe's Go code may use. With the loop
	// engine it is the number of loops (at most Conns), each on its own thread and core,
	// and 0 (auto) starts with one and adds a loop, and its core, after each judged second
	// in which the loops were more than 75 % busy, up to the GOMAXPROCS the probe found
	// (loops_grow_linux.go). With the pgx engine 0 (auto) starts on one, like pgbench's default
	// single thread, and doubles after each second in which the process used more than
	// 75 % of the cores it has, up to the GOMAXPROCS the probe found; n > 0 fixes it at
	// n. One core is the cheapest way to drive a server: with more, the runtime wakes idle
	// threads for every reply. The setting is restored at the end of the probe.
	Threads int
	// Engine is how the probe drives its connections: "loop" (one goroutine, epoll, the
	// wire protocol spoken directly over prepared statements: pgbench's design and the
	// cheapest on client CPU), "pgx" (a goroutine per connection through pgx: every
	// --exec-mode, TLS, and as many cores as GOMAXPROCS) or "" / "auto": loop when it can
	// run (a script workload, exec mode cache_statement, plain TCP or Unix sockets on
	// Linux), else pgx. Each loop runs on one core: Threads loops (from one when auto).
	Engine result.Engine

	// CopyBatch and CopyWait are the copy engine's batches, for a workload whose arrivals
	// are rows (workload.Copier): a batch closes at CopyBatch rows or when its oldest row
	// has waited CopyWait since its intended time, whichever comes first (batch.go).
	// Zero takes DefaultCopyBatch and DefaultCopyWait; a negative CopyWait is no wait (a
	// batch of what has arrived starts whenever a connection is free). CopyWait must be
	// below PoolWait, or rows would expire waiting for their batch.
	CopyBatch int
	CopyWait  time.Duration

	// SyncCommit is recorded in the result ("on"/"off"); the workload applies it.
	SyncCommit result.SyncCommit
	// Observer, if set, watches the server during the measured window.
	Observer Observer
	// OnSecond, if set, is called about once a second from the driver's own goroutine with
	// the latest completed second of the series (zero before there is one) and live totals.
	// It must return quickly.
	OnSecond func(result.Second, Live)
	// OnSummary, if set, is called from the driver's own goroutine once for every second of
	// the series as it is summarised (in order, the last ones when the probe ends), with
	// the second's latency and queue-wait histograms in µs (nil when empty), which the
	// driver no longer uses: the callee may keep them. For live metrics; it must return
	// quickly.
	OnSummary func(s result.Second, latency, queueWait *hdrhistogram.Histogram)
	// CountRows counts a pgceiling table's rows for the row check; default count(*).
	CountRows func(ctx context.Context, table string) (int64, error)

	// StartAt, when set, is the instant the probe's clock starts (its first arrival's
	// origin): the probe connects first, then waits for it, so several processes can start
	// one probe together (package fleet). An instant already past starts the probe at once.
	StartAt time.Time
	// OnHistograms, if set, is called once the books are closed with the measured window's
	// merged latency, service-time and queue-wait histograms (µs), which the driver no
	// longer uses: the callee may keep them. Several processes' probes merge exactly
	// through them (package fleet).
	OnHistograms func(latency, service, queueWait *hdrhistogram.Histogram)
}

// Engines (Config.Engine).
const (
	EngineAuto = result.EngineAuto
	EngineLoop = result.EngineLoop
	EnginePGX  = result.EnginePGX
)

// Live is the probe's state as it runs, for a progress line.
type Live struct {
	Elapsed      time.Duration // since the probe started, warm-up included
	Phase        string        // warmup, measure or drain
	OfferedRate  float64       // arrivals issued in the last tick, per second
	AchievedRate float64       // commits in the last tick, per second
	P99Ms        float64       // p99 latency of the latest completed second
	Queue        int           // arrivals waiting now
	Errors       int64         // failed + rejected so far, warm-up included
	Committed    int64         // committed so far, warm-up included
}

func (c Config) withDefaults() Config {
	if c.Conns == 0 {
		c.Conns = result.DefaultConns
	}
	if c.PoolWait == 0 {
		c.PoolWait = result.DefaultPoolWait
	}
	if c.MaxTries == 0 {
		c.MaxTries = result.DefaultMaxTries
	}
	if c.Streams == 0 {
		c.Streams = autoStreams(c.Rate)
	}
	c.Streams = streamsFor(c.Streams, c.loops()) // every loop owns Streams/loops of them
	if c.Drain == 0 {
		c.Drain = c.PoolWait + 5*time.Second
	}
	if c.GoneAfter == 0 {
		c.GoneAfter = 5 * time.Second
	}
	if c.CopyBatch == 0 {
		c.CopyBatch = DefaultCopyBatch
	}
	if c.CopyWait == 0 {
		c.CopyWait = DefaultCopyWait
	}
	if c.LagBound == 0 {
		c.LagBound = max(c.PoolWait/10, 10*time.Millisecond)
	}
	return c
}

// ramp is the warm-up's ramp (Ramp with its default and bound applied).
func (c Config) ramp() time.Duration {
	switch {
	case c.Ramp < 0:
		return 0
	case c.Ramp == 0:
		return c.Warmup / 2
	}
	return min(c.Ramp, c.Warmup)
}

func (c Config) check() error {
	switch {
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("probe: rate must be a finite number > 0, got %v", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("probe: duration must be > 0, got %v", c.Duration)
	case c.Engine != "" && c.Engine != EngineAuto && c.Engine != EngineLoop && c.Engine != EnginePGX:
		return fmt.Errorf("probe: engine must be auto, loop or pgx, got %q", c.Engine)
	case c.Warmup < 0, c.Conns < 1, c.PoolWait < 0, c.MaxTries < 1, c.Streams < 1, c.Drain < 0, c.Threads < 0:
		return fmt.Errorf("probe: invalid config (warmup %v, conns %d, pool wait %v, max tries %d, streams %d, drain %v, threads %d)",
			c.Warmup, c.Conns, c.PoolWait, c.MaxTries, c.Streams, c.Drain, c.Threads)
	}
	return nil
}

// Run runs one probe of w at cfg.Rate on pool and returns its result. The pool must allow
// at least cfg.Conns connections. When ctx is cancelled the probe stops issuing, closes its
// books and returns the partial result marked Interrupted (with a nil error). An error is
// returned only when the probe could not run at all (bad config, server unreachable
// before the start).
func Run(ctx context.Context, pool *pgxpool.Pool, w workload.Workload, cfg Config) (*result.Probe, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if mc := int(pool.Config().MaxConns); mc < cfg.Conns {
		return nil, fmt.Errorf("probe: the pool allows %d connections, %d workers asked for", mc, cfg.Conns)
	}
	defer retire(ctx, pool)
	p := &result.Probe{Workload: w.Name(), SyncCommit: cfg.SyncCommit, TargetRate: cfg.Rate,
		Seed: cfg.Seed, Conns: cfg.Conns, PoolWaitMs: float64(cfg.PoolWait.Microseconds()) / 1000,
		WarmupS: cfg.Warmup.Seconds(), RampS: cfg.ramp().Seconds(), DurationS: cfg.Duration.Seconds()}
	brief, err := serverBrief(ctx, pool)
	if err != nil {
		return nil, err
	}
	p.Server = brief
	count := cfg.CountRows
	if count == nil {
		count = func(ctx context.Context, table string) (int64, error) { return countRows(ctx, pool, table) }
	}
	p.Checks.Table = w.Table()
	if rt, ok := w.(workload.RowsPerTxer); ok && rt.RowsPerTx() > 1 {
		p.RowsPerTx = rt.RowsPerTx()
	}
	if p.Checks.Table != "" { // "": no row-per-transaction table (custom scripts): no row check
		if p.Checks.RowsBefore, err = count(ctx, w.Table()); err != nil {
			return nil, err
		}
	}
	p.RowsAtStart = p.Checks.RowsBefore
	snap, _ := w.(workload.Checker)
	if snap != nil {
		if p.Checks.BalanceBefore, err = snapshot(ctx, pool, snap); err != nil {
			return nil, err
		}
	}

	if sr, ok := w.(workload.SkewResetter); ok {
		sr.ResetSkew() // the skew recorded is this probe's own
	}
	if cr, ok := w.(workload.CheckReporter); ok {
		cr.ResetCheckRead() // so is what the fraud check read
	}
	r := newProbeRun(ctx, pool, w, cfg)
	if err := r.connect(ctx); err != nil {
		return nil, err
	}
	if r.eng, err = newEngine(ctx, r.env); err != nil {
		return nil, err
	}
	p.Engine = r.eng.name()
	defer runtime.GOMAXPROCS(r.threads.startEngine(cfg.Threads, r.eng))
	if wait := time.Until(cfg.StartAt); !cfg.StartAt.IsZero() && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done(): // the probe then starts and stops at once, marked interrupted
			t.Stop()
		}
	}
	cpu0 := cpuTime()
	p.StartedAt = time.Now().UTC()
	r.run(ctx)
	wall := time.Since(r.b.start)
	p.ClientCPUSeconds = (cpuTime() - cpu0).Seconds()
	p.DriverThreads = runtime.GOMAXPROCS(0)
	if lb, ok := r.eng.(interface{ busy() []float64 }); ok {
		p.LoopBusy = lb.busy()
		p.Loops = len(p.LoopBusy)
	}
	if la, ok := r.eng.(interface{ addedAt() []float64 }); ok {
		p.LoopsAddedS = la.addedAt()
	}
	r.fill(p)
	if n := r.b.warm.committed.Load() + r.b.meas.committed.Load(); n > 0 {
		p.ClientCPUPerTxMs = p.ClientCPUSeconds * 1000 / float64(n)
	}
	if ce, ok := r.eng.(*copyEngine); ok {
		ce.fillResult(p)
	}

	// The checks use a context that survives an interruption: the books must be verified.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	r.check(cctx, p, count, snap, pool)
	if p.DriverLimitReason == "" && wall > 0 {
		if share := p.ClientCPUSeconds / wall.Seconds(); share > 0.9*float64(p.DriverThreads) {
			p.DriverLimited = true
			p.DriverLimitReason = fmt.Sprintf("client CPU %.2f cores of %d", share, p.DriverThreads)
		}
	}
	return p, nil
}

// retire closes the pool's connections as the probe ends, so the next probe opens its own:
// nothing a session keeps (its plan cache above all: the first five executions of a
// prepared statement are planned anew, then the session may settle on a generic plan)
// crosses from one probe to the next, and each probe of a search starts as a lone run
// does, rather than on a mix of sessions as old as the search and fresh ones (an
// overloaded probe's drain closes the connections it cuts off). The idle connections are
// closed here and now, so their server slots are free before the next probe connects;
// one still out (none should be) is closed when it comes back.
func retire(ctx context.Context, pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, c := range pool.AcquireAllIdle(ctx) {
		_ = c.Conn().Close(ctx)
		c.Release() // a closed connection is destroyed, not pooled
	}
	pool.Reset()
}

// probeRun is one probe as it runs: the probe's own goroutine (run) opens and closes the
// measured window, summarises seconds, asks StopIf, prints progress and watches the
// server, while the engine (eng) works the arrivals and books their outcomes (b).
type probeRun struct {
	pool *pgxpool.Pool
	w    workload.Workload
	cfg  Config
	b    *books
	stop *stopper
	env  *probeEnv
	eng  engine
	// workCtx ends at the end of the drain; the engines' transactions run on contexts
	// that never end (so pgx spends nothing per statement watching one) and are cut off
	// through their sockets instead (engine.cut).
	workCtx    context.Context
	cancelWork context.CancelFunc
	threads    threads
	workers    []*worker
	// measured is the measured window's summarised seconds, for StopIf (capacity for the
	// whole window, so appending never reallocates); stopIfAsked is len(measured) at the
	// last call.
	measured    []result.Second
	stopIfAsked int
	gone        atomic.Bool // stopped because the server went away
	broken      atomic.Bool // stopped because the driver failed (fail)
	watch       serverWatch
	drained     atomic.Bool
	obsErr      error
	obsStarted  bool
	nextFinal   int
	lastSecond  result.Second
	lastIssued  int64
	sched       *scheduler
}

func newProbeRun(ctx context.Context, pool *pgxpool.Pool, w workload.Workload, cfg Config) *probeRun {
	r := &probeRun{pool: pool, w: w, cfg: cfg, stop: newStopper()}
	r.b = newBooks(cfg, r.stop)
	// Work runs on a context of its own: an interruption stops issuing, but in-flight
	// work drains within the grace before it is cancelled.
	r.workCtx, r.cancelWork = context.WithCancel(context.WithoutCancel(ctx))
	if cfg.StopIf != nil {
		r.measured = make([]result.Second, 0, len(r.b.secs)-int(cfg.Warmup/time.Second))
	}
	for i := range cfg.Conns {
		r.workers = append(r.workers, newWorker(cfg.Seed, i))
	}
	// Poisson counts in one pool wait rarely exceed mean + 6 sd; past that, the arrival
	// would be rejected anyway. The cap is a safety net: a million waiting arrivals is
	// overload whatever the rate, and the queue must never grow with rate x pool wait
	// unchecked.
	mean := cfg.Rate * cfg.PoolWait.Seconds()
	qcap := min(int(mean+6*math.Sqrt(mean))+cfg.Conns+64, 1<<20)
	script, _ := w.(workload.Script)
	r.env = &probeEnv{pool: pool, w: w, script: script, cfg: cfg, b: r.b, workers: r.workers, qcap: qcap,
		ctx: r.workCtx, fail: r.fail}
	r.sched = newScheduler(r.b, cfg)
	return r
}

// connect opens every worker's connection before the probe starts, so connection setup
// is never measured as latency nor delays the first arrivals, and warms each new session
// with the workload's WarmSQL (workload.Warmer), so neither is its first use of the
// tables' catalog entries.
func (r *probeRun) connect(ctx context.Context) error {
	warm := ""
	if wm, ok := r.w.(workload.Warmer); ok {
		warm = wm.WarmSQL()
	}
	errs := make(chan error, len(r.workers))
	for _, wk := range r.workers {
		go func() {
			c, err := r.pool.Acquire(ctx)
			if err == nil && warm != "" {
				if _, err = c.Conn().PgConn().Exec(ctx, warm).ReadAll(); err != nil {
					c.Release()
					errs <- fmt.Errorf("warm the session: %w", err)
					return
				}
			}
			if err == nil {
				wk.hold(c)
			}
			errs <- err
		}()
	}
	var first error
	for range r.workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		for _, wk := range r.workers {
			wk.release()
		}
		return fmt.Errorf("open %d connections: %w", len(r.workers), first)
	}
	return nil
}

func (r *probeRun) phaseOf(at time.Duration) string {
	if at < r.cfg.Warmup {
		return result.PhaseWarmup
	}
	return result.PhaseMeasure
}

// fail stops the probe because the driver itself failed; the result says why.
func (r *probeRun) fail(reason string) {
	r.broken.Store(true)
	r.halt(result.CutByServer, reason)
}

// halt stops issuing at the current offset; the measured window ends there. by says what
// stopped the probe (a result.CutBy*, "" for an interruption); the first halt wins.
func (r *probeRun) halt(by, reason string) { r.stop.halt(time.Since(r.b.start), by, reason) }

// run is the probe proper: the engine, the window's end, the drain.
func (r *probeRun) run(ctx context.Context) {
	defer r.cancelWork()
	r.b.start = time.Now()
	schedDone := make(chan struct{})
	workDone := make(chan struct{})
	r.sched.offer = r.eng.offer
	go func() {
		defer close(workDone)
		r.eng.run(r.sched, func() { close(schedDone) })
	}()

	tick := time.NewTicker(time.Second) // progress only; arrivals never use it
	defer tick.Stop()
	var windowC <-chan time.Time
	if r.cfg.Warmup > 0 {
		window := time.NewTimer(r.cfg.Warmup)
		defer window.Stop()
		windowC = window.C
	} else {
		r.startObserver()
	}
	var last Live
	var drainC <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case <-ctxDone:
			ctxDone = nil
			r.halt("", "interrupted")
		case <-windowC:
			windowC = nil
			if r.stop.offset() < 0 {
				r.startObserver()
			}
		case <-schedDone:
			schedDone = nil
			r.drained.Store(true)
			d := time.NewTimer(r.cfg.Drain)
			defer d.Stop()
			drainC = d.C
		case <-drainC:
			drainC = nil
			r.b.cut.Store(true) // what is still queued is rejected, in-flight work is cancelled
			r.cancelWork()
			r.eng.cut()
		case <-workDone:
			r.finalize(true)
			return
		case <-tick.C:
			r.finalize(false)
			r.askStopIf()
			last = r.progress(last)
			r.watchServer()
			r.threads.tick()
		}
	}
}

func (r *probeRun) startObserver() {
	if r.cfg.Observer == nil {
		return
	}
	r.obsStarted = true
	if err := r.cfg.Observer.Start(r.workCtx); err != nil {
		r.obsErr = fmt.Errorf("observer start: %w", err)
		r.obsStarted = false
	}
}

// finalize summarises every second whose arrivals all have outcomes (all, when force).
func (r *probeRun) finalize(force bool) {
	// A second is final once it has passed on the clock too: an auto loop engine adds
	// streams from the moment it grows (loopEngine.grow), never in a second before it.
	progress := min(r.sched.progress(), int64(time.Since(r.b.start)))
	secs := r.b.secs
	for r.nextFinal < len(secs) {
		t := r.nextFinal
		if !force && int64(t+1)*int64(time.Second) > progress {
			return
		}
		ok, lat, qw := secs[t].summarise(t, r.phaseOf(time.Duration(t)*time.Second), force)
		if !ok {
			return
		}
		r.lastSecond = secs[t].out
		if r.cfg.OnSummary != nil {
			r.cfg.OnSummary(r.lastSecond, lat, qw)
		}
		if r.measured != nil && r.lastSecond.Phase == result.PhaseMeasure && len(r.measured) < cap(r.measured) {
			r.measured = append(r.measured, r.lastSecond)
		}
		r.nextFinal++
	}
}

// askStopIf asks Config.StopIf about the measured seconds summarised so far, when there
// are new ones, the window is still open and nothing is stopping the probe; a decided
// trend halts it.
func (r *probeRun) askStopIf() {
	if r.cfg.StopIf == nil || len(r.measured) == r.stopIfAsked || r.stop.offset() >= 0 || time.Since(r.b.start) >= r.b.end {
		return
	}
	r.stopIfAsked = len(r.measured)
	if why := r.cfg.StopIf(r.measured[:len(r.measured):len(r.measured)]); why != "" {
		r.halt(result.CutByTrend, why)
	}
}

func (r *probeRun) progress(last Live) Live {
	el := time.Since(r.b.start)
	phase := r.phaseOf(el)
	if r.drained.Load() {
		phase = result.PhaseDrain
	}
	lv := Live{Elapsed: el, Phase: phase, P99Ms: r.lastSecond.P99Ms, Queue: r.eng.waiting(),
		Errors: r.b.warm.bad() + r.b.meas.bad(), Committed: r.b.committed.Load()}
	issued := r.b.issued.Load()
	if dt := (el - last.Elapsed).Seconds(); dt > 0 {
		lv.AchievedRate = float64(lv.Committed-last.Committed) / dt
		lv.OfferedRate = float64(issued-r.lastIssued) / dt
	}
	r.lastIssued = issued
	if r.cfg.OnSecond != nil {
		r.cfg.OnSecond(r.lastSecond, lv)
	}
	return lv
}

// serverWatch is the state of the check for a server that went away for good.
type serverWatch struct {
	committed int64
	fails     int64     // connection failures when the quiet spell began
	since     time.Time // when commits stopped while connection failures came
}

// watchServer stops the probe when, for GoneAfter, nothing committed while connection
// failures kept coming and one fresh connection fails too: the server went away, and
// waiting out the window would only delay the partial result.
func (r *probeRun) watchServer() {
	w := &r.watch
	committed, fails := r.b.committed.Load(), r.b.connFails.Load()
	if committed != w.committed {
		w.committed, w.since = committed, time.Time{}
		return
	}
	if w.since.IsZero() {
		if fails > w.fails {
			w.since = time.Now()
		}
		w.fails = fails
		return
	}
	if time.Since(w.since) < r.cfg.GoneAfter || fails == w.fails || r.stop.offset() >= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.workCtx, 2*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig)
	if err == nil {
		_ = conn.Close(ctx)
		w.since, w.fails = time.Time{}, fails
		return
	}
	r.gone.Store(true)
	r.halt(result.CutByServer, fmt.Sprintf("the server went away: no commit and only connection errors for %v, and a new connection fails: %v",
		time.Since(w.since).Round(time.Second), err))
}
