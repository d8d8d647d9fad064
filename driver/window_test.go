package driver

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// A server slower than the offered rate leaves a queue at the window's end: the window is
// credited with what the server committed during it, not with what the drain committed.
func TestAchievedFromCommitsInWindow(t *testing.T) { forEngines(t, testAchievedFromCommitsInWindow) }

func testAchievedFromCommitsInWindow(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 2)
	// Two connections of 0.3 s transactions commit about 6.7/s; 10/s are offered, so the
	// queue grows from the warm-up on, and is about 10 arrivals long when the window closes.
	p := run(t, context.Background(), pool, then("SELECT pg_sleep(0.3)"),
		Config{Engine: eng, Rate: 10, Warmup: time.Second, Duration: 2 * time.Second, Conns: 2,
			PoolWait: 2 * time.Second, Seed: 21})
	checkBooks(t, p, true)
	if p.DrainCommitted == 0 {
		t.Errorf("no commit in the drain (committed %d, in the window %d): the queue at the window's end must drain",
			p.Committed, p.CommittedInWindow)
	}
	if p.CommittedInWindow <= p.Committed-p.DrainCommitted {
		t.Errorf("in the window %d, window arrivals committed in it %d: warm-up arrivals queued into the window must count",
			p.CommittedInWindow, p.Committed-p.DrainCommitted)
	}
	if capacity := 2 / 0.3; p.AchievedRate > 1.15*capacity || p.AchievedRate < 0.5*capacity {
		t.Errorf("achieved %v/s (in the window %d in %vs): want about the server's %.1f/s, not the offered %v/s",
			p.AchievedRate, p.CommittedInWindow, p.MeasuredS, capacity, p.TargetRate)
	}
}

// A retried transaction sends the values its arrival drew, and only the measured window's
// retries count. Here only warm-up arrivals can deadlock: two transactions update the pair's
// rows in opposite orders with a pause between; measured arrivals only insert their row.
func TestRetryKeepsValues(t *testing.T) { forEngines(t, testRetryKeepsValues) }

func testRetryKeepsValues(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 4)
	const warmup = 1500 * time.Millisecond
	type values struct{ id, first, second, risky int64 }
	var (
		mu       sync.Mutex
		begun    time.Time
		drawn    = map[int64]values{} // by id, at Start
		attempts = map[int64][]values{}
		ids      atomic.Int64
	)
	w := then("SET LOCAL deadlock_timeout = '20ms'", "UPDATE pgceiling.pair SET n = n + 1 WHERE id = $1", "SELECT pg_sleep(0.03)")
	w.start = func(tx *workload.Tx, rng *rand.Rand) {
		mu.Lock()
		defer mu.Unlock()
		if begun.IsZero() {
			begun = time.Now()
		}
		tx.V[0] = ids.Add(1)
		tx.V[1], tx.V[2] = 1, 2
		if rng.IntN(2) == 0 {
			tx.V[1], tx.V[2] = 2, 1
		}
		tx.V[3] = 0
		if time.Since(begun) < warmup-300*time.Millisecond { // surely a warm-up arrival
			tx.V[3] = 1
		}
		drawn[tx.V[0]] = values{tx.V[0], tx.V[1], tx.V[2], tx.V[3]}
	}
	insert := w.step
	w.step = func(tx *workload.Tx, i int, prev workload.Result) (workload.Step, error) {
		switch {
		case i == 0:
			mu.Lock()
			attempts[tx.V[0]] = append(attempts[tx.V[0]], values{tx.V[0], tx.V[1], tx.V[2], tx.V[3]})
			mu.Unlock()
		case tx.V[3] == 0:
			return workload.Done, nil
		case i == 2:
			return workload.Step{Stmt: 2, Args: tx.Args(workload.Int(tx.V[1]))}, nil
		case i == 3:
			return workload.Step{Stmt: 3}, nil
		case i == 4:
			return workload.Step{Stmt: 2, Args: tx.Args(workload.Int(tx.V[2]))}, nil
		case i == 5:
			return workload.Done, nil
		}
		return insert(tx, i, prev)
	}
	p := run(t, context.Background(), pool, w,
		Config{Engine: eng, Rate: 60, Warmup: warmup, Duration: time.Second, Conns: 4, Seed: 22, MaxTries: 10})
	checkBooks(t, p, true)

	mu.Lock()
	defer mu.Unlock()
	var tries, retried int
	for id, as := range attempts {
		want, ok := drawn[id]
		if !ok {
			t.Errorf("an attempt ran with id %d, which no Start drew", id)
			continue
		}
		for _, a := range as {
			if a != want {
				t.Errorf("arrival %d drew %+v but an attempt ran with %+v: a retry must keep the values", id, want, a)
			}
		}
		tries += len(as)
		if len(as) > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatalf("no arrival was retried (failed %v): the test needs deadlocks in the warm-up", p.Failed)
	}
	if p.Retries != 0 {
		t.Errorf("retries %d with %d retries in the warm-up only: want the measured window's retries, none", p.Retries, tries-len(attempts))
	}
	// Every committed row is one arrival's, once.
	var rows, distinct int64
	if err := pool.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT v) FROM pgceiling.events").
		Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != distinct || rows != p.Checks.CommittedTotal {
		t.Errorf("%d rows with %d distinct ids, %d commits: want one row per committed arrival", rows, distinct, p.Checks.CommittedTotal)
	}
}

