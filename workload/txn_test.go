package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// twoSteps is a script of two statements; the second step fails client-side when the
// first returned no row.
type twoSteps struct {
	txn
	starts int
}

func (*twoSteps) Name() string  { return "two" }
func (*twoSteps) Table() string { return "events" }
func (s *twoSteps) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return runScript(ctx, conn, &s.txn, s, rng)
}
func (*twoSteps) Statements() []Statement {
	return []Statement{{"first", "SELECT 1"}, {"second", "SELECT 2"}}
}
func (s *twoSteps) Start(tx *Tx, rng *rand.Rand) { s.starts++; tx.V[0] = rng.Int64() }
func (*twoSteps) Step(tx *Tx, i int, prev Result) (Step, error) {
	switch i {
	case 0:
		return Step{0, tx.Args(Int(tx.V[0]))}, nil
	case 1:
		if err := needRow(prev, "first", tx.V[0]); err != nil {
			return Done, err
		}
		return Step{1, nil}, nil
	}
	return Done, nil
}

var (
	inTx     = Reply{Result: Result{Rows: 1}}
	idleOK   = Reply{Idle: true}
	serErr   = &pgconn.PgError{Code: "40001"}
	failedTx = Reply{Err: serErr}
)

// TestTxnPolicy drives the state machine through each path with the replies a server
// would give and checks what it sends, its outcome and whether it closes the connection.
func TestTxnPolicy(t *testing.T) {
	s := &twoSteps{txn: newTxn(true)}
	for _, c := range []struct {
		name    string
		replies []Reply // one per statement sent after Begin's
		sent    string  // the kinds sent, Begin's included
		err     string  // "" for a commit
		close   bool
	}{
		{"commit", []Reply{inTx, inTx, inTx, idleOK}, "B 0 1 C", "", false},
		{"step fails: rollback", []Reply{inTx, inTx, failedTx, idleOK}, "B 0 1 R", "two: second: ", false},
		{"client check fails: rollback", []Reply{inTx, {}, idleOK}, "B 0 R", "two: first", false},
		{"begin fails idle: no rollback", []Reply{{Err: serErr, Idle: true}}, "B", "two: begin:", false},
		{"set local fails in the transaction: rollback", []Reply{failedTx, idleOK}, "B R", "two: begin:", false},
		{"commit fails idle: no rollback", []Reply{inTx, inTx, inTx, {Err: serErr, Idle: true}}, "B 0 1 C", "two: commit:", false},
		{"commit reports rollback", []Reply{inTx, inTx, inTx, {Rolled: true, Idle: true}}, "B 0 1 C", "commit unexpectedly resulted in rollback", false},
		{"connection lost: close", []Reply{inTx, {Err: errors.New("eof"), Closed: true}}, "B 0", "two: first: eof", true},
		{"rollback fails: close", []Reply{inTx, failedTx, {Err: errors.New("timeout")}}, "B 0 R", "two: first:", true},
		{"rollback leaves a transaction: close", []Reply{inTx, failedTx, {}}, "B 0 R", "two: first:", true},
	} {
		var tx Txn
		tx.Start(s, rand.New(rand.NewPCG(1, 2)))
		var sent []string
		op := tx.Begin(nil)
		for i := 0; op.Kind != OpDone; i++ {
			sent = append(sent, kind(op))
			if i >= len(c.replies) {
				t.Fatalf("%s: sent %v, then wants more replies than the %d given", c.name, sent, len(c.replies))
			}
			op = tx.Next(c.replies[i])
		}
		got := strings.Join(sent, " ")
		errText := ""
		if tx.Err() != nil {
			errText = tx.Err().Error()
		}
		if got != c.sent || (c.err == "") != (tx.Err() == nil) || !strings.Contains(errText, c.err) || tx.CloseConn() != c.close {
			t.Errorf("%s: sent %q, err %v, close %v; want %q, %q, %v", c.name, got, tx.Err(), tx.CloseConn(), c.sent, c.err, c.close)
		}
	}
	var tx Txn
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	if op := tx.Begin(nil); op.Kind != OpBegin || op.SQL != "BEGIN; "+stmtSyncOn {
		t.Fatalf("Begin sends %q, want BEGIN and the SET LOCAL in one query", op.SQL)
	}
	if op := tx.Next(inTx); op.Kind != OpStep || op.Step.Stmt != 0 {
		t.Errorf("after BEGIN: %v %q, want the first step", op.Kind, op.SQL)
	}
	var pgErr *pgconn.PgError
	tx.Next(failedTx)
	if !errors.As(tx.Err(), &pgErr) {
		t.Errorf("error %v does not wrap the *pgconn.PgError", tx.Err())
	}
	_ = pgx.ErrTxCommitRollback
}

