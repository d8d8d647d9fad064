package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/pgscript"
)

// CustomName is the workload name of custom scripts (--script FILE[@WEIGHT]).
const CustomName = "script"

// CustomFile is one --script: its name for messages, its text and its weight.
type CustomFile struct {
	Name   string
	Source string
	Weight int
}

// Custom runs pgbench-style scripts (package pgscript) as a Script: each arrival picks
// one script by weight, as pgbench's -f FILE@W does, and runs it as one transaction.
// The script's own BEGIN and COMMIT are the transaction's (Txn sends them); its SET
// LOCAL synchronous_commit is replaced by the run's setting (--sync-commit), so both
// settings of a search run the same script; a script without BEGIN is one statement,
// which runs in a transaction of its own as pgbench's autocommit would.
//
// Table is "": a script promises no table that gains one row per transaction, so the
// driver's row check is skipped for it (docs/scripts.md), not faked.
//
// Custom needs Describe before it runs: the server describes every statement once, so
// a statement the server refuses is reported at file:line before any load, the columns
// that \gset stores are known by name and type, and each parameter's type decides how
// its value is sent. A transaction then costs what a built-in shape's does: its
// variables sit in a slice kept with the executor's reused Tx, its \set expressions
// were compiled once, and building its arguments allocates nothing.
type Custom struct {
	txn
	files   []CustomFile
	scripts []*pgscript.Script
	progs   []*pgscript.Program // nil until Describe
	plans   [][]stmtPlan        // per script, per statement: how to send and read it
	cum     []int               // cumulative weights
	total   int
	stmts   []Statement // every script's statements, script by script
	first   []int       // first[s]: the index in stmts of script s's statement 0
	zipf    func(n int64, s float64) (pgscript.ZipfPicker, error)
}

// stmtPlan is how one statement's arguments are sent and its \gset columns read,
// decided once from the types the server described.
type stmtPlan struct {
	args []argPlan
	cols []colPlan // the \gset columns (none without \gset)
	line int
}

// argKind is how a parameter's value is sent, from the parameter's type.
type argKind uint8

const (
	argInt   argKind = iota // smallint, integer, bigint: an integer as Int (pgx: binary)
	argFloat                // real, double precision: a number as Float (pgx: binary)
	argText                 // any other type (numeric, text, interval, ...): the value's text
)

// argPlan is one parameter: its kind, and its Arg when the value is a constant.
type argPlan struct {
	kind  argKind
	konst bool
	arg   Arg
}

// colKind is how a \gset column's value is stored, from the column's type.
type colKind uint8

const (
	colInt   colKind = iota // smallint, integer, bigint: an integer variable
	colFloat                // real, double precision: a double variable
	colText                 // any other type: the value's text (numeric keeps its digits)
)

type colPlan struct {
	kind colKind
	name string
	oid  uint32
}

var (
	_ Script     = (*Custom)(nil)
	_ Describer  = (*Custom)(nil)
	_ RowChecker = (*Custom)(nil)
)

// Describer is an optional ability: a workload that must ask the server about its
// statements before it runs (custom scripts). The command calls Describe once, on a
// connection of its own, before the first probe.
type Describer interface {
	Describe(ctx context.Context, conn *pgx.Conn) error
}

// RowChecker is an optional ability: NoRowCheck says why the workload's books cannot be
// checked against a table's rows (Table is then "").
type RowChecker interface {
	NoRowCheck() string
}

