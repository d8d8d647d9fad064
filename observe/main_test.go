package observe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
)

func pgtestDB(t *testing.T) string { return pgtest.NewDatabase(t) }

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// connect opens a connection with the given application_name, closed with the test.
func connect(t *testing.T, dsn, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	cfg.RuntimeParams["application_name"] = app
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as %s: %v", app, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// makeSchema creates schema pgceiling from the DDL contract (tables, a default partition
// of transactions, indexes) and puts a few rows in wallets and transactions.
func makeSchema(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	stmts := []string{"CREATE SCHEMA pgceiling"}
	for _, f := range []string{"tables.sql", "indexes.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "schema", "sql", f))
		if err != nil {
			t.Fatalf("read DDL: %v", err)
		}
		stmts = append(stmts, string(b))
		if f == "tables.sql" {
			stmts = append(stmts, "CREATE TABLE pgceiling.transactions_default PARTITION OF pgceiling.transactions DEFAULT")
		}
	}
	stmts = append(stmts,
		`INSERT INTO pgceiling.wallets (account_id, balance, status)
			SELECT g, 1000, 'active' FROM generate_series(1, 500) g`,
		`INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata)
			SELECT g % 500 + 1, 10, 'EUR', 'debit', 'done', 'ref' || g, '{}' FROM generate_series(1, 2000) g`,
		"ANALYZE pgceiling.wallets", "ANALYZE pgceiling.transactions")
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("make schema: %v\n%s", err, s)
		}
	}
}
