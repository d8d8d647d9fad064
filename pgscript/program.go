package pgscript

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// builtins are pgbench's automatic variables, which pgceiling does not set: said so
// when a script uses one without setting it.
var builtins = map[string]string{
	"client_id":   "pgbench's built-in :client_id is not supported: pgceiling's arrivals are not tied to a client (\\set it in the script)",
	"scale":       "pgbench's built-in :scale is not supported: pgceiling's schema has no scale factor (\\set scale N in the script)",
	"random_seed": "pgbench's built-in :random_seed is not supported (pgceiling's seed is --seed)",
}

// Options are what Compile needs beyond the script.
type Options struct {
	// Columns returns the names of the result columns of statement i (in Statements
	// order) that has \gset, as the server describes them. pgceiling's executors read one
	// integer column, so a \gset statement must return exactly one; Columns reports an
	// error (with its own context) otherwise.
	Columns func(i int, c *Command) ([]string, error)
	// Zipf returns a chooser over 1..n with exponent s; Compile caches them.
	Zipf func(n int64, s float64) (ZipfPicker, error)
}

// Program is a compiled script, safe for concurrent use by many runs (each with its
// own State).
type Program struct {
	File   string
	cmds   []Command // the script's commands; Expr slots resolved
	stmts  []int     // the statements to send: indices into cmds
	params [][]int   // per statement: the slots of its parameters
	gset   []int     // per statement: the slot its \gset stores into, or -1
	names  []string  // variables by slot
	zipf   func(n int64, s float64) (ZipfPicker, error)
	mu     sync.Mutex // serialises building a table
	tables sync.Map   // zipfKey -> ZipfPicker
}

type zipfKey struct {
	n int64
	s float64
}

// Compile resolves s's variables (each must be set before its use, by \set or \gset)
// and checks the commands before the first statement by running them once: an error
// there (an empty random range, a division by zero) is found before any load runs.
func Compile(s *Script, opt Options) (*Program, error) {
	p := &Program{File: s.File, zipf: opt.Zipf}
	slots := map[string]int{}
	slot := func(name string) int {
		if i, ok := slots[name]; ok {
			return i
		}
		slots[name] = len(p.names)
		p.names = append(p.names, name)
		return len(p.names) - 1
	}
	defined := map[string]bool{}
	use := func(line int, name string) (int, error) {
		if !defined[name] {
			if why, ok := builtins[name]; ok {
				return 0, &Error{s.File, line, why}
			}
			return 0, &Error{s.File, line, fmt.Sprintf("variable :%s is used before it is set (by \\set or \\gset)", name)}
		}
		return slot(name), nil
	}
	p.cmds = make([]Command, len(s.Commands))
	for i, c := range s.Commands {
		switch c.Kind {
		case KindSet:
			e, err := resolve(c.Expr, func(name string) (int, error) { return use(c.Line, name) })
			if err != nil {
				return nil, err
			}
			c.Expr = e
			defined[c.Var] = true
			c.varSlot = slot(c.Var)
		case KindSQL:
			st := len(p.stmts)
			p.stmts = append(p.stmts, i)
			ps := make([]int, len(c.Params))
			for j, name := range c.Params {
				sl, err := use(c.Line, name)
				if err != nil {
					return nil, err
				}
				ps[j] = sl
			}
			p.params = append(p.params, ps)
			g := -1
			if c.Gset {
				if opt.Columns == nil {
					return nil, &Error{s.File, c.Line, "\\gset: the statement's columns are not known (not described)"}
				}
				cols, err := opt.Columns(st, &s.Commands[i])
				if err != nil {
					return nil, err
				}
				if len(cols) != 1 {
					return nil, &Error{s.File, c.Line, fmt.Sprintf("\\gset: the statement returns %d columns; pgceiling stores exactly one integer column", len(cols))}
				}
				name := c.GsetPrefix + cols[0]
				if !validName(name) {
					return nil, &Error{s.File, c.Line, fmt.Sprintf("\\gset: column %q is not a valid variable name", name)}
				}
				defined[name] = true
				g = slot(name)
			}
			p.gset = append(p.gset, g)
		}
		p.cmds[i] = c
	}
	// Run the commands before the first statement once, as a check and to build the
	// Zipf tables they ask for before the load starts.
	st := p.NewState()
	p.Reset(st, 1, 2)
	if _, err := p.Next(st); err != nil {
		return nil, err
	}
	return p, nil
}

