package responder

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The answers a pgceiling schema would give. Marker and Format must be schema's (the
// test runs schema.Check against the responder).
const (
	schemaMarker = "pgceiling schema: safe for pgceiling init --force and pgceiling drop"
	schemaFormat = 2
	// BalanceTotal is the sum of wallet balances the responder reports, before and after
	// any transfer (a transfer moves money, it never makes any).
	BalanceTotal = "10000000.00"
	// ServerVersion is the version the responder announces.
	ServerVersion    = "15.0"
	serverVersionNum = "150000"
)

func pgTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999-07") }

var (
	int8c = func(name string) Column { return Column{name, pgtype.Int8OID} }
	int4c = func(name string) Column { return Column{name, pgtype.Int4OID} }
	textc = func(name string) Column { return Column{name, pgtype.TextOID} }
)

// Canned is the responder's table of replies, first match wins: the transaction control
// statements first (the hot path of simple queries), then the statements of pgceiling's
// workloads and of bench/pgbench/*.sql, then what `pgceiling run` asks before and after a
// probe (schema check, disclosure, baseline, row counts, the observer's statistics).
// wallets is the wallet count the schema reports; started is the "postmaster" start.
func Canned(wallets int, started time.Time) []Reply {
	now := pgTime(started)
	spec := fmt.Sprintf(`{"wallets":%d,"rows":0,"months":12,"zipf":1,"seed":1}`, wallets)
	num := Column{"balance", pgtype.NumericOID}
	none := NoTable
	return []Reply{
		// Transaction control and session settings.
		{Name: "begin", Prefix: "BEGIN", Tag: "BEGIN", Tx: TxBegin, Insert: none},
		{Name: "set", Prefix: "SET", Tag: "SET", Insert: none},
		{Name: "commit", Prefix: "COMMIT", Tag: "COMMIT", Tx: TxCommit, Insert: none},
		{Name: "rollback", Prefix: "ROLLBACK", Tag: "ROLLBACK", Tx: TxRollback, Insert: none},

		// The workloads (workload/*.go) and their pgbench scripts.
		{Name: "read wallet", Prefix: "SELECT balance, status FROM", Contains: "wallets", Insert: none,
			Cols: []Column{num, textc("status")}, Rows: [][]Cell{{V("1000.00"), V("active")}}},
		{Name: "lock wallet", Prefix: "SELECT balance FROM", Contains: "wallets", Insert: none,
			Cols: []Column{num}, Rows: [][]Cell{{V("1000.00")}}},
		{Name: "fraud check", Prefix: "SELECT count(*) AS recent FROM", Insert: none,
			Cols: []Column{int8c("recent")}, Rows: [][]Cell{{V("3")}}},
		{Name: "insert transaction", Prefix: "INSERT INTO pgceiling.transactions", Tag: "INSERT 0 1", Insert: Transactions,
			Cols: []Column{int8c("id")}, Rows: [][]Cell{{NextID}}},
		{Name: "insert audit row", Prefix: "INSERT INTO pgceiling.audit_log", Tag: "INSERT 0 1", Insert: AuditLog},
		{Name: "insert event", Prefix: "INSERT INTO pgceiling.events", Tag: "INSERT 0 1", Insert: Events, ParamsPerRow: 2},
		{Name: "move money", Prefix: "UPDATE pgceiling.wallets SET balance", Tag: "UPDATE 1", Insert: none},
		{Name: "balance total", Prefix: "SELECT coalesce(sum(balance), 0)::text FROM pgceiling.wallets", Insert: none,
			Cols: []Column{textc("coalesce")}, Rows: [][]Cell{{V(BalanceTotal)}}},

		// pgceiling's set-up and observation (schema, observe, driver).
		{Name: "schema exists", Prefix: "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace", Insert: none,
			Cols: []Column{{"exists", pgtype.BoolOID}, {"?column?", pgtype.BoolOID}}, Rows: [][]Cell{{V("t"), V("t")}}},
		{Name: "schema meta", Prefix: "SELECT key::text, value::text FROM pgceiling.meta", Insert: none,
			Cols: []Column{textc("key"), textc("value")}, Rows: [][]Cell{
				{V("marker"), V(schemaMarker)}, {V("format"), V(fmt.Sprint(schemaFormat))}, {V("state"), V("ready")},
				{V("tool_version"), V("responder")}, {V("created_at"), V(started.UTC().Format(time.RFC3339Nano))},
				{V("history_end"), V(started.UTC().Format(time.RFC3339Nano))}, {V("spec"), V(spec)}}},
		{Name: "server version", Prefix: "SELECT current_setting('server_version'),", Contains: "pg_postmaster_start_time", Insert: none,
			Cols: []Column{textc("current_setting"), int4c("current_setting"), {"pg_postmaster_start_time", pgtype.TimestamptzOID}, int4c("pg_backend_pid")},
			// Backend pid 0: the observer must not take a process of this machine for the server.
			Rows: [][]Cell{{V(ServerVersion), V(serverVersionNum), V(now), V("0")}}},
		{Name: "server brief", Prefix: "SELECT current_setting('server_version'), current_setting('fsync')", Insert: none,
			Cols: []Column{textc("current_setting"), textc("current_setting"), textc("current_setting")},
			Rows: [][]Cell{{V(ServerVersion), V("on"), V("on")}}},
		{Name: "observer version", Prefix: "SELECT current_setting('server_version_num')::int,", Insert: none,
			Cols: []Column{int4c("current_setting"), {"pg_postmaster_start_time", pgtype.TimestamptzOID}, int4c("pg_backend_pid")},
			Rows: [][]Cell{{V(serverVersionNum), V(now), V("0")}}},
		{Name: "settings", Prefix: "SELECT name, current_setting(name) FROM pg_catalog.pg_settings", Insert: none,
			Params: []uint32{pgtype.TextArrayOID}, Cols: []Column{textc("name"), textc("current_setting")},
			Rows: [][]Cell{{V("fsync"), V("on")}, {V("full_page_writes"), V("on")}, {V("synchronous_commit"), V("on")},
				{V("shared_buffers"), V("128MB")}, {V("max_connections"), V("1000")}}},
		{Name: "shared_buffers bytes", Prefix: "SELECT setting::bigint * pg_size_bytes(unit)", Insert: none,
			Cols: []Column{int8c("?column?")}, Rows: [][]Cell{{V("134217728")}}},
		{Name: "table sizes", Prefix: "SELECT c.relname,", Contains: "pg_partition_tree", Insert: none,
			Cols: []Column{textc("relname"), int4c("int4"), int8c("int8"), int8c("int8"), int8c("int8")},
			Rows: [][]Cell{{V("audit_log"), V("1"), V("0"), V("0"), V("0")}, {V("events"), V("1"), V("0"), V("0"), V("0")},
				{V("transactions"), V("1"), V("0"), V("0"), V("0")}, {V("wallets"), V("1"), V("0"), V("0"), V("0")}}},
		{Name: "connection room", Prefix: "SELECT current_setting('max_connections')::int", Insert: none,
			Cols: []Column{int4c("current_setting"), int4c("?column?"), int4c("?column?")}, Rows: [][]Cell{{V("1000"), V("3"), V("0")}}},
		{Name: "baseline", Prefix: "SELECT clock_timestamp(),", Contains: "pgceiling.transactions", Insert: none,
			Cols: []Column{{"clock_timestamp", pgtype.TimestamptzOID}, int8c("max"), int8c("max"), int8c("count"), int8c("count"),
				int8c("count"), {"max", pgtype.TimestamptzOID}, textc("coalesce")},
			Rows: [][]Cell{{V(now), V("0"), V("0"), V("0"), V("0"), V("0"), Null, V(BalanceTotal)}}},
		// Row counts: the baseline says 0 rows and max id 0, so the rows "since" are all
		// the committed inserts.
		{Name: "count transactions", Prefix: "SELECT count(*) FROM pgceiling.transactions", Insert: none,
			Params: []uint32{pgtype.Int8OID}, Cols: []Column{int8c("count")}, Rows: [][]Cell{{CountOf(Transactions)}}},
		{Name: "count audit rows", Prefix: "SELECT count(*) FROM pgceiling.audit_log", Insert: none,
			Params: []uint32{pgtype.Int8OID}, Cols: []Column{int8c("count")}, Rows: [][]Cell{{CountOf(AuditLog)}}},
		{Name: "count events", Prefix: "SELECT count(*) FROM pgceiling.events", Insert: none,
			Params: []uint32{pgtype.TimestamptzOID}, Cols: []Column{int8c("count")}, Rows: [][]Cell{{CountOf(Events)}}},
		{Name: "activity sample", Prefix: "SELECT coalesce(wait_event_type, '')", Insert: none,
			Cols: []Column{textc("coalesce"), textc("coalesce"), int8c("count")}},
		{Name: "wal statistics", Prefix: "SELECT wal_records,", Insert: none,
			Cols: []Column{int8c("wal_records"), int8c("wal_fpi"), int8c("wal_bytes"), int8c("wal_write"), int8c("wal_sync"),
				{"wal_write_time", pgtype.Float8OID}, {"wal_sync_time", pgtype.Float8OID}},
			Rows: [][]Cell{{V("0"), V("0"), V("0"), V("0"), V("0"), V("0"), V("0")}}},
		{Name: "checkpoint statistics", Prefix: "SELECT checkpoints_timed + checkpoints_req", Insert: none,
			Cols: []Column{int8c("?column?"), int8c("buffers_backend")}, Rows: [][]Cell{{V("0"), V("0")}}},
		{Name: "autovacuum count", Prefix: "SELECT coalesce(sum(autovacuum_count), 0)::bigint", Insert: none,
			Cols: []Column{int8c("coalesce")}, Rows: [][]Cell{{V("0")}}},
		{Name: "now", Prefix: "SELECT now()", Insert: none,
			Cols: []Column{{"now", pgtype.TimestamptzOID}}, Rows: [][]Cell{{V(now)}}},
	}
}
