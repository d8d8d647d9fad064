package driver

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// The batcher's rules on a fake clock: a batch closes full or when its oldest row has
// waited, or at the end; it takes the oldest rows up to the batch size; a row expires
// after the pool wait, not at it; the queue is bounded.
func TestRowQueueRules(t *testing.T) {
	b := testBooks(t, Config{PoolWait: 100 * time.Millisecond})
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	at := func(n float64) time.Time { return b.start.Add(ms(n)) }
	rq := rowQueue{b: b, rows: 3, wait: 50 * time.Millisecond, limit: 5}
	for _, n := range []float64{0, 10} {
		rq.push(arrival{ms(n)})
	}
	if by := rq.due(at(49.999), false); by != notDue {
		t.Errorf("2 rows, oldest waited 49.999ms: due %v, want not due", by)
	}
	if next, ok := rq.next(at(20)); !ok || !next.Equal(at(50)) {
		t.Errorf("next = %v, %v; want the oldest row's batch to close at 50ms", next.Sub(b.start), ok)
	}
	rq.push(arrival{ms(20)})
	if by := rq.due(at(20), false); by != byRows {
		t.Errorf("3 rows of 3: due %v, want by rows", by)
	}
	if got := rq.take(nil); len(got) != 3 || got[0].at != 0 || got[2].at != ms(20) || rq.q.len() != 0 {
		t.Errorf("take = %v (left %d), want the 3 rows oldest first and none left", got, rq.q.len())
	}
	if by, _ := rq.next(at(20)); rq.due(at(1000), false) != notDue || !by.IsZero() {
		t.Error("an empty queue is never due and has no next moment")
	}

	rq.push(arrival{ms(30)})
	if by := rq.due(at(79.999), false); by != notDue {
		t.Errorf("1 row waited 49.999ms: due %v, want not due", by)
	}
	if by := rq.due(at(80), false); by != byWait {
		t.Errorf("1 row waited 50ms: due %v, want by wait", by)
	}
	// Every connection busy past the close: the next moment is the row's expiry.
	if next, _ := rq.next(at(90)); !next.Equal(at(130).Add(time.Microsecond)) {
		t.Errorf("next after the close = %v, want just past the pool wait, 130ms", next.Sub(b.start))
	}
	rq.reap(at(130))
	if rq.q.len() != 1 {
		t.Fatal("a row was rejected at exactly its pool wait; the rule is: after it")
	}
	rq.reap(at(130.001))
	if r := b.meas.failed[result.PoolTimeout].Load(); r != 1 || rq.q.len() != 0 {
		t.Errorf("after its pool wait: %d rejected, %d waiting; want 1, 0", r, rq.q.len())
	}

	rq.push(arrival{ms(200)})
	if by := rq.due(at(201), true); by != byFlush {
		t.Errorf("1 fresh row and no more to come: due %v, want flush", by)
	}
	for i := range 4 {
		if !rq.push(arrival{ms(201 + float64(i))}) {
			t.Fatalf("push %d of 5 refused", i+2)
		}
	}
	if rq.push(arrival{ms(210)}) {
		t.Error("a 6th row was queued; the limit is 5")
	}
	if got := rq.take(nil); len(got) != 3 || rq.q.len() != 2 {
		t.Errorf("take from 5 rows = %d rows, %d left; want 3 and 2", len(got), rq.q.len())
	}

	// With no wait (negative), a row is due the moment it is queued.
	rq = rowQueue{b: b, rows: 3, wait: -1, limit: 5}
	rq.push(arrival{ms(300)})
	if by := rq.due(at(300), false); by != byWait {
		t.Errorf("no wait: due %v, want by wait at once", by)
	}
}

