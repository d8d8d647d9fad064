package schema_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

// fraudCheck is oltp's bounded fraud check as the workload sends it.
func fraudCheck(t *testing.T) string {
	t.Helper()
	w, err := workload.New("oltp", workload.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return w.(workload.Script).Statements()[1].SQL
}

// explain returns the plan of sql with args, one line per row.
func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", sql, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", sql, err)
	}
	return strings.Join(lines, "\n")
}

// The back-fill writes min(limit, rate x window x p_k) rows per wallet (rounded up or
// down), oltp-shaped, with created_at in [anchor - window, anchor) and fresh ids above
// the baseline; oltp's bounded fraud check reads them through the (wallet_id,
// created_at) index.
func TestBackfill(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	mustInit(t, cfg, spec, schema.InitOptions{})
	b := mustBaseline(t, conn)
	bs := schema.BackfillSpec{Rate: 20, Window: time.Minute, Limit: 20, Wallets: spec.Wallets, Zipf: spec.Zipf, Seed: 3}
	got, err := schema.Backfill(ctx, conn, bs)
	if err != nil {
		t.Fatalf("Backfill(%+v): %v", bs, err)
	}
	keys, _ := workload.NewKeys(spec.Wallets, spec.Zipf)
	var lo, hi float64
	want := make([]float64, spec.Wallets+1)
	for k := 1; k <= spec.Wallets; k++ {
		want[k] = min(float64(bs.Limit), bs.Rate*bs.Window.Seconds()*(keys.Share(k)-keys.Share(k-1)))
		lo += math.Floor(want[k])
		hi += math.Ceil(want[k])
	}
	if float64(got.Rows) < lo || float64(got.Rows) > hi || got.Rate != bs.Rate || got.WindowS != 60 || got.Seconds <= 0 || got.Anchor.IsZero() {
		t.Fatalf("Backfill(%+v) = %+v, want %v..%v rows", bs, got, lo, hi)
	}
	t.Logf("Backfill(%+v) = %+v (expected %.1f..%.1f rows)", bs, got, lo, hi)
	rows, err := conn.Query(ctx, `SELECT wallet_id, count(*) FROM pgceiling.transactions WHERE id > $1 GROUP BY 1`, b.TransactionsMaxID)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int64]int64{}
	for rows.Next() {
		var k, n int64
		rows.Scan(&k, &n)
		per[k] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for k := 1; k <= spec.Wallets; k++ {
		if n := float64(per[int64(k)]); n < math.Floor(want[k]) || n > math.Ceil(want[k]) {
			t.Errorf("wallet %d: %v back-filled rows, want %.2f rounded", k, n, want[k])
		}
	}
	if per[1] != bs.Limit {
		t.Errorf("hottest wallet: %d rows, want the limit %d", per[1], bs.Limit)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE id > $1 AND (created_at < $2::timestamptz - interval '1 minute' OR created_at >= $2
		OR kind <> 'payment' OR status <> 'posted' OR reference NOT LIKE 'PAY-%' OR NOT metadata ?& ARRAY['channel', 'merchant', 'recent', 'risk'])`,
		b.TransactionsMaxID, got.Anchor); n != 0 {
		t.Errorf("%d back-filled rows outside [anchor - window, anchor) or not shaped like oltp's", n)
	}
	if n := count(t, conn, `SELECT max(id) - min(id) + 1 - count(*) FROM pgceiling.transactions WHERE id > $1`, b.TransactionsMaxID); n != 0 {
		t.Errorf("back-filled ids are not one range: %d gaps", n)
	}
	if n := count(t, conn, `SELECT min(id) FROM pgceiling.transactions WHERE id > $1`, b.TransactionsMaxID); n != b.TransactionsMaxID+1 {
		t.Errorf("first back-filled id %d, want %d (just above the baseline)", n, b.TransactionsMaxID+1)
	}
	if n := count(t, conn, `SELECT nextval('pgceiling.transactions_id_seq')`); n != b.TransactionsMaxID+got.Rows+1 {
		t.Errorf("next id after the back-fill = %d, want %d", n, b.TransactionsMaxID+got.Rows+1)
	}
	// The hottest wallet is at the limit right after the back-fill (its 20 rows cover the
	// minute; at most a couple have left it since).
	var recent int64
	if err := conn.QueryRow(ctx, fraudCheck(t), int64(1), "60", int64(20)).Scan(&recent); err != nil || recent < 17 {
		t.Errorf("fraud check of wallet 1 after the back-fill = %d, %v; want about 20", recent, err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE pgceiling.transactions`); err != nil {
		t.Fatal(err)
	}
	// The partition that holds the window is read through its (wallet_id, created_at)
	// index; the empty months ahead may be "scanned" sequentially (zero pages), as with
	// the seed's check.
	cur := got.Anchor.UTC()
	part := fmt.Sprintf("transactions_y%04dm%02d", cur.Year(), int(cur.Month()))
	if plan := explain(t, conn, fraudCheck(t), int64(7), "3600", int64(20)); strings.Contains(plan, "Seq Scan on "+part+" ") || !strings.Contains(plan, part+"_wallet_created_idx") {
		t.Errorf("plan of the fraud check:\n%s\nwant %s read through its wallet_created_idx", plan, part)
	}

	// Unbounded: rate x window x p_k for every wallet, and a refusal above the cap.
	un := schema.BackfillSpec{Rate: 10, Window: time.Minute, Wallets: spec.Wallets, Zipf: spec.Zipf, Seed: 1}
	if r, err := schema.Backfill(ctx, conn, un); err != nil || math.Abs(float64(r.Rows)-600) > 50 {
		t.Errorf("unbounded Backfill(%+v) = %+v, %v; want about 600 rows", un, r, err)
	}
	un.Rate, un.Window = 1000, time.Hour
	if _, err := schema.Backfill(ctx, conn, un); err == nil || !strings.Contains(err.Error(), "--fraud-limit 0") {
		t.Errorf("unbounded Backfill(%+v): err = %v, want a refusal", un, err)
	}
	for _, bad := range []schema.BackfillSpec{{Rate: -1, Window: time.Hour, Wallets: 1}, {Rate: 1, Window: 25 * time.Hour, Wallets: 1},
		{Rate: 1, Window: 0, Wallets: 1}, {Rate: 1, Window: time.Hour, Limit: -1, Wallets: 1}, {Rate: 1, Window: time.Hour}} {
		if _, err := schema.Backfill(ctx, conn, bad); err == nil {
			t.Errorf("Backfill(%+v): no error", bad)
		}
	}
}

