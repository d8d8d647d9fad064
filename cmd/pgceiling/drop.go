package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/schema"
)

const dropSynopsis = `Remove schema pgceiling and everything in it, only if pgceiling made it (the marker in
pgceiling.meta is checked in the same transaction as the DROP). A schema called pgceiling
without the marker is left alone. Nothing outside schema pgceiling is touched.`

func runDrop(ctx context.Context, env *Env, args []string) error {
	var c config.Conn
	fs := newFlagSet(env, "drop", dropSynopsis)
	bindConn(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if c.DSN == "" {
		c.DSN = env.Getenv(config.EnvDSN)
	}
	if c.DSN == "" {
		return config.Usagef("drop: give --dsn (or $%s): a throwaway server has no schema to drop", config.EnvDSN)
	}
	cfg, conn, err := dialAs(ctx, c.DSN, "pgceiling-drop")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	switch err := schema.Drop(ctx, conn); {
	case errors.Is(err, schema.ErrMissing):
		fmt.Fprintf(env.Stdout, "no schema pgceiling in %s: nothing to drop\n", where(cfg))
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "schema pgceiling dropped from %s\n", where(cfg))
	return nil
}
