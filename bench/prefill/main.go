// Command prefill compares pgceiling's prefill (parallel COPY ... FREEZE, per-partition
// index builds in parallel sessions) with the best server-side path for the same rows
// and indexes: INSERT ... SELECT generate_series(...) into the unindexed tables, then the
// same CREATE INDEX statements (schema/sql/indexes.sql), then ANALYZE. Each path runs in
// its own fresh database on the same server, one after the other.
//
// Run it through bench/prefill.sh. Without -dsn it starts a throwaway server (localpg).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/schema"
)

func main() {
	rows := flag.Int64("rows", 5_000_000, "rows of transactions (audit_log gets a tenth)")
	wallets := flag.Int("wallets", 10_000, "wallets")
	months := flag.Int("months", 12, "months of history")
	bin := flag.String("pgceiling", "./pgceiling", "the pgceiling binary")
	dsn := flag.String("dsn", "", "a server to use (a database URL whose user may CREATE DATABASE); empty: a throwaway one")
	repo := flag.String("repo", ".", "the repository (for schema/sql)")
	levers := flag.Bool("levers", false, "instead: measure each of init's levers (COPY FREEZE vs binary CopyFrom, workers, parallel index sessions) in-process")
	flag.Parse()
	run := run
	if *levers {
		run = func(rows int64, wallets, months int, _, dsn, _ string) error {
			return measureLevers(rows, wallets, months, dsn)
		}
	}
	if err := run(*rows, *wallets, *months, *bin, *dsn, *repo); err != nil {
		fmt.Fprintln(os.Stderr, "prefill bench:", err)
		os.Exit(1)
	}
}

func run(rows int64, wallets, months int, bin, dsn, repo string) error {
	ctx := context.Background()
	if dsn == "" {
		s, err := localpg.Start(ctx, localpg.Options{})
		if err != nil {
			return err
		}
		defer s.Stop()
		dsn = s.DSN("postgres")
		fmt.Printf("throwaway PostgreSQL %s on this machine\n", s.Version)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	var settings string
	admin.QueryRow(ctx, `SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
		WHERE name IN ('shared_buffers', 'maintenance_work_mem', 'max_parallel_maintenance_workers', 'wal_level', 'fsync', 'synchronous_commit', 'max_wal_size')`).Scan(&settings)
	fmt.Printf("server settings: %s\n", settings)
	fmt.Printf("rows: %d transactions + %d audit_log, %d wallets, %d months\n\n", rows, rows/10, wallets, months)

	mkdb := func(name string) (string, error) {
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return "", err
		}
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	defer admin.Exec(ctx, "DROP DATABASE IF EXISTS bench_prefill_server")
	defer admin.Exec(ctx, "DROP DATABASE IF EXISTS bench_prefill_pgceiling")

	// 1. The server-side path.
	sdsn, err := mkdb("bench_prefill_server")
	if err != nil {
		return err
	}
	srv, err := serverSide(ctx, sdsn, repo, rows, wallets, months)
	if err != nil {
		return fmt.Errorf("server-side path: %w", err)
	}
	admin.Exec(ctx, "CHECKPOINT")

	// 2. pgceiling init, as a user runs it.
	pdsn, err := mkdb("bench_prefill_pgceiling")
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "init", "--dsn", pdsn, "--rows", fmt.Sprint(rows), "--wallets", fmt.Sprint(wallets), "--months", fmt.Sprint(months))
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	wall := time.Since(t0)
	if err != nil {
		return fmt.Errorf("pgceiling init: %w\n%s", err, out)
	}
	fmt.Printf("%s\n", out)
	rss := int64(0)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss // KiB on Linux
	}
	pgc := parsePhases(string(out))
	pgc.total = wall

	fmt.Printf("%-28s %12s %12s %12s\n", "", "load", "indexes", "total")
	line := func(name string, p phases) {
		r := func(d time.Duration) string { return fmt.Sprintf("%.0f rows/s", float64(rows)/d.Seconds()) }
		fmt.Printf("%-28s %12s %12s %12s\n", name, p.load.Round(10*time.Millisecond), p.index.Round(10*time.Millisecond), p.total.Round(10*time.Millisecond))
		fmt.Printf("%-28s %12s %12s %12s\n", "", r(p.load), r(p.index), r(p.total))
	}
	line("server-side INSERT..SELECT", srv)
	line("pgceiling init", pgc)
	fmt.Printf("\npgceiling / server-side total time: %.2f (below 1 = pgceiling faster; speed-up %.2fx)\n",
		pgc.total.Seconds()/srv.total.Seconds(), srv.total.Seconds()/pgc.total.Seconds())
	fmt.Printf("pgceiling init peak RSS: %.1f MiB\n", float64(rss)/1024)
	return nil
}

