package prepare_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/prepare"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// setup returns a session on a fresh database with a small pgceiling schema and its
// baseline.
func setup(t *testing.T) (*pgx.Conn, schema.Spec, schema.Baseline) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	spec := schema.Spec{Wallets: 100, Rows: 2_000, Months: 3, Zipf: 1.0, Seed: 7}
	if _, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: 2}); err != nil {
		t.Fatalf("Init(%s): %v", spec, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	b, err := schema.TakeBaseline(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	return conn, spec, b
}

func newWorkload(t *testing.T, name string, wallets int) workload.Workload {
	t.Helper()
	w, err := workload.New(name, workload.Params{Wallets: wallets, Zipf: 1, SyncCommit: true,
		FraudWindow: time.Minute, FraudLimit: 20})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func count(t *testing.T, conn *pgx.Conn, sql string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestBeforeRestoresAndBackfills: with a baseline every probe starts from it with its own
// history back-filled; the history is what the probe's rate asks for.
func TestBeforeRestoresAndBackfills(t *testing.T) {
	conn, spec, b := setup(t)
	ctx := context.Background()
	before := count(t, conn, "SELECT count(*) FROM pgceiling.transactions")
	var announced []float64
	steps := prepare.New(conn, prepare.Options{Baseline: &b, Backfill: true, Wallets: spec.Wallets, Zipf: spec.Zipf,
		Checkpoint: true, OnBackfill: func(_ time.Duration, rate float64) { announced = append(announced, rate) }})
	oltp := newWorkload(t, "oltp", spec.Wallets)
	for i, rate := range []float64{10, 40} {
		p, err := steps.Before(ctx, oltp, rate, int64(i))
		if err != nil {
			t.Fatalf("Before(oltp, %g): %v", rate, err)
		}
		if p.Restore == nil || p.Backfill == nil || p.Backfill.Rate != rate || p.Backfill.Rows <= 0 {
			t.Fatalf("Before(oltp, %g) = restore %+v, backfill %+v; want both, at the rate", rate, p.Restore, p.Backfill)
		}
		if got := count(t, conn, "SELECT count(*) FROM pgceiling.transactions"); got != before+p.Backfill.Rows {
			t.Errorf("after Before(oltp, %g): %d rows, want the baseline's %d + the back-fill's %d", rate, got, before, p.Backfill.Rows)
		}
	}
	if len(announced) != 2 || announced[1] != 40 {
		t.Errorf("OnBackfill saw rates %v, want [10 40]", announced)
	}
	// A workload without a recent history gets the restore only.
	p, err := steps.Before(ctx, newWorkload(t, "insert", spec.Wallets), 40, 3)
	if err != nil || p.Restore == nil || p.Backfill != nil || p.Restore.TransactionsRows <= 0 {
		t.Errorf("Before(insert) = %+v, %v; want the last back-fill deleted and none written", p, err)
	}
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.transactions"); got != before {
		t.Errorf("after Before(insert): %d rows, want the baseline's %d", got, before)
	}
}

// TestBeforeKeepGrowth: without a baseline nothing is restored and the history is
// back-filled once, before the first probe.
func TestBeforeKeepGrowth(t *testing.T) {
	conn, spec, _ := setup(t)
	ctx := context.Background()
	steps := prepare.New(conn, prepare.Options{Backfill: true, Wallets: spec.Wallets, Zipf: spec.Zipf})
	oltp := newWorkload(t, "oltp", spec.Wallets)
	first, err := steps.Before(ctx, oltp, 20, 1)
	if err != nil || first.Restore != nil || first.Backfill == nil {
		t.Fatalf("first Before = %+v, %v; want a back-fill and no restore", first, err)
	}
	second, err := steps.Before(ctx, oltp, 20, 2)
	if err != nil || second.Restore != nil || second.Backfill != nil {
		t.Errorf("second Before = %+v, %v; want nothing: the history grows from the first back-fill", second, err)
	}
	off := prepare.New(conn, prepare.Options{Wallets: spec.Wallets})
	if p, err := off.Before(ctx, oltp, 20, 3); err != nil || p.Restore != nil || p.Backfill != nil {
		t.Errorf("Before without back-fill = %+v, %v; want nothing done", p, err)
	}
}
