package responder

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
	"weak"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

// describedScript is the --script workload of the file at path (synchronous_commit on),
// described on the server at dsn as `pgceiling run` does before its first probe.
func describedScript(t testing.TB, dsn, path string) *workload.Custom {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.NewCustom([]workload.CustomFile{{Name: filepath.Base(path), Source: string(src), Weight: 1}}, workload.Params{SyncCommit: true})
	if err != nil {
		t.Fatalf("NewCustom(%s): %v", path, err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsn, err)
	}
	defer conn.Close(ctx)
	if err := w.Describe(ctx, conn); err != nil {
		t.Fatalf("Describe(%s): %v", path, err)
	}
	return w
}

// cannedResults are the results the responder gives each statement of s, as the loop
// engine hands them to the state machine: rows and first column from the command tag
// and the canned row, the row's values in text.
func cannedResults(t testing.TB, srv *Server, s workload.Script) []workload.Result {
	t.Helper()
	var out []workload.Result
	for _, st := range s.Statements() {
		r := srv.lookup([]byte(st.SQL))
		if r.fallback {
			t.Fatalf("no canned reply for %s", st.SQL)
		}
		var res workload.Result
		if len(r.cells) > 0 {
			res.Rows = int64(len(r.cells))
			for j, c := range r.cells[0] {
				v := c.text
				if c.dyn {
					v = []byte("42")
				}
				res.Row = append(res.Row, v)
				if j == 0 && (r.Cols[0].OID == pgtype.Int8OID || r.Cols[0].OID == pgtype.Int4OID) {
					res.First, _ = strconv.ParseInt(string(v), 10, 64)
					res.HasFirst = true
				}
			}
		}
		if r.Tag != "" {
			if n, err := strconv.ParseInt(r.Tag[len(r.Tag)-1:], 10, 64); err == nil {
				res.Rows = n
			}
		}
		out = append(out, res)
	}
	return out
}

// oltpPair is the built-in oltp and bench/pgbench/oltp.sql as a --script, described on
// srv, with the responder's results for each one's statements.
func oltpPair(t testing.TB, srv *Server) (names []string, ws []workload.Script, results [][]workload.Result) {
	o, err := workload.New("oltp", workload.Params{Wallets: 10_000, Zipf: 1, SyncCommit: true, FraudWindow: time.Hour, FraudLimit: 20})
	if err != nil {
		t.Fatal(err)
	}
	c := describedScript(t, srv.DSN(), "../../bench/pgbench/oltp.sql")
	for _, w := range []workload.Script{o.(workload.Script), c} {
		names, ws, results = append(names, w.Name()), append(ws, w), append(results, cannedResults(t, srv, w))
	}
	return names, ws, results
}

// transaction runs one transaction of the state machine t as the loop engine does,
// without a socket: Start, Begin, then every statement's reply (its row copied into
// the connection's RowBuf for a script that reads rows, its arguments encoded as text
// into buf) until the end.
func transaction(t *workload.Txn, w workload.Script, rng *rand.Rand, results []workload.Result, row *workload.RowBuf, buf []byte) ([]byte, error) {
	t.Start(w, rng)
	op := t.Begin(nil)
	for op.Kind != workload.OpDone {
		var r workload.Reply
		if op.Kind == workload.OpStep {
			buf = buf[:0]
			for _, a := range op.Step.Args {
				buf = a.AppendText(buf)
			}
			r.Result = results[op.Step.Stmt]
			if t.ReadsRows() {
				r.Result.Row = row.Copy(r.Result.Row)
			} else {
				r.Result.Row = nil
			}
		}
		r.Idle = op.Kind == workload.OpCommit
		op = t.Next(r)
	}
	return buf, t.Err()
}

