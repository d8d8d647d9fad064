package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/fleet"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/prepare"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/search"
	"github.com/pgceiling/pgceiling/workload"
)

// probeServer is what every probe of one run or search shares: the admin session, the
// schema and its baseline, the driver's pool, pgceiling's own bookkeeping pool, the
// sampler, the disclosure, and the steps that prepare the server before each probe.
type probeServer struct {
	admin      *pgx.Conn
	spec       schema.Spec
	wallets    int // the wallets the probes pick from
	baseline   schema.Baseline
	restore    bool          // the data is put back at the baseline before each probe and at the end
	books      *pgxpool.Pool // restore, back-fill, checkpoint, row checks: survives restarts
	pool       *pgxpool.Pool
	sampler    *observe.Sampler
	counter    func(ctx context.Context, table string) (int64, error) // exact row counts, cheap
	steps      *prepare.Steps
	disclosure *result.Disclosure
	warnings   []string
	probes     int // probes run so far: a search's probe n has the seed + n
	scanMax    int // --conns auto: the largest pool the scan may try (the server's room)

	metrics *liveMetrics  // --metrics-addr (nil: off)
	fleet   *fleet.Leader // --drivers N > 1: every probe is the fleet's (nil: this process alone)
}

// serverPlan is how a command wants the server for its probes.
type serverPlan struct {
	// create initialises the schema with this spec when it is missing (nil: it must exist).
	create *schema.Spec
	// wallets the probes pick from; 0 = all of the schema's.
	wallets int
	// syncOn: some probe commits with synchronous_commit on, so a server whose default is
	// off is unsafe too.
	syncOn bool
	// restore puts the data back at the baseline before each probe and at the end.
	restore bool
	// checkpoint runs CHECKPOINT before each probe.
	checkpoint bool
	// onBackfill announces a back-fill (nil: silent).
	onBackfill func(window time.Duration, rate float64)
}

// openProbeServer readies t for probes configured by p: the schema (made when plan
// says so), the safety check, the baseline, the pools and the sampler. The caller must
// close it, also when an error is returned with it.
func openProbeServer(ctx context.Context, env *Env, t *target, p *config.Probe, plan serverPlan) (*probeServer, error) {
	s := &probeServer{restore: plan.restore}
	cfgDB, admin, err := t.dial(ctx)
	if err != nil {
		return s, err
	}
	s.admin = admin
	if plan.create != nil {
		if err := ensureSchema(ctx, env, cfgDB, admin, *plan.create); err != nil {
			return s, err
		}
	}
	if s.spec, err = schema.Check(ctx, admin); err != nil {
		return s, err
	}
	s.wallets = s.spec.Wallets
	if plan.wallets > 0 {
		if plan.wallets > s.spec.Wallets {
			return s, config.Usagef("--wallets %d: the schema has only %d wallets", plan.wallets, s.spec.Wallets)
		}
		s.wallets = plan.wallets
	}
	local := observe.LocalInfo{}
	if t.Embedded != nil {
		local = observe.LocalInfo{PostmasterPID: t.Embedded.PID(), Embedded: true}
	}
	if s.disclosure, err = observe.Disclose(ctx, admin, local); err != nil {
		return s, err
	}
	s.warnings = observe.Unsafe(s.disclosure, plan.syncOn)
	if err := observe.RefuseUnsafe(s.warnings, p.Safety.AllowUnsafeServer); err != nil {
		return s, err
	}
	// The baseline is taken once: the data returns to it before each probe (when
	// plan.restore), and it makes the row checks cheap either way.
	if s.baseline, err = schema.TakeBaseline(ctx, admin); err != nil {
		return s, err
	}
	if s.books, err = t.adminPool(ctx); err != nil {
		return s, err
	}
	s.counter = schema.Counter(s.books, s.baseline)
	conns := p.Conns
	if conns == 0 { // --conns auto: the pool is the largest the scan may try
		if conns, err = s.scanLimit(ctx, env); err != nil {
			return s, err
		}
	}
	if s.pool, err = driver.NewPool(ctx, t.DSN, driverSession(p.Session), conns, execModes[p.ExecMode]); err != nil {
		return s, err
	}
	if s.sampler, err = observe.NewSampler(ctx, samplerOptions(t.DSN, p, local)); err != nil {
		return s, err
	}
	opt := prepare.Options{Backfill: !p.Fraud.NoBackfill, Wallets: s.wallets, Zipf: p.Zipf,
		Checkpoint: plan.checkpoint, OnBackfill: plan.onBackfill}
	if plan.restore {
		opt.Baseline = &s.baseline
	}
	s.steps = prepare.New(s.books, opt)
	return s, nil
}

