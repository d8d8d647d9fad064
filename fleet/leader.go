package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// Leader is driver 0 of a fleet: it plans every probe, runs its own share, and merges.
type Leader struct {
	pool    *pgxpool.Pool
	opt     Options
	drivers int
	epoch   int64
	clock   clock
	host    string
	spec    Spec
	probe   int
	members map[int]member
	stop    context.CancelFunc
	beats   sync.WaitGroup
}

// member is a follower that joined.
type member struct {
	host        string
	offset, rtt time.Duration
}

// Lead starts a new run of the fleet opt.Name on the server at dsn (schema pgceiling must
// exist) and waits until drivers-1 followers have joined it, within opt.JoinTimeout. The
// caller must Close it.
func Lead(ctx context.Context, dsn string, drivers int, opt Options) (*Leader, error) {
	opt = opt.withDefaults()
	if drivers < 2 {
		return nil, fmt.Errorf("fleet: a fleet has at least 2 drivers, got %d", drivers)
	}
	pool, err := controlPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	l := &Leader{pool: pool, opt: opt, drivers: drivers, epoch: rand.Int64N(1 << 62), members: map[int]member{}}
	l.host, _ = os.Hostname()
	if err := l.start(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if opt.Opened != nil {
		if err := opt.Opened(); err != nil {
			l.Close(err.Error())
			return nil, err
		}
	}
	if err := l.await(ctx); err != nil {
		l.Close(err.Error())
		return nil, err
	}
	return l, nil
}

// start makes the control tables, measures the leader's own clock and opens the epoch.
func (l *Leader) start(ctx context.Context) error {
	if _, err := l.pool.Exec(ctx, DDL); err != nil {
		return fmt.Errorf("fleet: make the control tables in schema pgceiling: %w", err)
	}
	c, err := measureClock(ctx, l.pool, l.opt.Now, 5)
	if err != nil {
		return err
	}
	if err := c.check(l.opt.MaxSkew); err != nil {
		return err
	}
	l.clock = c
	_, err = l.pool.Exec(ctx, `INSERT INTO pgceiling.fleet_run (name, epoch, drivers, beat) VALUES ($1, $2, $3, clock_timestamp())
		ON CONFLICT (name) DO UPDATE SET epoch = EXCLUDED.epoch, drivers = EXCLUDED.drivers, beat = EXCLUDED.beat, stopped = NULL`,
		l.opt.Name, l.epoch, l.drivers)
	if err != nil {
		return fmt.Errorf("fleet: open the run: %w", err)
	}
	for _, t := range []string{"fleet_member", "fleet_plan", "fleet_report"} {
		if _, err := l.pool.Exec(ctx, "DELETE FROM pgceiling."+t+" WHERE name = $1 AND epoch <> $2", l.opt.Name, l.epoch); err != nil {
			return fmt.Errorf("fleet: forget the earlier run: %w", err)
		}
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.stop = cancel
	l.beats.Add(1)
	go func() {
		defer l.beats.Done()
		for sleep(bctx, beatEvery) == nil {
			_, _ = l.pool.Exec(bctx, "UPDATE pgceiling.fleet_run SET beat = clock_timestamp() WHERE name = $1 AND epoch = $2",
				l.opt.Name, l.epoch)
		}
	}()
	return nil
}

// await waits for the followers to join.
func (l *Leader) await(ctx context.Context) error {
	deadline := time.Now().Add(l.opt.JoinTimeout)
	said := -1
	refused := map[int]string{}
	for {
		rows, err := l.pool.Query(ctx, `SELECT driver, host, offset_ms, rtt_ms, coalesce(refused, '') FROM pgceiling.fleet_member
			WHERE name = $1 AND epoch = $2 AND beat > clock_timestamp() - $3::interval`, l.opt.Name, l.epoch, l.opt.Timeout.String())
		if err != nil {
			return fmt.Errorf("fleet: read the followers: %w", err)
		}
		for rows.Next() {
			var id int
			var host, why string
			var off, rtt float64
			if err := rows.Scan(&id, &host, &off, &rtt, &why); err != nil {
				return err
			}
			if why != "" {
				if refused[id] != why {
					l.opt.Say("fleet %s: driver %d on %s refused to join: %s", l.opt.Name, id, host, why)
				}
				refused[id] = why
				continue
			}
			l.members[id] = member{host: host, offset: time.Duration(off * float64(time.Millisecond)),
				rtt: time.Duration(rtt * float64(time.Millisecond))}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("fleet: read the followers: %w", err)
		}
		if len(l.members) >= l.drivers-1 {
			l.opt.Say("fleet %s: %d drivers ready", l.opt.Name, l.drivers)
			return nil
		}
		if len(l.members) != said {
			said = len(l.members)
			if l.opt.Opened != nil { // --spawn: the followers are this leader's own children
				l.opt.Say("fleet %s: waiting for %d more follower(s) started here", l.opt.Name, l.drivers-1-said)
			} else {
				l.opt.Say("fleet %s: waiting for %d more follower(s): pgceiling follow --fleet %s --dsn ...",
					l.opt.Name, l.drivers-1-said, l.opt.Name)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fleet %s: %d of %d followers joined within %v (start them with pgceiling follow --fleet %s)",
				l.opt.Name, len(l.members), l.drivers-1, l.opt.JoinTimeout, l.opt.Name)
		}
		if err := sleep(ctx, pollEvery); err != nil {
			return err
		}
	}
}

// SetSpec sets the workload and sessions the followers run from the next probe on.
func (l *Leader) SetSpec(s Spec) { l.spec = s }

// SetWorkload sets the workload the followers run from the next probe on.
func (l *Leader) SetWorkload(name string, p workload.Params) {
	l.spec.Workload, l.spec.Params = name, p
}

// Drivers is the number of drivers, the leader included.
func (l *Leader) Drivers() int { return l.drivers }

// Run runs one probe of the whole fleet at cfg.Rate (the total) and returns the merged
// probe; it has driver.Run's signature and contract. w is the leader's own workload (the
// followers make theirs from the spec); cfg.CountRows, when set, counts the rows for the
// fleet's row check.
func (l *Leader) Run(ctx context.Context, pool *pgxpool.Pool, w workload.Workload, cfg driver.Config) (*result.Probe, error) {
	l.probe++
	count := cfg.CountRows
	if count == nil {
		count = func(ctx context.Context, table string) (int64, error) {
			var n int64
			err := l.pool.QueryRow(ctx, "SELECT count(*) FROM pgceiling."+table).Scan(&n)
			return n, err
		}
	}
	before, err := count(ctx, w.Table())
	if err != nil {
		return nil, fmt.Errorf("fleet: count the rows before the probe: %w", err)
	}
	var now time.Time
	if err := l.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return nil, fmt.Errorf("fleet: read the server's clock: %w", err)
	}
	plan := newPlan(l.probe, l.drivers, cfg, l.spec, now.Add(l.opt.Lead))
	body, _ := json.Marshal(plan)
	if _, err := l.pool.Exec(ctx, "INSERT INTO pgceiling.fleet_plan (name, epoch, probe, plan) VALUES ($1, $2, $3, $4)",
		l.opt.Name, l.epoch, plan.Probe, body); err != nil {
		return nil, fmt.Errorf("fleet: publish the plan: %w", err)
	}
	mine := plan.config(0, l.clock.Offset)
	mine.Observer, mine.OnSecond, mine.OnSummary, mine.CountRows = cfg.Observer, cfg.OnSecond, cfg.OnSummary, cfg.CountRows
	var h hists
	mine.OnHistograms = h.keep
	if stopIf := cfg.StopIf; stopIf != nil {
		mine.StopIf = func(s []result.Second) string {
			why := stopIf(s)
			if why != "" {
				go l.halt(plan.Probe, why)
			}
			return why
		}
	}
	own, err := driver.Run(ctx, pool, w, mine)
	if err != nil {
		l.halt(plan.Probe, "the leader could not run its share: "+err.Error())
		return nil, err
	}
	if own.Interrupted {
		l.halt(plan.Probe, "the leader was interrupted")
	}
	rep := Report{Driver: 0, Host: l.host, Probe: own, OffsetMs: ms(l.clock.Offset), RTTMs: ms(l.clock.RTT),
		LateMs: ms(own.StartedAt.Sub(mine.StartAt))}
	parts, missing := l.collect(ctx, plan, own.Interrupted)
	parts = append([]part{{rep: rep, h: h}}, parts...)
	m := merge(plan, parts, missing)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	l.checkRows(cctx, m, before, count)
	return m, nil
}

// halt asks every driver to stop probe n early (the followers' StopIf reads it).
func (l *Leader) halt(n int, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), l.opt.Timeout)
	defer cancel()
	_, _ = l.pool.Exec(ctx, "UPDATE pgceiling.fleet_plan SET halt = $4 WHERE name = $1 AND epoch = $2 AND probe = $3 AND halt IS NULL",
		l.opt.Name, l.epoch, n, why)
}

