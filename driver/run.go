package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
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
	Rate     float64       // offered arrivals per second; required, > 0
	Warmup   time.Duration // unmeasured lead-in
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
	// Threads is how many cores (GOMAXPROCS) the probe's Go code may use. 0 (auto) starts
	// on one, like pgbench's default single thread, and doubles after each second in which
	// the process used more than 75 % of the cores it has, up to the GOMAXPROCS the probe
	// found; n > 0 fixes it at n. One core is the cheapest way to drive a server: with
	// more, the runtime wakes idle threads for every reply. The setting is restored at
	// the end of the probe.
	Threads int
	// Engine is how the probe drives its connections: "loop" (one goroutine, epoll, the
	// wire protocol spoken directly over prepared statements: pgbench's design and the
	// cheapest on client CPU), "pgx" (a goroutine per connection through pgx: every
	// --exec-mode, TLS, and as many cores as GOMAXPROCS) or "" / "auto": loop when it can
	// run (a script workload, exec mode cache_statement, plain TCP or Unix sockets on
	// Linux), else pgx. The loop runs on one core: an auto Threads stays at 1.
	Engine string

	// SyncCommit is recorded in the result ("on"/"off"); the workload applies it.
	SyncCommit string
	// Observer, if set, watches the server during the measured window.
	Observer Observer
	// OnSecond, if set, is called about once a second from the driver's own goroutine with
	// the latest completed second of the series (zero before there is one) and live totals.
	// It must return quickly.
	OnSecond func(result.Second, Live)
	// CountRows counts a pgceiling table's rows for the row check; default count(*).
	CountRows func(ctx context.Context, table string) (int64, error)
}

// Engines (Config.Engine).
const (
	EngineAuto = "auto"
	EngineLoop = "loop"
	EnginePGX  = "pgx"
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
		c.Conns = 50
	}
	if c.PoolWait == 0 {
		c.PoolWait = time.Second
	}
	if c.MaxTries == 0 {
		c.MaxTries = 1
	}
	if c.Streams == 0 {
		c.Streams = autoStreams(c.Rate)
	}
	if c.Drain == 0 {
		c.Drain = c.PoolWait + 5*time.Second
	}
	if c.GoneAfter == 0 {
		c.GoneAfter = 5 * time.Second
	}
	if c.LagBound == 0 {
		c.LagBound = max(c.PoolWait/10, 10*time.Millisecond)
	}
	return c
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
	p := &result.Probe{Workload: w.Name(), SyncCommit: cfg.SyncCommit, TargetRate: cfg.Rate,
		Seed: cfg.Seed, Conns: cfg.Conns, PoolWaitMs: float64(cfg.PoolWait.Microseconds()) / 1000,
		WarmupS: cfg.Warmup.Seconds(), DurationS: cfg.Duration.Seconds()}
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
	if p.Checks.RowsBefore, err = count(ctx, w.Table()); err != nil {
		return nil, err
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
	r := newProbeRun(pool, w, cfg)
	if err := r.connect(ctx); err != nil {
		return nil, err
	}
	if err := r.pickEngine(ctx); err != nil {
		return nil, err
	}
	p.Engine = EnginePGX
	if r.lp != nil {
		p.Engine = EngineLoop
	}
	defer runtime.GOMAXPROCS(r.threads.start(cfg.Threads, r.lp != nil))
	cpu0 := cpuTime()
	p.StartedAt = time.Now().UTC()
	r.run(ctx)
	wall := time.Since(r.start)
	p.ClientCPUSeconds = (cpuTime() - cpu0).Seconds()
	p.DriverThreads = runtime.GOMAXPROCS(0)
	r.fill(p)

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

// pickEngine builds the loop engine when Config.Engine allows it and it can run.
func (r *probeRun) pickEngine(ctx context.Context) error {
	if r.cfg.Engine == EnginePGX {
		return nil
	}
	why := loopAvailable(r.pool, r.w)
	if why == "" { // newLoop finds sockets it cannot drive (TLS)
		lp, err := newLoop(ctx, r, r.w.(workload.Script))
		if err == nil {
			r.lp = lp
			return nil
		}
		why = err.Error()
	}
	if r.cfg.Engine == EngineLoop {
		for _, wk := range r.workers {
			wk.release()
		}
		return fmt.Errorf("engine loop cannot run: %s (use --engine pgx or auto)", why)
	}
	return nil
}

// arrival is one waiting arrival: its intended offset from the probe start.
type arrival struct{ at time.Duration }

// worker is one connection worker with its own key RNG and histograms.
type worker struct {
	rng            *rand.Rand
	conn           *pgxpool.Conn
	tx             workload.Tx             // the pgx engine's transaction of a script workload
	lat, svc, wait *hdrhistogram.Histogram // measured window only
	retries        int64                   // retries of measured-window arrivals

	mu   sync.Mutex // guards sock and cut against interrupt from the probe's goroutine
	sock net.Conn   // conn's socket
	cut  bool       // interrupt set sock's deadline
}

// hold makes c the worker's connection.
func (wk *worker) hold(c *pgxpool.Conn) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	wk.conn, wk.sock = c, c.Conn().PgConn().Conn()
}

