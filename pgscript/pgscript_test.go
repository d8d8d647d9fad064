package pgscript

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
)

// uniformZipf is a stand-in Zipf chooser for tests that only need one: key 1 always.
type firstKey struct{}

func (firstKey) Pick(*rand.Rand) int64 { return 1 }

// zipfTable is an exact inverse-CDF chooser, as workload.Keys is, for the distribution test.
type zipfTable []float64

func (z zipfTable) Pick(rng *rand.Rand) int64 {
	return int64(sort.SearchFloat64s(z, rng.Float64())) + 1
}

func newZipfTable(n int64, s float64) (ZipfPicker, error) {
	t := make(zipfTable, n)
	var sum float64
	for i := range t {
		sum += math.Pow(float64(i+1), -s)
		t[i] = sum
	}
	for i := range t {
		t[i] /= sum
	}
	return t, nil
}

// columns answers Compile's question from a fixed map of statement index to columns.
func columns(cols map[int][]string) func(int, *Command) ([]string, error) {
	return func(i int, _ *Command) ([]string, error) { return cols[i], nil }
}

func mustCompile(t *testing.T, src string, cols map[int][]string) *Program {
	t.Helper()
	s, err := Parse("t.sql", src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	p, err := Compile(s, Options{Columns: columns(cols), Zipf: newZipfTable})
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return p
}

func TestParseOLTPScript(t *testing.T) {
	src, err := os.ReadFile("../bench/pgbench/oltp.sql")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("oltp.sql", string(src))
	if err != nil {
		t.Fatalf("Parse(bench/pgbench/oltp.sql): %v", err)
	}
	var kinds []Kind
	for _, c := range s.Commands {
		if c.Kind != KindSet {
			kinds = append(kinds, c.Kind)
		}
	}
	want := []Kind{KindBegin, KindSetSync, KindSQL, KindSQL, KindSQL, KindSQL, KindCommit}
	if !equal(kinds, want) {
		t.Fatalf("Parse(oltp.sql) kinds = %v, want %v", kinds, want)
	}
	st := s.Statements()
	if got := st[0].SQL; got != "SELECT balance, status FROM pgceiling.wallets WHERE account_id = $1::bigint" {
		t.Errorf("statement 0 = %q", got)
	}
	if got := st[1].Params; !equal(got, []string{"wallet", "window", "limit"}) || !st[1].Gset {
		t.Errorf("statement 1 params %v gset %v, want [wallet window limit] with \\gset", got, st[1].Gset)
	}
	if !strings.Contains(st[2].SQL, "$7::int") || len(st[2].Params) != 7 || !st[2].Gset {
		t.Errorf("statement 2 = %q params %v gset %v", st[2].SQL, st[2].Params, st[2].Gset)
	}
	p, err := Compile(s, Options{Columns: columns(map[int][]string{1: {"recent"}, 2: {"id"}}), Zipf: newZipfTable})
	if err != nil {
		t.Fatalf("Compile(oltp.sql): %v", err)
	}
	run := p.NewState()
	p.Reset(run, 7, 8)
	i, err := p.Next(run)
	if err != nil || i != 0 {
		t.Fatalf("Next = %d, %v; want 0", i, err)
	}
	if w := p.Param(run, 0, 0); w.Double || w.I < 1 || w.I > 10000 {
		t.Errorf("wallet = %v, want an integer in 1..10000", w)
	}
	for want := 1; want < 4; want++ {
		if i, err := p.Next(run); err != nil || i != want {
			t.Fatalf("Next = %d, %v; want %d", i, err, want)
		}
		if want == 2 {
			if !p.HasGset(1) || !equal(p.GsetColumns(1), []string{"recent"}) {
				t.Fatalf("statement 1: HasGset %v, columns %v; want [recent]", p.HasGset(1), p.GsetColumns(1))
			}
			p.SetColumn(run, 1, 0, Int(5))
		}
		if want == 3 {
			p.SetColumn(run, 2, 0, Int(42))
		}
	}
	if v := p.Param(run, 2, 5); v.I != 5 { // :recent
		t.Errorf(":recent = %v, want 5 from \\gset", v)
	}
	if v := p.Param(run, 3, 0); v.I != 42 { // :id
		t.Errorf(":id = %v, want 42 from \\gset", v)
	}
	// :window and :limit are constants: known at Compile, so an executor encodes them once.
	if v, ok := p.ParamConst(1, 1); !ok || v != Int(3600) {
		t.Errorf("ParamConst(1, 1) = %v, %v; want the constant :window 3600", v, ok)
	}
	if _, ok := p.ParamConst(1, 0); ok {
		t.Error("ParamConst(1, 0) (:wallet, drawn per run) is known at Compile")
	}
	if i, err := p.Next(run); err != nil || i != -1 {
		t.Fatalf("Next at the end = %d, %v; want -1", i, err)
	}
}

func equal[T comparable](a, b []T) bool {
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

func TestParseRefusesWithFileLine(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"\\sleep 10ms\nSELECT 1;", "t.sql:1: \\sleep is not supported"},
		{"BEGIN;\n\\if :x = 1\nCOMMIT;", "t.sql:2: \\if is not supported"},
		{"\\shell ls\nSELECT 1;", "t.sql:1: \\shell is not supported"},
		{"\\setshell x echo 1\nSELECT 1;", "t.sql:1: \\setshell is not supported"},
		{"\\startpipeline\nSELECT 1;", "t.sql:2: only BEGIN and SET LOCAL synchronous_commit may be pipelined"},
		{"BEGIN;\n\\endpipeline\n", "t.sql:2: \\endpipeline without \\startpipeline"},
		{"\\startpipeline\nBEGIN;\n", "t.sql:1: \\startpipeline without \\endpipeline"},
		{"\\frobnicate\nSELECT 1;", "t.sql:1: invalid meta-command \\frobnicate"},
		{"SELECT * FROM :tbl;", "t.sql:1: :tbl as an identifier"},
		{"BEGIN;\nSELECT 1; SELECT 2;\nCOMMIT;", "t.sql:2: one SQL statement per line"},
		{"\\set x sqrt(2)\nSELECT :x;", "t.sql:1: \\set x: function sqrt is not in pgceiling's subset"},
		{"\\set x 1 = 2\nSELECT :x;", "t.sql:1: \\set x: operator = is not in"},
		{"\\set x\nSELECT 1;", "t.sql:1: \\set x: missing expression"},
		{"\\set x (1 + 2\nSELECT 1;", "t.sql:1: \\set x: missing ')'"},
		{"\\set x random(1)\nSELECT 1;", "t.sql:1: \\set x: random() takes 2 arguments, got 1"},
		{"\\set x 99999999999999999999\nSELECT 1;", "bigint constant 99999999999999999999 out of range"},
		{"CREATE TABLE t (a int);", "t.sql:1: CREATE statements are not supported"},
		{"BEGIN;\nDROP TABLE t;\nCOMMIT;", "t.sql:2: DROP statements are not supported"},
		{"BEGIN;\nSET work_mem = '1GB';\nCOMMIT;", "t.sql:2: SET without LOCAL"},
		{"BEGIN;\nROLLBACK;", "t.sql:2: ROLLBACK is not supported"},
		{"BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT 1;\nCOMMIT;", "t.sql:1: BEGIN with options"},
		{"SELECT 1;\nSELECT 2;", "t.sql:2: several statements without BEGIN"},
		{"BEGIN;\nSELECT 1;", "BEGIN without COMMIT"},
		{"SELECT 1;\nCOMMIT;", "t.sql:2: COMMIT without BEGIN"},
		{"BEGIN;\nCOMMIT;\nSELECT 1;", "t.sql:3: a statement after COMMIT"},
		{"\\set x 1\n", "no SQL statement"},
		{"\\gset\nSELECT 1;", "t.sql:1: \\gset must follow an SQL command"},
		{"BEGIN;\n\\gset\nSELECT 1;\nCOMMIT;", "t.sql:2: \\gset must follow a statement that returns one row"},
		{"SELECT $1;", "t.sql:1: positional parameter $1"},
		{"SELECT 'abc;", "t.sql:1: unterminated quoted string"},
		{"BEGIN;\nSET LOCAL work_mem = :m;\nCOMMIT;", "t.sql:2: SET LOCAL takes no :variables"},
		{"BEGIN;\n\n\nSELECT a\n  FROM t\n  WHERE x = ;y;\nCOMMIT;", "t.sql:6: one SQL statement per line"},
	} {
		_, err := Parse("t.sql", tc.src)
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an *Error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestCompileRefusesUndefinedVariables(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"\\set x :y + 1\nSELECT :x;", "t.sql:1: variable :y is never set: no \\set of it and no \\gset column of that name"},
		{"SELECT :z;", "t.sql:1: variable :z is never set"},
		{"BEGIN;\nSELECT :a;\n\\set a 1\nCOMMIT;", "t.sql:2: variable :a is used before it is set (at line 3)"},
		{"BEGIN;\nSELECT 1 AS a \\gset p_\nSELECT :a;\nCOMMIT;", "t.sql:3: variable :a is never set: no \\set of it and no \\gset column of that name (the \\gset at line 2 sets :p_a)"},
		{"\\set w 10\n\\set x random_zipfian(1, :w, 0 - 1)\nSELECT :x;", "t.sql:2: \\set x: zipfian parameter must be in range"},
		{"SELECT :client_id;", "t.sql:1: pgbench's built-in :client_id is not supported"},
		{"\\set aid random(1, 100000 * :scale)\nSELECT :aid;", "t.sql:1: pgbench's built-in :scale is not supported"},
		{"\\set x random(10, 1)\nSELECT :x;", "t.sql:1: \\set x: empty range given to random"},
		{"\\set x 1 / 0\nSELECT :x;", "t.sql:1: \\set x: division by zero"},
		{"\\set x random_gaussian(1, 10, 1.5)\nSELECT :x;", "gaussian parameter must be at least 2"},
		{"\\set x random_exponential(1, 10, 0)\nSELECT :x;", "exponential parameter must be greater than zero"},
		{"\\set x random_zipfian(1, 100000000, 1)\nSELECT :x;", "pgceiling's exact Zipf table takes at most"},
		{"\\set x 9223372036854775807 + 1\nSELECT :x;", "bigint add out of range"},
	} {
		s, err := Parse("t.sql", tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		_, err = Compile(s, Options{Columns: columns(map[int][]string{0: {"a"}}), Zipf: newZipfTable})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

// TestCompileGsetColumns: \gset [PREFIX] sets one variable per column, named the prefix
// and the column's name, of any type (integer, double or text as the executor decodes
// them); a column that makes no valid variable name is refused at file:line.
func TestCompileGsetColumns(t *testing.T) {
	s, err := Parse("t.sql", "BEGIN;\nSELECT 1 AS a, 2.5 AS b, 'x' AS c \\gset p_\nSELECT :p_a, :p_b, :p_c;\nCOMMIT;")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(s, Options{Columns: columns(map[int][]string{0: {"a", "?column?"}})}); err == nil || !strings.Contains(err.Error(), `t.sql:2: \gset: column "p_?column?" does not make a valid variable name`) {
		t.Errorf("Compile with an unnamed \\gset column = %v, want the file:line refusal", err)
	}
	if _, err := Compile(s, Options{Columns: columns(map[int][]string{0: {"a", "b"}})}); err == nil || !strings.Contains(err.Error(), "t.sql:3: variable :p_c is never set") {
		t.Errorf("Compile without column c = %v, want :p_c never set at t.sql:3", err)
	}
	p, err := Compile(s, Options{Columns: columns(map[int][]string{0: {"a", "b", "c"}})})
	if err != nil {
		t.Fatalf("Compile with three columns: %v", err)
	}
	st := p.NewState()
	p.Reset(st, 1, 1)
	p.Next(st)
	for col, v := range []Value{Int(9), Float(2.5), Str("x")} {
		p.SetColumn(st, 0, col, v)
	}
	p.Next(st)
	for j, want := range []Value{Int(9), Float(2.5), Str("x")} {
		if v := p.Param(st, 1, j); v != want {
			t.Errorf("parameter %d = %+v, want %+v (prefix p_ + column)", j, v, want)
		}
	}
}

// TestGsetTextInArithmetic: a text value from \gset is read as a number in a \set
// expression, as pgbench reads its variables' strings; a text that is no number fails
// the run at the \set's file:line.
func TestGsetTextInArithmetic(t *testing.T) {
	p := mustCompile(t, "BEGIN;\nSELECT '41' AS n \\gset\n\\set m :n + 1\nSELECT :m;\nCOMMIT;", map[int][]string{0: {"n"}})
	st := p.NewState()
	for _, tc := range []struct {
		in   Value
		want Value
		err  string
	}{
		{Str("41"), Int(42), ""},
		{Str(" 1.5"), Float(2.5), ""},
		{Str("x"), Value{}, `t.sql:3: \set m: malformed variable value "x"`},
	} {
		p.Reset(st, 1, 1)
		p.Next(st)
		p.SetColumn(st, 0, 0, tc.in)
		_, err := p.Next(st)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf(":n = %+v: Next = %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if v := p.Param(st, 1, 0); err != nil || v != tc.want {
			t.Errorf(":n = %+v: :m = %+v, %v; want %+v", tc.in, v, err, tc.want)
		}
	}
}

// TestRunAllocatesNothing: one run of a compiled script (its \sets, constants and
// draws, Zipf included) allocates nothing, so an arrival costs its arithmetic only.
func TestRunAllocatesNothing(t *testing.T) {
	src, err := os.ReadFile("../bench/pgbench/oltp.sql")
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, string(src), map[int][]string{1: {"recent"}, 2: {"id"}})
	st := p.NewState()
	var seed uint64
	n := testing.AllocsPerRun(500, func() {
		seed++
		p.Reset(st, seed, 1)
		for {
			i, err := p.Next(st)
			if err != nil {
				t.Fatal(err)
			}
			if i < 0 {
				break
			}
			if p.HasGset(i) {
				p.SetColumn(st, i, 0, Int(3))
			}
			for j := range p.Statement(i).Params {
				_ = p.Param(st, i, j)
			}
		}
	})
	if n != 0 {
		t.Errorf("a run of oltp.sql allocates %v times, want 0", n)
	}
}

func TestEval(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want Value
	}{
		{"1 + 2 * 3", Int(7)},
		{"(1 + 2) * 3", Int(9)},
		{"-7 / 2", Int(-3)},
		{"-7 % 3", Int(-1)},
		{"7 % -1", Int(0)},
		{"- -3", Int(3)},
		{"1.5 * 2", Float(3)},
		{"7 / 2.0", Float(3.5)},
		{"int(2.5)", Int(2)},
		{"int(3.5)", Int(4)},
		{"int(-2.6)", Int(-3)},
		{"double(3) / 2", Float(1.5)},
		{"abs(-4)", Int(4)},
		{"abs(-4.5)", Float(4.5)},
		{"least(3, 1, 2)", Int(1)},
		{"greatest(3, 1.5, 2)", Float(3)},
		{"1e3", Float(1000)},
		{".5 + 1", Float(1.5)},
		{"random(5, 5)", Int(5)},
		{"random_zipfian(10, 10, 1.0)", Int(10)},
		{"random_exponential(3, 3, 2.5)", Int(3)},
		{"random_gaussian(4, 4, 2.0)", Int(4)},
	} {
		p := mustCompile(t, "\\set x "+tc.expr+"\nSELECT :x;", nil)
		st := p.NewState()
		p.Reset(st, 1, 2)
		if _, err := p.Next(st); err != nil {
			t.Errorf("\\set x %s: %v", tc.expr, err)
			continue
		}
		if got := p.Param(st, 0, 0); got != tc.want {
			t.Errorf("\\set x %s = %+v, want %+v", tc.expr, got, tc.want)
		}
	}
}

func TestValueText(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Int(-42), "-42"}, {Float(1.5), "1.5"}, {Float(100000), "100000"}, {Float(1e20), "1e+20"},
		{Float(0.1 + 0.2), "0.3"}, {Float(1.0 / 3), "0.333333333333333"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q (C's %%.15g)", tc.v, got, tc.want)
		}
	}
}

