package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Copier is an optional ability (found by type assertion): a workload whose arrivals are
// rows, not transactions. The driver gathers rows that arrived into batches and writes
// each batch with one Copy; Table gains one row per committed row. Do writes one row
// alone (a batch of one).
type Copier interface {
	Workload
	// SessionSync is the statement that sets the session's synchronous_commit (SET, not SET
	// LOCAL): the driver sends it once on each connection before its first batch, as an
	// ingest service configures its connections, because a COPY runs in its own
	// transaction and has no transaction to SET LOCAL in.
	SessionSync() string
	// Copy writes n new rows with one COPY ... FROM STDIN, its own transaction
	// (autocommit), and returns the rows the server reports copied. An error means the
	// whole batch failed: COPY is all or nothing.
	Copy(ctx context.Context, conn *pgx.Conn, n int) (int64, error)
}

// SetSession sends c's session setting (SessionSync) on conn, as the driver does once per
// connection before a copy probe, and records it in the connection's Session. An
// autocommit script (insert) run later on the same pooled connection, by another sweep,
// then knows what the session has: it sets synchronous_commit again unless the setting is
// already its own. Without the record, insert at off after a copy at on on the same
// connection would skip its SET and run with on.
func SetSession(ctx context.Context, conn *pgx.Conn, c Copier) error {
	s := SessionOf(conn.PgConn())
	s.sync = "" // unknown until the server has answered
	if _, err := conn.Exec(ctx, c.SessionSync()); err != nil {
		return err
	}
	s.sync = c.SessionSync()
	return nil
}

// copyColumns are the columns a batch writes. created_at is left to its DEFAULT now(),
// the server's clock, as the insert workload's now() is: a client's timestamp would skew
// against a remote server's, and the row check and the restore between probes find a
// probe's events by created_at.
var copyColumns = []string{"id", "payload"}

// copyEvents is the copy workload: the insert workload's 3-column events table, written
// by batches of COPY FROM STDIN (seed 003: per-row INSERTs against batched COPY).
type copyEvents struct {
	payload string
	setSync string
}

var _ Copier = (*copyEvents)(nil)

func newCopy(p Params) *copyEvents {
	// insert's session statements: the connection's Session compares them (SetSession).
	w := &copyEvents{payload: strings.Repeat("x", p.PayloadBytes), setSync: stmtSessionOff}
	if p.SyncCommit {
		w.setSync = stmtSessionOn
	}
	return w
}

// Name is "copy".
func (w *copyEvents) Name() string { return "copy" }

// Table is "events": one row per committed row of a batch.
func (w *copyEvents) Table() string { return "events" }

// WarmSQL loads the catalog entries of events (Warmer).
func (w *copyEvents) WarmSQL() string { return warmEvents }

// SessionSync is SET synchronous_commit TO on or off.
func (w *copyEvents) SessionSync() string { return w.setSync }

// Do writes one row: its session setting, then a COPY of one row. The driver never calls
// it for this workload (it batches through Copy); it is here so copy is a Workload.
func (w *copyEvents) Do(ctx context.Context, conn *pgx.Conn, _ *rand.Rand) error {
	if err := SetSession(ctx, conn, w); err != nil {
		return fmt.Errorf("copy: set synchronous_commit: %w", err)
	}
	_, err := w.Copy(ctx, conn, 1)
	return err
}

// Copy writes n events, each with a new UUIDv7 key, in one COPY through pgx's CopyFrom
// (binary format; the column types are described once per connection and cached).
func (w *copyEvents) Copy(ctx context.Context, conn *pgx.Conn, n int) (int64, error) {
	src := &eventRows{n: n, payload: w.payload}
	got, err := conn.CopyFrom(ctx, pgx.Identifier{"pgceiling", "events"}, copyColumns, src)
	if err != nil {
		return got, fmt.Errorf("copy: %w", err)
	}
	if got != int64(n) {
		return got, fmt.Errorf("copy: the server copied %d rows of %d", got, n)
	}
	return got, nil
}

// eventRows is a pgx.CopyFromSource of n new events, made as pgx asks for them.
type eventRows struct {
	n, i    int
	payload string
	row     [2]any
	err     error
}

func (r *eventRows) Next() bool {
	if r.i >= r.n || r.err != nil {
		return false
	}
	r.i++
	id, err := uuid.NewV7()
	if err != nil {
		r.err = fmt.Errorf("make uuid: %w", err)
		return false
	}
	r.row[0], r.row[1] = [16]byte(id), r.payload
	return true
}

func (r *eventRows) Values() ([]any, error) { return r.row[:], nil }

func (r *eventRows) Err() error { return r.err }