// detach takes the worker's connection away from it, for closing.
func (wk *worker) detach() *pgxpool.Conn {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	c := wk.conn
	wk.conn, wk.sock, wk.cut = nil, nil, false
	return c
}

// release gives the worker's connection back to the pool. A connection interrupted while
// the worker was between transactions is still sound: its deadline is cleared so the
// next probe on the pool can use it. One interrupted mid-statement was closed by pgx, and
// the pool discards it.
func (wk *worker) release() {
	wk.mu.Lock()
	c, sock, cut := wk.conn, wk.sock, wk.cut
	wk.conn, wk.sock = nil, nil
	wk.mu.Unlock()
	if c == nil {
		return
	}
	if cut {
		_ = sock.SetDeadline(time.Time{})
	}
	c.Release()
}

// interrupt makes the worker's in-flight statement, if any, fail at once: its socket's
// deadline passes, so the read or write in progress returns a timeout.
func (wk *worker) interrupt() {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if wk.sock != nil {
		wk.cut = true
		_ = wk.sock.SetDeadline(time.Now())
	}
}

type probeRun struct {
	pool    *pgxpool.Pool
	w       workload.Workload
	script  workload.Script // w, when it is a script: drawn once per arrival, retried as drawn
	cfg     Config
	start   time.Time
	end     time.Duration // warmup + duration
	streams []*stream
	lags    []*hdrhistogram.Histogram // per stream, measured window
	prog    []atomic.Int64            // per stream: every arrival before this offset was issued
	queue   chan arrival              // the pgx engine's waiting arrivals; nil with the loop
	qcap    int                       // the bound on waiting arrivals
	secs    []*second
	warm    tally
	meas    tally
	// inWindow counts commits that ended inside the measured window, whatever the
	// arrival's phase; drainCommitted, measured-window arrivals that committed after it.
	inWindow       atomic.Int64
	drainCommitted atomic.Int64
	// measured is the measured window's summarised seconds, for StopIf (capacity for the
	// whole window, so appending never reallocates); stopIfAsked is len(measured) at the
	// last call.
	measured    []result.Second
	stopIfAsked int

	stopOnce   sync.Once
	stop       chan struct{}
	stopAt     atomic.Int64 // offset where issuing stopped early; -1 while running
	stopReason string       // set before stop is closed
	stopBy     string       // what stopped the probe first: a result.CutBy*, or "" when interrupted
	budgetHit  atomic.Bool
	gone       atomic.Bool  // stopped because the server went away
	broken     atomic.Bool  // stopped because the driver failed (fail)
	connFails  atomic.Int64 // connection failures so far, for the server watch
	watch      serverWatch

	// workCtx ends at the end of the drain. Transactions run on doCtx, which never ends
	// (so pgx spends nothing per statement watching it); the end of the drain reaches
	// them through their sockets' deadlines instead (worker.interrupt).
	workCtx    context.Context
	cancelWork context.CancelFunc
	doCtx      context.Context
	threads    threads
	workers    []*worker
	lp         *loop        // the event-loop engine, nil for the pgx engine
	depth      atomic.Int64 // arrivals waiting, as the loop last saw them
	uncertain  atomic.Int64
	committed  atomic.Int64 // all commits so far, for the live rate
	issued     atomic.Int64 // all arrivals so far
	drained    atomic.Bool
	obsErr     error
	obsStarted bool
	nextFinal  int
	lastSecond result.Second
	lastIssued int64
}

