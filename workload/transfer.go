package workload

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// The transfer statements (bench/pgbench/transfer.sql holds the same for pgbench).
const (
	transferLock   = `SELECT balance FROM pgceiling.wallets WHERE account_id = $1::bigint FOR UPDATE`
	transferDebit  = `UPDATE pgceiling.wallets SET balance = balance - $2::bigint / 100.0, updated_at = now() WHERE account_id = $1::bigint`
	transferCredit = `UPDATE pgceiling.wallets SET balance = balance + $2::bigint / 100.0, updated_at = now() WHERE account_id = $1::bigint`
	transferInsert = `INSERT INTO pgceiling.transactions (id, wallet_id, counterparty_id, amount, currency, kind, status, reference, description, metadata, created_at, updated_at) ` +
		`VALUES (nextval('pgceiling.transactions_id_seq'), $1::bigint, $2::bigint, $3::bigint / 100.0, 'EUR', 'transfer', 'posted', 'TRF-' || to_hex($4::bigint), 'wallet transfer', ` +
		`jsonb_build_object('channel', 'app', 'from', $1::bigint, 'to', $2::bigint), now(), now()) RETURNING id`
	transferAudit = `INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, actor, details, created_at) VALUES ($1::bigint, $2::bigint, 'transfer', 'api', 'wallet transfer posted', now())`
	// transferSum is the money invariant: the exact sum of all balances.
	transferSum = `SELECT coalesce(sum(balance), 0)::text FROM pgceiling.wallets`
)

// transfer moves money between two distinct Zipf wallets: lock both FOR UPDATE, lower
// id first (so concurrent transfers never deadlock), debit, credit, insert the
// transaction, insert an audit row. The sum of balances never changes.
type transfer struct {
	txn
	wallets *countedKeys
}

var (
	_ Workload     = (*transfer)(nil)
	_ Checker      = (*transfer)(nil)
	_ SkewReporter = (*transfer)(nil)
	_ SkewResetter = (*transfer)(nil)
)

func newTransfer(p Params) (*transfer, error) {
	if p.Wallets < 2 {
		return nil, fmt.Errorf("workload transfer: need at least 2 wallets, got %d", p.Wallets)
	}
	keys, err := newCountedKeys(p.Wallets, p.Zipf)
	if err != nil {
		return nil, fmt.Errorf("workload transfer: %w", err)
	}
	return &transfer{txn: newTxn(p.SyncCommit), wallets: keys}, nil
}

// Name is "transfer".
func (w *transfer) Name() string { return "transfer" }

// Table is "transactions": one row per committed transfer.
func (w *transfer) Table() string { return "transactions" }

// Skew reports the wallet skew produced so far (two picks per transfer).
func (w *transfer) Skew() result.Skew { return w.wallets.skew() }

// ResetSkew zeroes the wallet pick counts.
func (w *transfer) ResetSkew() { w.wallets.reset() }

// Snapshot returns the sum of all wallet balances as an exact decimal string; it must
// be the same before and after any number of transfers.
func (w *transfer) Snapshot(ctx context.Context, q Querier) (string, error) {
	var sum string
	if err := q.QueryRow(ctx, transferSum).Scan(&sum); err != nil {
		return "", fmt.Errorf("sum wallet balances: %w", err)
	}
	return sum, nil
}

// Do runs one transfer transaction.
func (w *transfer) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	from, to := w.pickPair(rng)
	first, second := min(from, to), max(from, to)
	amount := rng.Int64N(maxTransferCts) + 1
	reference := rng.Int64N(maxReference) + 1
	return w.run(ctx, conn, "transfer", func() error {
		var balance float64
		if err := conn.QueryRow(ctx, transferLock, first).Scan(&balance); err != nil {
			return fmt.Errorf("lock wallet %d: %w", first, err)
		}
		if err := conn.QueryRow(ctx, transferLock, second).Scan(&balance); err != nil {
			return fmt.Errorf("lock wallet %d: %w", second, err)
		}
		if err := execOne(ctx, conn, transferDebit, from, amount); err != nil {
			return fmt.Errorf("debit wallet %d: %w", from, err)
		}
		if err := execOne(ctx, conn, transferCredit, to, amount); err != nil {
			return fmt.Errorf("credit wallet %d: %w", to, err)
		}
		var txID int64
		if err := conn.QueryRow(ctx, transferInsert, from, to, amount, reference).Scan(&txID); err != nil {
			return fmt.Errorf("insert transaction: %w", err)
		}
		if _, err := conn.Exec(ctx, transferAudit, txID, from); err != nil {
			return fmt.Errorf("insert audit row: %w", err)
		}
		return nil
	})
}

// maxRedraws bounds the redraws of a destination equal to the source; past it the
// next wallet id is taken (only reachable with extreme exponents, where wallet 1 takes
// nearly every pick).
const maxRedraws = 32

// pickPair draws two distinct wallets from the Zipf table and counts both: a second
// pick equal to the first is drawn again (uncounted), as an application never
// transfers to itself.
func (w *transfer) pickPair(rng *rand.Rand) (from, to int64) {
	from = w.wallets.keys.Pick(rng)
	to = w.wallets.keys.Pick(rng)
	for i := 0; to == from && i < maxRedraws; i++ {
		to = w.wallets.keys.Pick(rng)
	}
	if to == from {
		to = from%int64(w.wallets.keys.N()) + 1
	}
	w.wallets.counts[from-1].Add(1)
	w.wallets.counts[to-1].Add(1)
	return from, to
}

// execOne runs a statement that must change exactly one row.
func execOne(ctx context.Context, conn *pgx.Conn, sql string, args ...any) error {
	tag, err := conn.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != 1 {
		return fmt.Errorf("changed %d rows, want 1", n)
	}
	return nil
}
