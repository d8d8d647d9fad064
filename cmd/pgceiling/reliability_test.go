package main

// Reliability tests (issue 6): bad input across commands, and "touch only what is ours".
// The fault, secret, interruption and overload tests live in reliability_*_test.go.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/schema/schematest"
)

// foreignObjects fills the database with objects pgceiling must never touch: tables with
// rows, a view, functions and sequences in public and in a second schema.
func foreignObjects(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to add foreign objects: %v", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		CREATE TABLE public.accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) DEFAULT 0);
		INSERT INTO public.accounts SELECT g, 'owner ' || g, g * 1.5 FROM generate_series(1, 200) g;
		CREATE INDEX accounts_owner ON public.accounts (owner);
		CREATE SEQUENCE public.invoice_no START 1000;
		SELECT nextval('public.invoice_no');
		CREATE FUNCTION public.double_it(x int) RETURNS int LANGUAGE sql AS 'SELECT x * 2';
		CREATE SCHEMA app;
		CREATE TABLE app.transactions (id serial PRIMARY KEY, note text, created_at timestamptz DEFAULT '2020-01-01');
		INSERT INTO app.transactions (note) SELECT 'n' || g FROM generate_series(1, 50) g;
		CREATE TABLE app.events (id uuid PRIMARY KEY, payload text);
		CREATE VIEW app.big_tx AS SELECT id, note FROM app.transactions WHERE id > 10;
		CREATE SEQUENCE app.ticket;
		CREATE FUNCTION app.touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;`)
	if err != nil {
		t.Fatalf("create foreign objects: %v", err)
	}
}

// dbChecksum hashes everything in the database: every other schema's definitions and
// contents (schematest.ForeignChecksum) and the contents of every pgceiling table, so a
// command that wrote anything at all changes it.
func dbChecksum(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("checksum: connect: %v", err)
	}
	defer conn.Close(ctx)
	foreign, err := schematest.ForeignChecksum(ctx, conn)
	if err != nil {
		t.Fatalf("checksum: %v", err)
	}
	h := sha256.New()
	fmt.Fprintln(h, foreign)
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'pgceiling' AND c.relkind IN ('r', 'S', 'i') ORDER BY 1`)
	if err != nil {
		t.Fatalf("checksum: list pgceiling relations: %v", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("checksum: list pgceiling relations: %v", err)
	}
	for _, n := range names {
		fmt.Fprintln(h, "relation", n)
	}
	rows, err = conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'pgceiling' AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		t.Fatalf("checksum: list pgceiling tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("checksum: list pgceiling tables: %v", err)
	}
	for _, tb := range tables {
		var sum string
		id := pgx.Identifier{"pgceiling", tb}.Sanitize()
		if err := conn.QueryRow(ctx, `SELECT count(*)::text || ' ' || coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '') FROM ONLY `+id+` x`).Scan(&sum); err != nil {
			t.Fatalf("checksum: %s: %v", id, err)
		}
		fmt.Fprintln(h, id, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// foreignChecksum hashes every schema but pgceiling (definitions and contents).
func foreignChecksum(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("foreign checksum: connect: %v", err)
	}
	defer conn.Close(ctx)
	sum, err := schematest.ForeignChecksum(ctx, conn)
	if err != nil {
		t.Fatalf("foreign checksum: %v", err)
	}
	return sum
}

// initTiny creates a tiny pgceiling schema in the database (what `pgceiling init` makes).
func initTiny(t *testing.T, dsn string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	spec := schema.DefaultSpec()
	spec.Rows, spec.Wallets, spec.Months = 3000, 100, 1
	if _, err := schema.Init(context.Background(), cfg, spec, schema.InitOptions{Workers: 1}); err != nil {
		t.Fatalf("schema.Init: %v", err)
	}
}

// execSQL runs statements on the database, failing the test on error.
func execSQL(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// checkOneLine fails the test unless stderr is exactly one line and carries no stack trace.
func checkOneLine(t *testing.T, what, stderr string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "panic", "runtime error", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("%s: stderr has %q (a stack trace?): %.400q", what, bad, stderr)
			return
		}
	}
	if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 || strings.TrimSpace(stderr) == "" {
		t.Errorf("%s: want exactly one line on stderr, got %.400q", what, stderr)
	}
}

// TestReliabilityBadInput runs every bad input we know of across the commands: each must
// print one line naming the problem (and the fix where there is one), exit 2 for usage
// and 1 for runtime errors, and write nothing to the database.
func TestReliabilityBadInput(t *testing.T) {
	dbs := map[string]string{}
	// ready: a pgceiling schema with foreign objects beside it.
	dbs["ready"] = pgtest.NewDatabase(t)
	foreignObjects(t, dbs["ready"])
	initTiny(t, dbs["ready"])
	// empty: only foreign objects, no pgceiling schema.
	dbs["empty"] = pgtest.NewDatabase(t)
	foreignObjects(t, dbs["empty"])
	// other: a schema made by another pgceiling version (the marker's format changed).
	dbs["other"] = pgtest.NewDatabase(t)
	initTiny(t, dbs["other"])
	execSQL(t, dbs["other"], `UPDATE pgceiling.meta SET value = '999' WHERE key = 'format';
		UPDATE pgceiling.meta SET value = '0.0.1-ancient' WHERE key = 'tool_version'`)
	// alien: a schema called pgceiling that pgceiling did not make.
	dbs["alien"] = pgtest.NewDatabase(t)
	foreignObjects(t, dbs["alien"])
	execSQL(t, dbs["alien"], `CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.mine (x int); INSERT INTO pgceiling.mine VALUES (1), (2)`)

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notJSON := write("notjson.json", "this is not a results file\n")
	truncated := write("truncated.json", `{"tool": "pgceiling", "format_version": 1, "command": "search", "sweeps": [{"workload": "oltp", "probes": [{"target_ra`)
	empty := write("empty.json", "")
	runFile := write("run.json", "") // filled below with a real run results file header
	if err := os.WriteFile(runFile, []byte(`{"tool":"pgceiling","format_version":`+fmt.Sprint(result.FormatVersion)+`,"command":"run"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	unknownKey := write("unknown.conf", "# a typo in a key\nrat = 10\n")
	badValue := write("badvalue.conf", "rate = 10\nconns = many\n")
	notAFile := write("plainfile", "x")
	unwritable := filepath.Join(notAFile, "sub", "r.json") // its parent is a regular file
	out := filepath.Join(dir, "out.json")

	// Cheap limits so that a case whose validation is missing ends in seconds (and shows up
	// as a failure, not a hang).
	runLim := []string{"--warmup", "0s", "--duration", "1s", "--conns", "2"}
	searchLim := []string{"--hold", "off", "--warmup", "0s", "--duration", "1s", "--max-probes", "1", "--rows", "2000", "--conns", "2", "--json", out}
	run := func(a ...string) []string { return append(append([]string{"run"}, a...), runLim...) }
	srch := func(a ...string) []string { return append(append([]string{"search"}, a...), searchLim...) }

	cases := []struct {
		db   string // which database PGCEILING_DSN names ("" = none)
		args []string
		code int
		want []string // each must appear in the one line
	}{
		// commands and flags
		{"ready", []string{"serach"}, 2, []string{`did you mean "search"`}},
		{"ready", []string{"benchmark"}, 2, []string{"unknown command"}},
		{"ready", []string{"run", "--rat", "10"}, 2, []string{"--rat"}},
		{"ready", []string{"search", "--bogus"}, 2, []string{"--bogus"}},
		{"ready", []string{"init", "--rowz", "5"}, 2, []string{"--rowz"}},
		{"ready", []string{"inspect", "--nope"}, 2, []string{"--nope"}},
		{"ready", run("--rate", "10", "extra"), 2, []string{"unexpected argument"}},
		// rates
		{"ready", run("--rate", "0"), 2, []string{"--rate"}},
		{"ready", run("--rate", "-5"), 2, []string{"--rate"}},
		{"ready", run("--rate", "NaN"), 2, []string{"--rate"}},
		{"ready", run("--rate", "+Inf"), 2, []string{"--rate"}},
		{"ready", run("--rate", "lots"), 2, []string{"--rate"}},
		{"ready", srch("--start-rate", "-1"), 2, []string{"--start-rate"}},
		{"ready", srch("--start-rate", "NaN"), 2, []string{"--start-rate"}},
		// durations
		{"ready", []string{"run", "--rate", "10", "--duration", "0s"}, 2, []string{"--duration"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "-1s"}, 2, []string{"--duration"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "5x"}, 2, []string{"--duration"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "1s", "--warmup", "-3s"}, 2, []string{"--warmup"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "1s", "--pool-wait", "0s"}, 2, []string{"--pool-wait"}},
		{"ready", []string{"search", "--duration", "-2s", "--max-probes", "1", "--json", out}, 2, []string{"--duration"}},
		// precision, conns, other numbers
		{"ready", srch("--precision", "0"), 2, []string{"--precision"}},
		{"ready", srch("--precision", "2"), 2, []string{"--precision"}},
		{"ready", srch("--precision", "-0.1"), 2, []string{"--precision"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "1s", "--conns", "0"}, 2, []string{"--conns"}},
		{"ready", []string{"run", "--rate", "10", "--duration", "1s", "--threads", "-2"}, 2, []string{"--threads"}},
		{"ready", []string{"search", "--threads", "two", "--max-probes", "1", "--json", out}, 2, []string{"--threads"}},
		{"ready", []string{"search", "--conns", "0", "--max-probes", "1", "--json", out}, 2, []string{"--conns"}},
		{"ready", run("--rate", "10", "--sync-commit", "maybe"), 2, []string{"--sync-commit"}},
		{"ready", srch("--sync-commit", "on,offf"), 2, []string{"offf"}},
		{"", []string{"init", "--rows", "0"}, 2, []string{"--rows"}},
		// workload and profile typos: suggest the closest
		{"ready", run("--rate", "10", "--workload", "tranfser"), 2, []string{`did you mean "transfer"`}},
		{"ready", srch("--workload", "oltpp"), 2, []string{`did you mean "oltp"`}},
		{"ready", srch("--workload", "insret"), 2, []string{`did you mean "insert"`}},
		{"ready", srch("--profile", "standrd"), 2, []string{`did you mean "standard"`}},
		// DSNs: malformed, unreachable
		{"", run("--rate", "10", "--dsn", "postgres://postgres@127.0.0.1:notaport/x"), 2, []string{"--dsn"}},
		{"", []string{"init", "--dsn", "host=127.0.0.1 port=notaport", "--rows", "100"}, 2, []string{"--dsn"}},
		{"", srch("--dsn", "postgres://postgres@127.0.0.1:notaport/x"), 2, []string{"--dsn"}},
		{"", run("--rate", "10", "--dsn", "postgres://postgres@127.0.0.1:1/x?connect_timeout=3"), 1, []string{"127.0.0.1:1"}},
		{"", []string{"init", "--dsn", "postgres://postgres@127.0.0.1:1/x?connect_timeout=3"}, 1, []string{"127.0.0.1:1"}},
		{"", []string{"drop", "--dsn", "postgres://postgres@127.0.0.1:1/x?connect_timeout=3"}, 1, []string{"127.0.0.1:1"}},
		// the schema: missing, from another version, not ours
		{"empty", run("--rate", "10"), 1, []string{"pgceiling init"}},
		{"other", run("--rate", "10"), 1, []string{"another pgceiling version", "--force"}},
		{"other", srch(), 1, []string{"another pgceiling version"}},
		{"alien", run("--rate", "10"), 1, []string{"not made by pgceiling"}},
		{"alien", []string{"init", "--rows", "100"}, 1, []string{"not made by pgceiling"}},
		{"alien", []string{"drop"}, 1, []string{"not made by pgceiling"}},
		// results files
		{"", []string{"report"}, 2, []string{"results file"}},
		{"", []string{"report", notJSON}, 1, []string{"not valid JSON"}},
		{"", []string{"report", truncated}, 1, []string{"truncated"}},
		{"", []string{"report", empty}, 1, []string{"empty"}},
		{"", []string{"report", filepath.Join(dir, "missing.json")}, 1, []string{"missing.json"}},
		{"ready", srch("--resume", notJSON), 1, []string{"--resume", "not valid JSON"}},
		{"ready", srch("--resume", truncated), 1, []string{"--resume", "truncated"}},
		{"ready", srch("--resume", runFile), 2, []string{"--resume", "not of search"}},
		// unwritable --json: refused before anything runs
		{"ready", run("--rate", "10", "--json", unwritable), 1, []string{unwritable}},
		{"ready", []string{"search", "--max-probes", "1", "--duration", "1s", "--warmup", "0s", "--json", unwritable}, 1, []string{unwritable}},
		// config files
		{"ready", []string{"run", "--config", unknownKey}, 2, []string{"unknown key", `"rat"`}},
		{"ready", []string{"run", "--config", badValue, "--duration", "1s"}, 2, []string{"conns"}},
		{"ready", []string{"search", "--config", unknownKey}, 2, []string{"unknown key"}},
		{"ready", []string{"run", "--rate", "10", "--config", filepath.Join(dir, "nope.conf")}, 2, []string{"nope.conf"}},
	}
	// Absurd sizes (--rate 1e12, --duration 10 years) are in TestReliabilityAbsurdInput:
	// they run the real binary under a memory limit, since an unchecked one exhausts memory.
	t.Logf("%d bad inputs", len(cases))
	before := map[string]string{}
	for name, dsn := range dbs {
		before[name] = dbChecksum(t, dsn)
	}
	for _, tc := range cases {
		env := map[string]string{}
		if tc.db != "" {
			env["PGCEILING_DSN"] = dbs[tc.db]
		}
		begin := time.Now()
		_, stderr, code := cli(t, env, tc.args...)
		what := fmt.Sprintf("pgceiling %q (db %q)", tc.args, tc.db)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", what, code, tc.code, stderr)
		}
		checkOneLine(t, what, stderr)
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr %q does not name %q", what, stderr, w)
			}
		}
		if d := time.Since(begin); d > 15*time.Second {
			t.Errorf("%s: took %v; bad input must be refused before any work", what, d)
		}
		if _, err := os.Stat(out); err == nil {
			// search records a runtime failure in its results file (by design); a usage
			// error must leave nothing behind.
			if tc.code == 2 {
				t.Errorf("%s: a usage error wrote the results file %s", what, out)
			}
			os.Remove(out)
		}
		if tc.db != "" {
			if sum := dbChecksum(t, dbs[tc.db]); sum != before[tc.db] {
				t.Errorf("%s: the database changed", what)
				before[tc.db] = sum
			}
		}
	}
}

// TestReliabilityTouchOnlyOurs runs every command that writes (init, run, search with both
// synchronous_commit settings, drop) and some failures on a database holding other
// objects: their definitions and contents must stay exactly as they were.
func TestReliabilityTouchOnlyOurs(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	foreignObjects(t, dsn)
	want := foreignChecksum(t, dsn)
	env := map[string]string{"PGCEILING_DSN": dsn}
	dir := t.TempDir()
	steps := [][]string{
		{"init", "--rows", "3000", "--wallets", "100", "--months", "1", "--workers", "1"},
		{"run", "--workload", "oltp", "--rate", "40", "--warmup", "0s", "--duration", "1s", "--conns", "4"},
		{"run", "--workload", "transfer", "--rate", "40", "--warmup", "0s", "--duration", "1s", "--conns", "4", "--sync-commit", "off"},
		{"run", "--workload", "insert", "--rate", "40", "--warmup", "0s", "--duration", "1s", "--conns", "4"},
		{"search", "--hold", "off", "--workload", "insert,transfer", "--sync-commit", "on,off", "--warmup", "0s", "--duration", "1s",
			"--start-rate", "40", "--growth", "4", "--precision", "0.9", "--max-probes", "2", "--conns", "4", "--json", filepath.Join(dir, "s.json")},
		{"init", "--rows", "3000", "--wallets", "100", "--months", "1", "--workers", "1"}, // the same spec again: nothing to do
		{"drop"},
	}
	for _, args := range steps {
		_, stderr, code := cli(t, env, args...)
		if code != 0 {
			t.Errorf("pgceiling %q: exit %d, stderr:\n%s", args, code, stderr)
		}
		if got := foreignChecksum(t, dsn); got != want {
			t.Fatalf("after pgceiling %q the other schemas changed", args)
		}
	}
	// Failures on the same database: a schema that is not ours, then no schema.
	execSQL(t, dsn, `CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.mine (x int)`)
	want = foreignChecksum(t, dsn)
	for _, args := range [][]string{{"drop"}, {"init", "--rows", "100"}, {"run", "--rate", "10", "--duration", "1s"}} {
		if _, stderr, code := cli(t, env, args...); code == 0 {
			t.Errorf("pgceiling %q on a pgceiling schema that is not ours: exit 0, stderr %q", args, stderr)
		}
		if got := foreignChecksum(t, dsn); got != want {
			t.Fatalf("after pgceiling %q (failing) the other schemas changed", args)
		}
	}
}
