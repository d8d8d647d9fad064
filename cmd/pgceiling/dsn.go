package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/config"
)

// Every command's way to the server: --dsn, its checks, and the errors a newcomer meets
// on the way, each turned into one line that says what to do and never shows a password.

// bindConn adds --dsn to a command's flags.
func bindConn(fs *pflag.FlagSet, c *config.Conn) {
	fs.StringVar(&c.DSN, "dsn", "", "PostgreSQL connection string (URL or key=value); default $"+config.EnvDSN+"; neither: start a throwaway local server")
}

// checkDSN rejects a malformed --dsn (or $PGCEILING_DSN) as a usage error before anything
// runs or is written.
func checkDSN(c config.Conn, env *Env) error {
	dsn := c.DSN
	if dsn == "" {
		dsn = env.Getenv(config.EnvDSN)
	}
	if dsn == "" {
		return nil
	}
	_, err := parseDSN(dsn)
	return err
}

// parseDSN parses --dsn; a malformed one is a usage error (its password never shown).
func parseDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgconn's message repeats the DSN (redacted); keep only the reason.
		msg := err.Error()
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+3:]
		}
		return nil, config.Usagef("malformed --dsn %q: %s (want postgres://user:password@host:port/database or host=... dbname=...)", config.RedactDSN(dsn), msg)
	}
	return cfg, nil
}

// redactArgs returns the command line with DSN passwords redacted.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--dsn="):
			out[i] = "--dsn=" + config.RedactDSN(strings.TrimPrefix(a, "--dsn="))
		case i > 0 && args[i-1] == "--dsn":
			out[i] = config.RedactDSN(a)
		default:
			out[i] = a
		}
	}
	return out
}

// dialAs parses dsn and opens a session named app (its application_name), waiting at
// most 15 s for the server unless the DSN says otherwise.
func dialAs(ctx context.Context, dsn, app string) (*pgx.ConnConfig, *pgx.Conn, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg.RuntimeParams["application_name"] = app
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, conn, nil
}

// where names the database a session is on, for messages.
func where(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s:%d", cfg.Database, cfg.Host, cfg.Port)
}

// connect opens a session and turns the usual failures into one clear line.
func connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(err, cfg)
	}
	return conn, nil
}

// connectError explains why a connection failed, in the terms a newcomer needs.
func connectError(err error, cfg *pgx.ConnConfig) error {
	addr := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	if strings.HasPrefix(cfg.Host, "/") {
		addr = fmt.Sprintf("socket %s (port %d)", cfg.Host, cfg.Port)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgerrcode.InvalidPassword:
			return fmt.Errorf("wrong password for user %q on %s: check the password in --dsn or $PGPASSWORD", cfg.User, addr)
		case pgerrcode.InvalidAuthorizationSpecification:
			return fmt.Errorf("the server at %s refuses user %q for database %q: %s (check pg_hba.conf or the user name)", addr, cfg.User, cfg.Database, pgErr.Message)
		case pgerrcode.InvalidCatalogName:
			return fmt.Errorf("database %q does not exist on %s: create it (`createdb %s`) or name another in --dsn", cfg.Database, addr, cfg.Database)
		case pgerrcode.TooManyConnections:
			return fmt.Errorf("the server at %s has no free connection slots (too many connections)", addr)
		}
		return fmt.Errorf("connect to %s as %q: %s (SQLSTATE %s)", addr, cfg.User, pgErr.Message, pgErr.Code)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach PostgreSQL at %s: connection refused (is the server running and listening there?)", addr)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("cannot reach PostgreSQL at %s: no answer within %s (host down, wrong address or a firewall?)", addr, cfg.ConnectTimeout)
	case errors.Is(err, context.Canceled):
		return err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot reach PostgreSQL at %s: unknown host %q", addr, dnsErr.Name)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("cannot reach PostgreSQL at %s: %v", addr, opErr.Err)
	}
	return fmt.Errorf("connect to %s: %v", addr, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// initError explains Init's failures; the schema package's own errors are already clear.
func initError(err error, cfg *pgx.ConnConfig) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		return fmt.Errorf("user %q may not create schema pgceiling in database %q (%s): run `GRANT CREATE ON DATABASE %s TO %s` as its owner, or connect as a user who may",
			cfg.User, cfg.Database, pgErr.Message, cfg.Database, cfg.User)
	}
	if errors.As(err, &pgErr) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("init: %w", err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return connectError(err, cfg)
	}
	return err
}
