package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// setupSchema creates pgceiling's tables in a fresh database (the DDL contract in
// schema/sql, a default partition, the indexes) and the given number of wallets, each
// with a balance of 1000.00. It returns the database's DSN.
func setupSchema(t testing.TB, wallets int) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	tables, err := os.ReadFile("../schema/sql/tables.sql")
	if err != nil {
		t.Fatalf("read DDL: %v", err)
	}
	indexes, err := os.ReadFile("../schema/sql/indexes.sql")
	if err != nil {
		t.Fatalf("read DDL: %v", err)
	}
	for _, sql := range []string{
		"CREATE SCHEMA pgceiling",
		string(tables),
		"CREATE TABLE pgceiling.transactions_default PARTITION OF pgceiling.transactions DEFAULT",
		string(indexes),
		fmt.Sprintf("INSERT INTO pgceiling.wallets (account_id, balance, status) SELECT g, 1000.00, 'active' FROM generate_series(1, %d) g", wallets),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("set up schema: %v\n%s", err, sql)
		}
	}
	return dsn
}

// connect opens a connection with the given exec mode, closed when the test ends.
func connect(t testing.TB, dsn string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	return connectWith(t, dsn, func(cfg *pgx.ConnConfig) { cfg.DefaultQueryExecMode = mode })
}

// connectWith opens a connection configured by edit, closed when the test ends.
func connectWith(t testing.TB, dsn string, edit func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	edit(cfg)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func count(t *testing.T, conn *pgx.Conn, sql string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func newWorkload(t *testing.T, name string, p Params) Workload {
	t.Helper()
	w, err := New(name, p)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, p, err)
	}
	return w
}

// idle asserts conn is usable and outside any transaction.
func idle(t *testing.T, conn *pgx.Conn, after string) {
	t.Helper()
	if conn.IsClosed() {
		t.Fatalf("after %s: connection closed, want it usable", after)
	}
	if s := conn.PgConn().TxStatus(); s != 'I' {
		t.Fatalf("after %s: transaction status %q, want 'I' (idle, rolled back)", after, s)
	}
	if n := count(t, conn, "SELECT 1"); n != 1 {
		t.Fatalf("after %s: SELECT 1 = %d", after, n)
	}
}

