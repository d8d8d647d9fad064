package pgscript

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// code is a compiled expression: a constant (folded when Compile could compute it,
// since every variable it reads holds a constant at that point of the straight-line
// script), or fn, a closure that computes it from one run's State. Expressions are
// compiled once, so an arrival pays for its arithmetic and its draws, not for walking a
// syntax tree, looking up functions or checking constant arguments again.
type code struct {
	konst bool
	val   Value
	fn    func(st *State) (Value, error)
}

func constant(v Value) code { return code{konst: true, val: v} }

// eval runs c on st.
func (c *code) eval(st *State) (Value, error) {
	if c.konst {
		return c.val, nil
	}
	return c.fn(st)
}

// compiler turns expressions into code. known[slot] is the constant a variable holds at
// the current point of the script, when it holds one.
type compiler struct {
	known map[int]Value
	zipf  zipfSource
}

func (c *compiler) expr(e *Expr) (code, error) {
	switch e.op {
	case 'c':
		return constant(e.val), nil
	case 'v':
		if v, ok := c.known[e.slot]; ok {
			return constant(v), nil
		}
		slot := e.slot
		return code{fn: func(st *State) (Value, error) { return st.vals[slot].number() }}, nil
	case 'f':
		args := make([]code, len(e.args))
		for i, a := range e.args {
			ca, err := c.expr(a)
			if err != nil {
				return code{}, err
			}
			args[i] = ca
		}
		return c.call(e.fn.name, args)
	}
	l, err := c.expr(e.args[0])
	if err != nil {
		return code{}, err
	}
	r, err := c.expr(e.args[1])
	if err != nil {
		return code{}, err
	}
	op := e.op
	switch {
	case l.konst && r.konst:
		v, err := arith(op, l.val, r.val)
		if err != nil {
			return code{}, err
		}
		return constant(v), nil
	case l.konst:
		lv, rf := l.val, r.fn
		return code{fn: func(st *State) (Value, error) {
			rv, err := rf(st)
			if err != nil {
				return Value{}, err
			}
			return arith(op, lv, rv)
		}}, nil
	case r.konst:
		lf, rv := l.fn, r.val
		return code{fn: func(st *State) (Value, error) {
			lv, err := lf(st)
			if err != nil {
				return Value{}, err
			}
			return arith(op, lv, rv)
		}}, nil
	}
	lf, rf := l.fn, r.fn
	return code{fn: func(st *State) (Value, error) {
		lv, err := lf(st)
		if err != nil {
			return Value{}, err
		}
		rv, err := rf(st)
		if err != nil {
			return Value{}, err
		}
		return arith(op, lv, rv)
	}}, nil
}

// call compiles a function call. The random functions draw on every run, so they are
// never folded; their constant arguments are checked (and a Zipf table built) here, once.
func (c *compiler) call(name string, args []code) (code, error) {
	switch name {
	case "random":
		return c.random(args, func(rng *rand.Rand, lb int64, n uint64, _ float64, _ ZipfPicker) int64 {
			return lb + int64(rng.Uint64N(n))
		}, nil)
	case "random_exponential":
		return c.random(args, drawExponential, checkExponential)
	case "random_gaussian":
		return c.random(args, drawGaussian, checkGaussian)
	case "random_zipfian":
		return c.random(args, func(rng *rand.Rand, lb int64, _ uint64, _ float64, z ZipfPicker) int64 {
			return lb - 1 + z.Pick(rng)
		}, checkZipf)
	}
	var f func([]Value) (Value, error)
	switch name {
	case "abs":
		f = func(a []Value) (Value, error) {
			v := a[0]
			if v.Double {
				return Float(math.Abs(v.F)), nil
			}
			if v.I < 0 {
				v.I = -v.I // pgbench wraps the same way for the smallest bigint
			}
			return v, nil
		}
	case "least", "greatest":
		f = extremumOf(name == "greatest")
	case "int":
		f = func(a []Value) (Value, error) {
			i, err := a[0].toInt()
			return Int(i), err
		}
	case "double":
		f = func(a []Value) (Value, error) { return Float(a[0].float()), nil }
	default:
		return code{}, fmt.Errorf("function %s is not in pgceiling's subset", name)
	}
	return fold(args, f)
}

// fold is a deterministic function of args: computed now when every argument is a
// constant, else on each run with its arguments in a small array.
func fold(args []code, f func([]Value) (Value, error)) (code, error) {
	all := true
	for _, a := range args {
		all = all && a.konst
	}
	if all {
		vals := make([]Value, len(args))
		for i, a := range args {
			vals[i] = a.val
		}
		v, err := f(vals)
		if err != nil {
			return code{}, err
		}
		return constant(v), nil
	}
	return code{fn: func(st *State) (Value, error) {
		var buf [4]Value
		vals := buf[:0]
		for i := range args {
			v, err := args[i].eval(st)
			if err != nil {
				return Value{}, err
			}
			vals = append(vals, v)
		}
		return f(vals)
	}}, nil
}

// draw is one distribution: a value of [lb, lb+n) from rng, given the checked
// parameter (and, for Zipf, its table).
type draw func(rng *rand.Rand, lb int64, n uint64, param float64, z ZipfPicker) int64

