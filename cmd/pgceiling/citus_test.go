package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

// envCitusDSN names a Citus coordinator for TestCitusIntegration.
const envCitusDSN = "PGCEILING_CITUS_DSN"

// TestInitDistributeBadValue: --distribute takes none or citus; anything else is one
// usage line and exit 2, before any connection.
func TestInitDistributeBadValue(t *testing.T) {
	_, stderr, code := cli(t, nil, "init", "--distribute", "cockroach", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x")
	if code != 2 || !strings.Contains(stderr, `--distribute "cockroach": want none or citus`) {
		t.Errorf("pgceiling init --distribute cockroach: code %d, stderr %q; want 2 and the accepted values", code, stderr)
	}
	oneLine(t, "init --distribute cockroach", stderr, "s3cret")
}

// TestInitDistributeCitusWithoutExtension: on plain PostgreSQL (the embedded server has
// no citus extension) init --distribute citus stops with one line saying what to do, and
// creates nothing: pgceiling never creates an extension.
func TestInitDistributeCitusWithoutExtension(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	_, stderr, code := cli(t, nil, "init", "--dsn", dsn, "--distribute", "citus", "--rows", "100", "--wallets", "10", "--months", "1")
	if code != 1 || strings.TrimSpace(stderr) == "" || !strings.Contains(stderr, schema.ErrNoCitus.Error()) {
		t.Errorf("pgceiling init --distribute citus on plain PostgreSQL: code %d, stderr %q; want 1 and %q", code, stderr, schema.ErrNoCitus)
	}
	oneLine(t, "init --distribute citus without citus", stderr)
	var exists, ext bool
	err := admin(t, dsn).QueryRow(context.Background(), `SELECT
		EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pgceiling'),
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&exists, &ext)
	if err != nil {
		t.Fatal(err)
	}
	if exists || ext {
		t.Errorf("after the refused init: schema pgceiling exists %v, extension citus exists %v; want neither", exists, ext)
	}
}

// TestInspectNotDistributed: on plain PostgreSQL inspect discloses "not distributed",
// reading no pg_dist_* catalog (there is none), in text and JSON.
func TestInspectNotDistributed(t *testing.T) {
	dsn := runDB(t)
	stdout, stderr, code := cli(t, nil, "inspect", "--dsn", dsn)
	if code != 0 || !strings.Contains(stdout, "Distribution\n  not distributed (no citus extension in this database)") {
		t.Errorf("pgceiling inspect: code %d, stderr %q; want a Distribution section saying not distributed:\n%s", code, stderr, stdout)
	}
	stdout, stderr, code = cli(t, nil, "inspect", "--dsn", dsn, "--json")
	var d result.Disclosure
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
		t.Fatalf("pgceiling inspect --json: code %d, stderr %q, %v", code, stderr, err)
	}
	if d.Distribution == nil || d.Distribution.Citus != "" || d.Distribution.Distributed() {
		t.Errorf("inspect --json distribution = %+v, want present and not distributed", d.Distribution)
	}
}

// TestCitusIntegration is the opt-in test against a real Citus cluster: set
// PGCEILING_CITUS_DSN to a coordinator's database that has the citus extension and no
// schema pgceiling (a superuser, or a role that may CHECKPOINT). It inits a small schema
// with --distribute citus, checks inspect's disclosure of the distribution, runs short
// oltp and transfer probes on it (books balanced, rows and money checked) and drops the
// schema. Unset, it is reported as skipped, naming the variable; set, it fails (never
// skips) when the coordinator cannot be reached.
func TestCitusIntegration(t *testing.T) {
	dsn := os.Getenv(envCitusDSN)
	if dsn == "" {
		t.Skip(envCitusDSN + " is not set: the Citus integration test did not run (set it to a Citus coordinator's DSN to run it; docs/development.md)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s is set but the Citus coordinator cannot be reached: %v", envCitusDSN, err)
	}
	defer conn.Close(context.Background())
	if st, err := schema.Status(ctx, conn); err != nil || st.Exists {
		t.Fatalf("%s: schema pgceiling status %+v, %v: want a database without schema pgceiling (this test creates and drops it)", envCitusDSN, st, err)
	}
	env := map[string]string{"PGCEILING_DSN": dsn}
	t.Cleanup(func() {
		if _, stderr, code := cli(t, env, "drop"); code != 0 {
			t.Errorf("pgceiling drop: code %d, stderr %q", code, stderr)
		}
	})

	stdout, stderr, code := cli(t, env, "init", "--distribute", "citus", "--rows", "20000", "--wallets", "200", "--months", "2", "--workers", "2")
	if code != 0 || !strings.Contains(stdout, "--distribute citus") {
		t.Fatalf("pgceiling init --distribute citus: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = cli(t, env, "inspect", "--json")
	var d result.Disclosure
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
		t.Fatalf("pgceiling inspect --json: code %d, stderr %q, %v", code, stderr, err)
	}
	checkCitusDisclosure(t, d.Distribution)

	for _, wl := range []string{"oltp", "transfer"} {
		path := filepath.Join(t.TempDir(), wl+".json")
		_, stderr, code := cli(t, env, "run", "--workload", wl, "--rate", "40", "--warmup", "1s", "--duration", "3s",
			"--conns", "8", "--json", path)
		if code != 0 {
			t.Fatalf("pgceiling run --workload %s on Citus: code %d, stderr %q", wl, code, stderr)
		}
		p := readRun(t, path)
		if !p.Balanced() || !p.Checks.RowsOK || p.Committed == 0 || p.Failed.Total() != 0 {
			t.Errorf("run %s on Citus: scheduled %d committed %d failed %v rejected %d checks %+v: want committed, no failures, books balanced, rows checked",
				wl, p.Scheduled, p.Committed, p.Failed, p.Rejected, p.Checks)
		}
		if wl == "transfer" && (p.Checks.BalanceOK == nil || !*p.Checks.BalanceOK) {
			t.Errorf("run transfer on Citus: money not conserved: checks %+v", p.Checks)
		}
		f, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Server.Distribution.Distributed() {
			t.Errorf("run %s: the results file's disclosure %+v does not say the schema is distributed", wl, f.Server.Distribution)
		}
	}
}

// checkCitusDisclosure checks the distribution init --distribute citus makes: wallets,
// wallets_baseline, transactions and audit_log hash-distributed in one colocation group
// by wallet, events by its key, meta local, on at least one node.
func checkCitusDisclosure(t *testing.T, d *result.Distribution) {
	t.Helper()
	if d == nil || d.Citus == "" || d.Nodes < 1 || !d.Distributed() {
		t.Fatalf("inspect's distribution = %+v: want citus, at least one node, distributed", d)
	}
	want := map[string]string{"wallets": "account_id", "wallets_baseline": "account_id", "transactions": "wallet_id",
		"audit_log": "wallet_id", "events": "id", "meta": ""}
	byName := map[string]result.DistributedTable{}
	for _, tb := range d.Tables {
		byName[tb.Name] = tb
	}
	for name, col := range want {
		tb, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("inspect's distribution lacks table %s: %+v", name, d.Tables)
		case col == "" && tb.Type != result.DistLocal:
			t.Errorf("%s: %+v, want a local table", name, tb)
		case col != "" && (tb.Type != result.DistHash || tb.Column != col || tb.Shards < 1 || tb.ShardNodes < 1):
			t.Errorf("%s: %+v, want distributed by %s with shards", name, tb, col)
		}
	}
	group := byName["wallets"].ColocationID
	for _, name := range []string{"wallets_baseline", "transactions", "audit_log"} {
		if byName[name].ColocationID != group || group == 0 {
			t.Errorf("%s colocation %d, wallets %d: want the same group", name, byName[name].ColocationID, group)
		}
	}
	if byName["events"].ColocationID == group {
		t.Errorf("events is in wallets' colocation group %d: want its own", group)
	}
}
