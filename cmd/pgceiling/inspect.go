package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/report"
)

func init() {
	register(command{name: "inspect", summary: "show the server's settings, pgceiling's tables and the machines, with warnings", run: runInspect})
}

const inspectSynopsis = `Print what every pgceiling result discloses: the server's version and durability
settings, pgceiling's tables (rows, heap and index sizes against shared_buffers, index
counts), the client's and (when local) the server's cores and memory, the distribution
(on a Citus coordinator: nodes, and each table's distribution column, colocation group
and shards; otherwise "not distributed"), and the warnings that make run and search
refuse the server unless --allow-unsafe-server is given.
Without --dsn it inspects a throwaway server, which has no pgceiling schema yet.`

func runInspect(ctx context.Context, env *Env, args []string) error {
	var c config.Inspect
	fs := newFlagSet(env, "inspect", inspectSynopsis)
	bindConn(fs, &c.Conn)
	c.Bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	cfg, err := parseDSN(t.DSN)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "pgceiling-inspect"
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return fmt.Errorf("inspect: connect to %s: %w", config.RedactDSN(t.DSN), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	local := observe.LocalInfo{}
	if t.Embedded != nil {
		local = observe.LocalInfo{PostmasterPID: t.Embedded.PID(), Embedded: true}
	}
	d, err := observe.Disclose(cctx, conn, local)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	d.Warnings = observe.Unsafe(d, true)
	if c.JSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return report.WriteDisclosureOpts(env.Stdout, d, observe.SettingNames, report.TextOptions{Width: env.width()})
}
