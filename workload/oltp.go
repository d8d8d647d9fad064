package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// The oltp statements. Constants, so pgx prepares each once per connection in its
// default exec mode; every parameter carries a cast so the modes that do not ask the
// server for parameter types (exec, simple protocol) work too. bench/pgbench/oltp.sql
// holds the same statements for pgbench.
const (
	oltpSelectWallet = `SELECT balance, status FROM pgceiling.wallets WHERE account_id = $1::bigint`
	// oltpFraudCheck is the velocity rule: count the wallet's payments in the window,
	// but stop at the limit ($3). It reads at most $3 entries of
	// transactions_wallet_created_idx (wallet_id, created_at) per check, the newest
	// first: the ORDER BY makes that the plan (an index scan backward that the LIMIT
	// stops). Without it the planner may choose a bitmap scan, which reads every entry of
	// the wallet's window before the LIMIT applies, so the check's cost grew with the hot
	// wallets' rows during a probe and changed with the plan the statistics gave.
	oltpFraudCheck = `SELECT count(*) AS recent FROM (SELECT 1 FROM pgceiling.transactions WHERE wallet_id = $1::bigint AND created_at > now() - $2::interval ORDER BY created_at DESC LIMIT $3::bigint) AS w`
	// oltpFraudCheckUnbounded is the seed's check (FraudLimit 0), kept for comparison:
	// it counts every payment in the window, so its cost grows as a probe fills it.
	oltpFraudCheckUnbounded = `SELECT count(*) AS recent FROM pgceiling.transactions WHERE wallet_id = $1::bigint AND created_at > now() - $2::interval`
	oltpInsertTx            = `INSERT INTO pgceiling.transactions (id, wallet_id, counterparty_id, amount, currency, kind, status, reference, description, metadata, created_at, updated_at) ` +
		`VALUES (nextval('pgceiling.transactions_id_seq'), $1::bigint, $2::bigint, $3::bigint / 100.0, 'EUR', 'payment', 'posted', 'PAY-' || to_hex($4::bigint), 'card payment', ` +
		`jsonb_build_object('channel', 'card', 'merchant', $2::bigint, 'recent', $5::bigint, 'risk', $6::int), now(), now()) RETURNING id`
	oltpInsertAudit = `INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, actor, details, created_at) VALUES ($1::bigint, $2::bigint, 'payment', 'api', 'card payment posted', now())`
)

// Value ranges shared with the pgbench scripts.
const (
	merchants      = 1000000       // counterparty ids of card payments, uniform
	maxAmountCents = 100000        // amounts 0.01 .. 1000.00
	maxReference   = 1000000000000 // references PAY-<hex of 1..1e12>
	riskScores     = 100           // risk 0..99
	maxTransferCts = 10000         // transfers 0.01 .. 100.00
)

// oltp is a card payment: read the wallet, count its recent transactions (fraud
// check), insert the transaction, insert an audit row. One Zipf wallet per transaction.
type oltp struct {
	txn
	wallets    *countedKeys
	window     string // the fraud window as interval text
	windowD    time.Duration
	limit      int64 // the fraud check's LIMIT; 0 = unbounded
	statements []Statement
	reads      *checkReads
}

var (
	_ Script        = (*oltp)(nil)
	_ SkewReporter  = (*oltp)(nil)
	_ SkewResetter  = (*oltp)(nil)
	_ CheckReporter = (*oltp)(nil)
	_ HistoryReader = (*oltp)(nil)
)

func newOLTP(p Params) (*oltp, error) {
	if p.Wallets < 1 {
		return nil, fmt.Errorf("workload oltp: need at least 1 wallet, got %d", p.Wallets)
	}
	keys, err := newCountedKeys(p.Wallets, p.Zipf)
	if err != nil {
		return nil, fmt.Errorf("workload oltp: %w", err)
	}
	stmts := oltpStatements
	if p.FraudLimit == 0 {
		stmts = oltpStatementsUnbounded
	}
	return &oltp{txn: newTxn(p.SyncCommit), wallets: keys, window: formatSeconds(p.FraudWindow), windowD: p.FraudWindow,
		limit: p.FraudLimit, statements: stmts, reads: newCheckReads(p.FraudWindow, p.FraudLimit)}, nil
}