// NewCustom parses the scripts (each error names file:line); the workload runs once
// Describe has compiled them. p.SyncCommit is the setting each transaction takes.
func NewCustom(files []CustomFile, p Params) (*Custom, error) {
	if len(files) == 0 {
		return nil, errors.New("workload script: no --script given")
	}
	c := &Custom{txn: newTxn(p.SyncCommit), files: files,
		zipf: func(n int64, s float64) (pgscript.ZipfPicker, error) { return NewKeys(int(n), s) }}
	for _, f := range files {
		s, err := pgscript.Parse(f.Name, f.Source)
		if err != nil {
			return nil, err
		}
		if f.Weight < 0 {
			return nil, fmt.Errorf("--script %s: weight must be >= 0, got %d", f.Name, f.Weight)
		}
		c.scripts = append(c.scripts, s)
		c.total += f.Weight
		c.cum = append(c.cum, c.total)
		c.first = append(c.first, len(c.stmts))
		for _, st := range s.Statements() {
			c.stmts = append(c.stmts, Statement{Name: fmt.Sprintf("%s:%d", f.Name, st.Line), SQL: st.SQL})
		}
	}
	if c.total <= 0 {
		return nil, errors.New("--script: the weights add up to 0; at least one script needs a weight above 0")
	}
	return c, nil
}

// Describe prepares every statement once on conn (unnamed, so nothing stays behind): a
// statement the server refuses is an error at its file:line, the columns of a \gset
// statement name its variables, and every parameter's type decides how its value goes.
// Then the scripts are compiled, and the commands before each one's first statement run
// once as a check.
func (c *Custom) Describe(ctx context.Context, conn *pgx.Conn) error {
	progs := make([]*pgscript.Program, len(c.scripts))
	plans := make([][]stmtPlan, len(c.scripts))
	for si, s := range c.scripts {
		stmts := s.Statements()
		descs := make([]*pgconn.StatementDescription, len(stmts))
		for k, st := range stmts {
			sd, err := conn.PgConn().Prepare(ctx, "", st.SQL, nil)
			if err != nil {
				return fmt.Errorf("%s:%d: the server refuses the statement: %w", s.File, st.Line, err)
			}
			if len(sd.ParamOIDs) != len(st.Params) {
				return fmt.Errorf("%s:%d: the server describes %d parameters, the statement has %d :variables", s.File, st.Line, len(sd.ParamOIDs), len(st.Params))
			}
			descs[k] = sd
		}
		cols := func(k int, _ *pgscript.Command) ([]string, error) {
			names := make([]string, len(descs[k].Fields))
			for i, f := range descs[k].Fields {
				names[i] = f.Name
			}
			return names, nil
		}
		p, err := pgscript.Compile(s, pgscript.Options{Columns: cols, Zipf: c.zipf})
		if err != nil {
			return err
		}
		progs[si] = p
		plans[si] = make([]stmtPlan, len(stmts))
		for k, st := range stmts {
			plans[si][k] = planStatement(p, k, st, descs[k])
		}
	}
	c.progs, c.plans = progs, plans
	return nil
}

// planStatement decides how statement k's arguments go and its \gset columns are read.
func planStatement(p *pgscript.Program, k int, st *pgscript.Command, sd *pgconn.StatementDescription) stmtPlan {
	plan := stmtPlan{line: st.Line, args: make([]argPlan, len(st.Params))}
	for j, oid := range sd.ParamOIDs {
		a := &plan.args[j]
		switch {
		case IsIntegerOID(oid):
			a.kind = argInt
		case oid == pgtype.Float8OID || oid == pgtype.Float4OID:
			a.kind = argFloat
		default:
			a.kind = argText
		}
		if v, ok := p.ParamConst(k, j); ok {
			a.konst, a.arg = true, a.encode(v)
			if a.arg.AsText { // encoded once, not per transaction
				a.arg = Text(v.String())
			}
		}
	}
	if p.HasGset(k) {
		for _, f := range sd.Fields {
			col := colPlan{kind: colText, name: f.Name, oid: f.DataTypeOID}
			switch {
			case IsIntegerOID(f.DataTypeOID):
				col.kind = colInt
			case f.DataTypeOID == pgtype.Float8OID || f.DataTypeOID == pgtype.Float4OID:
				col.kind = colFloat
			}
			plan.cols = append(plan.cols, col)
		}
	}
	return plan
}

