package driver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// testWorkload is a script the test defines: its statements and its steps. Run by the
// loop engine directly, by the pgx engine through workload.RunScript.
type testWorkload struct {
	table string
	stmts []workload.Statement
	start func(tx *workload.Tx, rng *rand.Rand)
	step  func(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error)
	snap  func(ctx context.Context, q workload.Querier) (string, error)
}

func (w *testWorkload) Name() string                     { return "test" }
func (w *testWorkload) Table() string                    { return w.table }
func (w *testWorkload) Statements() []workload.Statement { return w.stmts }
func (w *testWorkload) SetSync() string                  { return "SET LOCAL synchronous_commit TO on" }

func (w *testWorkload) Start(tx *workload.Tx, rng *rand.Rand) {
	tx.V[0] = rng.Int64()
	if w.start != nil {
		w.start(tx, rng)
	}
}

func (w *testWorkload) Step(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error) {
	return w.step(tx, i, prev)
}

func (w *testWorkload) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	var tx workload.Txn
	tx.Start(w, rng)
	return tx.Run(ctx, conn)
}

// balancedWorkload adds the workload.Checker ability.
type balancedWorkload struct{ *testWorkload }

func (w balancedWorkload) Snapshot(ctx context.Context, q workload.Querier) (string, error) {
	return w.snap(ctx, q)
}

// then is a transaction that inserts the one row the row check counts (v = V[0]) and
// then runs each of more, without arguments, in order.
func then(more ...string) *testWorkload {
	w := &testWorkload{table: "events", stmts: []workload.Statement{{Name: "insert", SQL: "INSERT INTO pgceiling.events (v) VALUES ($1)"}}}
	for i, sql := range more {
		w.stmts = append(w.stmts, workload.Statement{Name: fmt.Sprintf("statement %d", i+1), SQL: sql})
	}
	w.step = func(tx *workload.Tx, i int, _ workload.Result) (workload.Step, error) {
		switch {
		case i == 0:
			return workload.Step{Stmt: 0, Args: tx.Args(workload.Int(tx.V[0]))}, nil
		case i < len(w.stmts):
			return workload.Step{Stmt: i}, nil
		}
		return workload.Done, nil
	}
	return w
}

// engines are the driver's engines; most tests run under both.
var engines = []result.Engine{EngineLoop, EnginePGX}

// forEngines runs test once per engine, as subtests named after it.
func forEngines(t *testing.T, test func(t *testing.T, engine result.Engine)) {
	for _, e := range engines {
		t.Run(string(e), func(t *testing.T) { test(t, e) })
	}
}

// setup makes a fresh database with the test tables and a pool of conns connections.
func setup(t *testing.T, s Session, conns int) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		"CREATE SCHEMA pgceiling",
		"CREATE TABLE pgceiling.events (id bigserial PRIMARY KEY, v bigint, at timestamptz NOT NULL DEFAULT now())",
		"CREATE TABLE pgceiling.pair (id int PRIMARY KEY, n bigint NOT NULL)",
		"INSERT INTO pgceiling.pair VALUES (1, 1000), (2, 1000)",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("setup %q: %v", q, err)
		}
	}
	if s.AppName == "" {
		s.AppName = "pgceiling-test"
	}
	pool, err := NewPool(ctx, dsn, s, conns, pgx.QueryExecModeCacheStatement)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, dsn
}

