package driver

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// encode is what a server (or a client, for frontend messages) sends: msgs encoded by
// pgproto3.
func encode(t testing.TB, msgs ...interface{ Encode([]byte) ([]byte, error) }) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func cc(tag string) *pgproto3.CommandComplete {
	return &pgproto3.CommandComplete{CommandTag: []byte(tag)}
}
func rfq(s byte) *pgproto3.ReadyForQuery { return &pgproto3.ReadyForQuery{TxStatus: s} }
func row(v ...string) *pgproto3.DataRow {
	d := &pgproto3.DataRow{}
	for _, s := range v {
		d.Values = append(d.Values, []byte(s))
	}
	return d
}

func oltpScript(t testing.TB) workload.Script {
	t.Helper()
	p := workload.DefaultParams()
	p.Wallets = 100
	w, err := workload.New("oltp", p)
	if err != nil {
		t.Fatal(err)
	}
	return w.(workload.Script)
}

// oltpReplies is a server's replies to one oltp transaction on a connection where its
// statements are prepared and described.
func oltpReplies(t testing.TB) []byte {
	return encode(t, cc("BEGIN"), cc("SET"), rfq('T'),
		&pgproto3.BindComplete{}, row("100.00", "active"), cc("SELECT 1"), rfq('T'),
		&pgproto3.BindComplete{}, row("3"), cc("SELECT 1"), rfq('T'),
		&pgproto3.BindComplete{}, row("123456"), cc("INSERT 0 1"), rfq('T'),
		&pgproto3.BindComplete{}, cc("INSERT 0 1"), rfq('T'),
		cc("COMMIT"), rfq('I'))
}

// preparedAll is a connection's CustomData entry where oltp's statements are prepared:
// the fraud check and the transaction insert return an integer first.
func preparedAll(stmts []prepared) map[string]int8 {
	known := map[string]int8{}
	for i, st := range stmts {
		known[st.name] = stmtOther
		if i == 1 || i == 2 {
			known[st.name] = stmtInt
		}
	}
	return known
}

// The loop's per-transaction path on one connection, encoding the statements and
// decoding the replies through the state machine, allocates nothing.
func TestWireTransactionAllocatesNothing(t *testing.T) {
	s := oltpScript(t)
	c := newWireConn(preparedStatements(s))
	c.attach(preparedAll(c.stmts))
	in := oltpReplies(t)
	var tx workload.Txn
	rng := rand.New(rand.NewPCG(1, 2))
	var sent int
	n := testing.AllocsPerRun(200, func() {
		c.out = c.out[:0]
		tx.Start(s, rng)
		if err := c.send(tx.Begin(nil)); err != nil {
			t.Fatal(err)
		}
		n, done, err := c.receive(in, &tx)
		if err != nil || !done || n != len(in) || tx.Err() != nil {
			t.Fatalf("receive: took %d of %d, done %v, %v; transaction %v", n, len(in), done, err, tx.Err())
		}
		sent = len(c.out)
	})
	if n != 0 {
		t.Errorf("%v allocations per transaction, want 0", n)
	}
	if sent == 0 {
		t.Error("nothing sent")
	}
}

