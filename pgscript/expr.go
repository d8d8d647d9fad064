package pgscript

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Value is a variable's value: an integer, a double when Double, or a text when Text (a
// \gset column that is not a number, kept as the server sent it, as pgbench keeps every
// \gset value; arithmetic reads it as a number, as pgbench does).
type Value struct {
	I      int64
	F      float64
	S      string
	Double bool
	Text   bool
}

// Int is an integer value.
func Int(v int64) Value { return Value{I: v} }

// Float is a double value.
func Float(v float64) Value { return Value{F: v, Double: true} }

// Str is a text value.
func Str(s string) Value { return Value{S: s, Text: true} }

// AppendText appends v as pgbench sends it: an integer in decimal, a double with 15
// significant digits (C's %.15g), a text as it is.
func (v Value) AppendText(b []byte) []byte {
	switch {
	case v.Text:
		return append(b, v.S...)
	case v.Double:
		return strconv.AppendFloat(b, v.F, 'g', 15, 64)
	}
	return strconv.AppendInt(b, v.I, 10)
}

// String is v's text form (AppendText).
func (v Value) String() string {
	if v.Text {
		return v.S
	}
	return string(v.AppendText(nil))
}

// number is v as a number: a text is read as an integer, else as a double, as pgbench
// reads a variable's string value; a text that is neither is an error.
func (v Value) number() (Value, error) {
	if !v.Text {
		return v, nil
	}
	s := strings.TrimSpace(v.S)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Int(i), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Float(f), nil
	}
	return Value{}, fmt.Errorf("malformed variable value %q: not a number", v.S)
}

func (v Value) float() float64 {
	if v.Double {
		return v.F
	}
	return float64(v.I)
}

// toInt is pgbench's coercion of a double to an integer: rounded to the nearest, and an
// error when it does not fit.
func (v Value) toInt() (int64, error) {
	if !v.Double {
		return v.I, nil
	}
	r := math.RoundToEven(v.F)
	if math.IsNaN(r) || r < -9223372036854775808.0 || r >= 9223372036854775808.0 {
		return 0, fmt.Errorf("double to int overflow for %g", v.F)
	}
	return int64(r), nil
}

// Expr is a parsed \set expression.
type Expr struct {
	op   byte // 'c' constant, 'v' variable, '+', '-', '*', '/', '%', 'f' function
	val  Value
	name string // variable or function
	slot int    // the variable's slot, after Compile
	fn   *function
	args []*Expr
}

// function is one of the subset's functions; compile.go turns a call into code.
type function struct {
	name           string
	minArgs, maxAr int // maxAr < 0: any number
}

var functions = map[string]*function{}

func init() {
	for _, f := range []*function{
		{"random", 2, 2}, {"random_zipfian", 3, 3}, {"random_exponential", 3, 3}, {"random_gaussian", 3, 3},
		{"abs", 1, 1}, {"least", 1, -1}, {"greatest", 1, -1}, {"int", 1, 1}, {"double", 1, 1},
	} {
		functions[f.name] = f
	}
}

// FunctionNames are the functions of the subset, for docs and errors.
func FunctionNames() []string {
	return []string{"random", "random_zipfian", "random_exponential", "random_gaussian", "abs", "least", "greatest", "int", "double"}
}

// maxDepth bounds an expression's nesting, so no input can exhaust the stack.
const maxDepth = 200

// parseExpr parses a \set expression: integers and doubles, :variables, + - * / %,
// unary minus and plus, parentheses and the subset's functions.
func parseExpr(s string) (*Expr, error) {
	x := &exprParser{lex: exprLexer{src: s}}
	if err := x.next(); err != nil {
		return nil, err
	}
	e, err := x.sum(0)
	if err != nil {
		return nil, err
	}
	if x.tok.kind != tEOF {
		return nil, fmt.Errorf("unexpected %s after the expression", x.tok)
	}
	return e, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tFloat
	tVar
	tIdent
	tOp // one of + - * / % ( ) ,
)

type token struct {
	kind tokKind
	text string
	val  Value
}

func (t token) String() string {
	if t.kind == tEOF {
		return "end of expression"
	}
	return strconv.Quote(t.text)
}

type exprLexer struct {
	src string
	pos int
}

// unsupportedOps are pgbench operators outside the subset.
var unsupportedOps = []string{"<>", "!=", "<=", ">=", "<<", ">>", "=", "<", ">", "&", "|", "#", "~", "!"}