// checkBooks asserts the accounting invariant, the row check and the series' sums.
func checkBooks(t *testing.T, p *result.Probe, wantRowsOK bool) {
	t.Helper()
	if !p.Balanced() {
		t.Errorf("books do not balance: scheduled %d != committed %d + failed %v (%d) + rejected %d",
			p.Scheduled, p.Committed, p.Failed, p.Failed.Total(), p.Rejected)
	}
	if p.Checks.RowsOK != wantRowsOK {
		t.Errorf("row check: ok=%v, want %v (%+v)", p.Checks.RowsOK, wantRowsOK, p.Checks)
	}
	if wantRowsOK && len(p.Checks.Problems) > 0 {
		t.Errorf("checks report problems: %q", p.Checks.Problems)
	}
	if p.Latency.Count != p.Committed || p.Service.Count != p.Committed {
		t.Errorf("latency histogram counts %d, service %d, want one per commit (%d)", p.Latency.Count, p.Service.Count, p.Committed)
	}
	// The window's arrivals commit inside the window or in the drain; the window's commits
	// are those plus warm-up arrivals' commits, all of them among the commits the checks saw.
	if p.DrainCommitted < 0 || p.DrainCommitted > p.Committed || p.CommittedInWindow < p.Committed-p.DrainCommitted ||
		p.CommittedInWindow > p.Checks.CommittedTotal {
		t.Errorf("committed %d, in the window %d, in the drain %d, in all %d: inconsistent",
			p.Committed, p.CommittedInWindow, p.DrainCommitted, p.Checks.CommittedTotal)
	}
	if p.MeasuredS > 0 && p.AchievedRate != float64(p.CommittedInWindow)/p.MeasuredS {
		t.Errorf("achieved %v, want committed in the window %d / %vs", p.AchievedRate, p.CommittedInWindow, p.MeasuredS)
	}
	for _, s := range p.Series {
		if s.SchedLagP99Ms > s.SchedLagMs || s.SchedLagP99Ms < 0 {
			t.Errorf("second %d: scheduler lag p99 %v ms, max %v ms: want 0 <= p99 <= max", s.T, s.SchedLagP99Ms, s.SchedLagMs)
		}
	}
	if p.WarmupS == 0 { // with no warm-up, the series covers exactly the measured arrivals
		var off, com, bad int64
		for _, s := range p.Series {
			off += s.Offered
			com += s.Committed
			bad += s.Failed.Total()
		}
		if off != p.Scheduled || com != p.Committed || bad != p.FailedAndRejected() {
			t.Errorf("series sums offered %d committed %d failed %d, want %d, %d, %d",
				off, com, bad, p.Scheduled, p.Committed, p.FailedAndRejected())
		}
	}
}

func run(t *testing.T, ctx context.Context, pool *pgxpool.Pool, w *testWorkload, cfg Config) *result.Probe {
	t.Helper()
	var wl workload.Script = w
	if w.snap != nil {
		wl = balancedWorkload{w}
	}
	p, err := Run(ctx, pool, wl, cfg)
	if err != nil {
		t.Fatalf("Run(rate %v, %v): %v", cfg.Rate, cfg.Duration, err)
	}
	return p
}

func TestRunInsert(t *testing.T) { forEngines(t, testRunInsert) }

