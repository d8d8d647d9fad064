package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Transaction control. Statements without arguments go over the simple protocol in
// every exec mode (pgx does that itself, and so does the driver's event loop). BEGIN and
// the transaction's SET LOCAL synchronous_commit go as one simple query of two statements,
// one round trip (as a libpq application sends them with one PQexec, and as pgjdbc sends
// BEGIN with the statement after it); an autocommit script sets synchronous_commit for
// the session instead, once per connection.
const (
	stmtBegin       = "BEGIN"
	stmtSyncOn      = "SET LOCAL synchronous_commit TO on"
	stmtSyncOff     = "SET LOCAL synchronous_commit TO off"
	stmtSessionOn   = "SET synchronous_commit TO on"
	stmtSessionOff  = "SET synchronous_commit TO off"
	stmtCommit      = "COMMIT"
	stmtRollback    = "ROLLBACK"
	rollbackTimeout = 5 * time.Second
)

// OpKind is what a transaction sends next.
type OpKind uint8

// The statements of a transaction, in the order a committed one sends them.
const (
	OpBegin    OpKind = iota // BEGIN and the script's SET LOCAL synchronous_commit, one simple query
	OpSet                    // an autocommit script's session SET synchronous_commit, once per connection
	OpStep                   // the script's statement Op.Step
	OpCommit                 // COMMIT
	OpRollback               // ROLLBACK, after a failure inside the transaction
	OpDone                   // nothing: the transaction is over (Txn.Err, Txn.CloseConn)
)

// Op is one statement for the executor to send: Op.SQL (no arguments, simple protocol)
// for every kind but OpStep, which sends Statements()[Step.Stmt] with Step.Args.
type Op struct {
	Kind OpKind
	SQL  string
	Step Step
}

// Reply is what the executor learnt from the statement an Op sent.
type Reply struct {
	Result Result // an OpStep's rows and first column
	Err    error  // the statement failed: an error from the server, or the connection's loss
	Rolled bool   // its command tag was ROLLBACK: a COMMIT of a transaction that had failed
	Idle   bool   // the connection is outside a transaction now (ReadyForQuery status 'I')
	Closed bool   // the connection is gone
}

// Txn is one transaction of a Script as a state machine, the one both of the driver's
// engines run: the executor sends the Op that Begin and then each Next return, and
// reports each statement's Reply to Next, until OpDone. The policy lives here once:
//
//   - BEGIN with SET LOCAL synchronous_commit (one round trip), the script's steps,
//     COMMIT; each failure is wrapped with the script's name and the stage that failed
//     (errors.As still finds the *pgconn.PgError);
//   - an autocommit script (Autocommitter) sends its steps alone, each committing on its
//     own: no BEGIN, no COMMIT, nothing to roll back when one fails; its SetSync is a
//     session SET, sent before the first step only when the connection's Session does not
//     have it yet;
//   - a COMMIT that reports ROLLBACK fails with pgx.ErrTxCommitRollback;
//   - after a failure, ROLLBACK when the server is inside the transaction; nothing when
//     the connection is idle or gone;
//   - a connection whose ROLLBACK fails, or that is still inside a transaction after it,
//     must be closed (CloseConn), so a pool never hands out a connection stuck inside a
//     transaction.
//
// Values are drawn once, by Start: Begin again (a retry of a serialization failure or a
// deadlock) sends the same transaction, as an application retries its request. A Txn is
// reused from one transaction to the next and allocates nothing on the way to a commit.
type Txn struct {
	Tx         Tx // the values Start drew
	s          Script
	autocommit bool
	rows       bool     // s reads its statements' rows (rowReader): the pgx path copies them
	setSQL     string   // s.SetSync() when beginSQL was made
	beginSQL   string   // BEGIN; and setSQL
	sess       *Session // the connection's, from Begin
	op         OpKind   // the statement in flight
	lastStmt   int      // the script statement in flight, with OpStep
	step       int      // the script's next step
	err        error
	closeConn  bool
}