func TestOLTPAddsOneTransactionAndOneAuditRow(t *testing.T) {
	dsn := setupSchema(t, 100)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	w := newWorkload(t, "oltp", Params{Wallets: 100, Zipf: 1.0, SyncCommit: true})
	if w.Table() != "transactions" {
		t.Errorf("oltp Table() = %q, want transactions", w.Table())
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 25
	for i := range n {
		if err := w.Do(context.Background(), conn, rng); err != nil {
			t.Fatalf("oltp Do #%d: %v", i, err)
		}
		idle(t, conn, "oltp Do")
	}
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.transactions"); got != n {
		t.Errorf("transactions rows = %d after %d commits, want %d", got, n, n)
	}
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.audit_log"); got != n {
		t.Errorf("audit_log rows = %d after %d commits, want %d", got, n, n)
	}
	// Every audit row points at its transaction and names the same wallet.
	if got := count(t, conn, `SELECT count(*) FROM pgceiling.audit_log a JOIN pgceiling.transactions x ON x.id = a.tx_id AND x.wallet_id = a.wallet_id`); got != n {
		t.Errorf("audit rows matching their transaction = %d, want %d", got, n)
	}
	if got := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE kind = 'payment' AND amount > 0 AND metadata ? 'risk' AND reference LIKE 'PAY-%'`); got != n {
		t.Errorf("well-formed payment rows = %d, want %d", got, n)
	}
	if s := w.(SkewReporter).Skew(); s.Picks != n {
		t.Errorf("Skew().Picks = %d, want %d", s.Picks, n)
	}
}

// The fraud check counts only the wallet's rows inside the window, and with a limit at
// most that many; its count is stored in the new row's metadata ("recent"), which lets
// the test see what the check saw, and recorded for CheckRead.
func TestOLTPFraudWindow(t *testing.T) {
	dsn := setupSchema(t, 1)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	_, err := conn.Exec(ctx, `INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata, created_at)
		SELECT 1, 1, 'EUR', 'payment', 'posted', 'old', '{}', now() - make_interval(hours => h)
		FROM unnest(ARRAY[1, 2, 3, 20, 30]) h`)
	if err != nil {
		t.Fatalf("prefill history: %v", err)
	}
	for _, tc := range []struct {
		window string
		limit  int64
		want   int64 // history rows counted, before the limit
	}{{"4h", 0, 3}, {"24h", 0, 4}, {"30m", 0, 0}, {"24h", 2, 4}, {"24h", 100, 4}, {"4h", 1, 3}} {
		w := newWorkload(t, "oltp", Params{Wallets: 1, Zipf: 1, SyncCommit: true, FraudWindow: mustDuration(t, tc.window), FraudLimit: tc.limit})
		if err := w.Do(ctx, conn, rand.New(rand.NewPCG(1, 2))); err != nil {
			t.Fatalf("oltp Do with window %s limit %d: %v", tc.window, tc.limit, err)
		}
		var recent int64
		if err := conn.QueryRow(ctx, `SELECT (metadata->>'recent')::bigint FROM pgceiling.transactions WHERE reference <> 'old' ORDER BY id DESC LIMIT 1`).Scan(&recent); err != nil {
			t.Fatal(err)
		}
		// Earlier iterations added rows dated now, which every window counts.
		prior := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE reference <> 'old'`) - 1
		want := tc.want + prior
		if tc.limit > 0 {
			want = min(want, tc.limit)
		}
		if recent != want {
			t.Errorf("window %s limit %d: fraud check counted %d, want %d (%d history + %d new rows, limited)", tc.window, tc.limit, recent, want, tc.want, prior)
		}
		cr := w.(CheckReporter).CheckRead()
		if cr.Checks != 1 || cr.Max != float64(want) || cr.P50 != float64(want) || cr.Limit != tc.limit || cr.WindowS != mustDuration(t, tc.window).Seconds() {
			t.Errorf("window %s limit %d: CheckRead = %+v, want 1 check of %d rows", tc.window, tc.limit, cr, want)
		}
		if win, lim := w.(HistoryReader).RecentHistory(); win != mustDuration(t, tc.window) || lim != tc.limit {
			t.Errorf("RecentHistory() = %v, %d; want %s, %d", win, lim, tc.window, tc.limit)
		}
	}
}

// The bounded check still reads transactions through the (wallet_id, created_at) index,
// as the seed's did: the LIMIT sits above an index scan, never a sequential scan.
func TestOLTPFraudCheckUsesIndex(t *testing.T) {
	dsn := setupSchema(t, 100)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	_, err := conn.Exec(ctx, `INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata, created_at)
		SELECT 1 + g % 100, 1, 'EUR', 'payment', 'posted', 'x', '{}', now() - make_interval(secs => g) FROM generate_series(1, 20000) g;
		ANALYZE pgceiling.transactions`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql  string
		args []any
	}{{oltpFraudCheck, []any{int64(7), "3600", int64(20)}}, {oltpFraudCheckUnbounded, []any{int64(7), "3600"}}} {
		sql := tc.sql
		plan := explain(t, conn, "EXPLAIN", sql, tc.args...)
		// setupSchema's index on the default partition is named by PostgreSQL after its columns.
		if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "wallet_id_created_at_idx") {
			t.Errorf("plan of %s:\n%s\nwant an index scan on (wallet_id, created_at)", sql, plan)
		}
	}
}