func testRunInsert(t *testing.T, eng result.Engine) {
	leaks := goleak.IgnoreCurrent()
	pool, _ := setup(t, DefaultSession(), 4)
	var seconds atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	var asked []int // len(measured) at each StopIf call; StopIf runs on one goroutine
	stopIf := func(measured []result.Second) string {
		asked = append(asked, len(measured))
		for _, s := range measured {
			if s.Phase != result.PhaseMeasure {
				t.Errorf("StopIf got second %d of phase %s", s.T, s.Phase)
			}
		}
		return ""
	}
	cfg := Config{Engine: eng, Rate: 200, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, Conns: 4, Seed: 7,
		SyncCommit: "on", OnSecond: func(result.Second, Live) { seconds.Add(1) }, StopIf: stopIf}
	p := run(t, context.Background(), pool, then(), cfg)
	checkBooks(t, p, true)
	if p.Scheduled < 300 || p.Scheduled > 500 {
		t.Errorf("scheduled %d in 2 s at 200/s, want about 400", p.Scheduled)
	}
	if p.Committed < p.Scheduled*9/10 || p.MeasuredS != 2 {
		t.Errorf("committed %d of %d, measured %vs: want nearly all in 2 s", p.Committed, p.Scheduled, p.MeasuredS)
	}
	// At a light rate the server keeps up: what it commits in the window is what was
	// offered in it (give or take the arrivals whose commit crosses either edge), and the
	// drain has only the last arrivals' commits: on a loaded shared machine a transaction
	// can take 100 ms, so up to a tenth of a 2-second window.
	offered := float64(p.Scheduled) / p.MeasuredS
	if r := p.AchievedRate / offered; r < 0.9 || r > 1.1 || p.DrainCommitted > p.Scheduled/10 {
		t.Errorf("achieved %v/s at %v/s (in the window %d, in the drain %d): want about the target",
			p.AchievedRate, p.TargetRate, p.CommittedInWindow, p.DrainCommitted)
	}
	// Seconds 1 and 2 are the measured ones; StopIf sees them as they are summarised,
	// growing, and never after the window. (A second is summarised on the first tick after
	// its last arrival has an outcome, so in a window this short it may not be asked at all.)
	for i, n := range asked {
		if n < 1 || n > 2 || (i > 0 && n <= asked[i-1]) {
			t.Errorf("StopIf saw %v measured seconds over its calls: want 1 or 2, growing", asked)
			break
		}
	}
	if p.Checks.CommittedTotal <= p.Committed || p.Checks.RowDelta != p.Checks.CommittedTotal {
		t.Errorf("checks %+v: want warm-up commits counted and rows to match", p.Checks)
	}
	if len(p.Series) != 3 || p.Series[0].Phase != result.PhaseWarmup || p.Series[1].Phase != result.PhaseMeasure {
		t.Errorf("series %+v: want 3 seconds, warm-up then measure", p.Series)
	}
	if p.Server.Version == "" || p.Server.Fsync == "" || p.Server.SynchronousCommit == "" {
		t.Errorf("server brief %+v incomplete", p.Server)
	}
	if p.Latency.P50 <= 0 || p.Latency.P99 < p.Latency.P50 || p.Latency.Max < p.Latency.P999 {
		t.Errorf("latency %+v not ordered", p.Latency)
	}
	if seconds.Load() < 2 {
		t.Errorf("OnSecond called %d times in a 2.5 s probe", seconds.Load())
	}
	if p.SchedLagP99Ms <= 0 || p.SchedLagP99Ms > p.Latency.Max {
		t.Errorf("scheduler lag p99 %v ms: want a measured lag, below the worst latency %v ms", p.SchedLagP99Ms, p.Latency.Max)
	}
	if p.Interrupted || p.CutShort || p.ClientCPUSeconds <= 0 {
		t.Errorf("interrupted %v cut %v cpu %v", p.Interrupted, p.CutShort, p.ClientCPUSeconds)
	}
	if p.DriverThreads < 1 || p.DriverThreads > procs || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("driver threads %d, GOMAXPROCS after the probe %d: want 1..%d, and %d restored",
			p.DriverThreads, runtime.GOMAXPROCS(0), procs, procs)
	}
	pool.Close()
	goleak.VerifyNone(t, leaks)
}

func TestCoordinatedOmission(t *testing.T) { forEngines(t, testCoordinatedOmission) }