// The engine on a fake clock: a worker waiting for a batch gets it when its oldest row has
// waited CopyWait, not before; a full batch goes at once; with no worker free, rows are
// rejected when their pool wait runs out.
func TestCopyEngineTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBooks(t, Config{PoolWait: time.Second})
		e := &copyEngine{b: b, pace: make(chan struct{}, 1), env: &probeEnv{b: b},
			rq: rowQueue{b: b, rows: 100, wait: 50 * time.Millisecond, limit: 1000}}
		e.ready.L = &e.mu
		paced := make(chan struct{})
		go func() { defer close(paced); e.pacer() }()
		type got struct {
			rows []arrival
			at   time.Duration
		}
		batches := make(chan got)
		taker := func() {
			rows, ok := e.take(nil)
			if ok {
				batches <- got{rows, time.Since(b.start)}
			} else {
				close(batches)
			}
		}
		go taker()
		synctest.Wait() // the worker waits
		for i := range 3 {
			e.offer(arrival{time.Since(b.start)})
			if i < 2 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		g := <-batches
		if len(g.rows) != 3 || g.at != 50*time.Millisecond {
			t.Errorf("batch of %d rows at %v, want 3 rows when the oldest had waited 50ms", len(g.rows), g.at)
		}
		go taker()
		synctest.Wait()
		for range 100 {
			e.offer(arrival{time.Since(b.start)})
		}
		g = <-batches
		if len(g.rows) != 100 || g.at != 50*time.Millisecond {
			t.Errorf("batch of %d rows at %v, want 100 at once (full)", len(g.rows), g.at)
		}
		// No worker: a row waits out its pool wait and is rejected then, by the pacer.
		e.offer(arrival{time.Since(b.start)})
		time.Sleep(time.Second)
		synctest.Wait()
		if r := b.meas.failed[result.PoolTimeout].Load(); r != 0 {
			t.Errorf("%d rejected at exactly the pool wait, want 0", r)
		}
		time.Sleep(2 * time.Microsecond)
		synctest.Wait()
		if r := b.meas.failed[result.PoolTimeout].Load(); r != 1 || e.waiting() != 0 {
			t.Errorf("just after the pool wait: %d rejected, %d waiting; want 1, 0", r, e.waiting())
		}
		if c := &e.closes; c[byWait].Load() != 1 || c[byRows].Load() != 1 {
			t.Errorf("closed by wait %d, by rows %d; want 1 each", c[byWait].Load(), c[byRows].Load())
		}
		go taker()
		e.mu.Lock()
		e.closed = true
		e.wake()
		e.mu.Unlock()
		if _, open := <-batches; open {
			t.Error("take returned a batch after the end with no rows waiting")
		}
		<-paced
	})
}

// copyTest is a Copier on the test tables: each batch is one COPY of n rows into events.
type copyTest struct{}

func (copyTest) Name() string        { return "copytest" }
func (copyTest) Table() string       { return "events" }
func (copyTest) SessionSync() string { return "SET synchronous_commit TO on" }

func (w copyTest) Do(ctx context.Context, conn *pgx.Conn, _ *rand.Rand) error {
	_, err := w.Copy(ctx, conn, 1)
	return err
}

func (copyTest) Copy(ctx context.Context, conn *pgx.Conn, n int) (int64, error) {
	return conn.CopyFrom(ctx, pgx.Identifier{"pgceiling", "events"}, []string{"v"},
		pgx.CopyFromSlice(n, func(i int) ([]any, error) { return []any{int64(i)}, nil }))
}

// runCopy runs one probe of w on a fresh pool of conns connections, closed afterwards.
func runCopy(t *testing.T, w workload.Workload, cfg Config, conns int) *result.Probe {
	t.Helper()
	pool, _ := setup(t, DefaultSession(), conns)
	defer pool.Close()
	p, err := Run(context.Background(), pool, w, cfg)
	if err != nil {
		t.Fatalf("Run(copy, rate %v): %v", cfg.Rate, err)
	}
	return p
}

// checkCopy asserts the copy section agrees with the row books: no batch larger than
// CopyBatch, the window's batches hold the rows committed in the window.
func checkCopy(t *testing.T, p *result.Probe, rows int) {
	t.Helper()
	c := p.Copy
	if c == nil {
		t.Fatal("no copy section in the result")
	}
	if c.Rows != p.CommittedInWindow || c.Rows > int64(rows)*c.Batches || c.Batches == 0 {
		t.Errorf("copy %+v: the window's batches must hold the %d rows committed in it, at most %d each",
			*c, p.CommittedInWindow, rows)
	}
	if c.BatchRate != float64(c.Batches)/p.MeasuredS || c.MeanRows != float64(c.Rows)/float64(c.Batches) {
		t.Errorf("copy %+v: batch rate and mean rows inconsistent with %v measured seconds", *c, p.MeasuredS)
	}
	if p.Engine != EnginePGX {
		t.Errorf("engine %q, want pgx (the copy engine runs over pgx)", p.Engine)
	}
}

// Batches close by count at a rate that fills them well within the wait; rows are booked
// one by one and the events table gains exactly the committed rows.
func TestCopyBatchesByCount(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	p := runCopy(t, copyTest{}, Config{Rate: 4000, Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond,
		Conns: 2, CopyBatch: 50, CopyWait: 500 * time.Millisecond, Seed: 3}, 2)
	checkBooks(t, p, true)
	checkCopy(t, p, 50)
	c := p.Copy
	if p.Committed < 5000 || p.Checks.CommittedTotal != p.Checks.RowDelta {
		t.Errorf("committed %d rows (all: %d, table gained %d); want about 6,000, all in the table",
			p.Committed, p.Checks.CommittedTotal, p.Checks.RowDelta)
	}
	if c.ByWait > 1 || c.ByRows < 100 || c.MeanRows < 45 {
		t.Errorf("copy %+v: at 4,000 rows/s batches of 50 fill in 12 ms, far within the 500 ms wait", *c)
	}
	goleak.VerifyNone(t, leaks)
}