// TestOLTPFraudCheckReadsOnlyTheLimit: the bounded check reads at most its limit of index
// entries however many payments the wallet made in the window, under the plan a session
// settles on (generic) and under a custom one. A bitmap scan, which the planner chose
// for the check written without ORDER BY, reads every entry of the window before the
// LIMIT applies: its cost then grew with the hot wallet's rows during a probe, and with
// the plan the statistics of the moment gave.
func TestOLTPFraudCheckReadsOnlyTheLimit(t *testing.T) {
	dsn := setupSchema(t, 100)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	_, err := conn.Exec(ctx, `INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata, created_at)
		SELECT CASE WHEN g <= 3000 THEN 1 ELSE 2 + g % 99 END, 1, 'EUR', 'payment', 'posted', 'x', '{}', now() - make_interval(secs => g % 3000)
		FROM generate_series(1, 13000) g;
		ANALYZE pgceiling.transactions_default`)
	if err != nil {
		t.Fatal(err)
	}
	actual := regexp.MustCompile(`actual rows=(\d+)`)
	const limit = 20
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		plan := explain(t, conn, "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF)", oltpFraudCheck, int64(1), "3600", int64(limit))
		for _, m := range actual.FindAllStringSubmatch(plan, -1) {
			if n, _ := strconv.Atoi(m[1]); n > limit {
				t.Errorf("%s: a node of the check read %d rows of the hot wallet's 3,000, more than its limit %d:\n%s", mode, n, limit, plan)
				break
			}
		}
	}
}

// explain is the plan of sql with args as the EXPLAIN command how prints it.
func explain(t *testing.T, conn *pgx.Conn, how, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), how+" "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func TestInsertAddsOneEvent(t *testing.T) {
	dsn := setupSchema(t, 1)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	w := newWorkload(t, "insert", Params{SyncCommit: true, PayloadBytes: 37})
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 1; i <= 5; i++ {
		if err := w.Do(context.Background(), conn, rng); err != nil {
			t.Fatalf("insert Do: %v", err)
		}
		if got := count(t, conn, "SELECT count(*) FROM pgceiling.events"); got != int64(i) {
			t.Fatalf("events rows = %d after %d commits", got, i)
		}
	}
	// UUIDv7 keys: version 7, and time-ordered like the rows' insertion.
	if got := count(t, conn, `SELECT count(*) FROM pgceiling.events WHERE substr(id::text, 15, 1) = '7' AND length(payload) = 37`); got != 5 {
		t.Errorf("version-7 events with a 37-byte payload = %d, want 5", got)
	}
	if got := count(t, conn, `SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY created_at, id) AS prev FROM pgceiling.events) s WHERE prev > id`); got != 0 {
		t.Errorf("%d event keys out of time order, want 0", got)
	}
}

