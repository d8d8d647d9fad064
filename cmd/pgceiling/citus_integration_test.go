//go:build citus

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

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

// envCitusDSN names a Citus coordinator for TestCitusIntegration.
const envCitusDSN = "PGCEILING_CITUS_DSN"

// TestCitusIntegration is the opt-in test against a real Citus cluster: set
// PGCEILING_CITUS_DSN to a coordinator's database that has the citus extension and no
// schema pgceiling (a superuser, or a role that may CHECKPOINT). It inits a small schema
// with --distribute citus, checks inspect's disclosure of the distribution, runs short
// oltp and transfer probes on it (books balanced, rows and money checked) and drops the
// schema. It is built only with the build tag citus (go test -tags citus ./cmd/pgceiling
// -run TestCitusIntegration), so the suite has no test that skips; built, it fails when
// the variable is unset or the coordinator cannot be reached.
func TestCitusIntegration(t *testing.T) {
	dsn := os.Getenv(envCitusDSN)
	if dsn == "" {
		t.Fatal(envCitusDSN + " is not set: the Citus integration test (build tag citus) needs a Citus coordinator's DSN in it; docs/development.md")
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
