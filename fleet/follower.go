package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// ErrLeaderGone is returned by Follow when the leader's heartbeat stopped.
var ErrLeaderGone = errors.New("the leader is gone")

// follower is one follower's state while it follows.
type follower struct {
	ctl     *pgxpool.Pool
	dsn     string
	opt     Options
	id      int
	epoch   int64
	drivers int
	clock   clock
	host    string

	mu      sync.Mutex
	gone    error  // the leader stopped beating or a new leader took over (nil: alive)
	stopped string // the leader ended the run and said why
	halt    map[int]string

	pool     *pgxpool.Pool // the driver's connections, kept while the plans' settings stay
	poolSpec [2]any
}

// Follow joins the fleet opt.Name on the server at dsn as driver id (0: the first free id)
// and runs the leader's probes until the leader ends the run (nil), the leader is gone
// (an error wrapping ErrLeaderGone, within opt.Timeout of its last heartbeat, in the
// middle of a probe too), no leader shows up within opt.JoinTimeout, or ctx ends.
func Follow(ctx context.Context, dsn string, id int, opt Options) error {
	opt = opt.withDefaults()
	ctl, err := controlPool(ctx, dsn)
	if err != nil {
		return err
	}
	defer ctl.Close()
	f := &follower{ctl: ctl, dsn: dsn, opt: opt, id: id, halt: map[int]string{}}
	f.host, _ = os.Hostname()
	defer func() {
		if f.pool != nil {
			f.pool.Close()
		}
	}()
	if err := f.findLeader(ctx); err != nil {
		return err
	}
	if f.clock, err = measureClock(ctx, ctl, opt.Now, 5); err != nil {
		return err
	}
	skewErr := f.clock.check(opt.MaxSkew)
	if err := f.join(ctx, skewErr); err != nil {
		return err
	}
	if skewErr != nil {
		return skewErr
	}
	opt.Say("fleet %s: joined as driver %d of %d (clock %+.1f ms ±%.1f ms against the server)",
		opt.Name, f.id, f.drivers, ms(f.clock.Offset), ms(f.clock.RTT/2))
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	pctx, cancelProbes := context.WithCancelCause(ctx)
	defer cancelProbes(nil)
	go f.watch(wctx, func(err error) { cancelProbes(err) })
	return f.follow(ctx, pctx)
}

// findLeader waits for a live run of the fleet.
func (f *follower) findLeader(ctx context.Context) error {
	deadline := time.Now().Add(f.opt.JoinTimeout)
	for {
		var stopped *string
		var age time.Duration
		err := f.ctl.QueryRow(ctx, `SELECT epoch, drivers, stopped, clock_timestamp() - beat FROM pgceiling.fleet_run WHERE name = $1`,
			f.opt.Name).Scan(&f.epoch, &f.drivers, &stopped, &age)
		switch {
		case err == nil && stopped == nil && age < f.opt.Timeout:
			return nil
		case err != nil && !noRows(err) && !missingTable(err):
			return fmt.Errorf("fleet: look for the leader: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fleet %s: no leader on this server within %v (start pgceiling search or run --drivers N --fleet %s)",
				f.opt.Name, f.opt.JoinTimeout, f.opt.Name)
		}
		if err := sleep(ctx, pollEvery); err != nil {
			return err
		}
	}
}

// join claims the driver id (or the first free one) in the leader's epoch; a clock off
// by too much is recorded as a refusal, for the leader to show.
func (f *follower) join(ctx context.Context, refused error) error {
	if f.id < 0 || f.id >= f.drivers || (f.id == 0 && f.drivers < 2) {
		return fmt.Errorf("fleet %s: --driver-id %d is not a follower of %d drivers (1 to %d; 0 takes the first free one)",
			f.opt.Name, f.id, f.drivers, f.drivers-1)
	}
	var why *string
	if refused != nil {
		s := refused.Error()
		why = &s
	}
	ids := []int{f.id}
	if f.id == 0 {
		ids = ids[:0]
		for i := 1; i < f.drivers; i++ {
			ids = append(ids, i)
		}
	}
	for _, id := range ids {
		tag, err := f.ctl.Exec(ctx, `INSERT INTO pgceiling.fleet_member AS m (name, driver, epoch, host, beat, offset_ms, rtt_ms, refused)
			VALUES ($1, $2, $3, $4, clock_timestamp(), $5, $6, $7)
			ON CONFLICT (name, driver) DO UPDATE SET epoch = EXCLUDED.epoch, host = EXCLUDED.host, beat = EXCLUDED.beat,
				offset_ms = EXCLUDED.offset_ms, rtt_ms = EXCLUDED.rtt_ms, refused = EXCLUDED.refused
			WHERE m.epoch <> EXCLUDED.epoch OR m.refused IS NOT NULL OR m.beat < clock_timestamp() - $8::interval`,
			f.opt.Name, id, f.epoch, f.host, ms(f.clock.Offset), ms(f.clock.RTT), why, f.opt.Timeout.String())
		if err != nil {
			return fmt.Errorf("fleet: join: %w", err)
		}
		if tag.RowsAffected() == 1 {
			f.id = id
			return nil
		}
	}
	if f.id != 0 {
		return fmt.Errorf("fleet %s: driver %d is taken by a live follower", f.opt.Name, f.id)
	}
	return fmt.Errorf("fleet %s: every follower's place (1 to %d) is taken", f.opt.Name, f.drivers-1)
}