// TestTransferConservesMoneyUnderContention runs 400 transfers from 50 connections over
// 1,000 Zipf 1.0 wallets (the two hottest take ~20 % of picks). Lock ordering means no
// deadlock: every transfer must commit, and the balance sum must not move.
func TestTransferConservesMoneyUnderContention(t *testing.T) {
	const wallets, workers, each = 1000, 50, 8
	dsn := setupSchema(t, wallets)
	ctx := context.Background()
	check := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	w := newWorkload(t, "transfer", Params{Wallets: wallets, Zipf: 1.0, SyncCommit: true})
	checker, ok := w.(Checker)
	if !ok {
		t.Fatal("transfer does not implement Checker")
	}
	before, err := checker.Snapshot(ctx, check)
	if err != nil {
		t.Fatal(err)
	}
	if before != "1000000.00" {
		t.Fatalf("balance sum before = %s, want 1000000.00", before)
	}
	conns := make([]*pgx.Conn, workers)
	for i := range conns {
		conns[i] = connect(t, dsn, pgx.QueryExecModeCacheStatement)
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, conn := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			<-start
			for range each {
				if err := w.Do(ctx, conn, rng); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if i < 5 {
			t.Errorf("transfer failed: %v", err)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d transfers failed, want none (lock ordering prevents deadlocks)", len(errs), workers*each)
	}
	after, err := checker.Snapshot(ctx, check)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("balance sum %s after transfers, want unchanged %s", after, before)
	}
	if got := count(t, check, "SELECT count(*) FROM pgceiling.transactions WHERE kind = 'transfer'"); got != workers*each {
		t.Errorf("transfer rows = %d, want %d", got, workers*each)
	}
	if got := count(t, check, "SELECT count(*) FROM pgceiling.audit_log"); got != workers*each {
		t.Errorf("audit rows = %d, want %d", got, workers*each)
	}
	if got := count(t, check, "SELECT count(*) FROM pgceiling.wallets WHERE balance <> 1000.00"); got < 100 {
		t.Errorf("only %d wallets changed balance, want money to have moved", got)
	}
	if got := count(t, check, "SELECT count(*) FROM pgceiling.transactions WHERE wallet_id = counterparty_id"); got != 0 {
		t.Errorf("%d transfers from a wallet to itself, want 0", got)
	}
	if s := w.(SkewReporter).Skew(); s.Picks != 2*workers*each || s.HottestShare < 0.05 {
		t.Errorf("Skew() = %+v, want %d picks and a hot wallet", s, 2*workers*each)
	}
}

// TestSyncCommitSetInsideTransaction reads current_setting('synchronous_commit') inside
// each workload's transaction, and checks the SET LOCAL ends with it; insert, in
// autocommit, sets it for the session instead, so it holds after the transaction.
func TestSyncCommitSetInsideTransaction(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for _, name := range Names() {
		for _, on := range []bool{false, true} {
			w := newWorkload(t, name, Params{Wallets: 10, Zipf: 1, SyncCommit: on})
			if _, ok := w.(Copier); ok {
				continue // a session setting: TestCopySessionSync
			}
			var inside string
			tx := txnOf(w)
			tx.afterSet = func(ctx context.Context, conn *pgx.Conn) error {
				return conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&inside)
			}
			if err := w.Do(ctx, conn, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatalf("%s sync=%v: %v", name, on, err)
			}
			want := map[bool]string{true: "on", false: "off"}[on]
			if inside != want {
				t.Errorf("%s SyncCommit=%v: synchronous_commit inside the transaction = %q, want %q", name, on, inside, want)
			}
			var outside string
			if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&outside); err != nil {
				t.Fatal(err)
			}
			switch {
			case name == "insert" && outside != want:
				t.Errorf("insert SyncCommit=%v: synchronous_commit after commit = %q, want the session's %q", on, outside, want)
			case name != "insert" && outside != "on":
				t.Errorf("%s SyncCommit=%v: synchronous_commit after commit = %q, want the session's on (SET LOCAL)", name, on, outside)
			}
			if name == "insert" { // back to the session's own for the next workload
				if _, err := conn.Exec(ctx, "SET synchronous_commit TO on"); err != nil {
					t.Fatal(err)
				}
				SessionOf(conn.PgConn()).sync = ""
			}
		}
	}
}

// insert sends one statement per transaction in autocommit, after one session SET per
// connection, in every exec mode; a batch of N is one statement of N rows, and the
// connection is idle (committed) after each.
func TestInsertAutocommitBatch(t *testing.T) {
	dsn := setupSchema(t, 10)
	check := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		for _, batch := range []int{1, 7} {
			conn := connect(t, dsn, mode)
			w := newWorkload(t, "insert", Params{SyncCommit: false, Batch: batch})
			var set int
			txnOf(w).afterSet = func(context.Context, *pgx.Conn) error { set++; return nil }
			before := count(t, check, "SELECT count(*) FROM pgceiling.events")
			rng := rand.New(rand.NewPCG(3, 4))
			for range 3 {
				if err := w.Do(ctx, conn, rng); err != nil {
					t.Fatalf("mode %v, batch %d: %v", mode, batch, err)
				}
				if tx := conn.PgConn().TxStatus(); tx != 'I' {
					t.Fatalf("mode %v, batch %d: transaction status %q after Do, want idle", mode, batch, tx)
				}
			}
			if got := count(t, check, "SELECT count(*) FROM pgceiling.events") - before; got != int64(3*batch) {
				t.Errorf("mode %v, batch %d: events gained %d rows after 3 commits, want %d", mode, batch, got, 3*batch)
			}
			if set != 1 {
				t.Errorf("mode %v, batch %d: synchronous_commit set %d times in 3 transactions on one connection, want once", mode, batch, set)
			}
			var sc string
			if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "off" {
				t.Errorf("mode %v, batch %d: the session's synchronous_commit %q (%v), want off", mode, batch, sc, err)
			}
		}
	}
	if _, err := New("oltp", Params{Wallets: 1, Batch: 2}); err == nil || !strings.Contains(err.Error(), "only for the insert workload") {
		t.Errorf("oltp with a batch of 2: %v, want refused", err)
	}
	for _, b := range []int{-1, MaxBatch + 1} {
		if _, err := New("insert", Params{Batch: b}); err == nil || !strings.Contains(err.Error(), "--batch must be between 1 and 10000") {
			t.Errorf("insert with a batch of %d: %v, want refused", b, err)
		}
	}
}

