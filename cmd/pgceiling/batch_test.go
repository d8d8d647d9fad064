package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunInsertBatch: `run --workload insert --batch N` on a real server, under each
// engine, commits N rows per transaction in one autocommit statement: the results file
// says rows_per_tx N and the row check balances committed x N. --batch with another
// workload is one usage line.
func TestRunInsertBatch(t *testing.T) {
	dsn := runDB(t)
	env := map[string]string{"PGCEILING_DSN": dsn}
	for _, engine := range []string{"loop", "pgx"} {
		path := filepath.Join(t.TempDir(), engine+".json")
		_, stderr, code := cli(t, env, "run", "--workload", "insert", "--batch", "25", "--engine", engine, "--rate", "40",
			"--warmup", "0s", "--duration", "1s", "--conns", "4", "--quiet", "--json", path)
		if code != 0 {
			t.Fatalf("run --batch 25 --engine %s: code %d\n%s", engine, code, stderr)
		}
		p := readRun(t, path)
		c := p.Checks
		if p.RowsPerTx != 25 || !c.RowsOK || c.CommittedTotal == 0 || c.RowDelta != 25*c.CommittedTotal || string(p.Engine) != engine {
			t.Errorf("engine %s: rows_per_tx %d, rows ok %v, %d rows for %d transactions; want 25 each, balanced (%v)",
				p.Engine, p.RowsPerTx, c.RowsOK, c.RowDelta, c.CommittedTotal, c.Problems)
		}
	}
	_, stderr, code := cli(t, env, "run", "--workload", "oltp", "--batch", "25", "--rate", "40")
	if code != exitUsage || !strings.Contains(stderr, "--batch is only for the insert workload") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("run --workload oltp --batch 25: code %d, stderr %q; want exit %d and one line", code, stderr, exitUsage)
	}
}
