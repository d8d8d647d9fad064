package driver

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgceiling/pgceiling/result"
)

func testBooks(t *testing.T, cfg Config) *books {
	t.Helper()
	cfg.Rate, cfg.Duration = 100, 2*time.Second
	b := newBooks(cfg.withDefaults(), newStopper())
	b.start = time.Now()
	return b
}

// The rules every engine shares: the pool wait, the retry rule, the booking of failures
// and of work cut off at the end of the drain.
func TestBooksRules(t *testing.T) {
	b := testBooks(t, Config{PoolWait: 100 * time.Millisecond, MaxTries: 2})
	a := arrival{at: 10 * time.Millisecond}
	if wait, ok := b.admit(a, b.start.Add(110*time.Millisecond)); !ok || wait != 100*time.Millisecond {
		t.Errorf("admit at exactly the pool wait: %v, %v; want it admitted with wait 100ms", wait, ok)
	}
	if _, ok := b.admit(a, b.start.Add(111*time.Millisecond)); ok || b.meas.failed[result.PoolTimeout].Load() != 1 {
		t.Errorf("admit past the pool wait: admitted %v, rejected %d; want it rejected", ok, b.meas.failed[result.PoolTimeout].Load())
	}
	sh := newSheet()
	j := job{a: a, tries: 1}
	ser := &pgconn.PgError{Code: "40001"}
	for _, c := range []struct {
		err    error
		connOK bool
		want   bool
	}{
		{ser, false, false}, // the connection is gone
		{&pgconn.PgError{Code: "23505"}, true, false},
		{nil, true, false},
		{ser, true, true},
		{ser, true, false}, // MaxTries 2 reached
	} {
		if got := b.retry(&j, &sh, c.err, c.connOK); got != c.want {
			t.Errorf("retry(%v, conn ok %v) at try %d = %v, want %v", c.err, c.connOK, j.tries, got, c.want)
		}
	}
	if sh.retries != 1 || j.tries != 2 {
		t.Errorf("retries %d, tries %d; want 1 and 2", sh.retries, j.tries)
	}
	if c := b.finish(&j, &sh, errors.New("read: EOF"), true, time.Now()); c != result.Connection {
		t.Errorf("a failure that closed the connection: class %v, want connection", c)
	}
	b.cut.Store(true)
	if c := b.finish(&j, &sh, context.Canceled, false, time.Now()); c != result.Other || b.uncertain.Load() != 1 {
		t.Errorf("cancelled at the drain's end: class %v, uncertain %d; want other, 1", c, b.uncertain.Load())
	}
	b.noConn(&j, &sh, errors.New("dial: refused"))
	if !b.expired(arrival{at: time.Hour}, b.start) || b.meas.failed[result.PoolTimeout].Load() != 2 {
		t.Errorf("after the drain: rejected %d; want the reconnecting arrival rejected, and every waiting one expired",
			b.meas.failed[result.PoolTimeout].Load())
	}
	if got := b.meas.scheduled.Load(); got != 0 {
		t.Errorf("scheduled %d: only arrive books arrivals", got)
	}
}

// The pgx engine rejects a waiting arrival when its pool wait runs out, not when a
// connection frees up.
func TestPGXRejectsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBooks(t, Config{PoolWait: 100 * time.Millisecond})
		e := newPGXEngine(&probeEnv{b: b, qcap: 2, ctx: context.Background()})
		done := make(chan struct{})
		go func() { defer close(done); e.reaper() }()
		rejected := func() int64 { return b.meas.failed[result.PoolTimeout].Load() }
		for _, at := range []time.Duration{0, 50 * time.Millisecond, 60 * time.Millisecond} {
			depth, ok := e.offer(arrival{at})
			if want := at < 60*time.Millisecond; ok != want {
				t.Fatalf("offer(%v) = %d, %v; want queued %v (the queue holds 2)", at, depth, ok, want)
			}
		}
		if w := e.waiting(); w != 2 {
			t.Errorf("waiting %d, want 2 (no worker)", w)
		}
		time.Sleep(100*time.Millisecond + 2*time.Microsecond)
		synctest.Wait()
		if r := rejected(); r != 1 {
			t.Errorf("after the first's pool wait: %d rejected, want 1", r)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if r := rejected(); r != 2 || e.waiting() != 0 {
			t.Errorf("after the second's pool wait: %d rejected, %d waiting; want 2, 0", r, e.waiting())
		}
		e.mu.Lock()
		e.closed = true
		e.wake()
		e.mu.Unlock()
		<-done
	})
}
