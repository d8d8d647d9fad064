package schema

import (
	"context"
	"fmt"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Baseline is the data a probe starts from: what Restore puts back afterwards. Rows are
// identified as a probe's by their ids (transactions and audit_log take ids from
// sequences that only grow while a probe runs) and, for events (whose UUIDv7 keys are
// made by clients), by created_at: rows created after the baseline's newest one.
type Baseline struct {
	TakenAt            time.Time  `json:"taken_at"`
	TransactionsMaxID  int64      `json:"transactions_max_id"`
	AuditMaxID         int64      `json:"audit_max_id"`
	TransactionsRows   int64      `json:"transactions_rows"`
	AuditRows          int64      `json:"audit_rows"`
	EventsRows         int64      `json:"events_rows"`
	EventsNewest       *time.Time `json:"events_newest,omitempty"`
	WalletBalanceTotal string     `json:"wallet_balance_total"`
}

// TakeBaseline records the state Restore returns to. It counts rows exactly, so on a
// large schema it takes a few seconds: take it once per search, not per probe.
func TakeBaseline(ctx context.Context, q Querier) (Baseline, error) {
	var b Baseline
	err := q.QueryRow(ctx, `SELECT clock_timestamp(),
		(SELECT coalesce(max(id), 0) FROM pgceiling.transactions),
		(SELECT coalesce(max(id), 0) FROM pgceiling.audit_log),
		(SELECT count(*) FROM pgceiling.transactions),
		(SELECT count(*) FROM pgceiling.audit_log),
		(SELECT count(*) FROM pgceiling.events),
		(SELECT max(created_at) FROM pgceiling.events),
		(SELECT coalesce(sum(balance), 0)::text FROM pgceiling.wallets_baseline)`).
		Scan(&b.TakenAt, &b.TransactionsMaxID, &b.AuditMaxID, &b.TransactionsRows, &b.AuditRows,
			&b.EventsRows, &b.EventsNewest, &b.WalletBalanceTotal)
	if err != nil {
		return b, fmt.Errorf("take the baseline: %w", err)
	}
	return b, nil
}

// Restore returns the data to b: it deletes the rows inserted since (transactions and
// audit_log by id, events by created_at, or TRUNCATE when events was empty), puts the
// sequences back, restores every wallet's balance and status from the copy Init kept,
// checks that the tables are back to b's row counts (by the ids above b's, so it stays
// fast on a large table), and VACUUMs the touched tables. q must not be inside a
// transaction (VACUUM cannot run in one): pass a *pgx.Conn or a pool.
func Restore(ctx context.Context, q Querier, b Baseline) error {
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"delete new transactions", `DELETE FROM pgceiling.transactions WHERE id > $1`, []any{b.TransactionsMaxID}},
		{"delete new audit rows", `DELETE FROM pgceiling.audit_log WHERE id > $1`, []any{b.AuditMaxID}},
		{"restore wallets", `UPDATE pgceiling.wallets w SET balance = b.balance, status = b.status
			FROM pgceiling.wallets_baseline b
			WHERE w.account_id = b.account_id AND (w.balance, w.status) IS DISTINCT FROM (b.balance, b.status)`, nil},
	}
	if b.EventsRows == 0 {
		steps = append(steps, struct {
			what string
			sql  string
			args []any
		}{"empty events", `TRUNCATE pgceiling.events`, nil})
	} else {
		steps = append(steps, struct {
			what string
			sql  string
			args []any
		}{"delete new events", `DELETE FROM pgceiling.events WHERE created_at > $1`, []any{*b.EventsNewest}})
	}
	for _, s := range steps {
		if _, err := q.Exec(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("restore: %s: %w", s.what, err)
		}
	}
	if b.TransactionsMaxID > 0 {
		if _, err := q.Exec(ctx, `SELECT setval('pgceiling.transactions_id_seq', $1)`, b.TransactionsMaxID); err != nil {
			return fmt.Errorf("restore: transactions_id_seq: %w", err)
		}
	}
	if b.AuditMaxID > 0 {
		if _, err := q.Exec(ctx, `SELECT setval(pg_get_serial_sequence('pgceiling.audit_log', 'id'), $1)`, b.AuditMaxID); err != nil {
			return fmt.Errorf("restore: audit_log id sequence: %w", err)
		}
	}
	var wallets, events int64
	var total string
	err := q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pgceiling.wallets w JOIN pgceiling.wallets_baseline b USING (account_id)
			WHERE (w.balance, w.status) IS DISTINCT FROM (b.balance, b.status)),
		(SELECT count(*) FROM pgceiling.events),
		(SELECT coalesce(sum(balance), 0)::text FROM pgceiling.wallets)`).Scan(&wallets, &events, &total)
	if err != nil {
		return fmt.Errorf("restore: check: %w", err)
	}
	if wallets != 0 || events != b.EventsRows || total != b.WalletBalanceTotal {
		return fmt.Errorf("restore: data not back to the baseline: %d wallets differ, events %d rows (want %d), balance total %s (want %s)",
			wallets, events, b.EventsRows, total, b.WalletBalanceTotal)
	}
	if _, err := q.Exec(ctx, `VACUUM pgceiling.transactions, pgceiling.audit_log, pgceiling.wallets, pgceiling.events`); err != nil {
		return fmt.Errorf("restore: vacuum: %w", err)
	}
	return nil
}

// Checkpoint forces a checkpoint, so every probe starts at the same point of the
// checkpoint cycle. It needs superuser or the pg_checkpoint role.
func Checkpoint(ctx context.Context, q Querier) error {
	if _, err := q.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Tables are pgceiling's tables a probe writes to or reads, in the order Sizes lists them.
var Tables = []string{"transactions", "audit_log", "wallets", "events"}

var countSQL = map[string]string{
	"transactions":     `SELECT count(*) FROM pgceiling.transactions`,
	"audit_log":        `SELECT count(*) FROM pgceiling.audit_log`,
	"wallets":          `SELECT count(*) FROM pgceiling.wallets`,
	"events":           `SELECT count(*) FROM pgceiling.events`,
	"wallets_baseline": `SELECT count(*) FROM pgceiling.wallets_baseline`,
}

// RowCount counts a pgceiling table's rows exactly (count(*)), for the check of the
// driver's books against the rows the database gained. table is unqualified, one of
// Tables.
func RowCount(ctx context.Context, q Querier, table string) (int64, error) {
	sql, ok := countSQL[table]
	if !ok {
		return 0, fmt.Errorf("row count: %q is not a pgceiling table", table)
	}
	var n int64
	if err := q.QueryRow(ctx, sql).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pgceiling.%s: %w", table, err)
	}
	return n, nil
}

// Sizes describes pgceiling's tables (partitions summed into their table): rows as
// PostgreSQL estimates them (exact right after Init's ANALYZE), heap bytes (with TOAST),
// index bytes, and the number of indexes defined on the table. It also returns
// shared_buffers in bytes, to set the data size beside it.
func Sizes(ctx context.Context, q Querier) ([]result.TableSize, int64, error) {
	// A table's leaves: itself when it is not partitioned, else its leaf partitions.
	rows, err := q.Query(ctx, `WITH t AS (
			SELECT u.n AS name, u.ord, to_regclass('pgceiling.' || u.n) AS reg
			FROM unnest($1::text[]) WITH ORDINALITY AS u(n, ord)),
		leaf AS (
			SELECT t.name, c.oid FROM t JOIN pg_catalog.pg_class c ON c.oid = t.reg WHERE c.relkind = 'r'
			UNION ALL
			SELECT t.name, p.relid FROM t JOIN pg_catalog.pg_class c ON c.oid = t.reg AND c.relkind = 'p'
			CROSS JOIN LATERAL pg_catalog.pg_partition_tree(t.reg) p WHERE p.isleaf)
		SELECT t.name,
			coalesce((SELECT sum(greatest(c.reltuples, 0))::bigint FROM leaf JOIN pg_catalog.pg_class c ON c.oid = leaf.oid WHERE leaf.name = t.name), 0),
			coalesce((SELECT sum(pg_catalog.pg_table_size(leaf.oid))::bigint FROM leaf WHERE leaf.name = t.name), 0),
			coalesce((SELECT sum(pg_catalog.pg_indexes_size(leaf.oid))::bigint FROM leaf WHERE leaf.name = t.name), 0),
			(SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = t.reg)::int
		FROM t WHERE t.reg IS NOT NULL ORDER BY t.ord`, Tables)
	if err != nil {
		return nil, 0, fmt.Errorf("table sizes: %w", err)
	}
	var out []result.TableSize
	for rows.Next() {
		var s result.TableSize
		if err := rows.Scan(&s.Name, &s.Rows, &s.HeapBytes, &s.IndexBytes, &s.Indexes); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("table sizes: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("table sizes: %w", err)
	}
	var sb int64
	if err := q.QueryRow(ctx, `SELECT setting::bigint * pg_catalog.pg_size_bytes(unit) FROM pg_catalog.pg_settings WHERE name = 'shared_buffers'`).Scan(&sb); err != nil {
		return nil, 0, fmt.Errorf("read shared_buffers: %w", err)
	}
	return out, sb, nil
}

// RowsSince counts the rows a pgceiling table gained since the baseline b exactly, and
// fast on a large table: transactions and audit_log by ids above b's (an index range),
// events by created_at after b's newest row. It equals RowCount(now) - RowCount(at b) as
// long as no row older than b is deleted, which no workload does.
func RowsSince(ctx context.Context, q Querier, table string, b Baseline) (int64, error) {
	var sql string
	var args []any
	switch table {
	case "transactions":
		sql, args = `SELECT count(*) FROM pgceiling.transactions WHERE id > $1`, []any{b.TransactionsMaxID}
	case "audit_log":
		sql, args = `SELECT count(*) FROM pgceiling.audit_log WHERE id > $1`, []any{b.AuditMaxID}
	case "events":
		if b.EventsNewest == nil {
			sql = `SELECT count(*) FROM pgceiling.events`
		} else {
			sql, args = `SELECT count(*) FROM pgceiling.events WHERE created_at > $1`, []any{*b.EventsNewest}
		}
	default:
		return 0, fmt.Errorf("rows since the baseline: %q is not a table probes insert into", table)
	}
	var n int64
	if err := q.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count new rows of pgceiling.%s: %w", table, err)
	}
	return n, nil
}

// Counter counts a probe table's rows exactly but cheaply: the baseline's exact count plus
// the rows gained since (an index range), instead of a count(*) over 50 M rows before and
// after every probe. Valid while no row older than b is deleted (Restore deletes only
// newer rows).
func Counter(q Querier, b Baseline) func(ctx context.Context, table string) (int64, error) {
	return func(ctx context.Context, table string) (int64, error) {
		n, err := RowsSince(ctx, q, table, b)
		if err != nil {
			return 0, err
		}
		switch table {
		case "transactions":
			n += b.TransactionsRows
		case "audit_log":
			n += b.AuditRows
		case "events":
			if b.EventsNewest != nil {
				n += b.EventsRows
			}
		}
		return n, nil
	}
}
