package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
)

// inspectDB returns a fresh test database with schema pgceiling made from the DDL
// contract and a few wallets; extra statements run afterwards.
func inspectDB(t *testing.T, extra ...string) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	ddl, err := os.ReadFile(filepath.Join("..", "..", "schema", "sql", "tables.sql"))
	if err != nil {
		t.Fatalf("read DDL: %v", err)
	}
	stmts := append([]string{"CREATE SCHEMA pgceiling", string(ddl),
		"CREATE TABLE pgceiling.transactions_default PARTITION OF pgceiling.transactions DEFAULT",
		"INSERT INTO pgceiling.wallets (account_id, balance, status) SELECT g, 100, 'active' FROM generate_series(1, 1234) g",
		"ANALYZE pgceiling.wallets"}, extra...)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("prepare database: %v\n%s", err, s)
		}
	}
	return dsn
}

func TestInspectText(t *testing.T) {
	dsn := inspectDB(t)
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "inspect")
	if code != 0 {
		t.Fatalf("pgceiling inspect: code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"PostgreSQL 1", "on this machine", "fsync", "synchronous_commit",
		"wal_sync_method", "max_connections", "shared_buffers        128MB", "wallets", "1,234",
		"transactions", "\n  wallets ", "\n  total ", "data / shared_buffers", "No warnings"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("pgceiling inspect: output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestInspectJSON(t *testing.T) {
	dsn := inspectDB(t)
	stdout, stderr, code := cli(t, nil, "inspect", "--dsn", dsn, "--json")
	if code != 0 {
		t.Fatalf("pgceiling inspect --json: code %d, stderr %q", code, stderr)
	}
	var d result.Disclosure
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("pgceiling inspect --json: %v\n%s", err, stdout)
	}
	if d.Version == "" || d.Settings["fsync"] != "on" || len(d.Tables) != 5 || !d.ServerLocal || d.Embedded || len(d.Warnings) != 0 {
		t.Errorf("pgceiling inspect --json: %+v", d)
	}
}

// TestInspectWarns: a database whose default is synchronous_commit=off is disclosed with
// the warning that makes run and search refuse it.
func TestInspectWarns(t *testing.T) {
	dsn := inspectDB(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err == nil {
		_, err = c.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET synchronous_commit = off")
	}
	c.Close(ctx)
	if err != nil {
		t.Fatalf("set the test database's synchronous_commit: %v", err)
	}
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "inspect")
	if code != 0 || !strings.Contains(stdout, "Warnings") || !strings.Contains(stdout, "! synchronous_commit=off") ||
		!strings.Contains(stdout, "--allow-unsafe-server") {
		t.Errorf("pgceiling inspect on synchronous_commit=off: code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

func TestInspectEmbedded(t *testing.T) {
	stdout, stderr, code := cli(t, nil, "inspect")
	if code != 0 {
		t.Fatalf("pgceiling inspect (embedded): code %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "throwaway") || !strings.Contains(stdout, "no pgceiling schema") ||
		!strings.Contains(stdout, "fsync") || !strings.Contains(stdout, "throwaway server started for this command") {
		t.Errorf("pgceiling inspect (embedded): stderr %q, stdout:\n%s", stderr, stdout)
	}
}

func TestInspectBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", "--jsn"}, 2, "unknown flag"},
		{[]string{"inspect", "extra"}, 2, "unexpected argument"},
		{[]string{"inspect", "--dsn", "postgres://u:s3cret@127.0.0.1:99999/x"}, 2, "malformed --dsn"},
		{[]string{"inspect", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x?sslmode=disable&connect_timeout=5"}, 1, "inspect: connect to"},
	} {
		_, stderr, code := cli(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %q: code %d, stderr %q; want code %d, one line with %q, no password", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
