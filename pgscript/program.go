package pgscript

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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
	// order) that has \gset, as the server describes them: \gset sets one variable per
	// column, named its prefix + the column's name. Columns reports an error (with its
	// own context) for a statement whose columns cannot be stored.
	Columns func(i int, c *Command) ([]string, error)
	// Zipf returns a chooser over 1..n with exponent s; Compile caches them.
	Zipf func(n int64, s float64) (ZipfPicker, error)
}

// Program is a compiled script, safe for concurrent use by many runs (each with its
// own State). Its variables live in slots, numbered once at Compile, so a run's values
// are a slice indexed by slot: no map per transaction.
type Program struct {
	File     string
	cmds     []Command    // the script's commands
	stmts    []int        // the statements to send: indices into cmds
	sets     [][]setInstr // sets[i]: the \set commands that run before statement i; sets[len(stmts)]: after the last
	params   [][]int      // per statement: the slots of its parameters
	known    [][]known    // per statement: what Compile knows of each parameter's value
	gset     [][]int      // per statement: the slots its \gset columns store into (nil: no \gset)
	gsetCols [][]string   // per statement: those columns' names, as described
	names    []string     // variables by slot
	zipf     func(n int64, s float64) (ZipfPicker, error)
	mu       sync.Mutex // serialises building a table
	tables   sync.Map   // zipfKey -> ZipfPicker
}

// setInstr is one compiled \set: the code of its expression and its variable's slot.
type setInstr struct {
	slot int
	line int
	name string
	code code
}

// known is a parameter whose value Compile computed (every \set it depends on is a
// constant), so an executor can encode it once.
type known struct {
	ok  bool
	val Value
}

type zipfKey struct {
	n int64
	s float64
}

// Compile resolves s's variables (each must be set before its use, by \set or \gset)
// into slots, compiles each \set expression into code (constants folded, constant
// arguments of the random functions checked and their Zipf tables built once), and runs
// the commands before the first statement once: an error there (an empty random range,
// a division by zero) is found before any load runs.
func Compile(s *Script, opt Options) (*Program, error) {
	p := &Program{File: s.File, zipf: opt.Zipf, cmds: s.Commands}
	slots := map[string]int{}
	slot := func(name string) int {
		if i, ok := slots[name]; ok {
			return i
		}
		slots[name] = len(p.names)
		p.names = append(p.names, name)
		return len(p.names) - 1
	}
	// The columns of every \gset first, so that an undefined variable's error can say
	// where (or whether) it is set.
	cols := map[int][]string{} // by command index
	setAt := map[string]int{}  // variable -> the first line that sets it
	var gsets []string         // "line N sets :a, :b" per \gset
	st := 0
	for i := range s.Commands {
		c := &s.Commands[i]
		switch c.Kind {
		case KindSet:
			if _, ok := setAt[c.Var]; !ok {
				setAt[c.Var] = c.Line
			}
		case KindSQL:
			if c.Gset {
				names, err := gsetColumns(s.File, st, c, opt.Columns)
				if err != nil {
					return nil, err
				}
				cols[i] = names
				vars := make([]string, len(names))
				for j, n := range names {
					vars[j] = ":" + c.GsetPrefix + n
					if _, ok := setAt[c.GsetPrefix+n]; !ok {
						setAt[c.GsetPrefix+n] = c.Line
					}
				}
				gsets = append(gsets, fmt.Sprintf("the \\gset at line %d sets %s", c.Line, strings.Join(vars, ", ")))
			}
			st++
		}
	}
	defined := map[string]bool{}
	use := func(line int, name string) (int, error) {
		if defined[name] {
			return slot(name), nil
		}
		if why, ok := builtins[name]; ok {
			return 0, &Error{s.File, line, why}
		}
		if at, ok := setAt[name]; ok {
			return 0, &Error{s.File, line, fmt.Sprintf("variable :%s is used before it is set (at line %d)", name, at)}
		}
		msg := fmt.Sprintf("variable :%s is never set: no \\set of it and no \\gset column of that name", name)
		if len(gsets) > 0 {
			msg += " (" + strings.Join(gsets, "; ") + ")"
		}
		return 0, &Error{s.File, line, msg}
	}
	cc := &compiler{known: map[int]Value{}, zipf: p.zipfTable}
	sets := []setInstr{}
	for i, c := range s.Commands {
		switch c.Kind {
		case KindSet:
			e, err := resolve(c.Expr, func(name string) (int, error) { return use(c.Line, name) })
			if err != nil {
				return nil, err
			}
			code, err := cc.expr(e)
			if err != nil {
				return nil, &Error{s.File, c.Line, fmt.Sprintf("\\set %s: %v", c.Var, err)}
			}
			defined[c.Var] = true
			sl := slot(c.Var)
			if code.konst {
				cc.known[sl] = code.val
			} else {
				delete(cc.known, sl)
			}
			sets = append(sets, setInstr{slot: sl, line: c.Line, name: c.Var, code: code})
		case KindSQL:
			p.stmts = append(p.stmts, i)
			p.sets = append(p.sets, sets)
			sets = []setInstr{}
			ps := make([]int, len(c.Params))
			ks := make([]known, len(c.Params))
			for j, name := range c.Params {
				sl, err := use(c.Line, name)
				if err != nil {
					return nil, err
				}
				ps[j] = sl
				ks[j].val, ks[j].ok = cc.known[sl]
			}
			p.params = append(p.params, ps)
			p.known = append(p.known, ks)
			var gs []int
			if c.Gset {
				for _, n := range cols[i] {
					name := c.GsetPrefix + n
					defined[name] = true
					sl := slot(name)
					delete(cc.known, sl)
					gs = append(gs, sl)
				}
			}
			p.gset = append(p.gset, gs)
			p.gsetCols = append(p.gsetCols, cols[i])
		}
	}
	p.sets = append(p.sets, sets)
	// Run the commands before the first statement once, as a check.
	run := p.NewState()
	p.Reset(run, 1, 2)
	if _, err := p.Next(run); err != nil {
		return nil, err
	}
	return p, nil
}