// A retry (Begin again) sends the same values: Start drew them once.
func TestTxnRetryKeepsValues(t *testing.T) {
	s := &twoSteps{txn: newTxn(false)}
	var tx Txn
	tx.Start(s, rand.New(rand.NewPCG(7, 7)))
	var args []int64
	for range 2 {
		tx.Begin(nil)
		op := tx.Next(inTx)
		args = append(args, op.Step.Args[0].Int)
		tx.Next(failedTx)
	}
	if s.starts != 1 || args[0] != args[1] {
		t.Errorf("two tries: %d starts, first arguments %v; want 1 start and equal arguments", s.starts, args)
	}
}

// oneInsert is twoSteps in autocommit: its first statement alone, committing on its own.
type oneInsert struct{ twoSteps }

func (*oneInsert) Autocommit() bool { return true }
func (s *oneInsert) Step(tx *Tx, i int, _ Result) (Step, error) {
	if i > 0 {
		return Done, nil
	}
	if tx.Err != nil {
		return Done, tx.Err
	}
	return Step{0, tx.Args(Int(tx.V[0]))}, nil
}

// An autocommit script: one round trip per transaction, the session's SET once per
// connection (again when it failed, or when the script's setting changes), nothing to
// roll back when its statement fails.
func TestTxnAutocommit(t *testing.T) {
	on, off := &oneInsert{twoSteps{txn: newSessionTxn(true)}}, &oneInsert{twoSteps{txn: newSessionTxn(false)}}
	sess := &Session{}
	for _, c := range []struct {
		name    string
		s       *oneInsert
		sess    *Session
		replies []Reply
		sent    string
		err     string
		close   bool
	}{
		{"first on the connection: SET, then the statement", on, sess, []Reply{idleOK, idleOK}, "S 0", "", false},
		{"the session has it: the statement alone", on, sess, []Reply{idleOK}, "0", "", false},
		{"fails: nothing to roll back", on, sess, []Reply{{Err: serErr, Idle: true}}, "0", "two: first:", false},
		{"the other setting: SET again", off, sess, []Reply{idleOK, idleOK}, "S 0", "", false},
		{"SET fails: no statement", on, sess, []Reply{{Err: serErr, Idle: true}}, "S", "two: set synchronous_commit:", false},
		{"after a failed SET: SET again", on, sess, []Reply{idleOK, idleOK}, "S 0", "", false},
		{"no session kept: SET every time", on, nil, []Reply{idleOK, idleOK}, "S 0", "", false},
		{"connection lost: close", on, sess, []Reply{{Err: errors.New("eof"), Closed: true}}, "0", "two: first: eof", true},
		{"a connection left in a transaction: rollback", on, sess, []Reply{{Err: serErr}, idleOK}, "0 R", "two: first:", false},
	} {
		var tx Txn
		tx.Start(c.s, rand.New(rand.NewPCG(1, 2)))
		var sent []string
		op := tx.Begin(c.sess)
		for i := 0; op.Kind != OpDone; i++ {
			sent = append(sent, kind(op))
			if i >= len(c.replies) {
				t.Fatalf("%s: sent %v, then wants more replies than the %d given", c.name, sent, len(c.replies))
			}
			if op.Kind == OpSet && op.SQL != c.s.SetSync() {
				t.Errorf("%s: sent %q, want the session's %q", c.name, op.SQL, c.s.SetSync())
			}
			op = tx.Next(c.replies[i])
		}
		got := strings.Join(sent, " ")
		errText := ""
		if tx.Err() != nil {
			errText = tx.Err().Error()
		}
		if got != c.sent || (c.err == "") != (tx.Err() == nil) || !strings.Contains(errText, c.err) || tx.CloseConn() != c.close {
			t.Errorf("%s: sent %q, err %v, close %v; want %q, %q, %v", c.name, got, tx.Err(), tx.CloseConn(), c.sent, c.err, c.close)
		}
	}
	// A body that fails before sending anything (Start's error): Begin ends it.
	var tx Txn
	tx.Start(on, rand.New(rand.NewPCG(1, 2)))
	tx.Tx.Err = errors.New("no uuid")
	if op := tx.Begin(sess); op.Kind != OpDone || tx.Err() == nil || tx.CloseConn() {
		t.Errorf("Start failed: Begin returned %v, outcome %v, close %v; want OpDone with the failure", op.Kind, tx.Err(), tx.CloseConn())
	}
}

// The state machine adds nothing to a transaction's allocations: zero on the way to a
// commit, for every built-in script.
func TestTxnAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ok := Reply{Result: Result{Rows: 1, First: 5, HasFirst: true}}
	for _, s := range builtinScripts(t, 20) {
		var tx Txn
		n := testing.AllocsPerRun(200, func() {
			tx.Start(s, rng)
			for op := tx.Begin(nil); op.Kind != OpDone; {
				op = tx.Next(ok)
			}
			if tx.Err() != nil {
				t.Fatalf("%s: %v", s.Name(), tx.Err())
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per transaction, want 0", s.Name(), n)
		}
	}
}

func kind(op Op) string {
	switch op.Kind {
	case OpBegin:
		return "B"
	case OpSet:
		return "S"
	case OpStep:
		return string(rune('0' + op.Step.Stmt))
	case OpCommit:
		return "C"
	case OpRollback:
		return "R"
	}
	return "?"
}