// StopIf stops the probe as soon as it reports a decided trend.
func TestStopIfCutsShort(t *testing.T) { forEngines(t, testStopIfCutsShort) }

func testStopIfCutsShort(t *testing.T, eng result.Engine) {
	leaks := goleak.IgnoreCurrent()
	pool, _ := setup(t, DefaultSession(), 2)
	const why = "queue wait grows by 40 ms/s"
	calls, late, fired := 0, 0, false // StopIf runs on the driver's goroutine only
	stopIf := func(measured []result.Second) string {
		calls++
		if fired {
			late++ // asked again after it said stop
		}
		if len(measured) >= 2 {
			fired = true
			return why
		}
		return ""
	}
	begin := time.Now()
	p := run(t, context.Background(), pool, then(),
		Config{Engine: eng, Rate: 50, Warmup: 500 * time.Millisecond, Duration: 30 * time.Second, Conns: 2, Seed: 23, StopIf: stopIf})
	checkBooks(t, p, true)
	if !p.CutShort || p.CutBy != result.CutByTrend || p.CutReason != why || p.Interrupted || p.Error != "" {
		t.Errorf("cut %v by %q (%q), interrupted %v, error %q: want cut short by the trend", p.CutShort, p.CutBy, p.CutReason,
			p.Interrupted, p.Error)
	}
	if p.MeasuredS < 2 || p.MeasuredS > 5 || time.Since(begin) > 15*time.Second {
		t.Errorf("measured %vs, ran %v: want a stop soon after two measured seconds", p.MeasuredS, time.Since(begin))
	}
	if calls < 1 || late > 0 {
		t.Errorf("StopIf called %d times, %d after it said stop", calls, late)
	}
	pool.Close()
	goleak.VerifyNone(t, leaks)
}

// checkedWorkload is a script with the CheckReporter ability.
type checkedWorkload struct {
	*testWorkload
	resets atomic.Int64
	read   result.CheckRead
}

func (w *checkedWorkload) CheckRead() *result.CheckRead { return &w.read }
func (w *checkedWorkload) ResetCheckRead()              { w.resets.Add(1) }

var _ workload.CheckReporter = (*checkedWorkload)(nil)

// The probe reports what the workload's read-before-write check read, counted from its start.
func TestFraudCheckRead(t *testing.T) { forEngines(t, testFraudCheckRead) }

func testFraudCheckRead(t *testing.T, eng result.Engine) {
	pool, _ := setup(t, DefaultSession(), 2)
	w := &checkedWorkload{testWorkload: then(), read: result.CheckRead{Checks: 5, P50: 3}}
	p, err := Run(context.Background(), pool, w, Config{Engine: eng, Rate: 20, Duration: 300 * time.Millisecond, Conns: 2, Seed: 24})
	if err != nil {
		t.Fatal(err)
	}
	checkBooks(t, p, true)
	if p.Engine != eng || w.resets.Load() != 1 || p.FraudCheck != &w.read {
		t.Errorf("engine %s, %d resets, fraud check %+v: want one reset at the start and the workload's read", p.Engine,
			w.resets.Load(), p.FraudCheck)
	}
}