// gsetColumns asks opt for the columns of statement st (command c), which has \gset,
// and checks that each makes a valid variable name.
func gsetColumns(file string, st int, c *Command, columns func(int, *Command) ([]string, error)) ([]string, error) {
	if columns == nil {
		return nil, &Error{file, c.Line, "\\gset: the statement's columns are not known (not described)"}
	}
	names, err := columns(st, c)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &Error{file, c.Line, "\\gset: the statement returns no columns"}
	}
	for _, n := range names {
		if !validName(c.GsetPrefix + n) {
			return nil, &Error{file, c.Line, fmt.Sprintf("\\gset: column %q does not make a valid variable name (name it with AS)", c.GsetPrefix+n)}
		}
	}
	return slices.Clone(names), nil
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

// State is one run of a program: its variables by slot, its RNG and where it is. A
// State is reused from run to run (Reset), so a run allocates nothing.
type State struct {
	vals []Value
	pcg  rand.PCG
	rng  rand.Rand
	zipf zipfSource
	next int // the statement Next returns next
}

// NewState returns a state for runs of p.
func (p *Program) NewState() *State {
	st := &State{vals: make([]Value, len(p.names)), zipf: p.zipfTable}
	st.rng = *rand.New(&st.pcg)
	return st
}

// Reset starts a new run whose random draws come from the seed: the same seed gives
// the same run (a retried transaction sends the same values).
func (p *Program) Reset(st *State, seed1, seed2 uint64) {
	st.pcg.Seed(seed1, seed2)
	st.next = 0
}

// Next runs the \set commands up to the next statement to send and returns its index
// (Statements order), or -1 when the run is over. An evaluation error names file:line.
func (p *Program) Next(st *State) (int, error) {
	i := st.next
	if i > len(p.stmts) {
		return -1, nil
	}
	sets := p.sets[i]
	for k := range sets {
		in := &sets[k]
		if in.code.konst {
			st.vals[in.slot] = in.code.val
			continue
		}
		v, err := in.code.fn(st)
		if err != nil {
			return -1, &Error{p.File, in.line, fmt.Sprintf("\\set %s: %v", in.name, err)}
		}
		st.vals[in.slot] = v
	}
	st.next++
	if i == len(p.stmts) {
		return -1, nil
	}
	return i, nil
}

// Param is the value of statement stmt's parameter j ($j+1) in the run.
func (p *Program) Param(st *State, stmt, j int) Value { return st.vals[p.params[stmt][j]] }

// ParamConst is the value of statement stmt's parameter j when Compile computed it
// (the same in every run), so an executor can encode it once.
func (p *Program) ParamConst(stmt, j int) (Value, bool) {
	k := p.known[stmt][j]
	return k.val, k.ok
}

// GsetColumns are the columns whose values statement stmt's \gset stores, in order
// (nil without \gset).
func (p *Program) GsetColumns(stmt int) []string { return p.gsetCols[stmt] }

// SetColumn stores v, column col of statement stmt's single row, into its \gset
// variable.
func (p *Program) SetColumn(st *State, stmt, col int, v Value) { st.vals[p.gset[stmt][col]] = v }

// HasGset reports whether statement stmt stores its row (\gset).
func (p *Program) HasGset(stmt int) bool { return p.gset[stmt] != nil }

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
