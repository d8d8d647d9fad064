package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
	// Distributed: the schema is distributed with Citus (Restore then counts deleted rows
	// without reading where they were: a shard's tableoid means nothing on the
	// coordinator).
	Distributed bool `json:"distributed,omitempty"`
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
	if b.Distributed, err = Distributed(ctx, q); err != nil {
		return b, fmt.Errorf("take the baseline: %w", err)
	}
	return b, nil
}

// Restore returns the data to b and says what that took: it deletes the rows inserted
// since (transactions and audit_log by id, events by created_at, or TRUNCATE when events
// was empty), puts the sequences back, restores every wallet's balance, status and
// updated_at from the copy Init kept, checks that the data is back (no transaction above
// b's ids, the wallets, events and the balance total as in b), and VACUUMs what can hold
// dead rows. q must not be inside a transaction (VACUUM cannot run in one): pass a
// *pgx.Conn or a pool.
//
// It touches only what a probe changed, so it stays fast at 50 M rows: everything a
// probe or a back-fill writes has an id above b's and a created_at at or after
// b.TakenAt - HistoryGap (a probe writes now(), a back-fill no further back than its
// window, at most HistoryGap, before its anchor, which is after b was taken). The delete
// carries that created_at bound, so partition pruning skips the old months, and only the
// leaf partitions that overlap the bound (plus the default partition and any partition
// the delete found rows in) are vacuumed, not the whole partitioned table. A row above
// b's ids outside the bound (a custom script writing old dates) is found by the check,
// deleted too and its partition vacuumed.
func Restore(ctx context.Context, q Querier, b Baseline) (result.Restore, error) {
	start := time.Now()
	var r result.Restore
	since := b.TakenAt.Add(-HistoryGap)
	dirty := map[string]bool{}
	del := deleteTransactions
	if b.Distributed {
		del = deleteDistributedTransactions
	}
	deleted, err := del(ctx, q, `DELETE FROM pgceiling.transactions WHERE id > $1 AND created_at >= $2 RETURNING tableoid`,
		dirty, b.TransactionsMaxID, since)
	if err != nil {
		return r, err
	}
	r.TransactionsRows = deleted
	// The check: nothing above b's ids may remain (an index range on each partition's
	// primary key (id, created_at)).
	var left int64
	if err := q.QueryRow(ctx, `SELECT count(*) FROM pgceiling.transactions WHERE id > $1`, b.TransactionsMaxID).Scan(&left); err != nil {
		return r, fmt.Errorf("restore: check transactions: %w", err)
	}
	if left > 0 {
		deleted, err := del(ctx, q, `DELETE FROM pgceiling.transactions WHERE id > $1 RETURNING tableoid`, dirty, b.TransactionsMaxID)
		if err != nil {
			return r, err
		}
		r.TransactionsRows += deleted
		if b.Distributed {
			dirty["transactions"] = true // rows outside the recent partitions, which are unknown
		}
	}
	tag, err := q.Exec(ctx, `DELETE FROM pgceiling.audit_log WHERE id > $1`, b.AuditMaxID)
	if err != nil {
		return r, fmt.Errorf("restore: delete new audit rows: %w", err)
	}
	r.AuditRows = tag.RowsAffected()
	tag, err = q.Exec(ctx, `UPDATE pgceiling.wallets w SET balance = b.balance, status = b.status, updated_at = b.updated_at
		FROM pgceiling.wallets_baseline b
		WHERE w.account_id = b.account_id AND (w.balance, w.status, w.updated_at) IS DISTINCT FROM (b.balance, b.status, b.updated_at)`)
	if err != nil {
		return r, fmt.Errorf("restore: restore wallets: %w", err)
	}
	r.WalletsRestored = tag.RowsAffected()
	if b.EventsRows == 0 {
		if err := q.QueryRow(ctx, `SELECT count(*) FROM pgceiling.events`).Scan(&r.EventsRows); err != nil {
			return r, fmt.Errorf("restore: count events: %w", err)
		}
		if _, err := q.Exec(ctx, `TRUNCATE pgceiling.events`); err != nil {
			return r, fmt.Errorf("restore: empty events: %w", err)
		}
	} else {
		tag, err := q.Exec(ctx, `DELETE FROM pgceiling.events WHERE created_at > $1`, *b.EventsNewest)
		if err != nil {
			return r, fmt.Errorf("restore: delete new events: %w", err)
		}
		r.EventsRows = tag.RowsAffected()
	}
	if b.TransactionsMaxID > 0 {
		if _, err := q.Exec(ctx, `SELECT setval('pgceiling.transactions_id_seq', $1)`, b.TransactionsMaxID); err != nil {
			return r, fmt.Errorf("restore: transactions_id_seq: %w", err)
		}
	}
	if b.AuditMaxID > 0 {
		if _, err := q.Exec(ctx, `SELECT setval(pg_get_serial_sequence('pgceiling.audit_log', 'id'), $1)`, b.AuditMaxID); err != nil {
			return r, fmt.Errorf("restore: audit_log id sequence: %w", err)
		}
	}
	var wallets, events, txLeft int64
	var total string
	err = q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pgceiling.wallets w JOIN pgceiling.wallets_baseline b USING (account_id)
			WHERE (w.balance, w.status, w.updated_at) IS DISTINCT FROM (b.balance, b.status, b.updated_at)),
		(SELECT count(*) FROM pgceiling.events),
		(SELECT count(*) FROM pgceiling.transactions WHERE id > $1),
		(SELECT coalesce(sum(balance), 0)::text FROM pgceiling.wallets)`, b.TransactionsMaxID).Scan(&wallets, &events, &txLeft, &total)
	if err != nil {
		return r, fmt.Errorf("restore: check: %w", err)
	}
	if wallets != 0 || events != b.EventsRows || txLeft != 0 || total != b.WalletBalanceTotal {
		return r, fmt.Errorf("restore: data not back to the baseline: %d wallets differ, events %d rows (want %d), %d transactions above id %d, balance total %s (want %s)",
			wallets, events, b.EventsRows, txLeft, b.TransactionsMaxID, total, b.WalletBalanceTotal)
	}
	leaves, err := recentLeaves(ctx, q, since)
	if err != nil {
		return r, err
	}
	for _, l := range leaves {
		dirty[l] = true
	}
	for l := range dirty {
		r.VacuumedRelations = append(r.VacuumedRelations, Name+"."+l)
	}
	slices.Sort(r.VacuumedRelations)
	r.VacuumedRelations = append(r.VacuumedRelations, Name+".audit_log", Name+".wallets", Name+".events")
	vacuum := "VACUUM "
	for i, rel := range r.VacuumedRelations {
		if i > 0 {
			vacuum += ", "
		}
		vacuum += pgx.Identifier(strings.Split(rel, ".")).Sanitize()
	}
	if _, err := q.Exec(ctx, vacuum); err != nil {
		return r, fmt.Errorf("restore: vacuum: %w", err)
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// deleteTransactions runs sql, a DELETE ... RETURNING tableoid on transactions, and
// adds the leaf partitions it deleted from to dirty; it returns the rows deleted. The
// rows stay on the server: only one count per partition comes back.
func deleteTransactions(ctx context.Context, q Querier, sql string, dirty map[string]bool, args ...any) (int64, error) {
	rows, err := q.Query(ctx, `WITH d AS (`+sql+`)
		SELECT c.relname::text, x.n FROM (SELECT tableoid, count(*) AS n FROM d GROUP BY tableoid) x
		JOIN pg_catalog.pg_class c ON c.oid = x.tableoid`, args...)
	if err != nil {
		return 0, fmt.Errorf("restore: delete new transactions: %w", err)
	}
	var total int64
	for rows.Next() {
		var rel string
		var n int64
		if err := rows.Scan(&rel, &n); err != nil {
			rows.Close()
			return 0, fmt.Errorf("restore: delete new transactions: %w", err)
		}
		dirty[rel] = true
		total += n
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("restore: delete new transactions: %w", err)
	}
	return total, nil
}

// deleteDistributedTransactions is deleteTransactions for a distributed schema: the
// DELETE runs without its RETURNING clause (the tableoid a shard returns is the worker's,
// not the partition's on the coordinator), so it marks no partition dirty: Restore
// vacuums the recent ones, and the whole table after an unbounded delete.
func deleteDistributedTransactions(ctx context.Context, q Querier, sql string, dirty map[string]bool, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, strings.TrimSuffix(sql, " RETURNING tableoid"), args...)
	if err != nil {
		return 0, fmt.Errorf("restore: delete new transactions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// recentLeaves lists the leaf partitions of transactions that can hold rows created at
// or after since (their range ends after it), and the default partition: where a probe's
// inserts, rolled back or deleted, leave dead rows.
func recentLeaves(ctx context.Context, q Querier, since time.Time) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text FROM pg_catalog.pg_partition_tree('pgceiling.transactions') p
		JOIN pg_catalog.pg_class c ON c.oid = p.relid
		WHERE p.isleaf AND (pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'
			OR (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz > $1)
		ORDER BY 1`, since)
	if err != nil {
		return nil, fmt.Errorf("restore: find the recent partitions: %w", err)
	}
	leaves, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("restore: find the recent partitions: %w", err)
	}
	return leaves, nil
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
// events by created_at after b's newest row. It equals count(*) now minus count(*) at b as
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

