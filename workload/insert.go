package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// insertEvent is the insert workload's only statement.
const insertEvent = `INSERT INTO pgceiling.events (id, payload, created_at) VALUES ($1::uuid, $2::text, now())`

// insert is the shape behind vendors' inserts/sec claims: one row with a client-made
// UUIDv7 key into the 3-column events table per transaction. It is there to be set
// beside the realistic shapes, not instead of them.
type insert struct {
	txn
	payload string
}

var _ Script = (*insert)(nil)

func newInsert(p Params) *insert {
	return &insert{txn: newTxn(p.SyncCommit), payload: strings.Repeat("x", p.PayloadBytes)}
}

// Name is "insert".
func (w *insert) Name() string { return "insert" }

// Table is "events": one row per committed insert transaction.
func (w *insert) Table() string { return "events" }

// Do inserts one event in its own transaction. rng is unused: the key is a UUIDv7
// (time-ordered, so the primary key index grows at its right edge as in production).
func (w *insert) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return runScript(ctx, conn, &w.txn, w, rng)
}

var insertStatements = []Statement{{"insert event", insertEvent}}

func (w *insert) Statements() []Statement { return insertStatements }

// Start makes the event's id, a UUIDv7 (time-ordered, as applications use them).
func (w *insert) Start(tx *Tx, _ *rand.Rand) {
	id, err := uuid.NewV7()
	tx.S, tx.Err = id.String(), err
	if err != nil {
		tx.Err = fmt.Errorf("make uuid: %w", err)
	}
}

// Step: one insert of the event.
func (w *insert) Step(tx *Tx, i int, _ Result) (Step, error) {
	if i > 0 {
		return Done, nil
	}
	if tx.Err != nil {
		return Done, tx.Err
	}
	return Step{0, tx.Args(Text(tx.S), Text(w.payload))}, nil
}