// watch beats the follower's heartbeat every second and reads the leader's: when it is
// older than the timeout, or the run was ended or taken over, it records why and cancels
// the probes.
func (f *follower) watch(ctx context.Context, cancel func(error)) {
	seen := time.Now() // when the leader's row was last read
	for sleep(ctx, beatEvery) == nil {
		// Every statement has a deadline: a server that stops answering is a leader gone
		// after the timeout, never a wait without end.
		qctx, done := context.WithTimeout(ctx, f.opt.Timeout)
		_, _ = f.ctl.Exec(qctx, "UPDATE pgceiling.fleet_member SET beat = clock_timestamp() WHERE name = $1 AND driver = $2 AND epoch = $3",
			f.opt.Name, f.id, f.epoch)
		var epoch int64
		var stopped *string
		var age time.Duration
		err := f.ctl.QueryRow(qctx, `SELECT epoch, stopped, clock_timestamp() - beat FROM pgceiling.fleet_run WHERE name = $1`,
			f.opt.Name).Scan(&epoch, &stopped, &age)
		done()
		if err == nil {
			seen = time.Now()
		}
		var gone error
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && (noRows(err) || missingTable(err)):
			gone = fmt.Errorf("fleet %s: the run was removed from the server: %w", f.opt.Name, ErrLeaderGone)
		case err != nil && time.Since(seen) > f.opt.Timeout:
			gone = fmt.Errorf("fleet %s: the leader's heartbeat could not be read for %v (more than %v: %v): stopping: %w",
				f.opt.Name, time.Since(seen).Round(100*time.Millisecond), f.opt.Timeout, err, ErrLeaderGone)
		case err != nil:
			continue // the server may be restarting: retried until the timeout
		case epoch != f.epoch:
			gone = fmt.Errorf("fleet %s: a new leader started another run: %w", f.opt.Name, ErrLeaderGone)
		case stopped != nil:
			f.mu.Lock()
			f.stopped = *stopped
			f.mu.Unlock()
			continue // the main loop exits between probes
		case age > f.opt.Timeout:
			gone = fmt.Errorf("fleet %s: the leader's last heartbeat was %v ago (more than %v): stopping: %w",
				f.opt.Name, age.Round(100*time.Millisecond), f.opt.Timeout, ErrLeaderGone)
		}
		if gone != nil {
			f.mu.Lock()
			f.gone = gone
			f.mu.Unlock()
			cancel(gone)
			return
		}
		f.readHalts(ctx)
	}
}

// readHalts records the halts the leader published for this run's probes.
func (f *follower) readHalts(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.opt.Timeout)
	defer cancel()
	rows, err := f.ctl.Query(ctx, "SELECT probe, halt FROM pgceiling.fleet_plan WHERE name = $1 AND epoch = $2 AND halt IS NOT NULL",
		f.opt.Name, f.epoch)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var why string
		if rows.Scan(&n, &why) == nil {
			f.mu.Lock()
			f.halt[n] = why
			f.mu.Unlock()
		}
	}
}

func (f *follower) state() (gone error, stopped string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone, f.stopped
}

