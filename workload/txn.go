package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Transaction control. Statements without arguments go over the simple protocol in
// every exec mode (pgx does that itself), one round trip each.
const (
	stmtBegin       = "BEGIN"
	stmtSyncOn      = "SET LOCAL synchronous_commit TO on"
	stmtSyncOff     = "SET LOCAL synchronous_commit TO off"
	stmtCommit      = "COMMIT"
	stmtRollback    = "ROLLBACK"
	rollbackTimeout = 5 * time.Second
)

// txn is the part every shape shares: BEGIN, SET LOCAL synchronous_commit, the body,
// COMMIT, and a rollback on any failure.
type txn struct {
	setSync string
	// afterSet, when set (tests only), runs inside the transaction right after SET
	// LOCAL, so a test can read current_setting('synchronous_commit') there.
	afterSet func(ctx context.Context, conn *pgx.Conn) error
}

// SetSync is the SET LOCAL synchronous_commit statement of the workload's setting.
func (t *txn) SetSync() string { return t.setSync }

func newTxn(syncCommit bool) txn {
	if syncCommit {
		return txn{setSync: stmtSyncOn}
	}
	return txn{setSync: stmtSyncOff}
}

// run executes body as one transaction. On any error it rolls back and returns the
// error wrapped with the step that failed; errors.As still finds the *pgconn.PgError.
func (t *txn) run(ctx context.Context, conn *pgx.Conn, name string, body func() error) error {
	err := t.exec(ctx, conn, body)
	if err != nil {
		rollback(ctx, conn)
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (t *txn) exec(ctx context.Context, conn *pgx.Conn, body func() error) error {
	if _, err := conn.Exec(ctx, stmtBegin); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if _, err := conn.Exec(ctx, t.setSync); err != nil {
		return fmt.Errorf("set synchronous_commit: %w", err)
	}
	if t.afterSet != nil {
		if err := t.afterSet(ctx, conn); err != nil {
			return err
		}
	}
	if err := body(); err != nil {
		return err
	}
	tag, err := conn.Exec(ctx, stmtCommit)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() == "ROLLBACK" {
		// COMMIT of an aborted transaction reports ROLLBACK instead of failing.
		return fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback)
	}
	return nil
}

// rollback ends whatever transaction conn is in, even when ctx is already cancelled.
// A connection that cannot be rolled back is closed, so a pool discards it instead of
// handing out a connection stuck inside a transaction.
func rollback(ctx context.Context, conn *pgx.Conn) {
	if conn.IsClosed() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if _, err := conn.Exec(rctx, stmtRollback); err != nil {
		_ = conn.Close(rctx)
	}
}