func txnOf(w Workload) *txn {
	switch w := w.(type) {
	case *oltp:
		return &w.txn
	case *transfer:
		return &w.txn
	case *insert:
		return &w.txn
	}
	panic(fmt.Sprintf("unknown workload type %T", w))
}

func TestAllExecModes(t *testing.T) {
	modes := map[string]pgx.QueryExecMode{
		"CacheStatement": pgx.QueryExecModeCacheStatement,
		"CacheDescribe":  pgx.QueryExecModeCacheDescribe,
		"DescribeExec":   pgx.QueryExecModeDescribeExec,
		"Exec":           pgx.QueryExecModeExec,
		"SimpleProtocol": pgx.QueryExecModeSimpleProtocol,
	}
	dsn := setupSchema(t, 50)
	check := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for modeName, mode := range modes {
		conn := connect(t, dsn, mode)
		for _, name := range Names() {
			w := newWorkload(t, name, Params{Wallets: 50, Zipf: 1, SyncCommit: false})
			table := "pgceiling." + w.Table()
			before := count(t, check, "SELECT count(*) FROM "+table)
			rng := rand.New(rand.NewPCG(3, 4))
			for range 3 {
				if err := w.Do(ctx, conn, rng); err != nil {
					t.Fatalf("mode %s, workload %s: %v", modeName, name, err)
				}
			}
			if got := count(t, check, "SELECT count(*) FROM "+table) - before; got != 3 {
				t.Errorf("mode %s, workload %s: %s gained %d rows after 3 commits, want 3", modeName, name, table, got)
			}
		}
	}
	if sum, err := newWorkload(t, "transfer", Params{Wallets: 50}).(Checker).Snapshot(ctx, check); err != nil || sum != "50000.00" {
		t.Errorf("balance sum after transfers in every mode = %s, %v; want 50000.00", sum, err)
	}
}