// A statement's first use on a connection sends Parse and Describe with its Bind, in
// pgproto3's encoding, and what the replies teach is kept for the connection.
func TestWireFirstUse(t *testing.T) {
	s := oltpScript(t)
	c := newWireConn(preparedStatements(s))
	known := map[string]int8{}
	c.attach(known)
	var tx workload.Txn
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	if err := c.send(tx.Begin(nil)); err != nil {
		t.Fatal(err)
	}
	// BEGIN and SET LOCAL: one simple query, one round trip.
	if want := encode(t, &pgproto3.Query{String: "BEGIN; " + s.SetSync()}); !bytes.Equal(c.out, want) {
		t.Fatalf("Begin sent %q, want %q", c.out, want)
	}
	c.out = c.out[:0]
	if _, done, err := c.receive(encode(t, cc("BEGIN"), cc("SET"), rfq('T')), &tx); done || err != nil {
		t.Fatalf("after BEGIN and SET: done %v, %v", done, err)
	}
	// Their reply sent the first step.
	step := c.out
	st := c.stmts[0]
	var args [][]byte
	for _, a := range tx.Tx.Args(workload.Int(tx.Tx.V[0])) {
		args = append(args, a.AppendText(nil))
	}
	want := encode(t, &pgproto3.Parse{Name: st.name, Query: st.sql},
		&pgproto3.Bind{PreparedStatement: st.name, Parameters: args},
		&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if !bytes.Equal(step, want) {
		t.Fatalf("sent %q\nwant %q", c.out, want)
	}
	c.out = c.out[:0]
	_, done, err := c.receive(encode(t, &pgproto3.ParseComplete{}, &pgproto3.BindComplete{},
		&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("balance"), DataTypeOID: 1700}, {Name: []byte("status"), DataTypeOID: 25}}},
		row("1.00", "active"), cc("SELECT 1"), rfq('T')), &tx)
	if done || err != nil || known[st.name] != stmtOther || c.states[0] != stmtOther {
		t.Fatalf("after the first use: done %v, %v, known %v", done, err, known)
	}
	if c.states[1] != stmtUnknown || !bytes.HasPrefix(c.out, []byte{'P'}) {
		t.Errorf("the fraud check's first use: state %d, sent %q; want a Parse", c.states[1], c.out)
	}
}

// A serialization failure rolls the transaction back; the outcome keeps its SQLSTATE.
func TestWireFailureRollsBack(t *testing.T) {
	s := oltpScript(t)
	c := newWireConn(preparedStatements(s))
	c.attach(preparedAll(c.stmts))
	var tx workload.Txn
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	_ = c.send(tx.Begin(nil))
	c.out = c.out[:0]
	in := encode(t, cc("BEGIN"), cc("SET"), rfq('T'),
		&pgproto3.ErrorResponse{Severity: "ERROR", Code: "40001", Message: "could not serialize access"}, rfq('E'))
	_, done, err := c.receive(in, &tx)
	if done || err != nil || !bytes.HasSuffix(c.out, encode(t, &pgproto3.Query{String: "ROLLBACK"})) {
		t.Fatalf("after the error: done %v, %v, sent %q; want a ROLLBACK", done, err, c.out)
	}
	_, done, err = c.receive(encode(t, cc("ROLLBACK"), rfq('I')), &tx)
	var pgErr *pgconn.PgError
	if !done || err != nil || !errors.As(tx.Err(), &pgErr) || Classify(tx.Err()) != result.Serialization || tx.CloseConn() {
		t.Errorf("after the rollback: done %v, %v, outcome %v (close %v); want a serialization failure, connection kept",
			done, err, tx.Err(), tx.CloseConn())
	}
	// A connection lost mid-statement ends the transaction, to be closed.
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	_ = c.send(tx.Begin(nil))
	c.lost(&tx, errors.New("eof"))
	if tx.Err() == nil || !tx.CloseConn() {
		t.Errorf("lost: outcome %v, close %v; want a failure and a closed connection", tx.Err(), tx.CloseConn())
	}
}

func insertScript(t testing.TB, batch int) workload.Script {
	t.Helper()
	p := workload.DefaultParams()
	p.Batch = batch
	w, err := workload.New("insert", p)
	if err != nil {
		t.Fatal(err)
	}
	return w.(workload.Script)
}