// Autocommitter is an optional ability of a Script (found by type assertion): with
// Autocommit true its transaction is its body's statement sent on its own, which the
// server commits by itself, as a vendor's single-INSERT benchmark sends it: no BEGIN, no
// COMMIT. Its SetSync is then a session SET (SET synchronous_commit TO ...), which the
// state machine sends once per connection (Session), not in every transaction. Each
// statement of such a body commits on its own, so it should have one.
type Autocommitter interface {
	Autocommit() bool
}

// Session is what the state machine keeps about one connection from one transaction to
// the next: the session SET synchronous_commit an autocommit script last ran on it
// ("" when none, or when it is not known). An executor keeps one per connection; SessionOf
// keeps it with a pgx connection, so it follows the connection from one probe (and one
// engine) to the next.
type Session struct {
	sync string
}

// sessionKey is the key of a connection's CustomData under which SessionOf keeps it.
const sessionKey = "pgceiling.session"

// SessionOf is pc's Session, made on first use.
func SessionOf(pc *pgconn.PgConn) *Session {
	data := pc.CustomData()
	if s, ok := data[sessionKey].(*Session); ok {
		return s
	}
	s := &Session{}
	data[sessionKey] = s
	return s
}

// Start draws a new transaction of s into t.
func (t *Txn) Start(s Script, rng *rand.Rand) {
	t.s = s
	if set := s.SetSync(); set != t.setSQL || t.beginSQL == "" {
		t.setSQL, t.beginSQL = set, stmtBegin // a new script: once, not per transaction
		if set != "" {
			t.beginSQL = stmtBegin + "; " + set
		}
	}
	a, ok := s.(Autocommitter)
	t.autocommit = ok && a.Autocommit()
	_, t.rows = s.(rowReader)
	s.Start(&t.Tx, rng)
}

// Begin starts (or, for a retry, restarts) the transaction Start drew on the connection
// whose Session is sess (nil: none kept, so an autocommit script sets synchronous_commit
// in every transaction). It returns BEGIN with SET LOCAL synchronous_commit; for an
// autocommit script the session SET when sess lacks it, else the first step, or OpDone
// when the body fails before sending anything.
func (t *Txn) Begin(sess *Session) Op {
	t.step, t.err, t.closeConn, t.sess = 0, nil, false, sess
	if !t.autocommit {
		return t.send(OpBegin, t.beginSQL)
	}
	if t.setSQL != "" && (sess == nil || sess.sync != t.setSQL) {
		return t.send(OpSet, t.setSQL)
	}
	return t.next(Reply{Idle: true}, Result{})
}

// Next takes the reply to the statement in flight and returns what to send next.
func (t *Txn) Next(r Reply) Op {
	switch t.op {
	case OpBegin:
		if r.Err != nil {
			return t.fail(r, "begin", r.Err)
		}
		return t.next(r, Result{})
	case OpSet:
		if t.sess != nil {
			t.sess.sync = ""
			if r.Err == nil {
				t.sess.sync = t.setSQL
			}
		}
		if r.Err != nil {
			return t.fail(r, "set synchronous_commit", r.Err)
		}
		return t.next(r, Result{})
	case OpStep:
		if r.Err != nil {
			return t.fail(r, t.s.Statements()[t.lastStmt].Name, r.Err)
		}
		return t.next(r, r.Result)
	case OpCommit:
		switch {
		case r.Err != nil:
			return t.fail(r, "commit", r.Err)
		case r.Rolled: // COMMIT of an aborted transaction reports ROLLBACK instead of failing
			return t.fail(r, "commit", pgx.ErrTxCommitRollback)
		}
		return t.done()
	case OpRollback:
		t.closeConn = r.Closed || r.Err != nil || !r.Idle
		return t.done()
	}
	return Op{Kind: OpDone}
}

// ReadsRows reports whether the transaction's script reads its statements' rows
// (Result.Row: custom scripts' \gset), so an executor copies the first row only then.
func (t *Txn) ReadsRows() bool { return t.rows }

// Err is the transaction's outcome once Next returned OpDone: nil when it committed.
// Before that it is the failure being rolled back, if any.
func (t *Txn) Err() error { return t.err }

// CloseConn reports, once Next returned OpDone, whether the connection must be closed
// (gone already, or left inside a transaction).
func (t *Txn) CloseConn() bool { return t.closeConn }

