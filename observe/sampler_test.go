package observe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
)

// waitActive polls pg_stat_activity (through c) until n backends with application_name
// app are active and match cond (a SQL condition on pg_stat_activity), or fails the test.
func waitActive(t *testing.T, c *pgx.Conn, app string, n int, cond string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got int
		if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'active' AND `+cond, app).Scan(&got); err != nil {
			t.Fatalf("poll pg_stat_activity: %v", err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d %s backends reached %q in 20 s", got, n, app, cond)
		}
		time.Sleep(20 * time.Millisecond) // polling the server: no event to wait on
	}
}

// noLeak checks, after every other cleanup of the test, that no goroutine it started is
// left running.
func noLeak(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func newSampler(t *testing.T, dsn string) *Sampler {
	t.Helper()
	s, err := NewSampler(context.Background(), SamplerOptions{DSN: dsn, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewSampler: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// observeFor runs the sampler for d and returns its observation.
func observeFor(t *testing.T, s *Sampler, d time.Duration, committed int64) *result.Observation {
	t.Helper()
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-time.After(d) // the measured window
	o, err := s.Stop(ctx, committed)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return o
}

func share(o *result.Observation, pred func(string) bool) float64 {
	var n int64
	for _, w := range o.Waits {
		if pred(w.Event) {
			n += w.Samples
		}
	}
	return float64(n) / float64(max(o.Samples, 1))
}

// TestSamplerLock: one session holds a row lock; four pgceiling sessions block on it.
// The sampler must see Lock:* (transactionid for the first waiter, tuple for the queue
// behind it) and call it lock contention.
func TestSamplerLock(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	holder := connect(t, dsn, "holder")
	makeSchema(t, holder)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT * FROM pgceiling.wallets WHERE account_id = 1 FOR UPDATE"); err != nil {
		t.Fatalf("hold the row lock: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		c := connect(t, dsn, "pgceiling")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Exec(ctx, "UPDATE pgceiling.wallets SET balance = balance + 1 WHERE account_id = 1")
			errs <- err
		}()
	}
	watcher := connect(t, dsn, "watcher")
	waitActive(t, watcher, "pgceiling", 4, "wait_event_type = 'Lock'")
	s := newSampler(t, dsn)
	o := observeFor(t, s, time.Second, 0)
	t.Logf("observation: %+v", *o)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("blocked update: %v", err)
		}
	}
	// The four stay blocked through the window: every round sees all of them.
	if o.Ticks < 3 || o.Samples != 4*o.Ticks {
		t.Fatalf("observation: %d samples in %d rounds, want 4 per round and >= 3 rounds: %+v", o.Samples, o.Ticks, o)
	}
	if sh := share(o, func(e string) bool { return strings.HasPrefix(e, "Lock:") }); sh < 0.9 {
		t.Errorf("Lock:* share %.2f, want >= 0.9: waits %+v", sh, o.Waits)
	}
	// The first waiter waits for the holder's transaction, the others queue on the tuple.
	if sh := share(o, func(e string) bool { return e == "Lock:transactionid" }); sh < 0.15 {
		t.Errorf("Lock:transactionid share %.2f, want >= 0.15 (one of four waiters): %+v", sh, o.Waits)
	}
	if !strings.HasPrefix(o.Bottleneck, "lock contention: ") {
		t.Errorf("bottleneck %q, want lock contention", o.Bottleneck)
	}
}

// TestSamplerCPU: two pgceiling sessions run a CPU-only statement; the sampler must see
// them as CPU, and the local server's CPU time must grow.
func TestSamplerCPU(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 2 {
		c := connect(t, dsn, "pgceiling")
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Pure CPU: generate_series in the select list streams, nothing is spilled.
			// The statement timeout ends it; its error is expected.
			_, _ = c.Exec(ctx, "SET statement_timeout = '20s'")
			_, _ = c.Exec(ctx, "SELECT count(x) FROM (SELECT generate_series(1, 2000000000) x) s")
		}()
	}
	watcher := connect(t, dsn, "watcher")
	waitActive(t, watcher, "pgceiling", 2, "wait_event IS NULL")
	s := newSampler(t, dsn)
	if !s.Local() {
		t.Fatal("the test server runs on this machine, but the sampler did not find it local")
	}
	o := observeFor(t, s, 2500*time.Millisecond, 0)
	t.Logf("observation: %+v", *o)
	if _, err := watcher.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgceiling'`); err != nil {
		t.Errorf("cancel CPU statements: %v", err)
	}
	wg.Wait()
	if o.Samples < MinSamples || o.Samples != 2*o.Ticks {
		t.Fatalf("observation: %d samples in %d rounds, want 2 per round and >= %d: %+v", o.Samples, o.Ticks, MinSamples, o)
	}
	if sh := share(o, func(e string) bool { return e == CPUEvent }); sh < 0.9 {
		t.Errorf("CPU share %.2f, want >= 0.9: waits %+v", sh, o.Waits)
	}
	if !o.ServerLocal || o.ServerCPUSeconds <= 0 || o.ServerCPUShare <= 0 {
		t.Errorf("server CPU: local %v, %.3f s, share %.3f; want > 0 for a local server", o.ServerLocal, o.ServerCPUSeconds, o.ServerCPUShare)
	}
	if o.HostCPUShare <= 0 || o.HostCPUShare > 1 {
		t.Errorf("host CPU share %.3f, want in (0, 1]", o.HostCPUShare)
	}
	// The machine's counters are read about once a second: a 2.5 s window has one or
	// two whole seconds of steal (two unless a sampling query held the loop for 1.5 s).
	if n := len(o.HostStealSeries); n < 1 || n > 2 {
		t.Errorf("steal series %v: %d seconds in a 2.5 s window, want 1 or 2", o.HostStealSeries, n)
	}
	for _, v := range o.HostStealSeries {
		if v < 0 || v > 1 {
			t.Errorf("steal series %v: a share outside [0, 1]", o.HostStealSeries)
		}
	}
	// Which CPU line depends on what else this machine runs; it must be a CPU line.
	if !strings.HasPrefix(o.Bottleneck, "backend CPU: CPU") && !strings.HasPrefix(o.Bottleneck, "server CPU-bound") &&
		!strings.HasPrefix(o.Bottleneck, "machine CPU-bound") {
		t.Errorf("bottleneck %q, want backend, server or machine CPU", o.Bottleneck)
	}
}

