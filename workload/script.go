package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Script is a workload written as data: the statements a transaction may send and, step by
// step, which one comes next with which arguments. One description serves two executors:
// Do and the driver's pgx engine (through pgx, every --exec-mode) and the driver's event
// loop, which speaks the wire protocol itself over many connections from one goroutine.
// Both run it through one state machine, Txn: BEGIN and SET LOCAL synchronous_commit (one
// round trip) before the first step, COMMIT after the last, and a rollback on any failure;
// or, for an Autocommitter, the steps alone.
type Script interface {
	Workload
	// Statements are the SQL texts the steps refer to by index; an executor may prepare
	// them once per connection.
	Statements() []Statement
	// SetSync is the SET LOCAL synchronous_commit statement sent with BEGIN (in its
	// simple query); for an Autocommitter, the session SET synchronous_commit sent once per
	// connection. "" sets nothing.
	SetSync() string
	// Start draws a new transaction's values (keys, amounts) into tx.
	Start(tx *Tx, rng *rand.Rand)
	// Step returns the body's step i (from 0), given the result of step i-1 (zero for
	// i = 0); Stmt < 0 means the body is done. An error fails the transaction (a
	// client-side check, e.g. a wallet row that is missing), and the executor rolls back.
	Step(tx *Tx, i int, prev Result) (Step, error)
}

// Statement is one SQL text of a Script and the name its step has in error messages.
type Statement struct {
	Name string
	SQL  string
}

// Arg is one statement argument: an integer, Text when IsText, a double when IsFloat
// (its bits in Int: Float64 reads it). AsText sends a number in its text form through
// pgx too (as the loop sends every argument), for a parameter whose type pgx encodes no
// Go number into (interval, text, numeric).
type Arg struct {
	Int     int64
	Text    string
	IsText  bool
	IsFloat bool
	AsText  bool
}

// Int is an integer argument.
func Int(v int64) Arg { return Arg{Int: v} }

// Text is a text argument.
func Text(s string) Arg { return Arg{Text: s, IsText: true} }

// Float is a double argument (custom scripts), whose text form is C's %.15g, as
// pgbench sends it.
func Float(v float64) Arg { return Arg{Int: int64(math.Float64bits(v)), IsFloat: true} }

// Float64 is a double argument's value.
func (a Arg) Float64() float64 { return math.Float64frombits(uint64(a.Int)) }

// AppendText appends a's text form, as sent in the text format of the wire protocol.
func (a Arg) AppendText(b []byte) []byte {
	switch {
	case a.IsText:
		return append(b, a.Text...)
	case a.IsFloat:
		return strconv.AppendFloat(b, a.Float64(), 'g', 15, 64)
	}
	return strconv.AppendInt(b, a.Int, 10)
}

// Step is one statement to send: Stmt indexes Statements(), Args are its parameters.
type Step struct {
	Stmt int
	Args []Arg
}

// Done is the Step that ends a transaction's body.
var Done = Step{Stmt: -1}

// Result is what the next step may need from a statement: the rows it returned or
// changed, and its first column of its first row when that is an integer.
type Result struct {
	Rows     int64 // from the command tag: rows returned (SELECT) or changed
	First    int64 // first column of the first row, when HasFirst
	HasFirst bool
	// Row is the first row's values as the server sent them (nil for NULL), RowBinary
	// saying which are in binary format (the loop reads text; pgx binary where it knows
	// the type). Set for a step of a script that reads rows (custom scripts' \gset), and
	// valid only during the Step it is given to: a step copies what it keeps.
	Row       [][]byte
	RowBinary []bool
}

// Tx is one transaction's state, owned by the executor and reused from one transaction to
// the next: values drawn at Start and room for one step's arguments.
type Tx struct {
	V    [8]int64
	S    string // a text value drawn at Start
	Err  error  // a failure at Start, returned by the first step
	args [8]Arg
	more []Arg // Room beyond 8 arguments
	// custom is a custom script's run state (custom.go), kept with the reused Tx so
	// that a transaction finds its variables without a lookup.
	custom *customRun
}

// Args fills the tx's argument room with args and returns it, so building a step
// allocates nothing (up to 8 arguments; more get room of their own).
func (tx *Tx) Args(args ...Arg) []Arg {
	return append(tx.args[:0], args...)
}

