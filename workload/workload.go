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

// RowsPerTxer is an optional ability: a workload whose committed transaction adds
// RowsPerTx rows to its Table rather than one (insert with --batch N), so the row check
// expects committed x RowsPerTx and rows/s is committed/s x RowsPerTx.
type RowsPerTxer interface {
	RowsPerTx() int
}
