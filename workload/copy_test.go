package workload

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestCopyWritesBatches: Copy writes exactly n rows in one statement, each with its own
// UUIDv7 key and the payload, created_at from the server's clock; a failed COPY writes
// nothing.
func TestCopyWritesBatches(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	w := newWorkload(t, "copy", Params{SyncCommit: true, PayloadBytes: 7}).(Copier)
	if w.Table() != "events" {
		t.Fatalf("Table() = %q, want events", w.Table())
	}
	before := count(t, conn, "SELECT count(*) FROM pgceiling.events")
	var start string
	if err := conn.QueryRow(ctx, "SELECT now()::text").Scan(&start); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 250, 3} {
		got, err := w.Copy(ctx, conn, n)
		if err != nil || got != int64(n) {
			t.Fatalf("Copy(%d) = %d, %v; want %d rows", n, got, err, n)
		}
	}
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.events") - before; got != 254 {
		t.Errorf("events gained %d rows after batches of 1, 250 and 3, want 254", got)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(DISTINCT id) FROM pgceiling.events WHERE created_at >= $1::timestamptz AND payload = 'xxxxxxx'", start).Scan(&n); err != nil || n != 254 {
		t.Errorf("%d distinct new ids with the payload and a server created_at (%v), want 254", n, err)
	}
	var id uuid.UUID
	if err := conn.QueryRow(ctx, "SELECT id FROM pgceiling.events ORDER BY created_at DESC LIMIT 1").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id.Version() != 7 {
		t.Errorf("key %v is UUID version %d, want 7", id, id.Version())
	}

	// A batch that fails is all or nothing: a COPY into a locked table times out whole.
	if _, err := conn.Exec(ctx, "SET statement_timeout = '100ms'"); err != nil {
		t.Fatal(err)
	}
	locker := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE pgceiling.events IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Copy(ctx, conn, 10); err == nil {
		t.Error("Copy into a locked table with a 100ms statement_timeout succeeded")
	}
	_ = tx.Rollback(ctx)
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.events") - before; got != 254 {
		t.Errorf("events gained %d rows after a failed batch, want still 254", got)
	}
}

// TestCopySessionSync: the session setting the driver sends once per connection is the
// workload's synchronous_commit, and Do (a batch of one) sends it itself.
func TestCopySessionSync(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		w := newWorkload(t, "copy", Params{SyncCommit: on}).(Copier)
		if err := w.Do(ctx, conn, nil); err != nil {
			t.Fatalf("Do(sync=%v): %v", on, err)
		}
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "on", false: "off"}[on]; got != want {
			t.Errorf("sync=%v: session synchronous_commit after Do = %q, want %q (statement %q)", on, got, want, w.SessionSync())
		}
	}
}

// TestSessionSyncAcrossSweeps: one pooled connection serves every sweep of a search in
// turn. insert's session synchronous_commit outlives its sweep (the connection keeps it);
// oltp and transfer override it in each transaction (SET LOCAL); copy sets its own
// (SetSession, as the driver does) and records it, so a later insert sweep at the other
// setting sets its own again. After each step the connection's Session record, when it
// has one, is the server's setting.
func TestSessionSyncAcrossSweeps(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	word := map[bool]string{true: "on", false: "off"}
	show := func() string {
		t.Helper()
		var got string
		if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i, step := range []struct {
		workload string
		on       bool
	}{
		{"insert", false}, {"oltp", true}, {"transfer", true}, {"copy", true}, {"insert", false},
		{"copy", false}, {"insert", true}, {"copy", true}, {"insert", true}, {"insert", false},
	} {
		w := newWorkload(t, step.workload, Params{Wallets: 10, Zipf: 1, SyncCommit: step.on})
		before := show()
		inside := ""
		if c, ok := w.(Copier); ok {
			if err := SetSession(ctx, conn, c); err != nil {
				t.Fatalf("step %d: copy's session setting: %v", i, err)
			}
			if _, err := c.Copy(ctx, conn, 3); err != nil {
				t.Fatalf("step %d: copy: %v", i, err)
			}
			inside = show()
		} else {
			txnOf(w).afterSet = func(ctx context.Context, conn *pgx.Conn) error {
				return conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inside)
			}
			for range 2 {
				if err := w.Do(ctx, conn, rng); err != nil {
					t.Fatalf("step %d: %s: %v", i, step.workload, err)
				}
			}
			if step.workload == "insert" {
				inside = show() // its statements commit on their own, under the session's setting
			}
		}
		after := show()
		if inside != word[step.on] {
			t.Errorf("step %d: %s sync=%v ran with synchronous_commit %s (the session had %s)", i, step.workload, step.on, inside, before)
		}
		wantAfter := before // SET LOCAL ends with its transaction
		if step.workload == "insert" || step.workload == "copy" {
			wantAfter = word[step.on] // a session setting: it outlives the sweep
		}
		if after != wantAfter {
			t.Errorf("step %d: %s sync=%v left the session at %s, want %s", i, step.workload, step.on, after, wantAfter)
		}
		if rec := SessionOf(conn.PgConn()).sync; rec != "" && rec != "SET synchronous_commit TO "+after {
			t.Errorf("step %d: after %s sync=%v the connection's record says %q, the server %s", i, step.workload, step.on, rec, after)
		}
	}
}