// check checks a distribution's parameter over a range of n values and returns what
// the draw needs of it (the Zipf table, for random_zipfian).
type check func(zipf zipfSource, n uint64, param float64) (ZipfPicker, error)

// zipfSource returns the cached chooser over 1..n with exponent s.
type zipfSource func(n int64, s float64) (ZipfPicker, error)

// random compiles one of pgbench's random functions: an integer in [lb, ub]
// (inclusive) drawn uniformly, or with the distribution and parameter of the third
// argument. With constant arguments the range and parameter are checked once, here.
func (c *compiler) random(args []code, d draw, chk check) (code, error) {
	allConst := true
	for _, a := range args {
		allConst = allConst && a.konst
	}
	if allConst {
		lb, n, err := randomRange(args[0].val, args[1].val)
		if err != nil {
			return code{}, err
		}
		var param float64
		var z ZipfPicker
		if chk != nil {
			param = args[2].val.float()
			if z, err = chk(c.zipf, n, param); err != nil {
				return code{}, err
			}
		}
		return code{fn: func(st *State) (Value, error) { return Int(d(&st.rng, lb, n, param, z)), nil }}, nil
	}
	return code{fn: func(st *State) (Value, error) {
		var vals [3]Value
		for i := range args {
			v, err := args[i].eval(st)
			if err != nil {
				return Value{}, err
			}
			vals[i] = v
		}
		lb, n, err := randomRange(vals[0], vals[1])
		if err != nil {
			return Value{}, err
		}
		var param float64
		var z ZipfPicker
		if chk != nil {
			param = vals[2].float()
			if z, err = chk(st.zipf, n, param); err != nil {
				return Value{}, err
			}
		}
		return Int(d(&st.rng, lb, n, param, z)), nil
	}}, nil
}

// randomRange checks a random function's bounds and returns the lower one and the
// range's size.
func randomRange(a, b Value) (int64, uint64, error) {
	lb, err := a.toInt()
	if err != nil {
		return 0, 0, err
	}
	ub, err := b.toInt()
	if err != nil {
		return 0, 0, err
	}
	if lb > ub {
		return 0, 0, errors.New("empty range given to random")
	}
	n := uint64(ub) - uint64(lb) + 1 // the range's size, exact in uint64
	if ub-lb < 0 || n > math.MaxInt64 {
		return 0, 0, errors.New("random range is too large")
	}
	return lb, n, nil
}

func checkExponential(_ zipfSource, _ uint64, param float64) (ZipfPicker, error) {
	if !(param > 0) || math.IsInf(param, 0) {
		return nil, fmt.Errorf("exponential parameter must be greater than zero (not %g)", param)
	}
	return nil, nil
}

// drawExponential is pgbench's: the density at the last value is exp(-param) of the
// first's.
func drawExponential(rng *rand.Rand, lb int64, n uint64, param float64, _ ZipfPicker) int64 {
	cut := math.Exp(-param)
	u := 1 - rng.Float64() // (0, 1]
	x := -math.Log(cut+(1-cut)*u) / param
	return lb + int64(float64(n)*x)
}

func checkGaussian(_ zipfSource, _ uint64, param float64) (ZipfPicker, error) {
	if !(param >= minGaussianParam) || math.IsInf(param, 0) {
		return nil, fmt.Errorf("gaussian parameter must be at least %g (not %g)", minGaussianParam, param)
	}
	return nil, nil
}

// drawGaussian is a standard normal draw cut at +-param, mapped onto the range.
func drawGaussian(rng *rand.Rand, lb int64, n uint64, param float64, _ ZipfPicker) int64 {
	var z float64
	for {
		z = rng.NormFloat64()
		if z >= -param && z < param {
			break
		}
	}
	return lb + int64(float64(n)*(z+param)/(2*param))
}

func checkZipf(zipf zipfSource, n uint64, param float64) (ZipfPicker, error) {
	if !(param >= 0) || param > maxZipfParam {
		return nil, fmt.Errorf("zipfian parameter must be in range [0, %g] (not %g)", maxZipfParam, param)
	}
	if n > MaxZipfKeys {
		return nil, fmt.Errorf("random_zipfian over %d values: pgceiling's exact Zipf table takes at most %d", n, MaxZipfKeys)
	}
	if zipf == nil {
		return nil, errors.New("random_zipfian: no Zipf chooser")
	}
	return zipf(int64(n), param)
}

// extremumOf is least (greatest false) or greatest: a double when any argument is one.
func extremumOf(greatest bool) func(a []Value) (Value, error) {
	return func(a []Value) (Value, error) {
		double := false
		for _, v := range a {
			double = double || v.Double
		}
		if double {
			m := a[0].float()
			for _, v := range a[1:] {
				if f := v.float(); greatest && f > m || !greatest && f < m {
					m = f
				}
			}
			return Float(m), nil
		}
		m := a[0].I
		for _, v := range a[1:] {
			if greatest && v.I > m || !greatest && v.I < m {
				m = v.I
			}
		}
		return Int(m), nil
	}
}
