package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/schema"
)

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

// EnvPGBinDir names the directory holding the PostgreSQL server binaries (postgres,
// initdb, pg_ctl) for the embedded server, instead of looking in PATH, `pg_config
// --bindir` and /usr/lib/postgresql/*/bin.
const EnvPGBinDir = "PGCEILING_PG_BINDIR"

// embeddedOptions reads $PGCEILING_PG_BINDIR for the embedded server.
func embeddedOptions(env *Env) (localpg.Options, error) {
	var opt localpg.Options
	dir := env.Getenv(EnvPGBinDir)
	if dir == "" {
		return opt, nil
	}
	for _, b := range []string{"postgres", "initdb", "pg_ctl"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			return opt, fmt.Errorf("no PostgreSQL server binaries in %s=%s (need postgres, initdb and pg_ctl there): install them, e.g. `apt-get install -y postgresql`, fix %s, or pass --dsn to use an existing server",
				EnvPGBinDir, dir, EnvPGBinDir)
		}
	}
	opt.BinDir = dir
	return opt, nil
}

// openTarget resolves --dsn, then $PGCEILING_DSN (a malformed one is a usage error), else
// starts the embedded server. The caller must Close it (also on errors and interruption).
func openTarget(ctx context.Context, env *Env, c config.Conn, opt localpg.Options) (*target, error) {
	if err := checkDSN(c, env); err != nil {
		return nil, err
	}
	dsn := c.DSN
	if dsn == "" {
		dsn = env.Getenv(config.EnvDSN)
	}
	if dsn != "" {
		return &target{DSN: dsn}, nil
	}
	if opt.BinDir == "" {
		eo, err := embeddedOptions(env)
		if err != nil {
			return nil, err
		}
		opt.BinDir = eo.BinDir
	}
	env.say("pgceiling: no --dsn given: starting a throwaway PostgreSQL on this machine (removed when done)")
	s, err := localpg.Start(ctx, opt)
	if err != nil {
		return nil, fmt.Errorf("embedded server: %w", err)
	}
	// One line, never wrapped: the data directory is copied from it (and tests read it).
	fmt.Fprintf(env.info(), "pgceiling: throwaway PostgreSQL %s on %s:%d, data in %s\n", s.Version, s.Host, s.Port, s.Dir)
	env.atForcedExit(func() { _ = s.Stop() })
	return &target{DSN: s.DSN("postgres"), Embedded: s}, nil
}

// dial parses the target's DSN (a malformed --dsn is a usage error that never shows the
// password) and opens an admin session, turning the usual failures into one clear line.
func (t *target) dial(ctx context.Context) (*pgx.ConnConfig, *pgx.Conn, error) {
	cfg, err := parseDSN(t.DSN)
	if err != nil {
		return nil, nil, err
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, conn, nil
}

// ensureSchema initialises the schema with spec when it is missing, drawing init's
// progress, so run and search work on a fresh (e.g. embedded) server.
func ensureSchema(ctx context.Context, env *Env, cfg *pgx.ConnConfig, admin *pgx.Conn, spec schema.Spec) error {
	st, err := schema.Status(ctx, admin)
	if err != nil {
		return err
	}
	if st.Exists {
		return nil
	}
	env.say("pgceiling: no pgceiling schema: initialising it (%d rows, %d wallets)", spec.Rows, spec.Wallets)
	bar := newProgressBar(env.info(), env.TTY)
	_, err = schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: runtime.NumCPU(), Progress: bar.update})
	bar.end()
	if err != nil {
		return initError(err, cfg)
	}
	return nil
}

// adminPool is a small pool for pgceiling's own bookkeeping (row checks, restoring the data,
// CHECKPOINT), apart from the measured workers. Its connections are pinged whenever they
// are taken, so a server restart costs a reconnect instead of failing every later check.
func (t *target) adminPool(ctx context.Context) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(t.DSN)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = 2
	pc.MinConns = 0
	pc.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	pc.ConnConfig.RuntimeParams["application_name"] = "pgceiling-admin"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("admin connections: %w", err)
	}
	return pool, nil
}
