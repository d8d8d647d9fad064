package observe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// Querier is what observe needs of a connection: *pgx.Conn, *pgxpool.Pool and pgx.Tx all
// satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// LocalInfo tells Disclose and the Sampler what the caller already knows about where the
// server runs. The zero value means "a server reached by DSN": locality is then detected
// from /proc (see localPostmaster).
type LocalInfo struct {
	// PostmasterPID is the pid of a server started on this machine (the embedded
	// localpg server); non-zero makes the server local without detection.
	PostmasterPID int
	// Embedded marks the throwaway server pgceiling started itself.
	Embedded bool
}

// SettingNames are the server settings every disclosure carries, in display order.
var SettingNames = []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level",
	"wal_sync_method", "commit_delay", "shared_buffers", "effective_cache_size",
	"max_wal_size", "checkpoint_timeout", "wal_compression", "data_checksums",
	"max_connections"}

// Disclose reads everything a reader needs to trust a figure: the server's version and
// durability settings (as the server shows them, with units), pgceiling's tables (rows,
// heap and index bytes with partitions summed, index count) against shared_buffers, and
// the cores and memory of the client and, when the server is local, of the server.
// Without a pgceiling schema Tables is empty. Distribution says whether (Citus) and how
// the tables are sharded; on a server without Citus, "not distributed". Row counts are the planner's estimates
// (reltuples, as of the last ANALYZE or VACUUM; the live-tuple count for a table never
// analyzed), so disclosure stays cheap on 50 M rows.
func Disclose(ctx context.Context, q Querier, local LocalInfo) (*result.Disclosure, error) {
	d := &result.Disclosure{Settings: map[string]string{}, Embedded: local.Embedded}
	var versionNum int
	var pmStart time.Time
	var backendPID int
	if err := q.QueryRow(ctx, `SELECT current_setting('server_version'),
		current_setting('server_version_num')::int, pg_postmaster_start_time(), pg_backend_pid()`).
		Scan(&d.Version, &versionNum, &pmStart, &backendPID); err != nil {
		return nil, fmt.Errorf("disclose: server version: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT name, current_setting(name) FROM pg_catalog.pg_settings
		WHERE name = ANY($1)`, SettingNames)
	if err != nil {
		return nil, fmt.Errorf("disclose: settings: %w", err)
	}
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			rows.Close()
			return nil, fmt.Errorf("disclose: settings: %w", err)
		}
		d.Settings[name] = val
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disclose: settings: %w", err)
	}
	if err := q.QueryRow(ctx, `SELECT setting::bigint * pg_size_bytes(unit)
		FROM pg_catalog.pg_settings WHERE name = 'shared_buffers'`).Scan(&d.SharedBuffersBytes); err != nil {
		return nil, fmt.Errorf("disclose: shared_buffers in bytes: %w", err)
	}
	if d.Tables, err = tableSizes(ctx, q); err != nil {
		return nil, err
	}
	for _, t := range d.Tables {
		d.DataBytes += t.HeapBytes + t.IndexBytes
	}
	if d.Distribution, err = distribution(ctx, q); err != nil {
		return nil, err
	}
	if d.SharedBuffersBytes > 0 {
		d.DataToSharedBuffers = float64(d.DataBytes) / float64(d.SharedBuffersBytes)
	}
	d.ClientCores, d.ClientMemBytes = machine()
	if pm := local.PostmasterPID; pm != 0 || localPostmaster("/proc", backendPID, pmStart) != 0 {
		d.ServerLocal = true
		d.ServerCores, d.ServerMemBytes = d.ClientCores, d.ClientMemBytes
	}
	return d, nil
}

// tableSizes lists pgceiling's top-level tables with their partitions summed. Sizes come
// from pg_table_size (heap, TOAST, free-space and visibility maps) and pg_indexes_size.
func tableSizes(ctx context.Context, q Querier) ([]result.TableSize, error) {
	rows, err := q.Query(ctx, `
SELECT c.relname,
       (SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid)::int,
       coalesce(sum(CASE WHEN lc.reltuples >= 0 THEN lc.reltuples ELSE coalesce(s.n_live_tup, 0) END), 0)::bigint,
       coalesce(sum(pg_table_size(lc.oid)), 0)::bigint,
       coalesce(sum(pg_indexes_size(lc.oid)), 0)::bigint
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN LATERAL (SELECT relid FROM pg_partition_tree(c.oid) WHERE isleaf AND c.relkind = 'p'
                   UNION ALL SELECT c.oid WHERE c.relkind = 'r') t ON true
LEFT JOIN pg_catalog.pg_class lc ON lc.oid = t.relid
LEFT JOIN pg_catalog.pg_stat_all_tables s ON s.relid = t.relid
WHERE n.nspname = 'pgceiling' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
GROUP BY c.oid, c.relname
ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("disclose: table sizes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (result.TableSize, error) {
		var t result.TableSize
		err := r.Scan(&t.Name, &t.Indexes, &t.Rows, &t.HeapBytes, &t.IndexBytes)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("disclose: table sizes: %w", err)
	}
	return out, nil
}

// Unsafe returns a warning for each setting that makes a write ceiling meaningless as a
// durable figure: fsync=off, full_page_writes=off, and a synchronous_commit=off in the
// server's (or role's, or database's) configuration when a sweep with synchronous_commit
// "on" is asked for (sweepsOn). run and search refuse with these unless
// --allow-unsafe-server; then the warnings travel in the results file and the report
// shows them on every page.
func Unsafe(d *result.Disclosure, sweepsOn bool) []string {
	if d == nil {
		return nil
	}
	var w []string
	if strings.EqualFold(d.Settings["fsync"], "off") {
		w = append(w, "fsync=off: commits are not written durably, so the ceiling is not that of a durable server")
	}
	if sweepsOn && strings.EqualFold(d.Settings["synchronous_commit"], "off") {
		w = append(w, "synchronous_commit=off in the server's configuration: a sweep meant to run with synchronous_commit=on would not show durable commits as the default")
	}
	if strings.EqualFold(d.Settings["full_page_writes"], "off") {
		w = append(w, "full_page_writes=off: a crash can tear pages, and the WAL is smaller than on a safe server")
	}
	return w
}

// UnsafeError is the refusal to measure an unsafe server.
type UnsafeError struct{ Warnings []string }

func (e *UnsafeError) Error() string {
	return "refusing to measure an unsafe server: " + strings.Join(e.Warnings, "; ") +
		" (pass --allow-unsafe-server to measure anyway; the results then carry this warning)"
}

// RefuseUnsafe returns an *UnsafeError naming --allow-unsafe-server when there are
// warnings and allow is false; nil otherwise.
func RefuseUnsafe(warnings []string, allow bool) error {
	if len(warnings) == 0 || allow {
		return nil
	}
	return &UnsafeError{Warnings: append([]string(nil), warnings...)}
}
