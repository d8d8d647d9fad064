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
	payload any // the text payload, boxed once
}

var _ Workload = (*insert)(nil)

func newInsert(p Params) *insert {
	return &insert{txn: newTxn(p.SyncCommit), payload: strings.Repeat("x", p.PayloadBytes)}
}

// Name is "insert".
func (w *insert) Name() string { return "insert" }

// Table is "events": one row per committed insert transaction.
func (w *insert) Table() string { return "events" }

// Do inserts one event in its own transaction. rng is unused: the key is a UUIDv7
// (time-ordered, so the primary key index grows at its right edge as in production).
func (w *insert) Do(ctx context.Context, conn *pgx.Conn, _ *rand.Rand) error {
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("insert: make uuid: %w", err)
	}
	return w.run(ctx, conn, "insert", func() error {
		if _, err := conn.Exec(ctx, insertEvent, id, w.payload); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		return nil
	})
}