// outsidePool is how many connections a probe server holds besides its pool: the admin
// connection, the books' pool (2) and the sampler's.
const outsidePool = 4

// scanLimit is the largest pool the --conns auto scan may try on this server: up to
// search.PoolScanMax, fewer when max_connections leaves less room (said once).
func (s *probeServer) scanLimit(ctx context.Context, env *Env) (int, error) {
	r, err := driver.ConnRoom(ctx, s.admin)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	free := r.Free() - outsidePool
	s.scanMax = search.PoolScanLimit(free)
	switch {
	case s.scanMax == 0:
		return 0, fmt.Errorf("--conns auto: the server has room for %d more connections (max_connections %d, %d reserved, %d in use), too few to scan pools from %d: give --conns N or raise max_connections",
			max(free, 0), r.Max, r.Reserved, r.InUse, search.PoolScanFirst)
	case s.scanMax < search.PoolScanMax:
		env.say("pgceiling: --conns auto: the server has room for %d more connections (max_connections %d, %d reserved, %d in use), so the pool scan stops at %d (not %d)",
			max(free, 0), r.Max, r.Reserved, r.InUse, s.scanMax, search.PoolScanMax)
	}
	return s.scanMax, nil
}

// workload makes the named workload for the probes at synchronous_commit sync; the
// custom scripts (--script) are described on the server first.
func (s *probeServer) workload(ctx context.Context, name string, p *config.Probe, sync result.SyncCommit) (workload.Workload, error) {
	if name == workload.CustomName {
		return s.customWorkload(ctx, p, sync)
	}
	params := workload.Params{Wallets: s.wallets, Zipf: p.Zipf, SyncCommit: sync.On(),
		FraudWindow: p.Fraud.Window, FraudLimit: p.Fraud.Limit}
	if name == "insert" { // --batch is insert's alone (config checks it names insert)
		params.Batch = p.Batch
	}
	w, err := workload.New(name, params)
	if err != nil {
		return nil, config.Usagef("%v", err)
	}
	if s.fleet != nil {
		s.fleet.SetWorkload(name, params) // the followers make the same
	}
	return w, nil
}

// probe prepares the server and runs one probe of w with cfg (its pool, observer and row
// counter are the server's); the result records what the preparation did and the
// server's side of the probe.
func (s *probeServer) probe(ctx context.Context, w workload.Workload, cfg driver.Config) (*result.Probe, error) {
	prep, err := s.steps.Before(ctx, w, cfg.Rate, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("before the probe: %w", err)
	}
	cfg.Observer, cfg.CountRows = s.sampler, s.counter
	run := driver.Run
	if s.fleet != nil {
		run = s.fleet.Run
	}
	pr, err := run(ctx, s.pool, w, s.metrics.probe(w.Name(), cfg))
	if pr != nil {
		prep.Record(pr)
		observe.Finish(pr)
	}
	s.metrics.probeDone(pr)
	return pr, err
}

// close releases everything, putting the data back at the baseline first when the
// probes restore it (leaving the data as it was found).
func (s *probeServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.sampler != nil {
		_ = s.sampler.Close(ctx)
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.books != nil {
		if s.restore {
			_, _ = schema.Restore(ctx, s.books, s.baseline)
		}
		s.books.Close()
	}
	if s.admin != nil {
		_ = s.admin.Close(ctx)
	}
}