func (l *exprLexer) next() (token, error) {
	for l.pos < len(l.src) && strings.IndexByte(" \t\r\n\f\v", l.src[l.pos]) >= 0 {
		l.pos++
	}
	if l.pos >= len(l.src) {
		return token{kind: tEOF}, nil
	}
	start := l.pos
	c := l.src[l.pos]
	switch {
	case strings.IndexByte("+-*/%(),", c) >= 0:
		l.pos++
		return token{kind: tOp, text: l.src[start:l.pos]}, nil
	case c == ':':
		n := varLen(l.src[l.pos+1:])
		if n == 0 {
			return token{}, fmt.Errorf("':' not followed by a variable name")
		}
		l.pos += 1 + n
		return token{kind: tVar, text: l.src[start+1 : l.pos]}, nil
	case c >= '0' && c <= '9' || c == '.':
		return l.number()
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for l.pos < len(l.src) && (isIdentChar(l.src[l.pos]) && l.src[l.pos] != '$') {
			l.pos++
		}
		return token{kind: tIdent, text: l.src[start:l.pos]}, nil
	}
	for _, op := range unsupportedOps {
		if strings.HasPrefix(l.src[l.pos:], op) {
			return token{}, fmt.Errorf("operator %s is not in pgceiling's subset (+ - * / %% and parentheses)", op)
		}
	}
	return token{}, fmt.Errorf("unexpected character %q", rune(c))
}

func (l *exprLexer) number() (token, error) {
	start := l.pos
	digits := func() int {
		n := 0
		for l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '9' {
			l.pos++
			n++
		}
		return n
	}
	n := digits()
	isFloat := false
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		isFloat = true
		l.pos++
		n += digits()
	}
	if n == 0 {
		return token{}, fmt.Errorf("unexpected %q", l.src[start:l.pos])
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		isFloat = true
		l.pos++
		if l.pos < len(l.src) && (l.src[l.pos] == '+' || l.src[l.pos] == '-') {
			l.pos++
		}
		if digits() == 0 {
			return token{}, fmt.Errorf("invalid number %q", l.src[start:l.pos])
		}
	}
	if l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
		return token{}, fmt.Errorf("invalid number %q", l.src[start:l.pos+1])
	}
	text := l.src[start:l.pos]
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return token{}, fmt.Errorf("double constant %s out of range", text)
		}
		return token{kind: tFloat, text: text, val: Float(f)}, nil
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return token{}, fmt.Errorf("bigint constant %s out of range", text)
	}
	return token{kind: tInt, text: text, val: Int(i)}, nil
}

type exprParser struct {
	lex exprLexer
	tok token
}

func (x *exprParser) next() error {
	t, err := x.lex.next()
	x.tok = t
	return err
}

func (x *exprParser) isOp(op string) bool { return x.tok.kind == tOp && x.tok.text == op }

// sum: term { (+|-) term }.
func (x *exprParser) sum(depth int) (*Expr, error) {
	e, err := x.term(depth)
	if err != nil {
		return nil, err
	}
	for x.isOp("+") || x.isOp("-") {
		op := x.tok.text[0]
		if err := x.next(); err != nil {
			return nil, err
		}
		r, err := x.term(depth)
		if err != nil {
			return nil, err
		}
		e = &Expr{op: op, args: []*Expr{e, r}}
	}
	return e, nil
}

// term: unary { (*|/|%) unary }.
func (x *exprParser) term(depth int) (*Expr, error) {
	e, err := x.unary(depth)
	if err != nil {
		return nil, err
	}
	for x.isOp("*") || x.isOp("/") || x.isOp("%") {
		op := x.tok.text[0]
		if err := x.next(); err != nil {
			return nil, err
		}
		r, err := x.unary(depth)
		if err != nil {
			return nil, err
		}
		e = &Expr{op: op, args: []*Expr{e, r}}
	}
	return e, nil
}

// unary: - unary | + unary | primary. Unary minus is 0 - operand, as in pgbench.
func (x *exprParser) unary(depth int) (*Expr, error) {
	if depth > maxDepth {
		return nil, errors.New("expression nested too deeply")
	}
	if x.isOp("-") || x.isOp("+") {
		neg := x.isOp("-")
		if err := x.next(); err != nil {
			return nil, err
		}
		e, err := x.unary(depth + 1)
		if err != nil || !neg {
			return e, err
		}
		return &Expr{op: '-', args: []*Expr{{op: 'c', val: Int(0)}, e}}, nil
	}
	return x.primary(depth)
}

