// Package prepare puts the server in the state every probe starts from, the same way for
// `run` and for each probe of a `search`: the data back at the baseline (unless the tables
// are to grow as in production), the fraud window's recent history back-filled at the
// probe's own rate and skew and anchored at its start, then a CHECKPOINT so every probe
// starts at the same point of the checkpoint cycle. What the restore and the back-fill
// wrote and how long they took go into the probe's result.
package prepare

import (
	"context"
	"time"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

// Options are the steps to take before each probe.
type Options struct {
	// Baseline, when set, is restored before each probe: the rows earlier probes added
	// are deleted, the wallets' balances restored and the touched tables vacuumed. Nil
	// lets the tables grow (--keep-growth); then the recent history is back-filled only
	// before the first probe and grows from there as in production.
	Baseline *schema.Baseline
	// Backfill writes the recent history of a workload that reads one (a
	// workload.HistoryReader: oltp's fraud check) at the probe's rate.
	Backfill bool
	// Wallets and Zipf are the keys the back-filled history is spread over, as the
	// workload picks them.
	Wallets int
	Zipf    float64
	// Checkpoint runs CHECKPOINT last.
	Checkpoint bool
	// OnBackfill, when set, is called before a back-fill starts with its window and rate
	// (for a progress line).
	OnBackfill func(window time.Duration, rate float64)
}

// Steps prepares the server before each probe. One Steps serves every probe of a command
// (it remembers whether the history was back-filled); it is not safe for concurrent use.
type Steps struct {
	db         schema.Copier
	opt        Options
	backfilled bool
	// indexes are the churned tables' index bytes when last rebuilt (schema.Compact);
	// nil until the first restore, which rebuilds them all.
	indexes map[string]int64
}

// New returns the steps, run on db: a pool of pgceiling's own connections (apart from
// the measured ones), so a server restart costs a reconnect.
func New(db schema.Copier, opt Options) *Steps { return &Steps{db: db, opt: opt} }

// Prepared is what preparing one probe did (nil parts: that step did not run).
type Prepared struct {
	Restore  *result.Restore
	Backfill *result.Backfill
}

// Record writes what was prepared into the probe's result.
func (p Prepared) Record(pr *result.Probe) {
	if pr != nil {
		pr.Restore, pr.Backfill = p.Restore, p.Backfill
	}
}

// Before prepares the server for a probe of w at rate; seed seeds the back-filled
// history's keys and times.
func (s *Steps) Before(ctx context.Context, w workload.Workload, rate float64, seed int64) (Prepared, error) {
	var p Prepared
	if s.opt.Baseline != nil {
		r, err := schema.Restore(ctx, s.db, *s.opt.Baseline)
		if err != nil {
			return p, err
		}
		// Then the indexes the probes churn are kept compact, so each probe starts with
		// them as the first did (all rebuilt before it, then whichever grew too much).
		start := time.Now()
		rebuilt, sizes, err := schema.Compact(ctx, s.db, s.opt.Baseline.TakenAt.Add(-schema.HistoryGap), s.indexes)
		if err != nil {
			return p, err
		}
		s.indexes = sizes
		if len(rebuilt) > 0 {
			r.Reindexed, r.ReindexS = rebuilt, time.Since(start).Seconds()
			r.Seconds += r.ReindexS
		}
		p.Restore = &r
	}
	if rh, ok := w.(workload.HistoryReader); ok && s.opt.Backfill && (s.opt.Baseline != nil || !s.backfilled) {
		window, limit := rh.RecentHistory()
		if window > 0 {
			s.backfilled = true
			if s.opt.OnBackfill != nil {
				s.opt.OnBackfill(window, rate)
			}
			b, err := schema.Backfill(ctx, s.db, schema.BackfillSpec{Rate: rate, Window: window, Limit: limit,
				Wallets: s.opt.Wallets, Zipf: s.opt.Zipf, Seed: seed})
			if err != nil {
				return p, err
			}
			p.Backfill = &b
		}
	}
	if s.opt.Checkpoint {
		if err := schema.Checkpoint(ctx, s.db); err != nil {
			return p, err
		}
	}
	return p, nil
}