// At a low rate batches close by time: every row waits for its batch (latency and queue
// wait run from each row's intended start, so they show the wait), and no batch is full.
func TestCopyBatchesByTime(t *testing.T) {
	p := runCopy(t, copyTest{}, Config{Rate: 100, Duration: 2 * time.Second, Conns: 2,
		CopyBatch: 1000, CopyWait: 200 * time.Millisecond, Seed: 4}, 2)
	checkBooks(t, p, true)
	checkCopy(t, p, 1000)
	c := p.Copy
	if c.ByRows != 0 || c.ByWait < 8 || c.MeanRows < 10 || c.MeanRows > 35 {
		t.Errorf("copy %+v: at 100 rows/s a 200 ms wait closes batches of about 20 rows, by time", *c)
	}
	// The oldest row of each batch waited 200 ms before its batch started; the newest
	// hardly at all.
	if p.QueueWait.Max < 195 || p.QueueWait.Max > 300 || p.QueueWait.P50 > 150 || p.Latency.Max < p.QueueWait.Max {
		t.Errorf("queue wait %+v, latency %+v: want rows to wait up to the 200 ms batch wait, from their intended start",
			p.QueueWait, p.Latency)
	}
	if p.Service.P99 > 100 {
		t.Errorf("service p99 %v ms: a COPY of 20 rows on an idle server takes milliseconds", p.Service.P99)
	}
}

// A stalled table: the batches in flight wait on the lock, the rows behind them are
// rejected when their pool wait runs out, the stalled rows' latency includes the stall,
// and the books balance against the table.
func TestCopyRejectsUnderStall(t *testing.T) {
	s := DefaultSession()
	s.LockTimeout = 10 * time.Second
	pool, dsn := setup(t, s, 2)
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
	if _, err := tx.Exec(ctx, "LOCK TABLE pgceiling.events IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *result.Probe)
	go func() {
		p, err := Run(ctx, pool, copyTest{}, Config{Rate: 200, Duration: 3 * time.Second, Conns: 2,
			PoolWait: 500 * time.Millisecond, CopyBatch: 1000, CopyWait: 50 * time.Millisecond, Seed: 5})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- p
	}()
	time.Sleep(2 * time.Second) // the stall being simulated, not synchronisation
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	p := <-done
	if p == nil {
		t.FailNow()
	}
	checkBooks(t, p, true)
	checkCopy(t, p, 1000)
	stall := released.Sub(p.StartedAt)
	if stall < 1500*time.Millisecond {
		t.Fatalf("the probe saw only %v of the stall; the test needs at least 1.5 s", stall)
	}
	if p.Rejected < 100 || p.Failed.Total() != 0 {
		t.Errorf("rejected %d, failed %v: rows whose batch found no free connection within 500 ms must be rejected", p.Rejected, p.Failed)
	}
	if p.QueueWait.Max > 600 {
		t.Errorf("queue wait max %v ms: no row's batch may start later than the pool wait", p.QueueWait.Max)
	}
	if p.Latency.Max < float64(stall.Milliseconds())-200 {
		t.Errorf("latency max %v ms: the stalled batches' rows must include the %v stall", p.Latency.Max, stall)
	}
	if p.Copy.ByWait < 2 {
		t.Errorf("copy %+v: the two stalled batches closed by time", *p.Copy)
	}
}

// The loop speaks no COPY: asked for, it is one clear error; auto runs the copy engine.
func TestCopyEngineChoice(t *testing.T) {
	pool, _ := setup(t, DefaultSession(), 1)
	_, err := Run(context.Background(), pool, copyTest{}, Config{Engine: EngineLoop, Rate: 10, Duration: time.Second, Conns: 1})
	if err == nil || !strings.Contains(err.Error(), "engine loop cannot run copytest") {
		t.Errorf("Run(--engine loop, copy) = %v, want the loop's refusal", err)
	}
	_, err = Run(context.Background(), pool, copyTest{}, Config{Rate: 10, Duration: time.Second, Conns: 1,
		PoolWait: 100 * time.Millisecond, CopyWait: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "below the pool wait") {
		t.Errorf("Run(copy wait = pool wait) = %v, want a config error", err)
	}
	p, err := Run(context.Background(), pool, copyTest{}, Config{Rate: 50, Duration: 500 * time.Millisecond, Conns: 1, Seed: 6})
	if err != nil {
		t.Fatalf("Run(auto, copy): %v", err)
	}
	checkBooks(t, p, true)
	if p.Copy == nil || p.Copy.MaxRows != DefaultCopyBatch || p.Copy.MaxWaitMs != float64(DefaultCopyWait.Milliseconds()) {
		t.Errorf("copy %+v: want the defaults recorded", p.Copy)
	}
}
