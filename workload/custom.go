package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

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
// a statement the server refuses is reported at file:line before any load, and the
// columns that \gset stores are known by name.
type Custom struct {
	txn
	files   []CustomFile
	scripts []*pgscript.Script
	progs   []*pgscript.Program // nil until Describe
	cum     []int               // cumulative weights
	total   int
	stmts   []Statement // every script's statements, script by script
	first   []int       // first[s]: the index in stmts of script s's statement 0
	states  sync.Map    // *Tx -> *customRun: each executor's Tx is reused, so this stays small
	zipf    func(n int64, s float64) (pgscript.ZipfPicker, error)
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
// statement the server refuses is an error at its file:line, and the single column a
// \gset statement returns names its variable. Then the scripts are compiled, and the
// commands before each one's first statement run once as a check.
func (c *Custom) Describe(ctx context.Context, conn *pgx.Conn) error {
	progs := make([]*pgscript.Program, len(c.scripts))
	for si, s := range c.scripts {
		for _, st := range s.Statements() {
			if _, err := conn.PgConn().Prepare(ctx, "", st.SQL, nil); err != nil {
				return fmt.Errorf("%s:%d: the server refuses the statement: %w", s.File, st.Line, err)
			}
		}
		cols := func(_ int, st *pgscript.Command) ([]string, error) {
			sd, err := conn.PgConn().Prepare(ctx, "", st.SQL, nil)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", s.File, st.Line, err)
			}
			var names []string
			for _, f := range sd.Fields {
				if !IsIntegerOID(f.DataTypeOID) {
					return nil, &pgscript.Error{File: s.File, Line: st.Line,
						Msg: fmt.Sprintf("\\gset: column %q is not an integer (smallint, integer or bigint): pgceiling stores one integer column", f.Name)}
				}
				names = append(names, f.Name)
			}
			return names, nil
		}
		p, err := pgscript.Compile(s, pgscript.Options{Columns: cols, Zipf: c.zipf})
		if err != nil {
			return err
		}
		progs[si] = p
	}
	c.progs = progs
	return nil
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

// customRun is one executor's run state for each script, reused from transaction to
// transaction.
type customRun struct {
	states []*pgscript.State
	stmt   int // the statement sent last
}

func (c *Custom) run(tx *Tx) *customRun {
	if r, ok := c.states.Load(tx); ok {
		return r.(*customRun)
	}
	r := &customRun{states: make([]*pgscript.State, len(c.progs))}
	for i, p := range c.progs {
		r.states[i] = p.NewState()
	}
	c.states.Store(tx, r)
	return r
}

// ErrNotDescribed is a custom workload run before Describe.
var ErrNotDescribed = errors.New("custom script not described on the server before running (internal error)")

// Step runs the script's meta-commands up to its next statement and sends that; after
// a \gset statement it first stores the row's integer, which must be exactly one row.
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
		if prev.Rows != 1 || !prev.HasFirst {
			cmd := p.Statement(r.stmt)
			if prev.Rows != 1 {
				return Done, fmt.Errorf("%s:%d: \\gset: expected one row, got %d", p.File, cmd.Line, prev.Rows)
			}
			return Done, fmt.Errorf("%s:%d: \\gset: the column is NULL", p.File, cmd.Line)
		}
		p.Gset(st, r.stmt, prev.First)
	}
	next, err := p.Next(st)
	if err != nil {
		return Done, err
	}
	if next < 0 {
		return Done, nil
	}
	r.stmt = next
	n := len(p.Statement(next).Params)
	args := tx.Args()
	for j := range n {
		args = append(args, Text(p.Param(st, next, j).String()))
	}
	return Step{Stmt: c.first[si] + next, Args: args}, nil
}
