package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

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
