package observe

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
)

func TestWaitGrowth(t *testing.T) {
	m := func(pairs ...any) map[string]int64 {
		out := map[string]int64{}
		for i := 0; i < len(pairs); i += 2 {
			out[pairs[i].(string)] = int64(pairs[i+1].(int))
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		first, last map[string]int64
		want        *result.WaitShift
	}{
		{"lock wait grew", m("CPU", 80, "IO:WALSync", 20), m("CPU", 40, "IO:WALSync", 20, "Lock:tuple", 40),
			&result.WaitShift{Event: "Lock:tuple", FirstShare: 0, LastShare: 0.4}},
		{"the largest growth wins", m("CPU", 60, "IO:WALSync", 30, "Lock:tuple", 10), m("CPU", 20, "IO:WALSync", 50, "Lock:tuple", 30),
			&result.WaitShift{Event: "IO:WALSync", FirstShare: 0.3, LastShare: 0.5}},
		{"exactly 5 points is growth", m("CPU", 50, "IO:WALSync", 50), m("CPU", 45, "IO:WALSync", 55),
			&result.WaitShift{Event: "IO:WALSync", FirstShare: 0.5, LastShare: 0.55}},
		{"less than 5 points is not", m("CPU", 50, "IO:WALSync", 50), m("CPU", 46, "IO:WALSync", 54), nil},
		{"same profile, more load", m("CPU", 50, "IO:WALSync", 50), m("CPU", 500, "IO:WALSync", 500), nil},
		{"too few samples early", m("CPU", 9), m("CPU", 10, "Lock:tuple", 90), nil},
		{"too few samples late", m("CPU", 100), m("Lock:tuple", 9), nil},
		{"nothing at all", nil, nil, nil},
	} {
		got := waitGrowth(tc.first, tc.last)
		if (got == nil) != (tc.want == nil) || got != nil && (got.Event != tc.want.Event ||
			math.Abs(got.FirstShare-tc.want.FirstShare) > 1e-9 || math.Abs(got.LastShare-tc.want.LastShare) > 1e-9) {
			t.Errorf("%s: waitGrowth(%v, %v) = %+v, want %+v", tc.name, tc.first, tc.last, got, tc.want)
		}
	}
}

// TestTimeBucketsThirds: a 7-minute window sampled every 100 ms stays within the bucket
// bound, and its thirds hold what was sampled in them.
func TestTimeBucketsThirds(t *testing.T) {
	b := newTimeBuckets(100 * time.Millisecond)
	const window = 7 * time.Minute
	for at := time.Duration(0); at < window; at += 100 * time.Millisecond {
		ev := "CPU"
		if at >= window*2/3 {
			ev = "Lock:tuple"
		}
		b.add(at, ev, 2)
	}
	if len(b.buckets) > maxTimeBuckets {
		t.Fatalf("7 minutes at 100 ms: %d buckets, want <= %d", len(b.buckets), maxTimeBuckets)
	}
	first, last := b.thirds(window)
	// Merged buckets may straddle a third's edge: allow one bucket's worth of samples.
	slack := int64(2 * b.width / (100 * time.Millisecond))
	if first["CPU"] < 2*1400-slack || first["Lock:tuple"] != 0 {
		t.Errorf("first third %v, want about %d CPU samples and no lock waits (bucket width %v)", first, 2*1400, b.width)
	}
	if last["Lock:tuple"] < 2*1400-slack || last["CPU"] > slack {
		t.Errorf("last third %v, want about %d lock samples (bucket width %v)", last, 2*1400, b.width)
	}
	g := b.growth(window)
	if g == nil || g.Event != "Lock:tuple" || g.FirstShare != 0 || g.LastShare < 0.95 {
		t.Errorf("growth %+v, want Lock:tuple from 0 to about 1", g)
	}
}

// TestSamplerWaitGrowth: two pgceiling sessions sleep through the window (Timeout:PgSleep);
// after its first third, two more block on a row lock. The lock wait is the one that grew.
func TestSamplerWaitGrowth(t *testing.T) {
	noLeak(t)
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	holder := connect(t, dsn, "holder")
	makeSchema(t, holder)
	watcher := connect(t, dsn, "watcher")
	var wg sync.WaitGroup
	run := func(sql string) {
		c := connect(t, dsn, "pgceiling")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.Exec(ctx, sql) // cancelled at the end of the test
		}()
	}
	for range 2 {
		run("SELECT pg_sleep(30)")
	}
	waitActive(t, watcher, "pgceiling", 2, "wait_event = 'PgSleep'")
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT * FROM pgceiling.wallets WHERE account_id = 1 FOR UPDATE"); err != nil {
		t.Fatalf("hold the row lock: %v", err)
	}
	s := newSampler(t, dsn)
	began := time.Now()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-time.After(600 * time.Millisecond) // the first third of 1.8 s, sleepers only
	for range 2 {
		run("UPDATE pgceiling.wallets SET balance = balance + 1 WHERE account_id = 1")
	}
	waitActive(t, watcher, "pgceiling", 2, "wait_event_type = 'Lock'")
	<-time.After(time.Until(began.Add(1800 * time.Millisecond)))
	o, err := s.Stop(ctx, 0)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("observation: %+v, growth %+v", *o, o.WaitGrowth)
	if _, err := watcher.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgceiling'`); err != nil {
		t.Errorf("cancel the sessions: %v", err)
	}
	wg.Wait()
	g := o.WaitGrowth
	if g == nil || (g.Event != "Lock:transactionid" && g.Event != "Lock:tuple") {
		t.Fatalf("WaitGrowth %+v, want a Lock:* event (waits %+v)", g, o.Waits)
	}
	if g.LastShare-g.FirstShare < MinWaitGrowth || g.FirstShare > 0.1 {
		t.Errorf("WaitGrowth %+v: want a lock share that starts near 0 and grows by >= %g", g, MinWaitGrowth)
	}
}
