package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DDL makes the control tables, inside schema pgceiling only. The leader runs it on
// demand; pgceiling drop removes them with the schema.
const DDL = `CREATE TABLE IF NOT EXISTS pgceiling.fleet_run (
	name    text PRIMARY KEY,
	epoch   bigint NOT NULL,
	drivers int NOT NULL,
	beat    timestamptz NOT NULL,
	stopped text
);
CREATE TABLE IF NOT EXISTS pgceiling.fleet_member (
	name      text NOT NULL,
	driver    int NOT NULL,
	epoch     bigint NOT NULL,
	host      text NOT NULL,
	beat      timestamptz NOT NULL,
	offset_ms double precision NOT NULL,
	rtt_ms    double precision NOT NULL,
	refused   text,
	PRIMARY KEY (name, driver)
);
CREATE TABLE IF NOT EXISTS pgceiling.fleet_plan (
	name  text NOT NULL,
	epoch bigint NOT NULL,
	probe int NOT NULL,
	plan  jsonb NOT NULL,
	halt  text,
	PRIMARY KEY (name, epoch, probe)
);
CREATE TABLE IF NOT EXISTS pgceiling.fleet_report (
	name   text NOT NULL,
	epoch  bigint NOT NULL,
	probe  int NOT NULL,
	driver int NOT NULL,
	acked  timestamptz NOT NULL,
	report jsonb,
	PRIMARY KEY (name, epoch, probe, driver)
)`

// Defaults of Options.
const (
	DefaultName        = "pgceiling"
	DefaultMaxSkew     = 50 * time.Millisecond
	DefaultJoinTimeout = 5 * time.Minute
	DefaultTimeout     = 10 * time.Second
	DefaultLead        = 3 * time.Second
	pollEvery          = 100 * time.Millisecond
	beatEvery          = time.Second
)

// Options are the settings leader and followers share.
type Options struct {
	Name string // the fleet's name: one leader per name and server; default DefaultName
	// MaxSkew is the most a driver's clock may be off the server's; default DefaultMaxSkew.
	MaxSkew time.Duration
	// JoinTimeout bounds the wait for the followers (leader) or the leader (follower).
	JoinTimeout time.Duration
	// Timeout is how old a heartbeat may be before its process counts as gone.
	Timeout time.Duration
	// Lead is how far ahead of its start a plan is published (leader).
	Lead time.Duration
	// Now is the local clock (tests skew it); default time.Now.
	Now func() time.Time
	// Say reports progress (nil: silent).
	Say func(format string, args ...any)
	// Opened, when set, is called by Lead once the run is open on the server and before
	// it waits for the followers: where a leader starts its own followers (--spawn), so
	// that they find this run and no earlier one. An error ends Lead.
	Opened func() error
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.MaxSkew == 0 {
		o.MaxSkew = DefaultMaxSkew
	}
	if o.JoinTimeout == 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Lead == 0 {
		o.Lead = DefaultLead
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Say == nil {
		o.Say = func(string, ...any) {}
	}
	return o
}

// controlPool opens the small pool of control connections (named pgceiling-fleet, so
// the sampler does not count them as the driver's sessions).
func controlPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pc.MaxConns, pc.MinConns = 3, 0
	pc.ConnConfig.RuntimeParams["application_name"] = "pgceiling-fleet"
	p, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("fleet control connections: %w", err)
	}
	return p, nil
}

// missingTable reports whether err says a control table does not exist (yet).
func missingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")
}

// noRows reports whether err is pgx's "no rows".
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clock is a driver's clock against the server's.
type clock struct {
	Offset time.Duration // server minus local
	RTT    time.Duration // the round trip of the best sample: the offset is known to ±RTT/2
}

// measureClock estimates the local clock's offset from the server's clock_timestamp()
// with the best (shortest round trip) of n samples, as NTP does.
func measureClock(ctx context.Context, q *pgxpool.Pool, now func() time.Time, n int) (clock, error) {
	best := clock{RTT: -1}
	conn, err := q.Acquire(ctx)
	if err != nil {
		return best, fmt.Errorf("measure the clock: %w", err)
	}
	defer conn.Release()
	for range n {
		var server time.Time
		t0 := now()
		if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&server); err != nil {
			return best, fmt.Errorf("measure the clock: %w", err)
		}
		t1 := now()
		rtt := t1.Sub(t0)
		if best.RTT < 0 || rtt < best.RTT {
			best = clock{Offset: server.Sub(t0.Add(rtt / 2)), RTT: rtt}
		}
	}
	return best, nil
}

// skewError is the refusal of a clock off by more than max.
func (c clock) check(max time.Duration) error {
	off := c.Offset
	if off < 0 {
		off = -off
	}
	if off-c.RTT/2 > max {
		return fmt.Errorf("this machine's clock is %v off the server's (±%v), more than --max-skew %v: "+
			"synchronise it (NTP, chrony) or raise --max-skew", c.Offset.Round(time.Microsecond),
			(c.RTT / 2).Round(time.Microsecond), max)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
