// Command benchpg serves the benchmark scripts a throwaway PostgreSQL with pgceiling's
// schema: it starts a localpg server, initialises the schema with a small prefill, writes
// the DSN to a file, and keeps the server until it receives SIGINT or SIGTERM, then
// removes it. Usage: go run ./bench/benchpg -dsn-file FILE [-rows N] [-wallets N]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/schema"
)

func main() {
	dsnFile := flag.String("dsn-file", "", "write the server's DSN to this file once it is ready (required)")
	rows := flag.Int64("rows", 200_000, "transactions rows to prefill")
	wallets := flag.Int("wallets", 10_000, "wallets")
	flag.Parse()
	if err := serve(*dsnFile, *rows, *wallets); err != nil {
		fmt.Fprintf(os.Stderr, "benchpg: %v\n", err)
		os.Exit(1)
	}
}

func serve(dsnFile string, rows int64, wallets int) error {
	if dsnFile == "" {
		return fmt.Errorf("-dsn-file is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := localpg.Start(ctx, localpg.Options{})
	if err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	defer s.Stop()
	dsn := s.DSN("postgres")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	spec := schema.DefaultSpec()
	spec.Rows, spec.Wallets = rows, wallets
	if _, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: 2}); err != nil {
		return fmt.Errorf("init schema: %w", err)
	}
	if err := os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