// The stationarity proof at small scale. After a back-fill at rate R, what the bounded
// fraud check reads (per check, weighted by how often each wallet is checked) is the same
// at the anchor and after half a window of payments at R; without the back-fill it grows
// from nothing. Time is simulated: the payments are rows dated anchor + [0, half a
// window), and the check is counted as of a given instant instead of now().
func TestBackfillStationary(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	spec.Rows = 5_000
	mustInit(t, cfg, spec, schema.InitOptions{})
	b := mustBaseline(t, conn)
	const (
		rate   = 200.0
		limit  = 100
		window = time.Minute
		later  = window / 2
	)
	keys, _ := workload.NewKeys(spec.Wallets, spec.Zipf)
	// read is the expected rows per check as of at: sum over wallets of
	// P(wallet) x min(limit, its rows in (at - window, at]).
	read := func(at time.Time) (mean float64, hot int64) {
		rows, err := conn.Query(ctx, `SELECT k, (SELECT count(*) FROM (SELECT 1 FROM pgceiling.transactions
			WHERE wallet_id = k AND created_at > $1::timestamptz - $2::interval AND created_at <= $1::timestamptz LIMIT $3) w)
			FROM generate_series(1, $4::int) k`, at, "60", limit, spec.Wallets)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k, n int64
			rows.Scan(&k, &n)
			mean += float64(n) * (keys.Share(int(k)) - keys.Share(int(k)-1))
			if k == 1 {
				hot = n
			}
		}
		return mean, hot
	}
	// pay inserts rate x later payments dated from..from+later, Zipf wallets.
	pay := func(from time.Time, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 9))
		n := int(rate * later.Seconds())
		wallets, secs := make([]int64, n), make([]float64, n)
		for i := range wallets {
			wallets[i] = keys.Pick(rng)
			secs[i] = rng.Float64() * later.Seconds()
		}
		_, err := conn.Exec(ctx, `INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata, created_at)
			SELECT w, 1, 'EUR', 'payment', 'posted', 'sim', '{}', $3::timestamptz + make_interval(secs => s)
			FROM unnest($1::bigint[], $2::float8[]) AS u(w, s)`, wallets, secs, from)
		if err != nil {
			t.Fatal(err)
		}
	}

	got, err := schema.Backfill(ctx, conn, schema.BackfillSpec{Rate: rate, Window: window, Limit: limit, Wallets: spec.Wallets, Zipf: spec.Zipf, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	m0, hot0 := read(got.Anchor)
	pay(got.Anchor, 1)
	m1, hot1 := read(got.Anchor.Add(later))
	t.Logf("with the back-fill (%d rows): %.1f rows per check at the anchor, %.1f after %v of payments at %.0f/s; hottest wallet %d -> %d",
		got.Rows, m0, m1, later, rate, hot0, hot1)
	if hot0 != limit || hot1 != limit {
		t.Errorf("hottest wallet read %d then %d rows, want the limit %d both times", hot0, hot1, limit)
	}
	if math.Abs(m1-m0) > 0.05*m0 {
		t.Errorf("rows per check %.1f at the anchor, %.1f after %v: want equal within 5 %%", m0, m1, later)
	}

	// Without the back-fill, the same payments make the read grow.
	if _, err := schema.Restore(ctx, conn, b); err != nil {
		t.Fatal(err)
	}
	var anchor time.Time
	conn.QueryRow(ctx, `SELECT now()`).Scan(&anchor)
	e0, _ := read(anchor)
	pay(anchor, 1)
	e1, _ := read(anchor.Add(later))
	t.Logf("without: %.1f rows per check, then %.1f", e0, e1)
	if e0 > 0.01*m0 || e1 < 0.3*m0 {
		t.Errorf("without a back-fill: %.1f rows per check, then %.1f; want nothing (init's history ends 24 h back), then growth", e0, e1)
	}
}

// Restore deletes exactly what a back-fill and a probe wrote, prunes the old partitions
// (its delete plan skips them, and they are not vacuumed), puts back the wallets
// (updated_at too) and says what it did.
func TestRestoreAfterBackfill(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	spec.Months = 6
	mustInit(t, cfg, spec, schema.InitOptions{})
	old := func() string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT md5(string_agg(t::text, E'\n' ORDER BY id)) FROM pgceiling.transactions t`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := old()
	b := mustBaseline(t, conn)
	fill, err := schema.Backfill(ctx, conn, schema.BackfillSpec{Rate: 5, Window: 24 * time.Hour, Limit: 20, Wallets: spec.Wallets, Zipf: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	// A probe: oltp payments and transfers.
	rng := rand.New(rand.NewPCG(4, 4))
	for _, name := range []string{"oltp", "transfer"} {
		w, err := workload.New(name, workload.Params{Wallets: spec.Wallets, Zipf: 1, SyncCommit: false, FraudLimit: 20})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if err := w.Do(ctx, conn, rng); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	r, err := schema.Restore(ctx, conn, b)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	t.Logf("back-fill %+v; Restore %+v", fill, r)
	if r.TransactionsRows != fill.Rows+60 || r.AuditRows != 60 || r.WalletsRestored < 2 || r.Seconds <= 0 {
		t.Errorf("Restore = %+v, want %d transactions, 60 audit rows, the transfers' wallets", r, fill.Rows+60)
	}
	if after := old(); after != before {
		t.Errorf("transactions after Restore differ from before the back-fill")
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.wallets w JOIN pgceiling.wallets_baseline b USING (account_id)
		WHERE (w.balance, w.status, w.updated_at) IS DISTINCT FROM (b.balance, b.status, b.updated_at)`); n != 0 {
		t.Errorf("%d wallets differ from the baseline after Restore", n)
	}
	// Partitions whose range ended more than 24 h before the baseline: not vacuumed, and
	// not in the plan of Restore's delete (the same statement).
	rows, _ := conn.Query(ctx, `SELECT c.relname::text FROM pg_partition_tree('pgceiling.transactions') p JOIN pg_class c ON c.oid = p.relid
		WHERE p.isleaf AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
		AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz <= $1`, b.TakenAt.Add(-schema.HistoryGap))
	oldParts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(oldParts) < spec.Months-2 {
		t.Fatalf("old partitions %v, %v; want at least %d", oldParts, err, spec.Months-2)
	}
	plan := explain(t, conn, `DELETE FROM pgceiling.transactions WHERE id > $1 AND created_at >= $2 RETURNING tableoid`, b.TransactionsMaxID, b.TakenAt.Add(-schema.HistoryGap))
	for _, p := range oldParts {
		if strings.Contains(plan, p+" ") || slices.Contains(r.VacuumedRelations, "pgceiling."+p) {
			t.Errorf("old partition %s is in the delete's plan or vacuumed (%v):\n%s", p, r.VacuumedRelations, plan)
		}
	}
	for _, rel := range []string{"pgceiling.audit_log", "pgceiling.wallets", "pgceiling.events", "pgceiling.transactions_default"} {
		if !slices.Contains(r.VacuumedRelations, rel) {
			t.Errorf("VacuumedRelations %v lacks %s", r.VacuumedRelations, rel)
		}
	}
	if len(r.VacuumedRelations) > 3+1+2+schema.MonthsAhead {
		t.Errorf("VacuumedRelations %v: more than the recent partitions", r.VacuumedRelations)
	}

	// A row above the baseline's ids with an old date (a custom script could write one)
	// is found, deleted, and its partition vacuumed.
	_, err = conn.Exec(ctx, `INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata, created_at)
		VALUES (1, 1, 'EUR', 'payment', 'posted', 'old-dated', '{}', $1::timestamptz - interval '40 days')`, b.TakenAt)
	if err != nil {
		t.Fatal(err)
	}
	r, err = schema.Restore(ctx, conn, b)
	if err != nil || r.TransactionsRows != 1 || len(r.VacuumedRelations) <= 4 {
		t.Errorf("Restore after an old-dated row = %+v, %v; want it deleted and its partition vacuumed", r, err)
	}
	if after := old(); after != before {
		t.Errorf("transactions after the second Restore differ from before")
	}
}

