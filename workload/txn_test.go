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
		{"commit", []Reply{inTx, inTx, inTx, inTx, idleOK}, "B S 0 1 C", "", false},
		{"step fails: rollback", []Reply{inTx, inTx, inTx, failedTx, idleOK}, "B S 0 1 R", "two: second: ", false},
		{"client check fails: rollback", []Reply{inTx, inTx, {}, idleOK}, "B S 0 R", "two: first", false},
		{"begin fails idle: no rollback", []Reply{{Err: serErr, Idle: true}}, "B", "two: begin:", false},
		{"commit fails idle: no rollback", []Reply{inTx, inTx, inTx, inTx, {Err: serErr, Idle: true}}, "B S 0 1 C", "two: commit:", false},
		{"commit reports rollback", []Reply{inTx, inTx, inTx, inTx, {Rolled: true, Idle: true}}, "B S 0 1 C", "commit unexpectedly resulted in rollback", false},
		{"connection lost: close", []Reply{inTx, inTx, {Err: errors.New("eof"), Closed: true}}, "B S 0", "two: first: eof", true},
		{"rollback fails: close", []Reply{inTx, inTx, failedTx, {Err: errors.New("timeout")}}, "B S 0 R", "two: first:", true},
		{"rollback leaves a transaction: close", []Reply{inTx, inTx, failedTx, {}}, "B S 0 R", "two: first:", true},
	} {
		var tx Txn
		tx.Start(s, rand.New(rand.NewPCG(1, 2)))
		var sent []string
		op := tx.Begin()
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
	if op := tx.Begin(); op.SQL != "BEGIN" {
		t.Fatalf("Begin sends %q", op.SQL)
	}
	if op := tx.Next(inTx); op.Kind != OpSet || op.SQL != stmtSyncOn {
		t.Errorf("after BEGIN: %v %q, want the SET LOCAL", op.Kind, op.SQL)
	}
	var pgErr *pgconn.PgError
	tx.Next(inTx)
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
		tx.Begin()
		tx.Next(inTx)
		op := tx.Next(inTx)
		args = append(args, op.Step.Args[0].Int)
		tx.Next(failedTx)
	}
	if s.starts != 1 || args[0] != args[1] {
		t.Errorf("two tries: %d starts, first arguments %v; want 1 start and equal arguments", s.starts, args)
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
			for op := tx.Begin(); op.Kind != OpDone; {
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
