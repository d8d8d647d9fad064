package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// insertEvent is the insert workload's statement for one row; insertRows makes it for more.
const insertEvent = `INSERT INTO pgceiling.events (id, payload, created_at) VALUES ($1::uuid, $2::text, now())`

// MaxBatch is the most rows one insert statement may carry (--batch): two parameters a
// row, well inside the protocol's 65,535.
const MaxBatch = 10000

// insert is the shape behind vendors' inserts/sec claims: rows with a client-made UUIDv7
// key into the 3-column events table, one statement per transaction sent in autocommit
// (one round trip: no BEGIN, no COMMIT), with synchronous_commit set once per session.
// With a batch of N it is one multi-row INSERT of N rows. It is there to be set beside
// the realistic shapes, not instead of them.
type insert struct {
	txn
	payload    string
	batch      int
	statements []Statement
}

var (
	_ Script        = (*insert)(nil)
	_ Autocommitter = (*insert)(nil)
	_ RowsPerTxer   = (*insert)(nil)
)

func newInsert(p Params) (*insert, error) {
	n := p.Batch
	if n == 0 {
		n = 1
	}
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("workload insert: --batch must be between 1 and %d, got %d", MaxBatch, p.Batch)
	}
	name := "insert event"
	if n > 1 {
		name = "insert " + strconv.Itoa(n) + " events"
	}
	return &insert{txn: newSessionTxn(p.SyncCommit), payload: strings.Repeat("x", p.PayloadBytes), batch: n,
		statements: []Statement{{name, insertRows(n)}}}, nil
}

// insertRows is the INSERT of n events: insertEvent with n rows of VALUES, parameters
// $2i+1 (id) and $2i+2 (payload) for row i.
func insertRows(n int) string {
	if n == 1 {
		return insertEvent
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO pgceiling.events (id, payload, created_at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "($%d::uuid, $%d::text, now())", 2*i+1, 2*i+2)
	}
	return b.String()
}

// Name is "insert".
func (w *insert) Name() string { return "insert" }

// Table is "events": Batch rows per committed insert transaction.
func (w *insert) Table() string { return "events" }

// WarmSQL loads the catalog entries of events (Warmer).
func (w *insert) WarmSQL() string { return warmEvents }

// RowsPerTx is the batch: the rows one committed transaction adds to events.
func (w *insert) RowsPerTx() int { return w.batch }

// Autocommit is true: the INSERT commits on its own, in one round trip.
func (w *insert) Autocommit() bool { return true }

// Do inserts one batch of events in autocommit. rng is unused: the keys are UUIDv7
// (time-ordered, so the primary key index grows at its right edge as in production).
func (w *insert) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return runScript(ctx, conn, &w.txn, w, rng)
}

func (w *insert) Statements() []Statement { return w.statements }

// Start makes the events' ids, UUIDv7s (time-ordered, as applications use them), into
// the step's arguments: id and payload for each row.
func (w *insert) Start(tx *Tx, _ *rand.Rand) {
	args := tx.Room(2 * w.batch)
	tx.Err = nil
	for i := range w.batch {
		id, err := uuid.NewV7()
		if err != nil {
			tx.Err = fmt.Errorf("make uuid: %w", err)
			return
		}
		args[2*i], args[2*i+1] = Text(id.String()), Text(w.payload)
	}
}

// Step: one insert of the batch.
func (w *insert) Step(tx *Tx, i int, _ Result) (Step, error) {
	if i > 0 {
		return Done, nil
	}
	if tx.Err != nil {
		return Done, tx.Err
	}
	return Step{0, tx.Room(2 * w.batch)}, nil
}
