package driver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/result"
)

// Session holds the settings every driver connection runs with, sent as runtime
// parameters at connect so no statement is spent on them. Zero durations mean the server's
// default; an empty AppName means "pgceiling".
type Session struct {
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	AppName          string
}

// DefaultSession is DESIGN.md's session: statement_timeout 5 s, lock_timeout 1 s,
// idle_in_transaction_session_timeout 10 s, application_name pgceiling.
func DefaultSession() Session {
	return Session{StatementTimeout: result.DefaultStatementTimeout, LockTimeout: result.DefaultLockTimeout,
		IdleInTxTimeout: result.DefaultIdleInTxTimeout, AppName: result.DefaultAppName}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// NewPool opens a pool of at most conns connections to dsn with the session settings and
// the query exec mode (prepared statements, simple protocol, ...). Before returning it
// checks that the server has room for conns more connections, so an oversized --conns is
// one clear error rather than a probe full of too_many_connections failures.
func NewPool(ctx context.Context, dsn string, s Session, conns int, mode pgx.QueryExecMode) (*pgxpool.Pool, error) {
	if conns < 1 {
		return nil, fmt.Errorf("pool: need at least one connection, got %d", conns)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("connection string: %w", err)
	}
	rp := cfg.ConnConfig.RuntimeParams
	if s.StatementTimeout > 0 {
		rp["statement_timeout"] = ms(s.StatementTimeout)
	}
	if s.LockTimeout > 0 {
		rp["lock_timeout"] = ms(s.LockTimeout)
	}
	if s.IdleInTxTimeout > 0 {
		rp["idle_in_transaction_session_timeout"] = ms(s.IdleInTxTimeout)
	}
	rp["application_name"] = s.AppName
	if s.AppName == "" {
		rp["application_name"] = "pgceiling"
	}
	cfg.ConnConfig.DefaultQueryExecMode = mode
	cfg.ConnConfig.DialFunc = rawDial(cfg.ConnConfig.DialFunc) // see rawConn
	cfg.MaxConns = int32(conns)
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := checkRoom(ctx, pool, conns); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Room is the server's connection slots as one connection sees them.
type Room struct {
	Max      int // max_connections
	Reserved int // superuser_reserved_connections + reserved_connections
	InUse    int // client backends connected, the asking connection excepted
}

// Free is how many more connections the asker may open besides itself (the asking
// connection's own slot counts as free: a pool reuses it).
func (r Room) Free() int { return max(r.Max-r.Reserved-r.InUse, 0) }

// Rower is what ConnRoom queries through: a *pgx.Conn or a *pgxpool.Pool.
type Rower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ConnRoom reads the server's connection slots through q.
func ConnRoom(ctx context.Context, q Rower) (Room, error) {
	var r Room
	err := q.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int
		  + coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0),
		(SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') - 1`).
		Scan(&r.Max, &r.Reserved, &r.InUse)
	return r, err
}

// checkRoom compares conns with the connection slots the server has left:
// max_connections - superuser_reserved_connections - reserved_connections - the client
// backends already connected (the checking connection itself excepted, since the pool
// reuses it).
func checkRoom(ctx context.Context, pool *pgxpool.Pool, conns int) error {
	r, err := ConnRoom(ctx, pool)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if r.Free() < conns {
		return fmt.Errorf("the server has room for %d more connections (max_connections %d, %d reserved, %d in use) but %d were asked for: lower --conns or raise max_connections",
			r.Free(), r.Max, r.Reserved, r.InUse, conns)
	}
	return nil
}