// TestDistributions draws many values of each random function and checks each against
// its exact distribution where that is simple: ranges, the Zipf 1.0 head (P(1) =
// 1/H_n), the exponential's mean and the Gaussian's symmetry.
func TestDistributions(t *testing.T) {
	p := mustCompile(t, `\set u random(1, 10)
\set z random_zipfian(1, 100, 1.0)
\set e random_exponential(1, 100, 5)
\set g random_gaussian(1, 100, 2.5)
SELECT :u, :z, :e, :g;`, nil)
	st := p.NewState()
	const n = 200000
	var ones, zOnes int
	var eSum float64
	var gLow, gHigh int
	for i := range n {
		p.Reset(st, uint64(i), 3)
		if _, err := p.Next(st); err != nil {
			t.Fatal(err)
		}
		u, z, e, g := p.Param(st, 0, 0).I, p.Param(st, 0, 1).I, p.Param(st, 0, 2).I, p.Param(st, 0, 3).I
		if u < 1 || u > 10 || z < 1 || z > 100 || e < 1 || e > 100 || g < 1 || g > 100 {
			t.Fatalf("draw %d out of range: u %d z %d e %d g %d", i, u, z, e, g)
		}
		if u == 1 {
			ones++
		}
		if z == 1 {
			zOnes++
		}
		eSum += float64(e)
		if g <= 50 {
			gLow++
		} else {
			gHigh++
		}
	}
	var h float64
	for k := 1; k <= 100; k++ {
		h += 1 / float64(k)
	}
	check := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, want %.4f +- %.4f", what, got, want, tol)
		}
	}
	check("P(random = 1)", float64(ones)/n, 0.1, 0.005)
	check("P(zipfian 1.0 = 1)", float64(zOnes)/n, 1/h, 0.005)
	// Exponential with parameter 5 over 100 values: x in [0,1) has density
	// 5e^{-5x}/(1-e^{-5}); the value is 1 + floor(100x), mean 1 + 100 E[x] - about 0.5.
	ex := 1/5.0 - math.Exp(-5)/(1-math.Exp(-5))
	check("mean of random_exponential", eSum/n, 1+100*ex-0.5, 0.3)
	check("share of random_gaussian in the lower half", float64(gLow)/n, 0.5, 0.01)
}