// collect waits for the followers' uploads of plan: until all came, or each missing one
// is gone (its heartbeat older than the timeout) or late (the probe's end plus the
// timeout passed). When the leader was interrupted it waits at most a drain.
func (l *Leader) collect(ctx context.Context, plan Plan, interrupted bool) ([]part, []int) {
	ctx = context.WithoutCancel(ctx)
	got := map[int]part{}
	deadline := plan.end().Add(-l.clock.Offset).Add(l.opt.Timeout)
	if interrupted {
		deadline = time.Now().Add(plan.Drain + time.Second)
	}
	gone := map[int]bool{}
	for {
		l.readReports(ctx, plan, got)
		l.readGone(ctx, gone)
		var missing []int
		for id := 1; id < l.drivers; id++ {
			if _, ok := got[id]; !ok {
				missing = append(missing, id)
			}
		}
		lost := true
		for _, id := range missing {
			lost = lost && gone[id]
		}
		if len(missing) == 0 || lost || time.Now().After(deadline) {
			parts := make([]part, 0, len(got))
			for id := 1; id < l.drivers; id++ {
				if p, ok := got[id]; ok {
					parts = append(parts, p)
				}
			}
			return parts, missing
		}
		_ = sleep(ctx, pollEvery)
	}
}

// readReports adds the uploads of plan not yet in got.
func (l *Leader) readReports(ctx context.Context, plan Plan, got map[int]part) {
	ctx, cancel := context.WithTimeout(ctx, l.opt.Timeout)
	defer cancel()
	rows, err := l.pool.Query(ctx, `SELECT driver, report FROM pgceiling.fleet_report
		WHERE name = $1 AND epoch = $2 AND probe = $3 AND report IS NOT NULL`, l.opt.Name, l.epoch, plan.Probe)
	if err != nil {
		return // the next poll tries again; the deadline bounds the wait
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var body []byte
		if rows.Scan(&id, &body) != nil {
			continue
		}
		if _, ok := got[id]; ok {
			continue
		}
		var r Report
		if err := json.Unmarshal(body, &r); err != nil {
			got[id] = part{rep: Report{Driver: id, Error: fmt.Sprintf("unreadable upload: %v", err)}}
			continue
		}
		r.Driver = id
		h, err := r.decode()
		if err != nil {
			r.Probe, r.Error = nil, err.Error()
		}
		got[id] = part{rep: r, h: h}
	}
}