// BenchmarkTransactionSteps is the client's own work for one transaction, without a
// socket: the built-in oltp against bench/pgbench/oltp.sql through --script (the same
// SQL), each from Start through its steps (the script's \set expressions, its \gset
// columns, its arguments encoded as the loop sends them) to COMMIT. ns/op and allocs/op
// compare the script executor with the built-in shape's.
func BenchmarkTransactionSteps(b *testing.B) {
	srv := start(b)
	names, ws, results := oltpPair(b, srv)
	for i, w := range ws {
		b.Run(names[i], func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var t workload.Txn
			var row workload.RowBuf
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = transaction(&t, w, rng, results[i], &row, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScriptStepsAllocateNothing: a --script transaction of bench/pgbench/oltp.sql, from
// Start to COMMIT with its \gset rows, allocates nothing, as the built-in oltp's does
// (workload's TestStepsAllocateNothing); its arguments are the built-in's, kind for kind.
func TestScriptStepsAllocateNothing(t *testing.T) {
	srv := start(t)
	names, ws, results := oltpPair(t, srv)
	for i, w := range ws {
		rng := rand.New(rand.NewPCG(1, 2))
		var tx workload.Txn
		var row workload.RowBuf
		buf := make([]byte, 0, 256)
		if _, err := transaction(&tx, w, rng, results[i], &row, buf); err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		if n := testing.AllocsPerRun(300, func() {
			if _, err := transaction(&tx, w, rng, results[i], &row, buf); err != nil {
				t.Fatalf("%s: %v", names[i], err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per transaction, want 0", names[i], n)
		}
	}
	// The arguments, kind by kind: integers where the built-in sends integers, the fraud
	// window as text (the script repeats :merchant where the built-in reuses $2).
	for i, want := range [][]string{{"i", "iti", "iiiiii", "ii"}, {"i", "iti", "iiiiiii", "ii"}} {
		if got := argKinds(ws[i], results[i]); !equalStrings(got, want) {
			t.Errorf("%s: argument kinds per statement %v, want %v (i integer, t text, f double)", names[i], got, want)
		}
	}
}

// argKinds runs one transaction of w and returns, per statement, the kinds of its arguments.
func argKinds(w workload.Script, results []workload.Result) (out []string) {
	var tx workload.Txn
	tx.Start(w, rand.New(rand.NewPCG(3, 4)))
	for op := tx.Begin(nil); op.Kind != workload.OpDone; {
		var r workload.Reply
		if op.Kind == workload.OpStep {
			s := ""
			for _, a := range op.Step.Args {
				switch {
				case a.IsText || a.AsText:
					s += "t"
				case a.IsFloat:
					s += "f"
				default:
					s += "i"
				}
			}
			out = append(out, s)
			r.Result = results[op.Step.Stmt]
		}
		op = tx.Next(r)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gsetScript stores a numeric and a text column with \gset and sends them on: the
// loop reads them in text, pgx in binary (numeric through pgtype).
const gsetScript = `\set w random(1, 10000)
BEGIN;
SELECT balance, status FROM pgceiling.wallets WHERE account_id = :w::bigint \gset wallet_
INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, details) VALUES (:w::bigint, :w::bigint, :wallet_status, :wallet_balance::text);
COMMIT;
`

// TestScriptProbeOnBothEngines: bench/pgbench/oltp.sql and a script that \gsets a
// numeric and a text column, through --script, commit every arrival of a short probe
// on each engine against the responder, every \gset column decoded (text from the
// loop, binary from pgx).
func TestScriptProbeOnBothEngines(t *testing.T) {
	dsn := startProcess(t)
	ctx := context.Background()
	gset := filepath.Join(t.TempDir(), "gset.sql")
	if err := os.WriteFile(gset, []byte(gsetScript), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		engine result.Engine
		path   string
	}{{driver.EngineLoop, "../../bench/pgbench/oltp.sql"}, {driver.EnginePGX, "../../bench/pgbench/oltp.sql"},
		{driver.EngineLoop, gset}, {driver.EnginePGX, gset}} {
		engine, w := c.engine, describedScript(t, dsn, c.path)
		pool, err := driver.NewPool(ctx, dsn, driver.Session{AppName: "pgceiling"}, 4, pgx.QueryExecModeCacheStatement)
		if err != nil {
			t.Fatalf("driver.NewPool: %v", err)
		}
		b, err := schema.TakeBaseline(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		p, err := driver.Run(ctx, pool, w, driver.Config{Rate: 400, Duration: 500 * time.Millisecond, Conns: 4,
			Engine: engine, Seed: 1, CountRows: schema.Counter(pool, b)})
		pool.Close()
		if err != nil {
			t.Fatalf("driver.Run (%s): %v", engine, err)
		}
		if p.Committed == 0 || p.Committed != p.Scheduled || p.Engine != engine {
			t.Errorf("%s on engine %s: scheduled %d, committed %d, failed %v, rejected %d", c.path, p.Engine, p.Scheduled, p.Committed, p.Failed, p.Rejected)
		}
	}
}

// TestScriptKeepsNoTransaction: a --script workload keeps nothing of the transactions
// it ran. Its per-transaction state lives in the executor's Tx; the former map keyed by
// *Tx kept every probe's workers (their histograms, ~0.5 MiB a connection) alive for
// the whole sweep, so a search's heap sat at the soft memory limit and the collector ran
// all the time (993 collections in a 6-probe test search, against 11 now): that was the
// script's extra client CPU in docs/figures.md's first measurement.
func TestScriptKeepsNoTransaction(t *testing.T) {
	srv := start(t)
	_, ws, results := oltpPair(t, srv)
	w := ws[1]
	txn := new(workload.Txn)
	var row workload.RowBuf
	if _, err := transaction(txn, w, rand.New(rand.NewPCG(1, 2)), results[1], &row, nil); err != nil {
		t.Fatal(err)
	}
	gone := weak.Make(txn)
	txn = nil
	runtime.GC()
	if gone.Value() != nil {
		t.Error("the script workload still references a transaction it ran")
	}
	runtime.KeepAlive(w)
}