func newProbeRun(pool *pgxpool.Pool, w workload.Workload, cfg Config) *probeRun {
	r := &probeRun{pool: pool, w: w, cfg: cfg, end: cfg.Warmup + cfg.Duration,
		stop: make(chan struct{}), prog: make([]atomic.Int64, cfg.Streams)}
	r.script, _ = w.(workload.Script)
	r.stopAt.Store(-1)
	for i := range cfg.Streams {
		r.streams = append(r.streams, newStream(cfg.Rate/float64(cfg.Streams), cfg.Seed, i))
		r.lags = append(r.lags, newHist())
	}
	// Poisson counts in one pool wait rarely exceed mean + 6 sd; past that, the arrival
	// would be rejected anyway.
	mean := cfg.Rate * cfg.PoolWait.Seconds()
	// The cap is a safety net: a million waiting arrivals is overload whatever the rate,
	// and the queue must never grow with rate x pool wait unchecked.
	// The pgx engine's channel is made in run, the loop keeps a queue of its own.
	r.qcap = min(int(mean+6*math.Sqrt(mean))+cfg.Conns+64, 1<<20)
	n := int((r.end + time.Second - 1) / time.Second)
	if cfg.StopIf != nil {
		r.measured = make([]result.Second, 0, n-int(cfg.Warmup/time.Second))
	}
	r.secs = make([]*second, n)
	for i := range r.secs {
		r.secs[i] = &second{}
	}
	for i := range cfg.Conns {
		r.workers = append(r.workers, &worker{
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(1_000_000+i))),
			lat: newHist(), svc: newHist(), wait: newHist()})
	}
	return r
}