// resolve copies e with its variables' slots set.
func resolve(e *Expr, slot func(string) (int, error)) (*Expr, error) {
	c := *e
	if c.op == 'v' {
		s, err := slot(c.name)
		if err != nil {
			return nil, err
		}
		c.slot = s
		return &c, nil
	}
	if len(c.args) > 0 {
		c.args = make([]*Expr, len(e.args))
		for i, a := range e.args {
			r, err := resolve(a, slot)
			if err != nil {
				return nil, err
			}
			c.args[i] = r
		}
	}
	return &c, nil
}

// NumStatements is the number of statements the program sends per run.
func (p *Program) NumStatements() int { return len(p.stmts) }

// Statement is the program's statement i (Statements order).
func (p *Program) Statement(i int) *Command { return &p.cmds[p.stmts[i]] }

// State is one run of a program: its variables, its RNG and where it is. A State is
// reused from run to run (Reset).
type State struct {
	ev   evaluator
	pcg  rand.PCG
	pc   int // the next command
	last int // the statement Next returned last
}

// NewState returns a state for runs of p.
func (p *Program) NewState() *State {
	st := &State{ev: evaluator{vals: make([]Value, len(p.names)), zipf: p.zipfTable}}
	st.ev.rng = rand.New(&st.pcg)
	return st
}

// Reset starts a new run whose random draws come from the seed: the same seed gives
// the same run (a retried transaction sends the same values).
func (p *Program) Reset(st *State, seed1, seed2 uint64) {
	st.pcg.Seed(seed1, seed2)
	st.pc, st.last = 0, -1
	clear(st.ev.vals)
}

// Next runs the meta-commands up to the next statement to send and returns its index
// (Statements order), or -1 when the run is over. An evaluation error names file:line.
func (p *Program) Next(st *State) (int, error) {
	for st.pc < len(p.cmds) {
		i := st.pc
		c := &p.cmds[i]
		st.pc++
		switch c.Kind {
		case KindSet:
			v, err := st.ev.eval(c.Expr)
			if err != nil {
				return -1, &Error{p.File, c.Line, fmt.Sprintf("\\set %s: %v", c.Var, err)}
			}
			st.ev.vals[c.varSlot] = v
		case KindSQL:
			st.last++
			return st.last, nil
		}
	}
	return -1, nil
}

// Param is the value of statement stmt's parameter j ($j+1) in the run.
func (p *Program) Param(st *State, stmt, j int) Value { return st.ev.vals[p.params[stmt][j]] }

// Gset stores v, the single integer column of statement stmt's single row, into its
// \gset variable. It reports whether the statement has \gset.
func (p *Program) Gset(st *State, stmt int, v int64) bool {
	g := p.gset[stmt]
	if g < 0 {
		return false
	}
	st.ev.vals[g] = Int(v)
	return true
}

// HasGset reports whether statement stmt stores its row (\gset).
func (p *Program) HasGset(stmt int) bool { return p.gset[stmt] >= 0 }

// zipfTable returns the cached chooser over 1..n with exponent s, building it once.
func (p *Program) zipfTable(n int64, s float64) (ZipfPicker, error) {
	k := zipfKey{n, s}
	if z, ok := p.tables.Load(k); ok {
		return z.(ZipfPicker), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if z, ok := p.tables.Load(k); ok {
		return z.(ZipfPicker), nil
	}
	if p.zipf == nil {
		return nil, fmt.Errorf("random_zipfian: no Zipf chooser")
	}
	z, err := p.zipf(n, s)
	if err != nil {
		return nil, err
	}
	p.tables.Store(k, z)
	return z, nil
}