func TestRetryDrawsTheSameValues(t *testing.T) {
	p := mustCompile(t, "\\set a random(1, 1000000)\n\\set b random_zipfian(1, 1000, 1.0)\nSELECT :a, :b;", nil)
	st := p.NewState()
	p.Reset(st, 11, 12)
	p.Next(st)
	a, b := p.Param(st, 0, 0), p.Param(st, 0, 1)
	p.Reset(st, 11, 12)
	p.Next(st)
	if a2, b2 := p.Param(st, 0, 0), p.Param(st, 0, 1); a != a2 || b != b2 {
		t.Errorf("Reset with the same seed drew (%v, %v) then (%v, %v)", a, b, a2, b2)
	}
}

func TestParseWeight(t *testing.T) {
	for _, tc := range []struct {
		arg    string
		file   string
		weight int
		bad    bool
	}{
		{"a.sql", "a.sql", 1, false},
		{"a.sql@3", "a.sql", 3, false},
		{"dir@x/a.sql@0", "dir@x/a.sql", 0, false},
		{"a.sql@", "", 0, true},
		{"a.sql@-1", "", 0, true},
		{"a.sql@x", "", 0, true},
		{"@2", "", 0, true},
	} {
		f, w, err := ParseWeight(tc.arg)
		if (err != nil) != tc.bad || !tc.bad && (f != tc.file || w != tc.weight) {
			t.Errorf("ParseWeight(%q) = %q, %d, %v; want %q, %d, error %v", tc.arg, f, w, err, tc.file, tc.weight, tc.bad)
		}
	}
}