type phases struct{ load, index, total time.Duration }

var rePhase = regexp.MustCompile(`load ([0-9.]+[a-zµ]+) .*indexes ([0-9.]+[a-zµ]+) `)

func parsePhases(out string) phases {
	var p phases
	if m := rePhase.FindStringSubmatch(out); m != nil {
		p.load, _ = time.ParseDuration(m[1])
		p.index, _ = time.ParseDuration(m[2])
	}
	return p
}

// serverSide loads the same tables with INSERT ... SELECT generate_series, one statement
// per table, into unindexed tables, then runs indexes.sql and ANALYZE.
func serverSide(ctx context.Context, dsn, repo string, rows int64, wallets, months int) (phases, error) {
	var p phases
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return p, err
	}
	defer conn.Close(ctx)
	tables, err := os.ReadFile(filepath.Join(repo, "schema/sql/tables.sql"))
	if err != nil {
		return p, err
	}
	indexes, err := os.ReadFile(filepath.Join(repo, "schema/sql/indexes.sql"))
	if err != nil {
		return p, err
	}
	setup := `CREATE SCHEMA pgceiling;` + string(tables) + fmt.Sprintf(`
		DO $$ DECLARE m date; BEGIN
		FOR i IN 0..%d LOOP
			m := date_trunc('month', now() AT TIME ZONE 'UTC')::date - make_interval(months => %d) + make_interval(months => i);
			EXECUTE format('CREATE TABLE pgceiling.%%I PARTITION OF pgceiling.transactions FOR VALUES FROM (%%L) TO (%%L)',
				'transactions_' || to_char(m, 'YYYY_MM'), m::timestamptz, (m + interval '1 month')::timestamptz);
		END LOOP; END $$;
		CREATE TABLE pgceiling.transactions_default PARTITION OF pgceiling.transactions DEFAULT;
		INSERT INTO pgceiling.wallets SELECT g, 1000000.00, 'active', now() FROM generate_series(1, %d) g;`,
		months-1+3, months-1, wallets)
	if _, err := conn.Exec(ctx, setup); err != nil {
		return p, fmt.Errorf("setup: %w", err)
	}
	t0 := time.Now()
	// Log-uniform wallets (close to Zipf 1), rows of the same width as pgceiling's.
	load := fmt.Sprintf(`
	INSERT INTO pgceiling.transactions (id, wallet_id, counterparty_id, amount, currency, kind, status, reference, description, metadata, created_at, updated_at)
	SELECT g, w, CASE WHEN kind IN ('transfer', 'refund') THEN 1 + floor(random() * %[2]d)::bigint END,
		round((exp(random() * 2.6 + 6.7) / 100)::numeric, 2), (ARRAY['EUR','EUR','EUR','USD','USD','GBP','CHF','PLN'])[1 + floor(random() * 8)::int],
		kind, CASE WHEN random() < 0.95 THEN 'completed' ELSE 'pending' END, 'TX-' || substr(md5(g::text), 1, 13),
		kind || ' via ' || ch || ', merchant #' || m,
		jsonb_build_object('channel', ch, 'device', (ARRAY['ios','android','chrome','firefox','terminal'])[1 + floor(random() * 5)::int],
			'ip', '10.' || floor(random() * 256) || '.' || floor(random() * 256) || '.' || floor(random() * 256),
			'risk_score', round(random()::numeric, 3), 'merchant', jsonb_build_object('id', m, 'mcc', '5812'), 'tags', jsonb_build_array('EUR', kind)),
		at, at
	FROM (SELECT g, least(%[2]d, floor(exp(random() * ln(%[2]d + 1))))::bigint AS w,
		(ARRAY['payment','payment','transfer','topup','withdrawal','refund'])[1 + floor(random() * 6)::int] AS kind,
		(ARRAY['mobile','web','pos','api','atm'])[1 + floor(random() * 5)::int] AS ch, 1 + floor(random() * 50000)::int AS m,
		t0 + (now() - t0) * ((g - 1 + random()) / %[1]d) AS at
		FROM (SELECT date_trunc('month', now()) - make_interval(months => %[3]d) AS t0) s, generate_series(1, %[1]d) g) x;
	INSERT INTO pgceiling.audit_log (id, tx_id, wallet_id, action, actor, details, created_at)
	SELECT g, 1 + floor(random() * %[1]d)::bigint, least(%[2]d, floor(exp(random() * ln(%[2]d + 1))))::bigint, 'transaction.created',
		'svc-payments-' || floor(random() * 8), 'transaction.created by request ' || substr(md5(g::text), 1, 12),
		date_trunc('month', now()) - make_interval(months => %[3]d) + (now() - (date_trunc('month', now()) - make_interval(months => %[3]d))) * (g::float8 / %[4]d)
	FROM generate_series(1, %[4]d) g;`, rows, wallets, months-1, max(rows/10, 1))
	if _, err := conn.Exec(ctx, load); err != nil {
		return p, fmt.Errorf("load: %w", err)
	}
	p.load = time.Since(t0)
	t1 := time.Now()
	if _, err := conn.Exec(ctx, string(indexes)); err != nil {
		return p, fmt.Errorf("indexes: %w", err)
	}
	p.index = time.Since(t1)
	// The same statistics pgceiling gathers: each partition with rows, audit_log, wallets
	// (not the partitioned parent, which would analyze every partition again).
	if _, err := conn.Exec(ctx, `DO $$ DECLARE r regclass; BEGIN
		FOR r IN SELECT relid FROM pg_partition_tree('pgceiling.transactions') WHERE isleaf LOOP
			EXECUTE 'ANALYZE ' || r;
		END LOOP; END $$;
		ANALYZE pgceiling.audit_log, pgceiling.wallets; SELECT setval('pgceiling.transactions_id_seq', `+fmt.Sprint(rows)+`)`); err != nil {
		return p, fmt.Errorf("analyze: %w", err)
	}
	p.total = time.Since(t0)
	var n int64
	conn.QueryRow(ctx, `SELECT count(*) FROM pgceiling.transactions`).Scan(&n)
	if n != rows {
		return p, fmt.Errorf("server-side path loaded %d rows, want %d", n, rows)
	}
	fmt.Printf("server-side path: load %s, indexes %s, total %s\n", p.load.Round(time.Millisecond), p.index.Round(time.Millisecond), p.total.Round(time.Millisecond))
	return p, nil
}

