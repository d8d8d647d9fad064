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
	_ Script       = (*transfer)(nil)
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

// WarmSQL loads the catalog entries transfer's statements need (Warmer).
func (w *transfer) WarmSQL() string { return warmWallets }

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
	return runScript(ctx, conn, &w.txn, w, rng)
}

var transferStatements = []Statement{
	{"lock wallet", transferLock},
	{"debit wallet", transferDebit},
	{"credit wallet", transferCredit},
	{"insert transaction", transferInsert},
	{"insert audit row", transferAudit},
}

func (w *transfer) Statements() []Statement { return transferStatements }

// Start draws the pair (V[0] pays V[1]), the amount in cents and the reference.
func (w *transfer) Start(tx *Tx, rng *rand.Rand) {
	tx.V[0], tx.V[1] = w.pickPair(rng)
	tx.V[2] = rng.Int64N(maxTransferCts) + 1
	tx.V[3] = rng.Int64N(maxReference) + 1
}

// Step: lock both wallets FOR UPDATE, the lower id first (so two transfers never wait on
// each other in a cycle), debit one, credit the other, insert the transaction and its
// audit row.
func (w *transfer) Step(tx *Tx, i int, prev Result) (Step, error) {
	from, to, amount := tx.V[0], tx.V[1], tx.V[2]
	first, second := min(from, to), max(from, to)
	switch i {
	case 0:
		return Step{0, tx.Args(Int(first))}, nil
	case 1:
		if err := needRow(prev, "lock wallet", first); err != nil {
			return Done, err
		}
		return Step{0, tx.Args(Int(second))}, nil
	case 2:
		if err := needRow(prev, "lock wallet", second); err != nil {
			return Done, err
		}
		return Step{1, tx.Args(Int(from), Int(amount))}, nil
	case 3:
		if err := needOne(prev, "debit wallet", from); err != nil {
			return Done, err
		}
		return Step{2, tx.Args(Int(to), Int(amount))}, nil
	case 4:
		if err := needOne(prev, "credit wallet", to); err != nil {
			return Done, err
		}
		return Step{3, tx.Args(Int(from), Int(to), Int(amount), Int(tx.V[3]))}, nil
	case 5:
		if err := needFirst(prev, "insert transaction"); err != nil {
			return Done, err
		}
		return Step{4, tx.Args(Int(prev.First), Int(from))}, nil
	}
	return Done, nil
}

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
