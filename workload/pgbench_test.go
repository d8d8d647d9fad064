package workload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
)

var (
	pgbenchVar  = regexp.MustCompile(`(^|[^:]):[A-Za-z_][A-Za-z0-9_]*`)
	placeholder = regexp.MustCompile(`\$[0-9]+`)
)

// scriptStatements returns the SQL statements of a pgbench script in order, with every
// :variable replaced by "?" (meta-commands and comments dropped).
func scriptStatements(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pgbench script: %v", err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\`) {
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, `\gset`), ";")
		out = append(out, strings.TrimSpace(pgbenchVar.ReplaceAllString(line, "$1?")))
	}
	return out
}

// TestPgbenchScriptsMatchWorkloads keeps bench/pgbench/*.sql identical to the Go
// workloads' statements, so the driver-overhead comparison runs the same SQL.
func TestPgbenchScriptsMatchWorkloads(t *testing.T) {
	for _, tc := range []struct {
		script string
		stmts  []string
	}{
		{"oltp.sql", []string{stmtBegin, stmtSyncOn, oltpSelectWallet, oltpFraudCheck, oltpInsertTx, oltpInsertAudit, stmtCommit}},
		{"transfer.sql", []string{stmtBegin, stmtSyncOn, transferLock, transferLock, transferDebit, transferCredit, transferInsert, transferAudit, stmtCommit}},
	} {
		got := scriptStatements(t, filepath.Join("..", "bench", "pgbench", tc.script))
		if len(got) != len(tc.stmts) {
			t.Errorf("%s has %d statements, the workload %d:\n%s", tc.script, len(got), len(tc.stmts), strings.Join(got, "\n"))
			continue
		}
		for i, s := range tc.stmts {
			if want := placeholder.ReplaceAllString(s, "?"); got[i] != want {
				t.Errorf("%s statement %d differs from the workload's:\n got %s\nwant %s", tc.script, i+1, got[i], want)
			}
		}
	}
}

var processed = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// TestPgbenchScriptsRun runs each script with pgbench at 50 clients, rate-limited, as
// the benchmark does (a fixed 4 transactions per client rather than -T, so a slow
// machine changes the time taken, not the count), and checks the database gained one row per transaction
// pgbench counted (and, for transfer, that money was conserved).
func TestPgbenchScriptsRun(t *testing.T) {
	server := pgtest.Server(t)
	pgbench := filepath.Join(server.BinDir, "pgbench")
	if _, err := os.Stat(pgbench); err != nil {
		t.Fatalf("pgbench not found beside the server binaries: %v", err)
	}
	dsn := setupSchema(t, 10000)
	check := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for _, script := range []string{"oltp.sql", "transfer.sql"} {
		before := count(t, check, "SELECT count(*) FROM pgceiling.transactions")
		audits := count(t, check, "SELECT count(*) FROM pgceiling.audit_log")
		sum, err := (&transfer{}).Snapshot(ctx, check)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(pgbench, "-n", "-M", "prepared", "-c", "50", "-R", "200", "-t", "4",
			"-f", filepath.Join("..", "bench", "pgbench", script), dsn)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %s: %v\n%s", script, err, out)
		}
		m := processed.FindSubmatch(out)
		if m == nil {
			t.Fatalf("pgbench %s: no transaction count in its output:\n%s", script, out)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		if n != 50*4 {
			t.Errorf("pgbench %s processed %d transactions, want 50 clients x 4 = 200:\n%s", script, n, out)
		}
		if got := count(t, check, "SELECT count(*) FROM pgceiling.transactions") - before; got != n {
			t.Errorf("pgbench %s: transactions gained %d rows, pgbench processed %d", script, got, n)
		}
		if got := count(t, check, "SELECT count(*) FROM pgceiling.audit_log") - audits; got != n {
			t.Errorf("pgbench %s: audit_log gained %d rows, pgbench processed %d", script, got, n)
		}
		if after, err := (&transfer{}).Snapshot(ctx, check); err != nil || after != sum {
			t.Errorf("pgbench %s: balance sum %s (%v), want unchanged %s", script, after, err, sum)
		}
		t.Logf("pgbench %s: %s", script, summary(out))
	}
}

// summary keeps pgbench's result lines for the test log.
func summary(out []byte) string {
	var keep []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "processed") || strings.Contains(line, "latency") || strings.HasPrefix(line, "tps") || strings.Contains(line, "failed") {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	return strings.Join(keep, "; ")
}
