package workload

import (
	"math/rand/v2"
	"testing"
	"time"
)

// builtinScripts are the oltp (with fraudLimit) and transfer scripts over 100 wallets.
func builtinScripts(t *testing.T, fraudLimit int64) []Script {
	t.Helper()
	o, err := newOLTP(Params{Wallets: 100, Zipf: 1, SyncCommit: true, FraudWindow: time.Hour, FraudLimit: fraudLimit})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTransfer(Params{Wallets: 100, Zipf: 1, SyncCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	return []Script{o, tr}
}

// The loop engine calls Start and Step thousands of times a second: a transaction's
// steps, with their checks passing, must not allocate.
func TestStepsAllocateNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ok := Result{Rows: 1, First: 5, HasFirst: true}
	for _, s := range builtinScripts(t, 0) {
		var tx Tx
		buf := make([]byte, 0, 64) // the loop's write buffer, reused
		n := testing.AllocsPerRun(200, func() {
			s.Start(&tx, rng)
			for i := 0; ; i++ {
				st, err := s.Step(&tx, i, ok)
				if err != nil {
					t.Fatalf("%s step %d: %v", s.Name(), i, err)
				}
				if st.Stmt < 0 {
					break
				}
				for _, a := range st.Args {
					buf = a.AppendText(buf[:0])
				}
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per transaction, want 0", s.Name(), n)
		}
	}
}

// The bounded fraud check sends the limit as its third argument; FraudLimit 0 sends the
// seed's two-argument statement.
func TestOLTPFraudCheckArgs(t *testing.T) {
	for _, limit := range []int64{0, 20} {
		o, err := newOLTP(Params{Wallets: 10, Zipf: 1, FraudWindow: time.Hour, FraudLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var tx Tx
		o.Start(&tx, rand.New(rand.NewPCG(1, 1)))
		st, err := o.Step(&tx, 1, Result{Rows: 1})
		if err != nil {
			t.Fatal(err)
		}
		sql := o.Statements()[st.Stmt].SQL
		switch {
		case limit == 0 && (sql != oltpFraudCheckUnbounded || len(st.Args) != 2):
			t.Errorf("limit 0: step 1 = %s %v, want the unbounded check with 2 args", sql, st.Args)
		case limit > 0 && (sql != oltpFraudCheck || len(st.Args) != 3 || st.Args[2].Int != limit || st.Args[1].Text != "3600"):
			t.Errorf("limit %d: step 1 = %s %v, want the bounded check with window 3600 and the limit", limit, sql, st.Args)
		}
	}
}