// follow runs plans until the run ends. Probes run on pctx, which the watcher cancels
// when the leader is gone.
func (f *follower) follow(ctx, pctx context.Context) error {
	last := 0
	for {
		gone, stopped := f.state()
		switch {
		case gone != nil:
			return gone
		case stopped != "":
			f.opt.Say("fleet %s: the leader ended the run: %s", f.opt.Name, stopped)
			return nil
		}
		var n int
		var body []byte
		// On pctx: the watcher's cancel ends a read that hangs.
		err := f.ctl.QueryRow(pctx, "SELECT probe, plan FROM pgceiling.fleet_plan WHERE name = $1 AND epoch = $2 AND probe > $3 ORDER BY probe LIMIT 1",
			f.opt.Name, f.epoch, last).Scan(&n, &body)
		switch {
		case noRows(err):
			if err := sleep(pctx, pollEvery); err != nil {
				if g, _ := f.state(); g != nil {
					return g
				}
				return err
			}
			continue
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := sleep(pctx, pollEvery); err != nil { // the server may be restarting: the heartbeat decides
				return context.Cause(pctx)
			}
			continue
		}
		last = n
		var plan Plan
		if err := json.Unmarshal(body, &plan); err != nil {
			return fmt.Errorf("fleet %s: unreadable plan %d: %w", f.opt.Name, n, err)
		}
		if err := f.probe(ctx, pctx, plan); err != nil {
			return err
		}
	}
}

// probe acknowledges plan, runs this driver's share and uploads it.
func (f *follower) probe(ctx, pctx context.Context, plan Plan) error {
	if _, err := f.ctl.Exec(ctx, `INSERT INTO pgceiling.fleet_report (name, epoch, probe, driver, acked) VALUES ($1, $2, $3, $4, clock_timestamp())
		ON CONFLICT DO NOTHING`, f.opt.Name, f.epoch, plan.Probe, f.id); err != nil {
		return fmt.Errorf("fleet: acknowledge plan %d: %w", plan.Probe, err)
	}
	f.opt.Say("fleet %s: probe %d: %.0f of %.0f tx/s, starting in %v", f.opt.Name, plan.Probe, plan.Rate, plan.Total,
		time.Until(plan.StartAt.Add(-f.clock.Offset)).Round(10*time.Millisecond))
	rep := Report{Driver: f.id, Host: f.host, OffsetMs: ms(f.clock.Offset), RTTMs: ms(f.clock.RTT)}
	var h hists
	if err := f.run(pctx, plan, &rep, &h); err != nil {
		rep.Error = err.Error()
	}
	if gone, _ := f.state(); gone != nil {
		return gone // the leader cannot take the upload
	}
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: gone as far as the leader knows
	}
	if err := h.encode(&rep); err != nil {
		rep.Error = err.Error()
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("fleet: encode the upload: %w", err)
	}
	uctx, cancel := context.WithTimeout(ctx, f.opt.Timeout)
	defer cancel()
	if _, err := f.ctl.Exec(uctx, "UPDATE pgceiling.fleet_report SET report = $5 WHERE name = $1 AND epoch = $2 AND probe = $3 AND driver = $4",
		f.opt.Name, f.epoch, plan.Probe, f.id, body); err != nil {
		return fmt.Errorf("fleet: upload probe %d: %w", plan.Probe, err)
	}
	if p := rep.Probe; p != nil {
		f.opt.Say("fleet %s: probe %d: committed %d, failed or rejected %d, achieved %.0f tx/s; uploaded",
			f.opt.Name, plan.Probe, p.Committed, p.FailedAndRejected(), p.AchievedRate)
	}
	return nil
}

// run runs the driver's share of plan into rep and h.
func (f *follower) run(ctx context.Context, plan Plan, rep *Report, h *hists) error {
	w, err := workload.New(plan.Spec.Workload, plan.Spec.Params)
	if err != nil {
		return err
	}
	key := [2]any{plan.Conns, plan.Spec}
	if f.pool == nil || f.poolSpec != key {
		if f.pool != nil {
			f.pool.Close()
		}
		if f.pool, err = driver.NewPool(ctx, f.dsn, plan.Spec.Session, plan.Conns, plan.Spec.ExecMode); err != nil {
			f.pool = nil
			return err
		}
		f.poolSpec = key
	}
	cfg := plan.config(f.id, f.clock.Offset)
	cfg.OnHistograms = h.keep
	// The leader checks the fleet's rows: a driver's own count cannot hold while the others
	// insert too, so it is not made (merge drops the check's complaint).
	cfg.CountRows = func(context.Context, string) (int64, error) { return 0, nil }
	cfg.StopIf = func([]result.Second) string {
		f.mu.Lock()
		defer f.mu.Unlock()
		if why := f.halt[plan.Probe]; why != "" {
			return "the leader stopped the probe: " + why
		}
		return ""
	}
	p, err := driver.Run(ctx, f.pool, w, cfg)
	if err != nil {
		return err
	}
	rep.Probe, rep.LateMs = p, ms(p.StartedAt.Sub(cfg.StartAt))
	return nil
}
