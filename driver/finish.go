package driver

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// fill closes the books into p once every worker has exited.
func (r *probeRun) fill(p *result.Probe) {
	b := r.b
	windowEnd := b.windowEnd()
	p.MeasuredS = max(0, (windowEnd - r.cfg.Warmup).Seconds())
	p.Scheduled = b.meas.scheduled.Load()
	p.Committed = b.meas.committed.Load()
	p.Failed = b.meas.failedCounts()
	p.Rejected = b.meas.failed[result.PoolTimeout].Load()
	// The achieved rate is what the server committed during the window, not what the
	// window's arrivals eventually committed: past the knee, the drain would otherwise
	// credit the window with commits the server made after it.
	p.CommittedInWindow = b.inWindow.Load()
	p.DrainCommitted = b.drainCommitted.Load()
	if p.MeasuredS > 0 {
		p.AchievedRate = float64(p.CommittedInWindow) / p.MeasuredS
	}
	lat, svc, wait := newHist(), newHist(), newHist()
	for _, wk := range r.workers {
		lat.Merge(wk.lat)
		svc.Merge(wk.svc)
		wait.Merge(wk.wait)
		p.Retries += wk.retries
	}
	p.Latency, p.Service, p.QueueWait = summary(lat), summary(svc), summary(wait)
	if r.cfg.OnHistograms != nil {
		r.cfg.OnHistograms(lat, svc, wait)
	}
	p.Late = countAbove(lat, r.cfg.PoolWait)
	n := min(len(b.secs), int((windowEnd+time.Second-1)/time.Second))
	p.Series = make([]result.Second, 0, n)
	for _, s := range b.secs[:n] {
		p.Series = append(p.Series, s.out)
	}
	lags := newHist()
	for _, h := range b.lags {
		lags.Merge(h)
	}
	lagP99 := time.Duration(lags.ValueAtQuantile(99)) * time.Microsecond
	p.SchedLagP99Ms = float64(lagP99.Microseconds()) / 1000
	if lags.TotalCount() > 0 && lagP99 > r.cfg.LagBound {
		p.DriverLimited = true
		p.DriverLimitReason = fmt.Sprintf("scheduler lag p99 %v above the bound %v", lagP99, r.cfg.LagBound)
	}
	switch {
	case r.stop.offset() < 0: // ran its full length
	case r.stop.by == "":
		p.Interrupted = true
	default:
		p.CutShort, p.CutBy, p.CutReason = true, r.stop.by, r.stop.reason
		if r.stop.by == result.CutByServer {
			p.Error = r.stop.reason
		}
	}
	if sr, ok := r.w.(workload.SkewReporter); ok {
		p.Skew = sr.Skew()
	}
	if cr, ok := r.w.(workload.CheckReporter); ok {
		p.FraudCheck = cr.CheckRead()
	}
	if r.obsErr != nil {
		p.ObserverError = r.obsErr.Error()
	}
}

// check runs the after-probe checks and stops the observer.
func (r *probeRun) check(ctx context.Context, p *result.Probe, count func(context.Context, string) (int64, error),
	snap workload.Checker, pool *pgxpool.Pool) {
	if r.obsStarted {
		obs, err := r.cfg.Observer.Stop(ctx, p.Committed)
		if err != nil && p.ObserverError == "" {
			p.ObserverError = fmt.Sprintf("observer stop: %v", err)
		}
		p.Observation = obs
	}
	c := &p.Checks
	c.CommittedTotal = r.b.warm.committed.Load() + r.b.meas.committed.Load()
	c.Uncertain = r.b.uncertain.Load()
	if c.Table != "" { // "": the workload has no row-per-transaction table (custom scripts): no row check
		after, err := count(ctx, c.Table)
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("cannot count %s rows after the probe: %v", c.Table, err))
		} else {
			c.RowsAfter, c.RowDelta = after, after-c.RowsBefore
			per := int64(max(p.RowsPerTx, 1))
			c.RowsOK = c.RowDelta >= c.CommittedTotal*per && c.RowDelta <= (c.CommittedTotal+c.Uncertain)*per
			if !c.RowsOK {
				msg := fmt.Sprintf("ROW MISMATCH: %s gained %d rows but the driver saw %d transactions commit",
					c.Table, c.RowDelta, c.CommittedTotal)
				if per > 1 {
					msg += fmt.Sprintf(" of %d rows each", per)
				}
				if c.Uncertain > 0 {
					msg += fmt.Sprintf(" (%d more were cancelled mid-flight and may have committed)", c.Uncertain)
				}
				c.Problems = append(c.Problems, msg)
			}
		}
	}
	if snap != nil {
		b, err := snapshot(ctx, pool, snap)
		ok := err == nil && b == c.BalanceBefore
		c.BalanceAfter, c.BalanceOK = b, &ok
		switch {
		case err != nil:
			c.Problems = append(c.Problems, fmt.Sprintf("cannot check the balance after the probe: %v", err))
		case !ok:
			c.Problems = append(c.Problems, fmt.Sprintf("BALANCE MISMATCH: sum of balances was %s before the probe and %s after",
				c.BalanceBefore, b))
		}
	}
}

// countRows counts a pgceiling table's rows.
func countRows(ctx context.Context, pool *pgxpool.Pool, table string) (int64, error) {
	var n int64
	q := "SELECT count(*) FROM " + pgx.Identifier{"pgceiling", table}.Sanitize()
	if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows of pgceiling.%s: %w", table, err)
	}
	return n, nil
}

func snapshot(ctx context.Context, pool *pgxpool.Pool, s workload.Checker) (string, error) {
	v, err := s.Snapshot(ctx, pool)
	if err != nil {
		return "", fmt.Errorf("balance snapshot: %w", err)
	}
	return v, nil
}

// serverBrief reads the settings every probe carries.
func serverBrief(ctx context.Context, pool *pgxpool.Pool) (result.ServerBrief, error) {
	var b result.ServerBrief
	err := pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit')`).Scan(&b.Version, &b.Fsync, &b.SynchronousCommit)
	if err != nil {
		return b, fmt.Errorf("read server settings: %w", err)
	}
	return b, nil
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
