// Package workload defines the transaction shapes pgceiling fires (oltp, transfer, insert)
// and the key choosers (exact Zipf, uniform). A workload runs one whole transaction per
// call, one round trip per statement, as an application does it (BEGIN travels with the
// transaction's SET LOCAL; insert is one autocommit statement). It knows nothing of
// rates or timing: the driver decides when, the workload decides what.
package workload

import (
	"context"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
)

// Workload is one transaction shape.
type Workload interface {
	// Name is the workload's name as given to --workload.
	Name() string
	// Table is the pgceiling table that gains exactly one row per committed transaction
	// (RowsPerTx rows, for a RowsPerTxer), used to check the driver's books against the
	// database.
	Table() string
	// Do runs one whole transaction (BEGIN .. COMMIT, or one autocommit statement) on
	// conn, drawing keys from rng. A failed transaction is rolled back before Do returns.
	Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error
}

// Warmer is an optional ability: WarmSQL is one simple-protocol query, changing nothing,
// that every fresh session of a probe runs once before the probe's clock starts. A fresh
// backend's first statements load the catalog entries of the tables they touch, their
// indexes and their column statistics (the transactions table's 16 partitions, 80 indexes
// above all): measured on one core, the oltp fraud check took 18 ms in a new session and
// 2-3 ms from its second run, and 50 new sessions' first transactions stalled a probe's
// first two seconds at 200 tx/s (p50 130-614 ms, against 2-6 ms with 8 sessions). A
// probe measures a server whose application sessions are warm; without this, the stall
// fell on its first seconds and a server near its knee tipped into a queue it did not
// leave. The query mirrors the workload's own predicates, so planning it loads what they
// need.
type Warmer interface {
	WarmSQL() string
}

// warmWallets is the warm-up of the workloads that read wallets by account_id, read
// transactions by wallet and recent created_at (the fraud check's predicates) and insert
// into transactions and audit_log.
const warmWallets = `SELECT 1 FROM pgceiling.wallets WHERE account_id = -1; ` +
	`SELECT 1 FROM pgceiling.transactions WHERE wallet_id = -1 AND created_at > now() - interval '1 day' ORDER BY created_at DESC LIMIT 1; ` +
	`SELECT 1 FROM pgceiling.audit_log WHERE tx_id = -1 LIMIT 1`

// warmEvents is the warm-up of the workloads that insert into events (planning a read
// of it opens the table and its indexes).
const warmEvents = `SELECT 1 FROM pgceiling.events LIMIT 0`

// RowsPerTxer is an optional ability: a workload whose committed transaction adds
// RowsPerTx rows to its Table rather than one (insert with --batch N), so the row check
// expects committed x RowsPerTx and rows/s is committed/s x RowsPerTx.
type RowsPerTxer interface {
	RowsPerTx() int
}