// insert runs in autocommit: the session's SET synchronous_commit once per connection,
// then one round trip per transaction, the INSERT alone; a failure leaves the connection
// idle, with nothing to roll back.
func TestWireAutocommit(t *testing.T) {
	s := insertScript(t, 3)
	c := newWireConn(preparedStatements(s))
	c.attach(preparedAll(nil))
	sess := &workload.Session{}
	var tx workload.Txn
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	if err := c.send(tx.Begin(sess)); err != nil {
		t.Fatal(err)
	}
	if want := encode(t, &pgproto3.Query{String: "SET synchronous_commit TO on"}); !bytes.Equal(c.out, want) {
		t.Fatalf("first transaction on the connection sent %q, want %q", c.out, want)
	}
	c.out = c.out[:0]
	if _, done, err := c.receive(encode(t, cc("SET"), rfq('I')), &tx); done || err != nil || len(c.out) == 0 || c.out[0] != 'P' {
		t.Fatalf("after the SET: done %v, %v, sent %q; want the INSERT's Parse", done, err, c.out)
	}
	if got := bytes.Count(c.out, []byte("::uuid")); got != 3 {
		t.Errorf("the INSERT has %d rows, want the batch's 3", got)
	}
	insertOK := encode(t, &pgproto3.ParseComplete{}, &pgproto3.BindComplete{}, &pgproto3.NoData{}, cc("INSERT 0 3"), rfq('I'))
	if _, done, err := c.receive(insertOK, &tx); !done || err != nil || tx.Err() != nil {
		t.Fatalf("after the INSERT: done %v, %v, outcome %v; want committed", done, err, tx.Err())
	}
	// The next transaction on the connection: the INSERT alone, prepared already.
	c.out = c.out[:0]
	tx.Start(s, rand.New(rand.NewPCG(1, 2)))
	if err := c.send(tx.Begin(sess)); err != nil {
		t.Fatal(err)
	}
	if len(c.out) == 0 || c.out[0] != 'B' || bytes.Contains(c.out, []byte("synchronous_commit")) {
		t.Fatalf("second transaction sent %q, want only the INSERT's Bind/Execute/Sync", c.out)
	}
	c.out = c.out[:0]
	dup := encode(t, &pgproto3.BindComplete{}, &pgproto3.ErrorResponse{Severity: "ERROR", Code: "23505", Message: "duplicate key"}, rfq('I'))
	_, done, err := c.receive(dup, &tx)
	if !done || err != nil || len(c.out) != 0 || Classify(tx.Err()) != result.Other || tx.CloseConn() {
		t.Errorf("failed INSERT: done %v, %v, sent %q, outcome %v, close %v; want done with nothing sent (no ROLLBACK), connection kept",
			done, err, c.out, tx.Err(), tx.CloseConn())
	}
}

// FuzzWireReceive feeds arbitrary server bytes to a connection in the middle of an oltp
// transaction: the codec and the state machine must never panic nor take more than they
// were given, and a transaction they end has an outcome.
func FuzzWireReceive(f *testing.F) {
	f.Add(oltpReplies(f))
	f.Add(encode(f, cc("BEGIN"), cc("SET"), rfq('T'),
		&pgproto3.ErrorResponse{Severity: "ERROR", Code: "40P01", Message: "deadlock detected"}, rfq('E'), cc("ROLLBACK"), rfq('I')))
	f.Add(encode(f, cc("BEGIN"), cc("SET"), rfq('T'), &pgproto3.ParseComplete{}, &pgproto3.BindComplete{},
		&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("n"), DataTypeOID: 20}}},
		&pgproto3.DataRow{Values: [][]byte{nil}}, cc("SELECT 1"), rfq('T'), cc("COMMIT"), rfq('E')))
	s := oltpScript(f)
	stmts := preparedStatements(s)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := newWireConn(stmts)
		c.attach(map[string]int8{})
		var tx workload.Txn
		tx.Start(s, rand.New(rand.NewPCG(1, 2)))
		if err := c.send(tx.Begin(nil)); err != nil {
			t.Fatal(err)
		}
		for len(in) > 0 {
			n, done, err := c.receive(in, &tx)
			if n > len(in) {
				t.Fatalf("took %d of %d bytes", n, len(in))
			}
			if done && tx.Err() == nil && c.op != workload.OpDone {
				t.Fatal("done while a statement is in flight")
			}
			if err != nil || n == 0 || done {
				return
			}
			in = in[n:]
		}
	})
}

// BenchmarkWireTransaction is the loop's client-side work for one oltp transaction,
// without the system calls: encode six statements, decode their replies, run the state
// machine and the script's steps.
func BenchmarkWireTransaction(b *testing.B) {
	s := oltpScript(b)
	c := newWireConn(preparedStatements(s))
	c.attach(preparedAll(c.stmts))
	in := oltpReplies(b)
	var tx workload.Txn
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		c.out = c.out[:0]
		tx.Start(s, rng)
		_ = c.send(tx.Begin(nil))
		if _, done, err := c.receive(in, &tx); !done || err != nil {
			b.Fatal(done, err)
		}
	}
}