func (x *exprParser) primary(depth int) (*Expr, error) {
	t := x.tok
	switch t.kind {
	case tInt, tFloat:
		return &Expr{op: 'c', val: t.val}, x.next()
	case tVar:
		return &Expr{op: 'v', name: t.text, slot: -1}, x.next()
	case tIdent:
		return x.call(depth)
	case tOp:
		if t.text == "(" {
			if err := x.next(); err != nil {
				return nil, err
			}
			e, err := x.sum(depth + 1)
			if err != nil {
				return nil, err
			}
			if !x.isOp(")") {
				return nil, fmt.Errorf("missing ')' before %s", x.tok)
			}
			return e, x.next()
		}
	}
	return nil, fmt.Errorf("unexpected %s", t)
}

func (x *exprParser) call(depth int) (*Expr, error) {
	name := strings.ToLower(x.tok.text)
	f := functions[name]
	if err := x.next(); err != nil {
		return nil, err
	}
	if !x.isOp("(") {
		return nil, fmt.Errorf("%s is not a value: constants (true, false, null) are not in pgceiling's subset; variables are written :name", x.lex.src[x.lex.pos-len(name):x.lex.pos])
	}
	if f == nil {
		return nil, fmt.Errorf("function %s is not in pgceiling's subset (%s)", name, strings.Join(FunctionNames(), ", "))
	}
	if err := x.next(); err != nil {
		return nil, err
	}
	e := &Expr{op: 'f', name: name, fn: f}
	if !x.isOp(")") {
		for {
			a, err := x.sum(depth + 1)
			if err != nil {
				return nil, err
			}
			e.args = append(e.args, a)
			if x.isOp(")") {
				break
			}
			if !x.isOp(",") {
				return nil, fmt.Errorf("expected ',' or ')' in %s(), got %s", name, x.tok)
			}
			if err := x.next(); err != nil {
				return nil, err
			}
		}
	}
	if len(e.args) < f.minArgs || f.maxAr >= 0 && len(e.args) > f.maxAr {
		want := strconv.Itoa(f.minArgs)
		if f.maxAr < 0 {
			want = "at least " + want
		}
		return nil, fmt.Errorf("%s() takes %s arguments, got %d", name, want, len(e.args))
	}
	return e, x.next()
}

// arith is one of + - * / %: double arithmetic when either side is a double (% is
// integer only), else integer arithmetic that fails on overflow, as pgbench does.
func arith(op byte, l, r Value) (Value, error) {
	if (l.Double || r.Double) && op != '%' {
		a, b := l.float(), r.float()
		switch op {
		case '+':
			return Float(a + b), nil
		case '-':
			return Float(a - b), nil
		case '*':
			return Float(a * b), nil
		}
		return Float(a / b), nil
	}
	a, err := l.toInt()
	if err != nil {
		return Value{}, err
	}
	b, err := r.toInt()
	if err != nil {
		return Value{}, err
	}
	switch op {
	case '+':
		s := a + b
		if (s > a) != (b > 0) {
			return Value{}, errors.New("bigint add out of range")
		}
		return Int(s), nil
	case '-':
		d := a - b
		if (d < a) != (b > 0) {
			return Value{}, errors.New("bigint sub out of range")
		}
		return Int(d), nil
	case '*':
		if a != 0 && b != 0 {
			p := a * b
			if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
				return Value{}, errors.New("bigint mul out of range")
			}
			return Int(p), nil
		}
		return Int(0), nil
	}
	if b == 0 {
		return Value{}, errors.New("division by zero")
	}
	if b == -1 {
		if op == '%' {
			return Int(0), nil
		}
		if a == math.MinInt64 {
			return Value{}, errors.New("bigint div out of range")
		}
		return Int(-a), nil
	}
	if op == '/' {
		return Int(a / b), nil
	}
	return Int(a % b), nil
}

// ZipfPicker draws keys 1..n of a Zipf distribution.
type ZipfPicker interface {
	Pick(rng *rand.Rand) int64
}

// Bounds of the distribution parameters, as pgbench checks them; pgceiling's
// random_zipfian takes any exponent from 0 (pgbench: from 1.001) since its chooser is an
// exact table, over at most MaxZipfKeys values.
const (
	minGaussianParam = 2.0
	maxZipfParam     = 1000.0
	// MaxZipfKeys is the widest range random_zipfian draws from (its table holds one
	// float64 per value).
	MaxZipfKeys = 10_000_000
)