// TestSamplerWAL: inserts and a checkpoint during the window show as positive
// pg_stat_wal deltas and a checkpoint.
func TestSamplerWAL(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	w := connect(t, dsn, "pgceiling")
	makeSchema(t, w)
	// Backends send their statistics at most once a second: flush the schema's WAL
	// figures now, so they are not counted in the window.
	for _, q := range []string{"SELECT pg_stat_force_next_flush()", "SELECT 1"} {
		if _, err := w.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := newSampler(t, dsn)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	const n = 50
	for i := range n {
		if _, err := w.Exec(ctx, "INSERT INTO pgceiling.events (id, payload) VALUES (gen_random_uuid(), $1)", fmt.Sprint(i)); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	// Force the inserts' WAL statistics out too.
	if _, err := w.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	var before int64
	if err := w.QueryRow(ctx, checkpointQuery(s.versionNum)).Scan(&before, new(int64)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	// The checkpointer reports its statistics just after waking CHECKPOINT's caller.
	deadline := time.Now().Add(10 * time.Second)
	for after := before; after == before; {
		if err := w.QueryRow(ctx, checkpointQuery(s.versionNum)).Scan(&after, new(int64)); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("checkpoint count did not grow within 10 s of CHECKPOINT")
		}
	}
	o, err := s.Stop(ctx, n)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("observation: %+v", *o)
	// pg_stat_wal is server-wide: the checkpoint and background writers add a few records.
	if o.WAL.Records < n || o.WAL.Records > 20*n || o.WAL.Bytes <= 0 || o.WAL.Syncs <= 0 || o.WAL.Writes <= 0 {
		t.Errorf("WAL delta %+v, want %d..%d records and positive bytes, writes, syncs", o.WAL, n, 20*n)
	}
	if want := float64(o.WAL.Bytes) / n; o.WAL.BytesPerTx != want || o.WAL.SyncsPerTx != float64(o.WAL.Syncs)/n {
		t.Errorf("WAL per tx: %g bytes, %g syncs; want %g bytes, %g syncs", o.WAL.BytesPerTx, o.WAL.SyncsPerTx, want, float64(o.WAL.Syncs)/n)
	}
	if o.Checkpoints < 1 {
		t.Errorf("checkpoints %d, want >= 1 after CHECKPOINT", o.Checkpoints)
	}
	// A second probe on the same Sampler starts from fresh counters.
	o2 := observeFor(t, s, 50*time.Millisecond, 0)
	if o2.Checkpoints != 0 || o2.Samples > o.Samples+10 {
		t.Errorf("second window: %+v, want fresh counters", o2)
	}
}

// TestSamplerStopsOnCancel: cancelling the probe's context stops the sampling goroutine,
// and Stop still returns the observation.
func TestSamplerStopsOnCancel(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	s := newSampler(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := s.Start(ctx); err == nil {
		t.Error("second Start without Stop: want an error")
	}
	cancel()
	<-s.done // the goroutine ends on its own
	o, err := s.Stop(ctx, 0)
	if err != nil || o == nil {
		t.Fatalf("Stop after cancel: %v, %v", o, err)
	}
	if _, err := s.Stop(ctx, 0); err == nil {
		t.Error("Stop without Start: want an error")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSamplerBadDSN(t *testing.T) {
	if _, err := NewSampler(context.Background(), SamplerOptions{DSN: "postgres://nobody@127.0.0.1:1/x?connect_timeout=2"}); err == nil || !strings.Contains(err.Error(), "observer: connect") {
		t.Errorf("NewSampler(unreachable) = %v, want a connect error", err)
	}
}

// TestSamplerConnectionLost: the observer's backend is terminated mid-window. Sampling
// ends on its own, Stop reports the error and no goroutine is left behind.
func TestSamplerConnectionLost(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	s := newSampler(t, dsn)
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	watcher := connect(t, dsn, "watcher")
	var n int
	if err := watcher.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, ObserverAppName).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the observer's backend: %d terminated, %v", n, err)
	}
	<-s.done // the sampling goroutine stops on the broken connection
	o, err := s.Stop(ctx, 10)
	if err == nil || !strings.Contains(err.Error(), "observer") {
		t.Errorf("Stop after the connection was lost: %v, want an observer error", err)
	}
	if o == nil {
		t.Error("Stop after the connection was lost: want the partial observation, got nil")
	}
}
