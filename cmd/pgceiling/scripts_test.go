package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/workload"
)

func countRowsOf(t *testing.T, dsn, table string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pgceiling."+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunScript runs bench/pgbench/oltp.sql, unchanged, through --script on both
// engines: every committed run inserted one payment and one audit row (the script's own
// row check, since the driver skips its own for scripts), nothing failed, and the
// result says the row check was skipped.
func TestRunScript(t *testing.T) {
	dsn := runDB(t)
	for _, engine := range []string{"loop", "pgx"} {
		path := filepath.Join(t.TempDir(), "run.json")
		txBefore, auditBefore := countRowsOf(t, dsn, "transactions"), countRowsOf(t, dsn, "audit_log")
		stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "run", "--script", "../../bench/pgbench/oltp.sql@2",
			"--engine", engine, "--rate", "60", "--warmup", "500ms", "--duration", "2s", "--conns", "8", "--json", path)
		if code != 0 {
			t.Fatalf("pgceiling run --script (engine %s): code %d, stderr %q", engine, code, stderr)
		}
		p := readRun(t, path)
		txGained, auditGained := countRowsOf(t, dsn, "transactions")-txBefore, countRowsOf(t, dsn, "audit_log")-auditBefore
		if p.Workload != workload.CustomName || string(p.Engine) != engine || !p.Balanced() || p.Committed == 0 || p.Failed.Total() != 0 || p.Checks.Table != "" {
			t.Errorf("run --script (engine %s): workload %q scheduled %d committed %d failed %v checks %+v; want script, balanced books, commits, no failures, no row table",
				engine, p.Workload, p.Scheduled, p.Committed, p.Failed, p.Checks)
		}
		if c := p.Checks.CommittedTotal; txGained != c || auditGained != c {
			t.Errorf("run --script (engine %s): %d transactions committed, but transactions gained %d rows and audit_log %d; want one each per commit",
				engine, c, txGained, auditGained)
		}
		if !strings.Contains(stdout, "not checked (custom script") {
			t.Errorf("run --script (engine %s): the summary does not say the row check was skipped:\n%s", engine, stdout)
		}
	}
}

// TestRunScriptErrors: a script outside the subset, or one the server refuses, fails
// before any load with one line naming file:line (exit 2).
func TestRunScriptErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sleep := write("sleep.sql", "\\set a random(1, 10)\n\\sleep 10ms\nSELECT :a;\n")
	refused := write("refused.sql", "\\set a random(1, 10)\nBEGIN;\nSELECT balance FROM pgceiling.no_such_table WHERE account_id = :a;\nCOMMIT;\n")
	unset := write("unset.sql", "BEGIN;\nSELECT status FROM pgceiling.wallets LIMIT 1 \\gset w_\nSELECT :status;\nCOMMIT;\n")
	dsn := runDB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--script", sleep}, sleep + ":2: \\sleep is not supported"},
		{[]string{"--script", refused}, refused + ":3: the server refuses the statement"},
		{[]string{"--script", unset}, unset + `:3: variable :status is never set: no \set of it and no \gset column of that name (the \gset at line 2 sets :w_status)`},
		{[]string{"--script", filepath.Join(dir, "missing.sql")}, "missing.sql"},
		{[]string{"--script", sleep + "@x"}, "the weight after @ must be an integer"},
		{[]string{"--workload", "script"}, "--workload script needs --script"},
		{[]string{"--workload", "oltp", "--script", refused}, `add it to --workload`},
	} {
		args := append([]string{"run", "--rate", "10", "--duration", "1s", "--warmup", "0s"}, tc.args...)
		_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %q: code %d, stderr %q; want code 2 and one line with %q", args, code, stderr, tc.want)
		}
	}
}

// gsetScript \gsets a wallet's numeric balance and text status and writes them into an
// audit row's details, beside the wallet drawn.
const gsetScript = `\set w random(1, 200)
BEGIN;
SELECT balance, status FROM pgceiling.wallets WHERE account_id = :w::bigint \gset wallet_
INSERT INTO pgceiling.audit_log (tx_id, wallet_id, action, actor, details) VALUES (:w, :w, 'gset', 'gset-test', :wallet_balance || ' ' || :wallet_status);
COMMIT;
`

// TestRunScriptGset: on both engines (the loop reads the row in text, pgx in binary),
// \gset stores a numeric and a text column and the next statement sends them back as
// the server gave them.
func TestRunScriptGset(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "gset.sql")
	if err := os.WriteFile(path, []byte(gsetScript), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"loop", "pgx"} {
		_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "run", "--script", path, "--engine", engine,
			"--rate", "60", "--warmup", "0s", "--duration", "1s", "--conns", "4", "--json", filepath.Join(t.TempDir(), "run.json"))
		if code != 0 {
			t.Fatalf("pgceiling run --script gset.sql (engine %s): code %d, stderr %q", engine, code, stderr)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, same int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE a.details = w.balance::text || ' ' || w.status)
		FROM pgceiling.audit_log a JOIN pgceiling.wallets w ON w.account_id = a.wallet_id WHERE a.actor = 'gset-test'`).Scan(&rows, &same); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || same != rows {
		t.Errorf("%d audit rows, %d of them with the wallet's balance and status as \\gset stored them; want all, and some", rows, same)
	}
}