// readGone marks the followers whose heartbeat is older than the timeout.
func (l *Leader) readGone(ctx context.Context, gone map[int]bool) {
	ctx, cancel := context.WithTimeout(ctx, l.opt.Timeout)
	defer cancel()
	rows, err := l.pool.Query(ctx, `SELECT driver FROM pgceiling.fleet_member
		WHERE name = $1 AND epoch = $2 AND beat < clock_timestamp() - $3::interval`, l.opt.Name, l.epoch, l.opt.Timeout.String())
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		if rows.Scan(&id) == nil {
			gone[id] = true
		}
	}
}

// checkRows is the fleet's row check: the rows the table gained against every driver's
// commits (the drivers' own checks cannot hold while the others insert too).
func (l *Leader) checkRows(ctx context.Context, m *result.Probe, before int64, count func(context.Context, string) (int64, error)) {
	c := &m.Checks
	c.RowsBefore, m.RowsAtStart = before, before
	after, err := count(ctx, c.Table)
	if err != nil {
		c.RowsOK = false
		c.Problems = append(c.Problems, fmt.Sprintf("cannot count %s rows after the probe: %v", c.Table, err))
		return
	}
	c.RowsAfter, c.RowDelta = after, after-before
	c.RowsOK = c.RowDelta >= c.CommittedTotal && c.RowDelta <= c.CommittedTotal+c.Uncertain
	if !c.RowsOK && len(m.Fleet.Missing) == 0 {
		c.Problems = append(c.Problems, fmt.Sprintf("ROW MISMATCH: %s gained %d rows but the %d drivers saw %d transactions commit",
			c.Table, c.RowDelta, l.drivers, c.CommittedTotal))
	}
}

// Close ends the run (the followers exit, told why) and releases the control
// connections.
func (l *Leader) Close(why string) {
	if why == "" {
		why = "done"
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opt.Timeout)
	defer cancel()
	_, _ = l.pool.Exec(ctx, "UPDATE pgceiling.fleet_run SET stopped = $3 WHERE name = $1 AND epoch = $2", l.opt.Name, l.epoch, why)
	if l.stop != nil {
		l.stop()
		l.beats.Wait()
	}
	l.pool.Close()
}