// Room is the tx's argument room for n arguments, to fill in place (a multi-row
// statement's, drawn at Start): reused from one transaction to the next, so it allocates
// only the first time it grows past 8. It holds what the last Room or Args put there.
func (tx *Tx) Room(n int) []Arg {
	if n <= len(tx.args) {
		return tx.args[:n]
	}
	if cap(tx.more) < n {
		tx.more = make([]Arg, n)
	}
	return tx.more[:n]
}

// ErrNoRow is a step finding no row where the transaction needs one.
var ErrNoRow = errors.New("no row")

// needRow is the error for a step that returned no row; what and key name the step
// (the message is built only on failure: steps run thousands of times a second).
func needRow(prev Result, what string, key int64) error {
	if prev.Rows < 1 {
		return fmt.Errorf("%s %d: %w", what, key, ErrNoRow)
	}
	return nil
}

// needOne is the error for a step that changed other than one row.
func needOne(prev Result, what string, key int64) error {
	if prev.Rows != 1 {
		return fmt.Errorf("%s %d: changed %d rows, want 1", what, key, prev.Rows)
	}
	return nil
}

// needFirst is the error for a step whose first column was not an integer.
func needFirst(prev Result, what string) error {
	if !prev.HasFirst {
		return fmt.Errorf("%s: %w", what, ErrNoRow)
	}
	return nil
}

// query sends one statement through pgx and reads its Result. Integer arguments go as
// int64, doubles as float64 and text as string, so pgx's exec mode decides the protocol
// as for any query (in cache_statement, binary for integer and float parameters). With
// row, the first row's values are copied into Result.Row.
func query(ctx context.Context, conn *pgx.Conn, sql string, args []Arg, row bool) (Result, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		switch {
		case a.IsText:
			vals[i] = a.Text
		case a.AsText:
			vals[i] = string(a.AppendText(nil))
		case a.IsFloat:
			vals[i] = a.Float64()
		default:
			vals[i] = a.Int
		}
	}
	rows, err := conn.Query(ctx, sql, vals...)
	if err != nil {
		return Result{}, err
	}
	defer rows.Close()
	var r Result
	if rows.Next() {
		if fd := rows.FieldDescriptions(); len(fd) > 0 && IsIntegerOID(fd[0].DataTypeOID) && rows.RawValues()[0] != nil {
			var v int64
			if err := rows.Scan(firstOnly(&v, len(fd))...); err != nil {
				return Result{}, err
			}
			r.First, r.HasFirst = v, true
		}
		if row {
			r.Row, r.RowBinary = copyRow(rows.RawValues(), rows.FieldDescriptions())
		}
		for rows.Next() {
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	r.Rows = rows.CommandTag().RowsAffected()
	return r, nil
}

// RowBuf holds a copy of a row's values, reused from one row to the next: an
// executor whose read buffer moves on before the step reads Result.Row (the loop) keeps
// the row there.
type RowBuf struct {
	vals [][]byte
	buf  []byte
}

// Copy copies values into b and returns the copy, valid until the next Copy; it
// allocates only when a row is larger than any before.
func (b *RowBuf) Copy(values [][]byte) [][]byte {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if cap(b.buf) < n {
		b.buf = make([]byte, 0, max(n, 2*cap(b.buf)))
	}
	b.buf, b.vals = b.buf[:0], b.vals[:0]
	for _, v := range values {
		if v == nil {
			b.vals = append(b.vals, nil)
			continue
		}
		b.buf = append(b.buf, v...)
		b.vals = append(b.vals, b.buf[len(b.buf)-len(v):len(b.buf):len(b.buf)])
	}
	return b.vals
}

// copyRow copies a row's raw values (pgx reuses them for the next row) and says which
// are in binary format.
func copyRow(raw [][]byte, fd []pgconn.FieldDescription) ([][]byte, []bool) {
	n := 0
	for _, v := range raw {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	row, binary := make([][]byte, len(raw)), make([]bool, len(raw))
	for i, v := range raw {
		if v != nil {
			buf = append(buf, v...)
			row[i] = buf[len(buf)-len(v):]
		}
		binary[i] = i < len(fd) && fd[i].Format == pgx.BinaryFormatCode
	}
	return row, binary
}

// IsIntegerOID reports whether oid is int2, int4 or int8, the columns Result.First reads.
func IsIntegerOID(oid uint32) bool {
	return oid == pgtype.Int8OID || oid == pgtype.Int2OID || oid == pgtype.Int4OID
}

// firstOnly is Scan destinations that read the first of n columns into v and skip the rest.
func firstOnly(v *int64, n int) []any {
	dst := make([]any, n)
	dst[0] = v
	return dst
}