// A failing transaction is rolled back, the connection stays usable, and the server's
// error is still reachable with errors.As.
func TestFailureRollsBack(t *testing.T) {
	dsn := setupSchema(t, 2)
	ctx := context.Background()
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	holder := connect(t, dsn, pgx.QueryExecModeCacheStatement)

	// Another session holds wallet 1's row lock, so transfer's FOR UPDATE hits lock_timeout.
	if _, err := holder.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT 1 FROM pgceiling.wallets WHERE account_id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = '50ms'"); err != nil {
		t.Fatal(err)
	}
	w := newWorkload(t, "transfer", Params{Wallets: 2, Zipf: 1, SyncCommit: true})
	err := w.Do(ctx, conn, rand.New(rand.NewPCG(1, 2)))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("transfer against a held lock: error %v, want a *pgconn.PgError with SQLSTATE 55P03", err)
	}
	idle(t, conn, "lock timeout")
	if _, err := holder.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}

	// A wallet that does not exist: the workload's own error, rolled back, nothing written.
	w = newWorkload(t, "transfer", Params{Wallets: 5, Zipf: 0, SyncCommit: true})
	rng := rand.New(rand.NewPCG(5, 6))
	var failed int
	for range 20 {
		if err := w.Do(ctx, conn, rng); err != nil {
			failed++
			idle(t, conn, "missing wallet")
		}
	}
	if failed == 0 {
		t.Fatal("20 transfers over wallets 1..5 with only 2 in the table all succeeded, want failures")
	}
	if got := count(t, conn, "SELECT count(*) FROM pgceiling.transactions"); got != int64(20-failed) {
		t.Errorf("transactions rows = %d, want %d (only committed transfers)", got, 20-failed)
	}
	if sum, err := w.(Checker).Snapshot(ctx, conn); err != nil || sum != "2000.00" {
		t.Errorf("balance sum = %s, %v; want 2000.00", sum, err)
	}

	// A cancelled context ends the transaction; a surviving connection is left idle.
	if _, err := holder.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT 1 FROM pgceiling.wallets WHERE account_id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	w = newWorkload(t, "oltp", Params{Wallets: 1, Zipf: 1, SyncCommit: true})
	txnOf(w).afterSet = func(ctx context.Context, conn *pgx.Conn) error {
		// Blocks on the held lock until the context expires.
		_, err := conn.Exec(ctx, "SELECT 1 FROM pgceiling.wallets WHERE account_id = $1 FOR UPDATE", 1)
		return err
	}
	// pgx's default reaction to a cancelled context is to close the connection; with a
	// cancel-request handler the server cancels the statement (57014) and the
	// connection survives, rolled back and usable.
	cancelConn := connectWith(t, dsn, func(cfg *pgx.ConnConfig) {
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
		}
	})
	for _, c := range []*pgx.Conn{conn, cancelConn} {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := w.Do(cctx, c, rand.New(rand.NewPCG(1, 2)))
		cancel()
		if err == nil {
			t.Fatal("oltp Do blocked on a held lock with an expiring context succeeded, want an error")
		}
		if c == cancelConn {
			if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
				t.Errorf("cancel-request connection: error %v, want SQLSTATE 57014", err)
			}
			idle(t, c, "context cancelled")
		} else if !c.IsClosed() {
			idle(t, c, "context cancelled")
		}
	}
	if _, err := holder.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if got := count(t, holder, "SELECT count(*) FROM pgceiling.audit_log"); got != int64(20-failed) {
		t.Errorf("audit_log rows = %d, want %d (cancelled transactions left nothing)", got, 20-failed)
	}
}

// TestWarmSQLRunsAndChangesNothing: every built-in workload but a script warms a fresh
// session (Warmer), its warm-up runs on the real schema, reads the tables its statements
// touch, and leaves every row count as it was.
func TestWarmSQLRunsAndChangesNothing(t *testing.T) {
	dsn := setupSchema(t, 10)
	ctx := context.Background()
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	counts := func() string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pgceiling.wallets) || ' ' || (SELECT count(*) FROM pgceiling.transactions)
			|| ' ' || (SELECT count(*) FROM pgceiling.audit_log) || ' ' || (SELECT count(*) FROM pgceiling.events)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := counts()
	for name, tables := range map[string][]string{"oltp": {"wallets", "transactions", "audit_log"}, "transfer": {"wallets", "transactions", "audit_log"},
		"insert": {"events"}, "copy": {"events"}} {
		wm, ok := newWorkload(t, name, Params{Wallets: 10}).(Warmer)
		if !ok {
			t.Errorf("%s: no WarmSQL; a fresh session's first transactions would load its catalog entries inside the probe", name)
			continue
		}
		sql := wm.WarmSQL()
		for _, tb := range tables {
			if !strings.Contains(sql, "pgceiling."+tb+" ") {
				t.Errorf("%s: WarmSQL %q does not read pgceiling.%s", name, sql, tb)
			}
		}
		fresh := connect(t, dsn, pgx.QueryExecModeCacheStatement)
		if _, err := fresh.PgConn().Exec(ctx, sql).ReadAll(); err != nil {
			t.Errorf("%s: WarmSQL: %v", name, err)
		}
		idle(t, fresh, name+"'s WarmSQL")
	}
	if after := counts(); after != before {
		t.Errorf("row counts (wallets, transactions, audit_log, events) %s after the warm-ups, %s before", after, before)
	}
}