func (t *Txn) send(k OpKind, sql string) Op {
	t.op = k
	return Op{Kind: k, SQL: sql}
}

// next sends the body's next step, or COMMIT after the last; prev is the reply
// whose result the step may need.
func (t *Txn) next(prev Reply, res Result) Op {
	st, err := t.s.Step(&t.Tx, t.step, res)
	if err != nil {
		return t.fail(prev, "", err) // a client-side check: the server is inside the transaction
	}
	t.step++
	if st.Stmt < 0 {
		if t.autocommit { // every statement committed on its own
			return t.done()
		}
		return t.send(OpCommit, stmtCommit)
	}
	t.op, t.lastStmt = OpStep, st.Stmt
	return Op{Kind: OpStep, Step: st}
}

// fail ends the transaction with err, rolling back first when the server is inside it.
func (t *Txn) fail(r Reply, stage string, err error) Op {
	if stage != "" {
		t.err = fmt.Errorf("%s: %s: %w", t.s.Name(), stage, err)
	} else {
		t.err = fmt.Errorf("%s: %w", t.s.Name(), err)
	}
	switch {
	case r.Closed:
		t.closeConn = true
		return t.done()
	case r.Idle:
		return t.done()
	}
	return t.send(OpRollback, stmtRollback)
}

func (t *Txn) done() Op {
	t.op = OpDone
	return Op{Kind: OpDone}
}

// txn is the part every shape shares: its synchronous_commit statement.
type txn struct {
	setSync string
	// afterSet, when set (tests only), runs right after synchronous_commit is set: inside
	// the transaction after BEGIN and SET LOCAL, or after an autocommit script's session
	// SET, so a test can read current_setting('synchronous_commit') there.
	afterSet func(ctx context.Context, conn *pgx.Conn) error
}

// SetSync is the statement that sets the workload's synchronous_commit.
func (t *txn) SetSync() string { return t.setSync }

// newTxn is a transaction's SET LOCAL synchronous_commit.
func newTxn(syncCommit bool) txn {
	if syncCommit {
		return txn{setSync: stmtSyncOn}
	}
	return txn{setSync: stmtSyncOff}
}

// newSessionTxn is an autocommit script's session SET synchronous_commit.
func newSessionTxn(syncCommit bool) txn {
	if syncCommit {
		return txn{setSync: stmtSessionOn}
	}
	return txn{setSync: stmtSessionOff}
}

// Run executes the transaction Start drew on conn through pgx (every exec mode), from
// Begin (with conn's Session, SessionOf) to OpDone, and returns its outcome. A connection
// that must not be used further (CloseConn) is closed.
func (t *Txn) Run(ctx context.Context, conn *pgx.Conn) error {
	return t.run(ctx, conn, nil)
}

func (t *Txn) run(ctx context.Context, conn *pgx.Conn, afterSet func(context.Context, *pgx.Conn) error) error {
	stmts := t.s.Statements()
	for op := t.Begin(SessionOf(conn.PgConn())); op.Kind != OpDone; {
		var r Reply
		switch op.Kind {
		case OpStep:
			r.Result, r.Err = query(ctx, conn, stmts[op.Step.Stmt].SQL, op.Step.Args, t.rows)
		case OpRollback: // even when ctx is cancelled already
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			_, r.Err = conn.Exec(rctx, op.SQL)
			cancel()
		default:
			tag, err := conn.Exec(ctx, op.SQL)
			r.Err, r.Rolled = err, tag.String() == stmtRollback
			if op.Kind != OpCommit && err == nil && afterSet != nil {
				r.Err = afterSet(ctx, conn)
			}
		}
		r.Closed = conn.IsClosed()
		r.Idle = !r.Closed && conn.PgConn().TxStatus() == 'I'
		op = t.Next(r)
	}
	if t.CloseConn() && !conn.IsClosed() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_ = conn.Close(cctx)
		cancel()
	}
	return t.Err()
}

// runScript runs one new transaction of s on conn through pgx: a workload's Do.
func runScript(ctx context.Context, conn *pgx.Conn, t *txn, s Script, rng *rand.Rand) error {
	var tx Txn
	tx.Start(s, rng)
	return tx.run(ctx, conn, t.afterSet)
}
