package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
)

// bindConn adds --dsn to a command's flags.
func bindConn(fs *pflag.FlagSet, c *config.Conn) {
	fs.StringVar(&c.DSN, "dsn", "", "PostgreSQL connection string (URL or key=value); default $"+config.EnvDSN+"; neither: start a throwaway local server")
}

// target is the server a command works on: the user's, or an embedded throwaway one.
type target struct {
	DSN      string
	Embedded *localpg.Server
}

// Close stops and removes an embedded server; it does nothing for the user's server.
func (t *target) Close() {
	if t != nil && t.Embedded != nil {
		_ = t.Embedded.Stop()
	}
}

// openTarget resolves --dsn, then $PGCEILING_DSN, else starts the embedded server. The
// caller must Close it (also on errors and interruption).
func openTarget(ctx context.Context, env *Env, c config.Conn, opt localpg.Options) (*target, error) {
	dsn := c.DSN
	if dsn == "" {
		dsn = env.Getenv(config.EnvDSN)
	}
	if dsn != "" {
		return &target{DSN: dsn}, nil
	}
	fmt.Fprintln(env.Stderr, "pgceiling: no --dsn given: starting a throwaway PostgreSQL on this machine (removed when done)")
	s, err := localpg.Start(ctx, opt)
	if err != nil {
		return nil, fmt.Errorf("embedded server: %w", err)
	}
	fmt.Fprintf(env.Stderr, "pgceiling: throwaway PostgreSQL %s on %s:%d, data in %s\n", s.Version, s.Host, s.Port, s.Dir)
	env.atForcedExit(func() { _ = s.Stop() })
	return &target{DSN: s.DSN("postgres"), Embedded: s}, nil
}