// Name is "oltp".
func (w *oltp) Name() string { return "oltp" }

// Table is "transactions": one row per committed oltp transaction.
func (w *oltp) Table() string { return "transactions" }

// WarmSQL loads the catalog entries oltp's statements need (Warmer).
func (w *oltp) WarmSQL() string { return warmWallets }

// Skew reports the wallet skew produced so far.
func (w *oltp) Skew() result.Skew { return w.wallets.skew() }

// ResetSkew zeroes the wallet pick counts.
func (w *oltp) ResetSkew() { w.wallets.reset() }

// CheckRead summarises the rows the fraud checks counted since the last
// ResetCheckRead (every check that returned a count, a retried transaction's checks
// included): with a limit, every check of a wallet past it reads exactly the limit.
func (w *oltp) CheckRead() *result.CheckRead { return w.reads.read() }

// ResetCheckRead starts a new count (the driver calls it at a probe's start).
func (w *oltp) ResetCheckRead() { w.reads.reset() }

// RecentHistory is the fraud check's window and limit, for the back-fill before a probe.
func (w *oltp) RecentHistory() (time.Duration, int64) { return w.windowD, w.limit }

// Do runs one payment transaction: BEGIN, SET LOCAL synchronous_commit, the four
// statements, COMMIT.
func (w *oltp) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return runScript(ctx, conn, &w.txn, w, rng)
}

var (
	oltpStatements = []Statement{
		{"read wallet", oltpSelectWallet},
		{"fraud check", oltpFraudCheck},
		{"insert transaction", oltpInsertTx},
		{"insert audit row", oltpInsertAudit},
	}
	oltpStatementsUnbounded = []Statement{
		{"read wallet", oltpSelectWallet},
		{"fraud check", oltpFraudCheckUnbounded},
		{"insert transaction", oltpInsertTx},
		{"insert audit row", oltpInsertAudit},
	}
)

// Statements are the four statements; the fraud check is the bounded one unless the
// limit is 0.
func (w *oltp) Statements() []Statement { return w.statements }

// Start draws the wallet (V[0]), merchant, amount in cents, reference and risk score.
func (w *oltp) Start(tx *Tx, rng *rand.Rand) {
	tx.V[0] = w.wallets.pick(rng)
	tx.V[1] = rng.Int64N(merchants) + 1
	tx.V[2] = rng.Int64N(maxAmountCents) + 1
	tx.V[3] = rng.Int64N(maxReference) + 1
	tx.V[4] = int64(rng.IntN(riskScores))
}

// Step: read the wallet, count its recent transactions (recorded for CheckRead), insert the payment with that
// count in its metadata, insert the audit row for the new transaction's id.
func (w *oltp) Step(tx *Tx, i int, prev Result) (Step, error) {
	wallet := tx.V[0]
	switch i {
	case 0:
		return Step{0, tx.Args(Int(wallet))}, nil
	case 1:
		if err := needRow(prev, "read wallet", wallet); err != nil {
			return Done, err
		}
		if w.limit == 0 {
			return Step{1, tx.Args(Int(wallet), Text(w.window))}, nil
		}
		return Step{1, tx.Args(Int(wallet), Text(w.window), Int(w.limit))}, nil
	case 2:
		if err := needFirst(prev, "fraud check"); err != nil {
			return Done, err
		}
		w.reads.record(prev.First)
		return Step{2, tx.Args(Int(wallet), Int(tx.V[1]), Int(tx.V[2]), Int(tx.V[3]), Int(prev.First), Int(tx.V[4]))}, nil
	case 3:
		if err := needFirst(prev, "insert transaction"); err != nil {
			return Done, err
		}
		return Step{3, tx.Args(Int(prev.First), Int(wallet))}, nil
	}
	return Done, nil
}