// A schema made with another format (here: the previous one, whose history ran up to
// init) is refused by Check and rebuilt by Init only with --force.
func TestOtherFormat(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	spec.Rows = 1_000
	mustInit(t, cfg, spec, schema.InitOptions{})
	if _, err := conn.Exec(ctx, `UPDATE pgceiling.meta SET value = '1' WHERE key = 'format'`); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Check(ctx, conn); !errors.Is(err, schema.ErrOtherVersion) {
		t.Errorf("Check of a format-1 schema = %v, want ErrOtherVersion", err)
	}
	_, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "made by pgceiling") || !strings.Contains(err.Error(), "another schema format: rebuild it with --force") {
		t.Errorf("Init over a format-1 schema: err = %v, want \"made with another schema format: rebuild it with --force\"", err)
	}
	if made := mustInit(t, cfg, spec, schema.InitOptions{Force: true}); !made.Rebuilt {
		t.Errorf("forced Init over a format-1 schema: %+v, want a rebuild", made)
	}
	if st, err := schema.Status(ctx, conn); err != nil || st.Format != schema.Format || !st.SameFormat {
		t.Errorf("after the rebuild: %+v, %v", st, err)
	}
}

// BenchmarkBackfill measures a probe's preparation at the default fraud window and limit
// over 10,000 Zipf wallets and 1 M rows: the back-fill at 1,000 and 3,000 tx/s (200,000
// rows either way: every wallet is at the limit) and the restore that removes it.
//
//	go test ./schema -run '^$' -bench Backfill -benchtime 3x
func BenchmarkBackfill(b *testing.B) {
	cfg, conn := setup(b)
	ctx := context.Background()
	spec := schema.Spec{Wallets: 10_000, Rows: 1_000_000, Months: 2, Zipf: 1, Seed: 1}
	mustInit(b, cfg, spec, schema.InitOptions{})
	base, err := schema.TakeBaseline(ctx, conn)
	if err != nil {
		b.Fatal(err)
	}
	p := workload.DefaultParams()
	for _, rate := range []float64{1000, 3000} {
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) {
			var rows int64
			var restore float64
			for i := 0; i < b.N; i++ {
				f, err := schema.Backfill(ctx, conn, schema.BackfillSpec{Rate: rate, Window: p.FraudWindow, Limit: p.FraudLimit,
					Wallets: spec.Wallets, Zipf: spec.Zipf, Seed: int64(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r, err := schema.Restore(ctx, conn, base)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rows, restore = f.Rows, r.Seconds
			}
			b.ReportMetric(float64(rows), "rows/op")
			b.ReportMetric(restore, "restore-s")
		})
	}
}