// encode is v as an argument of this parameter: an integer parameter gets an integer,
// a float parameter a double, any other the value's text form; a text value (from
// \gset) always goes as the text it is, as pgbench sends it.
func (a *argPlan) encode(v pgscript.Value) Arg {
	switch {
	case v.Text:
		return Text(v.S)
	case a.kind == argFloat:
		if v.Double {
			return Float(v.F)
		}
		return Float(float64(v.I))
	case v.Double: // a double for an integer or other parameter: its text, as pgbench sends it
		a := Float(v.F)
		a.AsText = true
		return a
	case a.kind == argInt:
		return Int(v.I)
	}
	return Arg{Int: v.I, AsText: true}
}

// Name is "script".
func (c *Custom) Name() string { return CustomName }

// Table is "": no table gains exactly one row per committed script run.
func (c *Custom) Table() string { return "" }

// NoRowCheck says why the row check is skipped.
func (c *Custom) NoRowCheck() string {
	return "custom script: no table gains exactly one row per transaction"
}

// Files are the scripts' names and weights, for the result.
func (c *Custom) Files() []CustomFile {
	out := make([]CustomFile, len(c.files))
	for i, f := range c.files {
		out[i] = CustomFile{Name: f.Name, Weight: f.Weight}
	}
	return out
}

// Label describes the mix, e.g. "oltp.sql@1, tpcb.sql@3".
func (c *Custom) Label() string {
	parts := make([]string, len(c.files))
	for i, f := range c.files {
		parts[i] = f.Name + "@" + strconv.Itoa(f.Weight)
	}
	return strings.Join(parts, ", ")
}

// Do runs one script transaction on conn through pgx.
func (c *Custom) Do(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return runScript(ctx, conn, &c.txn, c, rng)
}

// Statements are every script's statements.
func (c *Custom) Statements() []Statement { return c.stmts }

// Start picks the script by weight (V[0]) and the seed of its draws (V[1], V[2]): the
// values are drawn at step 0 from that seed, so a retry draws them again identically.
func (c *Custom) Start(tx *Tx, rng *rand.Rand) {
	s := 0
	if len(c.cum) > 1 {
		w := rng.IntN(c.total)
		for w >= c.cum[s] {
			s++
		}
	}
	tx.V[0], tx.V[1], tx.V[2] = int64(s), int64(rng.Uint64()), int64(rng.Uint64())
}

// rowReader is the ability of a Script whose steps read their statements' rows
// (Result.Row): the pgx path copies the first row for it.
type rowReader interface{ readsRows() }

func (c *Custom) readsRows() {}

// customRun is a transaction's run state for each script, kept with the executor's Tx
// (Tx.custom) and reused from transaction to transaction.
type customRun struct {
	owner  *Custom
	states []*pgscript.State
	stmt   int         // the statement sent last
	types  *pgtype.Map // decodes binary values of other types (pgx), made on first need
}

func (c *Custom) run(tx *Tx) *customRun {
	if r := tx.custom; r != nil && r.owner == c {
		return r
	}
	r := &customRun{owner: c, states: make([]*pgscript.State, len(c.progs))}
	for i, p := range c.progs {
		r.states[i] = p.NewState()
	}
	tx.custom = r
	return r
}

// ErrNotDescribed is a custom workload run before Describe.
var ErrNotDescribed = errors.New("custom script not described on the server before running (internal error)")

