// Command benchpg serves the benchmark scripts. By default it starts a throwaway
// PostgreSQL with pgceiling's schema: a localpg server, the schema initialised with a
// small prefill, the DSN written to a file; it keeps the server until SIGINT or SIGTERM,
// then removes it. With -baseline it prepares another tool's probes (pgbench's) exactly
// as pgceiling prepares its own: -take records the data's baseline into the file; -rate R
// puts the data back to that baseline, back-fills oltp's fraud window at R tx/s (the
// default window and limit; not for -workload transfer, which reads no history) and
// checkpoints, so both tools' probes start from the same state.
//
// Usage:
//
//	benchpg -dsn-file FILE [-rows N] [-wallets N]
//	benchpg -dsn DSN -baseline FILE -take
//	benchpg -dsn DSN -baseline FILE -rate R [-seed S] [-workload oltp|transfer]
//	benchpg -dsn DSN -baseline FILE -restore
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

func main() {
	dsnFile := flag.String("dsn-file", "", "write the server's DSN to this file once it is ready")
	rows := flag.Int64("rows", 200_000, "transactions rows to prefill")
	wallets := flag.Int("wallets", 10_000, "wallets")
	dsn := flag.String("dsn", "", "with -baseline: the server to prepare")
	baseline := flag.String("baseline", "", "the baseline file: written by -take, read by -rate")
	take := flag.Bool("take", false, "record the data's baseline into -baseline")
	rate := flag.Float64("rate", 0, "restore to -baseline, back-fill oltp's fraud window at this rate, checkpoint")
	seed := flag.Int64("seed", 1, "seed of the back-fill")
	restore := flag.Bool("restore", false, "only restore the data to -baseline")
	wl := flag.String("workload", "oltp", "with -rate: the workload the probe runs; oltp's fraud window is back-filled, transfer's probe gets none")
	flag.Parse()
	if *wl != "oltp" && *wl != "transfer" {
		fmt.Fprintf(os.Stderr, "benchpg: -workload must be oltp or transfer, got %q\n", *wl)
		os.Exit(2)
	}
	var err error
	switch {
	case *baseline != "":
		err = prepare(*dsn, *baseline, *take, *restore, *rate, *seed, *wl == "oltp")
	case *dsnFile != "":
		err = serve(*dsnFile, *rows, *wallets)
	default:
		err = fmt.Errorf("give -dsn-file FILE, or -dsn DSN -baseline FILE with -take, -rate R or -restore")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchpg: %v\n", err)
		os.Exit(1)
	}
}

func serve(dsnFile string, rows int64, wallets int) error {
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

// prepare takes the baseline (take), restores it (restore), or prepares one probe at rate
// as pgceiling's search does before each of its probes (the fraud window's back-fill only
// when backfill: the workload is oltp).
func prepare(dsn, file string, take, restore bool, rate float64, seed int64, backfill bool) error {
	n := 0
	for _, b := range []bool{take, restore, rate > 0} {
		if b {
			n++
		}
	}
	if dsn == "" || n != 1 {
		return fmt.Errorf("-baseline needs -dsn and exactly one of -take, -restore or -rate R (R > 0)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if take {
		b, err := schema.TakeBaseline(ctx, conn)
		if err != nil {
			return err
		}
		out, err := json.Marshal(b)
		if err != nil {
			return err
		}
		return os.WriteFile(file, out, 0o600)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var b schema.Baseline
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("baseline %s: %w", file, err)
	}
	spec, err := schema.Check(ctx, conn)
	if err != nil {
		return err
	}
	if _, err := schema.Restore(ctx, conn, b); err != nil || restore {
		return err
	}
	if backfill {
		if _, err := schema.Backfill(ctx, conn, schema.BackfillSpec{Rate: rate, Window: workload.DefaultFraudWindow,
			Limit: workload.DefaultFraudLimit, Wallets: spec.Wallets, Zipf: spec.Zipf, Seed: seed}); err != nil {
			return err
		}
	}
	return schema.Checkpoint(ctx, conn)
}