// measureLevers runs schema.Init with one lever changed at a time, each in a fresh
// database, and prints the phases' times.
func measureLevers(rows int64, wallets, months int, dsn string) error {
	ctx := context.Background()
	if dsn == "" {
		s, err := localpg.Start(ctx, localpg.Options{})
		if err != nil {
			return err
		}
		defer s.Stop()
		dsn = s.DSN("postgres")
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	workers := runtime.NumCPU()
	spec := schema.Spec{Wallets: wallets, Rows: rows, Months: months, Zipf: 1, Seed: 1}
	variants := []struct {
		name string
		opt  schema.InitOptions
	}{
		{fmt.Sprintf("default (%d workers)", workers), schema.InitOptions{Workers: workers}},
		{"text COPY FREEZE", schema.InitOptions{Workers: workers, Copy: schema.CopyTextFreeze}},
		{"pgx CopyFrom, no FREEZE", schema.InitOptions{Workers: workers, Copy: schema.CopyPgx}},
		{"1 worker", schema.InitOptions{Workers: 1}},
		{"indexes.sql in one session", schema.InitOptions{Workers: workers, SerialIndexes: true}},
		{fmt.Sprintf("default again (%d workers)", workers), schema.InitOptions{Workers: workers}},
	}
	fmt.Printf("%d rows, %d months\n%-30s %9s %9s %9s %9s\n", rows, months, "variant", "load", "indexes", "analyze", "total")
	for _, v := range variants {
		admin.Exec(ctx, "DROP DATABASE IF EXISTS bench_prefill_lever")
		if _, err := admin.Exec(ctx, "CREATE DATABASE bench_prefill_lever"); err != nil {
			return err
		}
		cfg := admin.Config().Copy()
		cfg.Database = "bench_prefill_lever"
		admin.Exec(ctx, "CHECKPOINT")
		m, err := schema.Init(ctx, cfg, spec, v.opt)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
		fmt.Printf("%-30s %9s %9s %9s %9s  (%.0f rows/s total)\n", v.name, r(m.Load), r(m.Index), r(m.Analyze), r(m.Total), float64(rows)/m.Total.Seconds())
	}
	admin.Exec(ctx, "DROP DATABASE IF EXISTS bench_prefill_lever")
	return nil
}