func testCoordinatedOmission(t *testing.T, eng result.Engine) {
	s := DefaultSession()
	s.LockTimeout = 10 * time.Second
	pool, dsn := setup(t, s, 4)
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every transaction inserts into events; EXCLUSIVE blocks inserts but not count(*).
	if _, err := tx.Exec(ctx, "LOCK TABLE pgceiling.events IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *result.Probe)
	go func() {
		done <- run(t, ctx, pool, then(),
			Config{Engine: eng, Rate: 100, Duration: 3 * time.Second, Conns: 4, PoolWait: 500 * time.Millisecond, Seed: 1})
	}()
	time.Sleep(2 * time.Second) // the stall being simulated, not synchronisation
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	p := <-done
	checkBooks(t, p, true)
	// The probe started a little after the lock was taken (it first reads the server and
	// opens its connections): the stall it saw runs from its start to the release.
	stall := released.Sub(p.StartedAt)
	if stall < 1500*time.Millisecond {
		t.Fatalf("the probe saw only %v of the stall; the test needs at least 1.5 s", stall)
	}
	stallMs := float64(stall.Milliseconds())
	if p.Latency.P99 < 0.75*stallMs || p.Latency.Max < stallMs-100 {
		t.Errorf("latency %+v: p99 and max must include the %v stall (latency from the intended start)", p.Latency, stall)
	}
	if p.Rejected < 50 || p.Failed[result.PoolTimeout] != 0 {
		t.Errorf("rejected %d (failed %v): arrivals older than the 500 ms pool wait must be rejected", p.Rejected, p.Failed)
	}
	if p.QueueWait.Max > 600 {
		t.Errorf("queue wait max %v ms: no arrival may start later than the pool wait", p.QueueWait.Max)
	}
	// The transactions that waited out the stall on the lock started on time and committed
	// seconds late: at least the four in flight are late.
	if p.Late < 4 || p.Late > p.Committed {
		t.Errorf("late %d of %d commits: the stalled in-flight transactions must count as late", p.Late, p.Committed)
	}
}

func TestErrorClasses(t *testing.T) { forEngines(t, testErrorClasses) }

func testErrorClasses(t *testing.T, eng result.Engine) {
	ctx := context.Background()
	t.Run("statement_timeout", func(t *testing.T) {
		s := DefaultSession()
		s.StatementTimeout = 100 * time.Millisecond
		pool, _ := setup(t, s, 4)
		// One transaction in three sleeps past the statement timeout.
		w := then("SELECT pg_sleep(0.3)")
		w.start = func(tx *workload.Tx, rng *rand.Rand) { tx.V[1] = int64(rng.IntN(3)) }
		steps := w.step
		w.step = func(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error) {
			if i == 1 && tx.V[1] != 0 {
				return workload.Done, nil
			}
			return steps(tx, i, prev)
		}
		p := run(t, ctx, pool, w, Config{Engine: eng, Rate: 40, Duration: 1500 * time.Millisecond, Conns: 4, Seed: 3})
		checkBooks(t, p, true)
		if p.Failed[result.StatementTimeout] == 0 || p.Committed == 0 {
			t.Errorf("failed %v committed %d: want statement timeouts and commits", p.Failed, p.Committed)
		}
	})
	t.Run("lock_timeout", func(t *testing.T) {
		s := DefaultSession()
		s.LockTimeout = 100 * time.Millisecond
		pool, dsn := setup(t, s, 4)
		locker, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close(ctx)
		tx, _ := locker.Begin(ctx)
		if _, err := tx.Exec(ctx, "LOCK TABLE pgceiling.events IN EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		p := run(t, ctx, pool, then(),
			Config{Engine: eng, Rate: 20, Duration: time.Second, Conns: 4, Seed: 4})
		tx.Rollback(ctx)
		checkBooks(t, p, true)
		if p.Failed[result.LockTimeout] == 0 || p.Failed[result.LockTimeout] != p.Scheduled-p.Rejected || p.Committed != 0 {
			t.Errorf("failed %v committed %d scheduled %d: want every started arrival to fail lock_timeout", p.Failed, p.Committed, p.Scheduled)
		}
	})
	// Two transactions update the pair's rows in opposite orders, with a pause between.
	deadlocking := then("SET LOCAL deadlock_timeout = '20ms'", "UPDATE pgceiling.pair SET n = n + 1 WHERE id = $1", "SELECT pg_sleep(0.03)")
	deadlocking.start = func(tx *workload.Tx, rng *rand.Rand) {
		tx.V[1], tx.V[2] = 1, 2
		if rng.IntN(2) == 0 {
			tx.V[1], tx.V[2] = 2, 1
		}
	}
	insertThen := deadlocking.step
	deadlocking.step = func(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error) {
		switch i {
		case 2:
			return workload.Step{Stmt: 2, Args: tx.Args(workload.Int(tx.V[1]))}, nil
		case 3:
			return workload.Step{Stmt: 3}, nil
		case 4:
			return workload.Step{Stmt: 2, Args: tx.Args(workload.Int(tx.V[2]))}, nil
		case 5:
			return workload.Done, nil
		}
		return insertThen(tx, i, prev)
	}
	t.Run("deadlock", func(t *testing.T) {
		pool, _ := setup(t, DefaultSession(), 4)
		p := run(t, ctx, pool, deadlocking, Config{Engine: eng, Rate: 60, Duration: 1500 * time.Millisecond, Conns: 4, Seed: 5})
		checkBooks(t, p, true)
		if p.Failed[result.Deadlock] == 0 || p.Retries != 0 {
			t.Errorf("failed %v retries %d: want deadlocks, no retries with max tries 1", p.Failed, p.Retries)
		}
	})
	t.Run("deadlock_retried", func(t *testing.T) {
		pool, _ := setup(t, DefaultSession(), 4)
		p := run(t, ctx, pool, deadlocking, Config{Engine: eng, Rate: 60, Duration: 1500 * time.Millisecond, Conns: 4, Seed: 5, MaxTries: 5})
		checkBooks(t, p, true)
		if p.Retries == 0 {
			t.Errorf("failed %v retries %d: want deadlocks retried with max tries 5", p.Failed, p.Retries)
		}
	})
	t.Run("connection", func(t *testing.T) {
		s := DefaultSession()
		s.AppName = "pgceiling-kill-" + t.Name()[len(t.Name())-4:]
		pool, dsn := setup(t, s, 4)
		killer, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer killer.Close(ctx)
		killed := make(chan int64, 1)
		fired := false // OnSecond runs on one goroutine
		w := then("SELECT pg_sleep(0.3)")
		// 30/s of 0.3 s transactions on 4 connections: all four are always busy, so the
		// kill finds transactions in flight.
		cfg := Config{Engine: eng, Rate: 30, Duration: 3 * time.Second, Conns: 4, Seed: 6}
		cfg.OnSecond = func(_ result.Second, lv Live) {
			// Once the probe has committed work, terminate every driver backend, once.
			if lv.Committed > 0 && !fired {
				fired = true
				var n int64
				err := killer.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE application_name = $1`, s.AppName).Scan(&n)
				if err != nil {
					t.Errorf("terminate: %v", err)
				}
				killed <- n
			}
		}
		p := run(t, ctx, pool, w, cfg)
		checkBooks(t, p, true)
		select {
		case n := <-killed:
			if n == 0 {
				t.Fatalf("no backend was terminated")
			}
		default:
			t.Fatalf("the probe never committed, so no backend was terminated: %+v", p)
		}
		if p.Failed[result.Connection] == 0 || p.Checks.CommittedTotal == 0 {
			t.Errorf("failed %v committed %d: want connection failures counted, and work to go on", p.Failed, p.Checks.CommittedTotal)
		}
		if last := p.Series[len(p.Series)-1]; last.Committed == 0 {
			t.Errorf("last second %+v: the driver must reconnect and commit after the kill", last)
		}
	})
}

func TestErrorBudgetCutsShort(t *testing.T) { forEngines(t, testErrorBudgetCutsShort) }

func testErrorBudgetCutsShort(t *testing.T, eng result.Engine) {
	leaks := goleak.IgnoreCurrent()
	pool, _ := setup(t, DefaultSession(), 2)
	begin := time.Now()
	p := run(t, context.Background(), pool, then("SELECT 1/0"),
		Config{Engine: eng, Rate: 100, Duration: 20 * time.Second, Conns: 2, ErrorBudget: 5, Seed: 8})
	checkBooks(t, p, true)
	if !p.CutShort || p.CutBy != result.CutByErrors || !strings.Contains(p.CutReason, "budget") || p.MeasuredS >= 5 ||
		time.Since(begin) > 10*time.Second {
		t.Errorf("cut %v by %q (%q) after %vs: want an early stop on the error budget", p.CutShort, p.CutBy, p.CutReason, p.MeasuredS)
	}
	if p.Failed[result.Other] <= 5 {
		t.Errorf("failed %v: want more than the budget of 5 in class other", p.Failed)
	}
	pool.Close()
	goleak.VerifyNone(t, leaks)
}

func TestInterruptedClosesBooks(t *testing.T) { forEngines(t, testInterruptedClosesBooks) }

func testInterruptedClosesBooks(t *testing.T, eng result.Engine) {
	leaks := goleak.IgnoreCurrent()
	pool, _ := setup(t, DefaultSession(), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	p := run(t, ctx, pool, then("SELECT pg_sleep(0.05)"),
		Config{Engine: eng, Rate: 100, Duration: 20 * time.Second, Conns: 4, Seed: 9, Streams: 3}) // three streams stop together
	checkBooks(t, p, true)
	if !p.Interrupted || p.CutShort || p.CutBy != "" || p.MeasuredS > 2 || p.Scheduled == 0 {
		t.Errorf("interrupted %v measured %vs scheduled %d: want a short, interrupted probe", p.Interrupted, p.MeasuredS, p.Scheduled)
	}
	pool.Close()
	goleak.VerifyNone(t, leaks)
}

func TestDrainCancelsLeftovers(t *testing.T) { forEngines(t, testDrainCancelsLeftovers) }

func testDrainCancelsLeftovers(t *testing.T, eng result.Engine) {
	leaks := goleak.IgnoreCurrent()
	s := DefaultSession()
	s.StatementTimeout = 0
	pool, _ := setup(t, s, 2)
	p := run(t, context.Background(), pool, then("SELECT pg_sleep(3)"),
		Config{Engine: eng, Rate: 20, Duration: 500 * time.Millisecond, Conns: 2, Drain: 200 * time.Millisecond, Seed: 10})
	checkBooks(t, p, true)
	if p.Checks.Uncertain == 0 || p.Failed[result.Other] == 0 || p.Rejected == 0 {
		t.Errorf("uncertain %d failed %v rejected %d: in-flight work past the drain must be cancelled and queued work rejected",
			p.Checks.Uncertain, p.Failed, p.Rejected)
	}
	pool.Close()
	goleak.VerifyNone(t, leaks)
}

func TestChecksCatchMismatch(t *testing.T) { forEngines(t, testChecksCatchMismatch) }

func testChecksCatchMismatch(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 2)
	twoRows := then("INSERT INTO pgceiling.events (v) VALUES (0)")
	p := run(t, context.Background(), pool, twoRows, Config{Engine: eng, Rate: 50, Duration: 500 * time.Millisecond, Conns: 2, Seed: 11})
	checkBooks(t, p, false)
	if len(p.Checks.Problems) == 0 || !strings.Contains(p.Checks.Problems[0], "ROW MISMATCH") {
		t.Errorf("problems %q: want a loud row mismatch", p.Checks.Problems)
	}

	sum := func(ctx context.Context, q workload.Querier) (string, error) {
		var s string
		err := q.QueryRow(ctx, "SELECT sum(n)::text FROM pgceiling.pair").Scan(&s)
		return s, err
	}
	move := func(delta int) *testWorkload {
		w := then(fmt.Sprintf("UPDATE pgceiling.pair SET n = n + CASE id WHEN 1 THEN 5 ELSE -5 + %d END", delta))
		w.snap = sum
		return w
	}
	p = run(t, context.Background(), pool, move(0), Config{Engine: eng, Rate: 50, Duration: 500 * time.Millisecond, Conns: 2, Seed: 12})
	checkBooks(t, p, true)
	if p.Checks.BalanceOK == nil || !*p.Checks.BalanceOK || p.Checks.BalanceBefore == "" {
		t.Errorf("checks %+v: conserved sum must pass", p.Checks)
	}
	p = run(t, context.Background(), pool, move(1), Config{Engine: eng, Rate: 50, Duration: 500 * time.Millisecond, Conns: 2, Seed: 13})
	if p.Checks.BalanceOK == nil || *p.Checks.BalanceOK || !strings.Contains(strings.Join(p.Checks.Problems, " "), "BALANCE MISMATCH") {
		t.Errorf("checks %+v: a leaking sum must be a loud mismatch", p.Checks)
	}
}

func TestNewPoolTooManyConnections(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	_, err := NewPool(context.Background(), dsn, DefaultSession(), 100_000, pgx.QueryExecModeCacheStatement)
	if err == nil || !strings.Contains(err.Error(), "max_connections") || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("NewPool(100000 conns) = %v, want one clear line about max_connections", err)
	}
}

func TestProberRunsBefore(t *testing.T) { forEngines(t, testProberRunsBefore) }

func testProberRunsBefore(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 2)
	var before int
	pr := &Prober{Pool: pool, Workload: then(),
		Config: Config{Engine: eng, Duration: 300 * time.Millisecond, Conns: 2, Seed: 14},
		Before: func(context.Context) error { before++; return nil }}
	p, err := pr.Probe(context.Background(), 30)
	if err != nil || before != 1 || p.TargetRate != 30 {
		t.Fatalf("Probe(30) = %v, %v; before ran %d times", p, err, before)
	}
	checkBooks(t, p, true)
}

// A worker interrupted at the end of a drain while between transactions gives back a
// sound connection: the next probe on the pool must not inherit the passed deadline.
func TestInterruptedIdleConnStaysUsable(t *testing.T) {
	pool, _ := setup(t, DefaultSession(), 1)
	ctx := context.Background()
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wk := &worker{}
	wk.hold(c)
	wk.interrupt() // nothing in flight
	wk.release()
	wk.interrupt()             // after release: must not touch the pooled connection
	c, err = pool.Acquire(ctx) // MaxConns 1: the same connection
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query on the released connection: %v (got %d); its deadline must be cleared", err, one)
	}
}

// pgxOnly is a workload written against pgx, not as a script: only the pgx engine runs it.
type pgxOnly struct{}

func (pgxOnly) Name() string  { return "pgx-only" }
func (pgxOnly) Table() string { return "events" }
func (pgxOnly) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO pgceiling.events (v) VALUES ($1)", rng.Int64())
		return err
	})
}

func TestEngineChoice(t *testing.T) {
	pool, dsn := setup(t, DefaultSession(), 2)
	ctx := context.Background()
	cfg := Config{Rate: 20, Duration: 300 * time.Millisecond, Conns: 2, Seed: 15}
	for _, c := range []struct {
		engine result.Engine
		w      workload.Workload
		want   result.Engine
	}{
		{"", then(), EngineLoop},
		{EngineAuto, then(), EngineLoop},
		{EnginePGX, then(), EnginePGX},
		{EngineAuto, pgxOnly{}, EnginePGX},
	} {
		cfg.Engine = c.engine
		p, err := Run(ctx, pool, c.w, cfg)
		if err != nil || p.Engine != c.want {
			t.Errorf("engine %q, workload %s: %v, ran %q, want %q", c.engine, c.w.Name(), err, p.Engine, c.want)
			continue
		}
		checkBooks(t, p, true)
	}
	cfg.Engine = EngineLoop
	if _, err := Run(ctx, pool, pgxOnly{}, cfg); err == nil || !strings.Contains(err.Error(), "not a script") {
		t.Errorf("engine loop with a pgx-only workload: %v, want an error saying why", err)
	}
	describe, err := NewPool(ctx, dsn, DefaultSession(), 2, pgx.QueryExecModeDescribeExec)
	if err != nil {
		t.Fatal(err)
	}
	defer describe.Close()
	if _, err := Run(ctx, describe, then(), cfg); err == nil || !strings.Contains(err.Error(), "describe_exec") {
		t.Errorf("engine loop with exec mode describe_exec: %v, want an error naming the mode", err)
	}
	cfg.Engine = EngineAuto
	if p, err := Run(ctx, describe, then(), cfg); err != nil || p.Engine != EnginePGX {
		t.Errorf("auto with describe_exec: %v, ran %v, want pgx", err, p)
	}
}

// A statement whose first use fails after it was parsed (here its Bind: a bad parameter)
// must still read its result on later uses: the engines may not forget to describe it.
func TestFirstUseFailsAfterParse(t *testing.T) { forEngines(t, testFirstUseFailsAfterParse) }

func testFirstUseFailsAfterParse(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 1)
	var n atomic.Int64
	w := then("SELECT $1::int + 1")
	w.start = func(tx *workload.Tx, _ *rand.Rand) {
		tx.S = "7"
		if n.Add(1) == 1 {
			tx.S = "not a number" // the first transaction's Bind fails
		}
	}
	insert := w.step
	w.step = func(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error) {
		switch i {
		case 1:
			return workload.Step{Stmt: 1, Args: tx.Args(workload.Text(tx.S))}, nil
		case 2:
			if !prev.HasFirst || prev.First != 8 {
				return workload.Done, fmt.Errorf("result %+v, want first column 8", prev)
			}
			return workload.Done, nil
		}
		return insert(tx, i, prev)
	}
	p := run(t, context.Background(), pool, w, Config{Engine: eng, Rate: 40, Duration: time.Second, Conns: 1, Seed: 17})
	checkBooks(t, p, true)
	if p.Failed[result.Other] != 1 || p.Committed != p.Scheduled-1-p.Rejected {
		t.Errorf("failed %v committed %d of %d (rejected %d): want the first to fail and every other to commit",
			p.Failed, p.Committed, p.Scheduled, p.Rejected)
	}
}

// Each probe runs on connections of its own: no backend of one probe serves the next,
// so no session state (cached plans) crosses probes, and the first probe's connections
// are closed when it ends, freeing their server slots.
func TestProbesStartOnFreshSessions(t *testing.T) { forEngines(t, testProbesStartOnFreshSessions) }

func testProbesStartOnFreshSessions(t *testing.T, eng result.Engine) {
	pool, dsn := setup(t, DefaultSession(), 3)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE TABLE pgceiling.pids (probe int NOT NULL DEFAULT 0, pid int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	w := then("INSERT INTO pgceiling.pids (pid) VALUES (pg_backend_pid())")
	cfg := Config{Engine: eng, Rate: 200, Duration: 300 * time.Millisecond, Conns: 3, Seed: 5}
	pids := func(probe int) map[int]bool {
		t.Helper()
		rows, err := admin.Query(ctx, "SELECT DISTINCT pid FROM pgceiling.pids WHERE probe = $1", probe)
		if err != nil {
			t.Fatal(err)
		}
		set := map[int]bool{}
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			set[pid] = true
		}
		if rows.Err() != nil || len(set) == 0 {
			t.Fatalf("probe %d: backends %v, %v: the probe committed nothing", probe, set, rows.Err())
		}
		return set
	}
	checkBooks(t, run(t, ctx, pool, w, cfg), true)
	if _, err := admin.Exec(ctx, "UPDATE pgceiling.pids SET probe = 1"); err != nil {
		t.Fatal(err)
	}
	first := pids(1)
	if st := pool.Stat(); st.TotalConns() != 0 {
		t.Errorf("after the probe the pool still holds %d connections; want them closed", st.TotalConns())
	}
	cfg.Seed++
	checkBooks(t, run(t, ctx, pool, w, cfg), true)
	for pid := range pids(0) {
		if first[pid] {
			t.Fatalf("backend %d served both probes (first probe's: %v); each probe must open its own connections", pid, first)
		}
	}
}

// warmed adds the workload.Warmer ability, with warm as its SQL, to a test workload.
type warmed struct {
	*testWorkload
	warm string
}

func (w warmed) WarmSQL() string { return w.warm }

// TestWarmEverySession: each of a probe's sessions runs the workload's WarmSQL once before
// the clock starts (a sequence counts the runs), and a WarmSQL that fails stops the probe
// before it starts, with the server's error.
func TestWarmEverySession(t *testing.T) {
	const conns = 4
	pool, dsn := setup(t, DefaultSession(), conns)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SEQUENCE pgceiling.warmed"); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Rate: 20, Duration: 300 * time.Millisecond, Conns: conns, Seed: 3}
	p, err := Run(ctx, pool, warmed{then(), "SELECT nextval('pgceiling.warmed'); SELECT 1"}, cfg)
	if err != nil || !p.Balanced() || p.Committed == 0 {
		t.Fatalf("Run with a warm-up: %v, probe %+v", err, p)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM pgceiling.warmed").Scan(&n); err != nil || n != conns {
		t.Errorf("the warm-up ran %d times (%v), want once per session: %d", n, err, conns)
	}
	if _, err := Run(ctx, pool, warmed{then(), "SELECT 1/0"}, cfg); err == nil ||
		!strings.Contains(err.Error(), "warm the session") || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("Run with a failing warm-up: %v, want the server's error before the probe starts", err)
	}
}
