package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/schema"
)

func init() {
	register(command{name: "init", summary: "create and prefill the pgceiling schema (partitioned, indexed, Zipf)", run: runInit})
	register(command{name: "drop", summary: "remove the pgceiling schema (only one pgceiling made)", run: runDrop})
}

const initSynopsis = `Create schema pgceiling and fill it: wallets, transactions (12 columns, partitioned by
month over --months of history plus 3 months ahead and a default partition, 5 B-tree
indexes), audit_log (2 indexes), events (the insert workload's table) and the marker
table meta. Rows are loaded by parallel COPY ... FREEZE, then the indexes are built in
parallel sessions, then ANALYZE.

Re-runs are safe: the same spec on a ready schema does nothing; another spec needs
--force; an interrupted init is rebuilt; a schema called pgceiling that pgceiling did not
make is never touched. Nothing outside schema pgceiling is ever changed.

Without --dsn (or $PGCEILING_DSN) it fills a throwaway server, prints what it made and
removes the server: a way to see the sizes and the prefill speed on this machine.

--distribute citus, against a Citus coordinator whose database has the citus extension,
distributes wallets by account_id and transactions and audit_log by wallet_id, colocated,
and events by id (docs/sharding.md); pgceiling never creates the extension.`

func runInit(ctx context.Context, env *Env, args []string) error {
	var c config.Init
	fs := newFlagSet(env, "init", initSynopsis)
	bindConn(fs, &c.Conn)
	c.Bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return config.Usagef("init: %v", err)
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	cfg, conn, err := dialAs(ctx, t.DSN, "pgceiling-init")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))

	spec := schema.Spec{Wallets: c.Wallets, Rows: c.Rows, Months: c.Months, Zipf: c.Zipf, Seed: c.Seed}
	if c.Distribute == "citus" {
		spec.Distribute = schema.DistributeCitus
	}
	bar := newProgressBar(env.Stderr, env.TTY)
	made, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: c.Workers, Force: c.Force, Progress: bar.update})
	bar.end()
	if err != nil {
		return initError(err, cfg)
	}
	if made.AlreadyThere {
		fmt.Fprintf(env.Stdout, "schema pgceiling in %s is already initialised with this spec (%s): nothing to do (--force rebuilds it)\n", where(cfg), spec)
		return nil
	}
	verb := "created"
	if made.Rebuilt {
		verb = "rebuilt"
	}
	fmt.Fprintf(env.Stdout, "schema pgceiling %s in %s: %s\n", verb, where(cfg), spec)
	writeMade(env.Stdout, made)
	if spec.Distribute == schema.DistributeCitus {
		fmt.Fprintln(env.Stdout, "  distributed with Citus by wallet (sizes below are the coordinator's; `pgceiling inspect` shows the shards)")
	}
	sizes, sb, err := schema.Sizes(ctx, conn)
	if err != nil {
		return err
	}
	if err := report.WriteTableSizes(env.Stdout, sizes, sb); err != nil {
		return err
	}
	if t.Embedded != nil {
		fmt.Fprintln(env.Stdout, "(the throwaway server is removed now: give --dsn to keep the schema)")
	}
	return nil
}

// writeMade prints what Init made and how long each phase took.
func writeMade(w io.Writer, m *schema.Made) {
	fmt.Fprintf(w, "  %s rows in transactions over %d partitions (%d months of history + %d ahead + default), %s in audit_log, %s wallets\n",
		count(m.Rows), m.Partitions, m.Spec.Months, schema.MonthsAhead, count(m.AuditRows), count(int64(m.Wallets)))
	rate := func(d time.Duration) string {
		if d <= 0 {
			return "-"
		}
		return count(int64(float64(m.Rows)/d.Seconds())) + " rows/s"
	}
	fmt.Fprintf(w, "  load %s (%s), indexes %s (%s), analyze %s, total %s (%s)\n",
		m.Load.Round(time.Millisecond), rate(m.Load), m.Index.Round(time.Millisecond), rate(m.Index),
		m.Analyze.Round(time.Millisecond), m.Total.Round(time.Millisecond), rate(m.Total))
}

// count writes n with thousands separators.
func count(n int64) string { return thousands.Format(float64(n), 0) }