// IndexBloat is how much a restored table's indexes may grow, over the size they had
// when last rebuilt, before the restore rebuilds them again (Compact).
const IndexBloat = 1.25

// compactSlack is growth too small to rebuild for, whatever the ratio (bytes).
const compactSlack = 1 << 20

// Compact rebuilds the indexes of the tables a restore churns — transactions' leaf
// partitions from since on (the ones probes and back-fills write) and audit_log — when
// they have grown past IndexBloat times sizes (the table's index bytes when last rebuilt;
// a table missing from sizes is rebuilt). It returns the tables rebuilt and every
// table's index bytes now, to pass as sizes next time.
//
// Why: each probe inserts and the restore deletes hundreds of thousands of rows in the
// same few relations, and VACUUM does not give a B-tree its pages back. Measured on one
// server after a few searches, the current month's partition (16,600 rows) had 23-41 MB
// per index and audit_log's two (100,000 rows) 20 and 37 MB, and the fraud check took 0.09-0.17
// ms per execution where it had taken 0.06-0.07 on the same server an hour before: the
// server got dearer with every probe, so a knee depended on how many probes (and
// searches) came before it. A REINDEX puts the indexes back to the compact state a fresh
// `init` leaves; it takes a lock that blocks the table, which is fine between probes.
func Compact(ctx context.Context, q Querier, since time.Time, sizes map[string]int64) ([]string, map[string]int64, error) {
	leaves, err := recentLeaves(ctx, q, since)
	if err != nil {
		return nil, nil, err
	}
	tables := append(leaves, "audit_log")
	now, err := indexBytes(ctx, q, tables)
	if err != nil {
		return nil, nil, err
	}
	var rebuilt []string
	for _, t := range tables {
		was, ok := sizes[t]
		if ok && (float64(now[t]) <= IndexBloat*float64(was) || now[t]-was < compactSlack) {
			continue
		}
		if _, err := q.Exec(ctx, "REINDEX TABLE "+pgx.Identifier{Name, t}.Sanitize()); err != nil {
			return rebuilt, now, fmt.Errorf("restore: reindex %s.%s: %w", Name, t, err)
		}
		rebuilt = append(rebuilt, Name+"."+t)
	}
	if len(rebuilt) > 0 {
		if now, err = indexBytes(ctx, q, tables); err != nil {
			return rebuilt, nil, err
		}
	}
	return rebuilt, now, nil
}

// indexBytes is the bytes of every index on each of pgceiling's tables.
func indexBytes(ctx context.Context, q Querier, tables []string) (map[string]int64, error) {
	rows, err := q.Query(ctx, `SELECT t.name, coalesce(sum(pg_catalog.pg_relation_size(i.indexrelid)), 0)::bigint
		FROM unnest($1::text[]) AS t(name)
		JOIN pg_catalog.pg_class c ON c.relname = t.name
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = $2
		LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid
		GROUP BY t.name`, tables, Name)
	if err != nil {
		return nil, fmt.Errorf("restore: index sizes: %w", err)
	}
	sizes := map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("restore: index sizes: %w", err)
		}
		sizes[t] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("restore: index sizes: %w", err)
	}
	return sizes, nil
}