// Step runs the script's \set commands up to its next statement and sends that, its
// arguments encoded as planned; after a \gset statement it first stores the row's
// columns, which must be exactly one row.
func (c *Custom) Step(tx *Tx, i int, prev Result) (Step, error) {
	if c.progs == nil {
		return Done, ErrNotDescribed
	}
	si := int(tx.V[0])
	p := c.progs[si]
	r := c.run(tx)
	st := r.states[si]
	if i == 0 {
		p.Reset(st, uint64(tx.V[1]), uint64(tx.V[2]))
	} else if p.HasGset(r.stmt) {
		if err := c.gset(r, p, st, &c.plans[si][r.stmt], prev); err != nil {
			return Done, err
		}
	}
	next, err := p.Next(st)
	if err != nil {
		return Done, err
	}
	if next < 0 {
		return Done, nil
	}
	r.stmt = next
	plan := &c.plans[si][next]
	args := tx.Room(len(plan.args))
	for j := range plan.args {
		a := &plan.args[j]
		if a.konst {
			args[j] = a.arg
		} else {
			args[j] = a.encode(p.Param(st, next, j))
		}
	}
	return Step{Stmt: c.first[si] + next, Args: args}, nil
}

// gset stores the columns of the single row prev carries into the statement's \gset
// variables.
func (c *Custom) gset(r *customRun, p *pgscript.Program, st *pgscript.State, plan *stmtPlan, prev Result) error {
	if prev.Rows != 1 {
		return fmt.Errorf("%s:%d: \\gset: expected one row, got %d", p.File, plan.line, prev.Rows)
	}
	if len(prev.Row) != len(plan.cols) {
		return fmt.Errorf("%s:%d: \\gset: the row has %d columns, the server described %d", p.File, plan.line, len(prev.Row), len(plan.cols))
	}
	for k := range plan.cols {
		col := &plan.cols[k]
		raw := prev.Row[k]
		if raw == nil {
			return fmt.Errorf("%s:%d: \\gset: column %q is NULL", p.File, plan.line, col.name)
		}
		binary := k < len(prev.RowBinary) && prev.RowBinary[k]
		v, err := r.decode(col, raw, binary)
		if err != nil {
			return fmt.Errorf("%s:%d: \\gset: column %q: %w", p.File, plan.line, col.name, err)
		}
		p.SetColumn(st, r.stmt, k, v)
	}
	return nil
}

// decode reads one column's value as the server sent it, text or binary.
func (r *customRun) decode(col *colPlan, raw []byte, binary bool) (pgscript.Value, error) {
	switch col.kind {
	case colInt:
		if binary {
			switch len(raw) {
			case 2:
				return pgscript.Int(int64(int16(be.Uint16(raw)))), nil
			case 4:
				return pgscript.Int(int64(int32(be.Uint32(raw)))), nil
			case 8:
				return pgscript.Int(int64(be.Uint64(raw))), nil
			}
			return pgscript.Value{}, fmt.Errorf("%d bytes for an integer", len(raw))
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		return pgscript.Int(v), err
	case colFloat:
		if binary {
			switch len(raw) {
			case 4:
				return pgscript.Float(float64(math.Float32frombits(be.Uint32(raw)))), nil
			case 8:
				return pgscript.Float(math.Float64frombits(be.Uint64(raw))), nil
			}
			return pgscript.Value{}, fmt.Errorf("%d bytes for a double", len(raw))
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		return pgscript.Float(v), err
	}
	if !binary || isTextOID(col.oid) { // a text type's binary form is its text
		return pgscript.Str(string(raw)), nil
	}
	if r.types == nil {
		r.types = pgtype.NewMap()
	}
	t, ok := r.types.TypeForOID(col.oid)
	if !ok {
		return pgscript.Value{}, fmt.Errorf("type OID %d sent in binary is unknown to pgx", col.oid)
	}
	v, err := t.Codec.DecodeValue(r.types, col.oid, pgtype.BinaryFormatCode, raw)
	if err != nil {
		return pgscript.Value{}, err
	}
	text, err := r.types.Encode(col.oid, pgtype.TextFormatCode, v, nil)
	if err != nil {
		return pgscript.Value{}, err
	}
	return pgscript.Str(string(text)), nil
}

var be = binary.BigEndian

// isTextOID reports whether oid is a type whose binary form is its text.
func isTextOID(oid uint32) bool {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UnknownOID:
		return true
	}
	return false
}