func TestParseSQLLexing(t *testing.T) {
	src := "BEGIN;\n" +
		"SELECT ':notvar', \":alsonot\", $q$ :nor; $q$, E'\\':x', a::int, arr[1:2] -- :comment ;\n" +
		"  FROM t WHERE b = :v /* :c ; */ \\gset\n" +
		"SELECT :v;\n" +
		"END;\n"
	s, err := Parse("t.sql", src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	st := s.Statements()
	if len(st) != 2 || !equal(st[0].Params, []string{"v"}) || st[0].Line != 2 || st[1].Line != 4 || !st[0].Gset {
		t.Fatalf("statements = %+v; want 2, the first with the one parameter :v at line 2 and \\gset", st)
	}
	if !strings.Contains(st[0].SQL, "b = $1 /* :c ; */") {
		t.Errorf("statement 0 = %q", st[0].SQL)
	}
	_ = firstKey{}
}

// FuzzParse checks that no input makes the parser, the compiler or one run panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"\\set a random(1, 10)\nBEGIN;\nSELECT :a \\gset\nCOMMIT;\n",
		"SELECT 1",
		"\\set x -(1 + 2.5e3) * least(:x, 3) % 7",
		"BEGIN;\nSELECT $$;$$, ';', \"a;b\" /* ; /* ; */ */ -- ;\n;\nEND;",
		"\\set x random_zipfian(1, 10, 1.0)\nSELECT :x::int;",
		"\\set x 1\\\n + 2\nSELECT :x;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("f.sql", src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %v is not an *Error", err)
			}
			return
		}
		cols := func(i int, c *Command) ([]string, error) { return []string{"c"}, nil }
		p, err := Compile(s, Options{Columns: cols, Zipf: func(n int64, s float64) (ZipfPicker, error) { return firstKey{}, nil }})
		if err != nil {
			return
		}
		st := p.NewState()
		p.Reset(st, 1, 2)
		for {
			i, err := p.Next(st)
			if err != nil || i < 0 {
				return
			}
			for j := range p.Statement(i).Params {
				_ = p.Param(st, i, j).String()
			}
			for col := range p.GsetColumns(i) {
				p.SetColumn(st, i, col, Str("1"))
			}
		}
	})
}