// connect opens every worker's connection before the probe starts, so connection setup
// is never measured as latency nor delays the first arrivals.
func (r *probeRun) connect(ctx context.Context) error {
	errs := make(chan error, len(r.workers))
	for _, wk := range r.workers {
		go func() {
			c, err := r.pool.Acquire(ctx)
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

func (r *probeRun) tallyOf(at time.Duration) *tally {
	if at < r.cfg.Warmup {
		return &r.warm
	}
	return &r.meas
}

// fail stops the probe because the driver itself failed; the result says why.
func (r *probeRun) fail(reason string) {
	r.broken.Store(true)
	r.halt(result.CutByServer, reason)
}

// halt stops issuing at the current offset; the measured window ends there. by says what
// stopped the probe (a result.CutBy*, "" for an interruption); the first halt wins.
func (r *probeRun) halt(by, reason string) {
	r.stopOnce.Do(func() {
		r.stopReason, r.stopBy = reason, by
		r.stopAt.Store(int64(time.Since(r.start)))
		close(r.stop)
	})
}

// windowEnd is the measured window's end as far as it is known now: the stop offset once
// the probe was halted, else Warmup + Duration.
func (r *probeRun) windowEnd() time.Duration {
	if sa := time.Duration(r.stopAt.Load()); sa >= 0 && sa < r.end {
		return sa
	}
	return r.end
}

// run is the probe proper: schedulers, workers, the window's end, the drain.
func (r *probeRun) run(ctx context.Context) {
	// Work runs on a context of its own: an interruption stops issuing, but in-flight
	// work drains within the grace before it is cancelled.
	r.workCtx, r.cancelWork = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelWork()
	r.doCtx = context.WithoutCancel(r.workCtx)
	r.start = time.Now()

	var workers, scheds sync.WaitGroup
	if r.lp != nil {
		workers.Add(1)
		scheds.Add(1)
		go func() { defer workers.Done(); r.lp.run(scheds.Done) }()
	} else {
		r.queue = make(chan arrival, r.qcap)
		for _, wk := range r.workers {
			workers.Add(1)
			go func() { defer workers.Done(); r.work(wk) }()
		}
		for i, s := range r.streams {
			scheds.Add(1)
			go func() { defer scheds.Done(); r.schedule(i, s) }()
		}
	}
	schedDone := make(chan struct{})
	go func() { scheds.Wait(); close(schedDone) }()
	workDone := make(chan struct{})

	tick := time.NewTicker(time.Second) // progress only; arrivals never use it
	defer tick.Stop()
	var window *time.Timer
	if r.cfg.Warmup > 0 {
		window = time.NewTimer(r.cfg.Warmup)
		defer window.Stop()
	} else {
		r.startObserver()
	}
	var windowC <-chan time.Time
	if window != nil {
		windowC = window.C
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
			if r.stopAt.Load() < 0 {
				r.startObserver()
			}
		case <-schedDone:
			schedDone = nil
			if r.queue != nil {
				close(r.queue) // workers finish the queue, then exit
			}
			r.drained.Store(true)
			go func() { workers.Wait(); close(workDone) }()
			d := time.NewTimer(r.cfg.Drain)
			defer d.Stop()
			drainC = d.C
		case <-drainC:
			drainC = nil
			r.cancelWork() // what is still queued is rejected, in-flight work fails
			for _, wk := range r.workers {
				wk.interrupt()
			}
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

// schedule issues stream i's arrivals at their intended times until the window's end or
// the stop offset.
func (r *probeRun) schedule(i int, s *stream) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	stop := r.stop
	for {
		at := s.peek()
		r.prog[i].Store(int64(at))
		if at >= r.end {
			break
		}
		if sa := r.stopAt.Load(); sa >= 0 && int64(at) >= sa {
			break
		}
		if wait := time.Until(r.start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-stop:
				timer.Stop()
				stop = nil
				continue // re-check against the stop offset
			}
		}
		s.advance()
		r.emit(i, at)
	}
	r.prog[i].Store(math.MaxInt64)
}

// emit books one arrival and queues it, or rejects it when the queue is full.
func (r *probeRun) emit(i int, at time.Duration) {
	lag := time.Since(r.start.Add(at))
	t := r.tallyOf(at)
	t.scheduled.Add(1)
	r.issued.Add(1)
	if at >= r.cfg.Warmup {
		record(r.lags[i], lag)
	}
	sec := r.secs[at/time.Second]
	if r.lp != nil {
		ok := r.lp.push(arrival{at})
		sec.arrive(r.lp.waiting(), lag)
		if !ok {
			r.settle(arrival{at}, nil, false, result.PoolTimeout, -1, 0, 0)
		}
		return
	}
	select {
	case r.queue <- arrival{at}:
		sec.arrive(len(r.queue), lag)
	default:
		sec.arrive(len(r.queue), lag)
		r.settle(arrival{at}, nil, false, result.PoolTimeout, -1, 0, 0)
	}
}

// settle books an arrival's outcome in its phase and second, and in the worker's
// histograms (wk nil for rejections without a worker). A commit also counts by when it
// ended (a.at + lat): inside the measured window, or after it for a measured arrival.
func (r *probeRun) settle(a arrival, wk *worker, ok bool, c result.Class, wait, svc, lat time.Duration) {
	t := r.tallyOf(a.at)
	if ok {
		t.committed.Add(1)
		r.committed.Add(1)
		// A commit that ends while a halt is storing its offset may be placed on the wrong
		// side of it: a race of nanoseconds, for one transaction at most per worker.
		switch end := a.at + lat; {
		case end >= r.windowEnd():
			if t == &r.meas {
				r.drainCommitted.Add(1)
			}
		case end >= r.cfg.Warmup:
			r.inWindow.Add(1)
		}
	} else {
		t.failed[c].Add(1)
		if c == result.Connection {
			r.connFails.Add(1)
		}
		if t == &r.meas && r.cfg.ErrorBudget > 0 && t.bad() > r.cfg.ErrorBudget && !r.budgetHit.Swap(true) {
			r.halt(result.CutByErrors, fmt.Sprintf("errors exceeded the probe's budget of %d", r.cfg.ErrorBudget))
		}
	}
	r.secs[a.at/time.Second].settle(ok, c, wait, lat)
	if wk != nil && t == &r.meas {
		if wait >= 0 {
			record(wk.wait, wait)
		}
		if ok {
			record(wk.lat, lat)
			record(wk.svc, svc)
		}
	}
}

// work is one connection worker: it takes arrivals from the queue until it is closed.
func (r *probeRun) work(wk *worker) {
	defer wk.release()
	for a := range r.queue {
		begin := time.Now()
		wait := begin.Sub(r.start.Add(a.at))
		if r.workCtx.Err() != nil || wait > r.cfg.PoolWait {
			r.settle(a, wk, false, result.PoolTimeout, -1, 0, 0)
			continue
		}
		if wk.conn == nil {
			actx, cancel := context.WithTimeout(r.workCtx, r.cfg.PoolWait)
			c, err := r.pool.Acquire(actx)
			cancel()
			if err != nil {
				c := result.PoolTimeout // cancelled at the end of the drain: it never started
				if r.workCtx.Err() == nil {
					c = r.classify(err, false)
				}
				r.settle(a, wk, false, c, -1, 0, 0)
				continue
			}
			wk.hold(c)
		}
		if r.script != nil {
			r.script.Start(&wk.tx, wk.rng) // once per arrival: a retry sends the same values
		}
		var err error
		for try := 1; ; try++ {
			if r.script != nil {
				err = workload.RunTx(r.doCtx, wk.conn.Conn(), r.script, &wk.tx)
			} else {
				err = r.w.Do(r.doCtx, wk.conn.Conn(), wk.rng)
			}
			if err == nil || try >= r.cfg.MaxTries || !retryable(Classify(err)) || wk.conn.Conn().IsClosed() {
				break
			}
			if a.at >= r.cfg.Warmup {
				wk.retries++
			}
		}
		end := time.Now()
		if err == nil {
			r.settle(a, wk, true, 0, wait, end.Sub(begin), end.Sub(r.start.Add(a.at)))
			continue
		}
		c := r.classify(err, wk.conn.Conn().IsClosed())
		r.settle(a, wk, false, c, wait, 0, 0)
		if c == result.Connection || wk.conn.Conn().IsClosed() {
			wk.release() // the pool destroys a closed connection; the next arrival reconnects
		}
	}
}

// classify is Classify plus the driver's knowledge: an error that left the connection
// closed is a connection failure; work cancelled at the end of the drain is other, and
// uncertain.
func (r *probeRun) classify(err error, closed bool) result.Class {
	c := Classify(err)
	if r.workCtx.Err() != nil && (errors.Is(err, context.Canceled) || c == result.Connection || c == result.Other) {
		r.uncertain.Add(1)
		return result.Other
	}
	if c == result.Other && closed {
		return result.Connection
	}
	return c
}

// finalize summarises every second whose arrivals all have outcomes (all, when force).
func (r *probeRun) finalize(force bool) {
	progress := int64(math.MaxInt64)
	for i := range r.prog {
		progress = min(progress, r.prog[i].Load())
	}
	for r.nextFinal < len(r.secs) {
		t := r.nextFinal
		if !force && int64(t+1)*int64(time.Second) > progress {
			return
		}
		if !r.secs[t].finish(t, r.phaseOf(time.Duration(t)*time.Second), force) {
			return
		}
		r.lastSecond = r.secs[t].out
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
	if r.cfg.StopIf == nil || len(r.measured) == r.stopIfAsked || r.stopAt.Load() >= 0 || time.Since(r.start) >= r.end {
		return
	}
	r.stopIfAsked = len(r.measured)
	if why := r.cfg.StopIf(r.measured[:len(r.measured):len(r.measured)]); why != "" {
		r.halt(result.CutByTrend, why)
	}
}

func (r *probeRun) progress(last Live) Live {
	el := time.Since(r.start)
	phase := r.phaseOf(el)
	if r.drained.Load() {
		phase = result.PhaseDrain
	}
	queue := len(r.queue)
	if r.lp != nil {
		queue = int(r.depth.Load())
	}
	lv := Live{Elapsed: el, Phase: phase, P99Ms: r.lastSecond.P99Ms, Queue: queue,
		Errors: r.warm.bad() + r.meas.bad(), Committed: r.committed.Load()}
	issued := r.issued.Load()
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
	committed, fails := r.committed.Load(), r.connFails.Load()
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
	if time.Since(w.since) < r.cfg.GoneAfter || fails == w.fails || r.stopAt.Load() >= 0 {
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
