package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The values of Spec.Distribute.
const (
	// DistributeNone is a plain schema on one server (the default; "none" on the command
	// line).
	DistributeNone = ""
	// DistributeCitus distributes the schema over a Citus cluster from its coordinator:
	// wallets by account_id, transactions and audit_log by wallet_id, colocated with
	// wallets (docs/sharding.md).
	DistributeCitus = "citus"
)

// ErrNoCitus is Init's refusal to distribute into a database without the citus
// extension: pgceiling never creates an extension.
var ErrNoCitus = errors.New("--distribute citus needs the citus extension in this database: CREATE EXTENSION citus (as a superuser) first")

// citusMinVersion is the oldest Citus that distributes a table with an identity column
// (audit_log.id), 11.2.
var citusMinVersion = [2]int{11, 2}

// citusPKs are the primary keys of the distributed tables, each of which must include
// its table's distribution column: Citus enforces a unique constraint shard by shard only.
// wallets (account_id), wallets_baseline (account_id) and events (id) already have it;
// audit_log's (id) and transactions' (id, created_at) gain wallet_id. Ids still come from
// one sequence each, so they stay unique on their own as before; only the constraint
// that says so is wider.
const (
	citusAuditPK        = "ALTER TABLE pgceiling.audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id, wallet_id)"
	plainTransactionsPK = "ALTER TABLE pgceiling.transactions ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, created_at)"
	citusTransactionsPK = "ALTER TABLE pgceiling.transactions ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, created_at, wallet_id)"
)

// citusPrelude is what create's transaction runs first on a Citus coordinator: one
// connection per node for the whole transaction (Citus needs it to create a schema, its
// tables and their shards in one transaction), and, where the Citus version has schema-
// based sharding, that off, so schema pgceiling is not made a single-shard tenant schema.
func citusPrelude(schemaSharding bool) []string {
	s := []string{"SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"}
	if schemaSharding {
		s = append(s, "SET LOCAL citus.enable_schema_based_sharding TO off")
	}
	return s
}

// citusTables is the DDL that turns the tables of tables.sql, with their partitions
// made, into a distributed schema, run in create's transaction before any row is
// written (so no local copy of a row is left behind on the coordinator):
//
//   - audit_log's primary key gains wallet_id (the distribution column);
//   - wallets_baseline is created here, empty, with wallets' columns and key, instead of
//     by CREATE TABLE AS after the wallets are filled;
//   - wallets is distributed by account_id in a colocation group of its own (not the
//     default group, which other tables of the database may share); wallets_baseline,
//     transactions (partitioned: every partition is distributed with it) and audit_log
//     join it (colocate_with), so one wallet's rows of all four live on one node;
//   - events (the insert and copy workloads' table) is distributed by its key, alone.
//
// meta stays an ordinary table on the coordinator.
func citusTables() []string {
	return []string{
		"ALTER TABLE pgceiling.audit_log DROP CONSTRAINT audit_log_pkey",
		citusAuditPK,
		"CREATE TABLE pgceiling.wallets_baseline (LIKE pgceiling.wallets)",
		"ALTER TABLE pgceiling.wallets_baseline ADD PRIMARY KEY (account_id)",
		"SELECT create_distributed_table('pgceiling.wallets', 'account_id', colocate_with => 'none')",
		"SELECT create_distributed_table('pgceiling.wallets_baseline', 'account_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.transactions', 'wallet_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.audit_log', 'wallet_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.events', 'id', colocate_with => 'none')",
	}
}

// citusBaseline fills wallets_baseline from wallets on a distributed schema (a colocated
// INSERT ... SELECT that runs shard by shard on the workers).
const citusBaseline = "INSERT INTO pgceiling.wallets_baseline (account_id, balance, status, updated_at) SELECT account_id, balance, status, updated_at FROM pgceiling.wallets"

// citusIndexes is indexes.sql for a distributed schema: the same statements with the
// primary key of transactions widened by its distribution column. It fails when
// indexes.sql no longer has the primary key it rewrites, so the two cannot drift apart
// unnoticed.
func citusIndexes(stmts []string) ([]string, error) {
	out := make([]string, len(stmts))
	found := false
	for i, s := range stmts {
		if s == plainTransactionsPK {
			s, found = citusTransactionsPK, true
		}
		out[i] = s
	}
	if !found {
		return nil, fmt.Errorf("indexes.sql has no %q to widen for Citus", plainTransactionsPK)
	}
	return out, nil
}

// checkCitus verifies that the database can take a distributed schema: the citus
// extension is installed (ErrNoCitus otherwise) and recent enough. It reports whether
// this Citus has schema-based sharding (whose setting citusPrelude turns off).
func checkCitus(ctx context.Context, q Querier) (schemaSharding bool, err error) {
	var version string
	err = q.QueryRow(ctx, `SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'citus'`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, ErrNoCitus
	}
	if err != nil {
		return false, fmt.Errorf("look for the citus extension: %w", err)
	}
	if !versionAtLeast(version, citusMinVersion) {
		return false, fmt.Errorf("--distribute citus needs Citus %d.%d or later (identity columns on distributed tables); this database has citus %s",
			citusMinVersion[0], citusMinVersion[1], version)
	}
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_settings WHERE name = 'citus.enable_schema_based_sharding')`).Scan(&schemaSharding)
	if err != nil {
		return false, fmt.Errorf("read Citus's settings: %w", err)
	}
	return schemaSharding, nil
}

// versionAtLeast reports whether an extension version "major.minor[-x]" is at least min.
func versionAtLeast(v string, min [2]int) bool {
	var major, minor int
	head, _, _ := strings.Cut(v, "-")
	if n, _ := fmt.Sscanf(head, "%d.%d", &major, &minor); n < 1 {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}

// Distributed reports whether pgceiling's transactions table is a Citus table in this
// database; false on a server without Citus, without an error. Both questions are asked
// as "is there a row", so a server (or a test responder) that knows no Citus answers no.
func Distributed(ctx context.Context, q Querier) (bool, error) {
	for _, sql := range []string{
		`SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus' AND to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`,
		`SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = to_regclass('pgceiling.transactions')`,
	} {
		var one int
		err := q.QueryRow(ctx, sql).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("look for Citus: %w", err)
		}
	}
	return true, nil
}
