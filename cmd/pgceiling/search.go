package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/search"
	"github.com/pgceiling/pgceiling/workload"
)

func init() {
	register(command{name: "search", summary: "find the knee: the highest rate held with almost no errors, per workload and synchronous_commit", run: runSearch})
}

const searchSynopsis = `Finds the knee of each sweep (a workload with a synchronous_commit setting): the highest
offered rate whose probe keeps (failed + rejected) / scheduled <= --max-error-rate (and
p99 <= --p99-slo when given) in steady state. Without --start-rate a short saturating
calibration starts the bracket near the knee; failing probes stop once their errors
exceed the budget. The results file is rewritten after every probe; Ctrl-C keeps it, and
--resume FILE continues without repeating probes.

Without --dsn: a throwaway server, initialised with the profile's rows, all four sweeps,
the side-by-side table, the JSON, and the server removed.`

func runSearch(ctx context.Context, env *Env, args []string) error {
	var c config.Search
	fs := newFlagSet(env, "search", searchSynopsis)
	bindConn(fs, &c.Conn)
	config.BindSearch(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	haveDSN := c.Conn.DSN != "" || env.Getenv(config.EnvDSN) != ""
	if err := c.ApplyProfile(fs, haveDSN, time.Now()); err != nil {
		return err
	}
	if err := c.Validate(workload.Names()); err != nil {
		return err
	}
	if err := checkDSN(c.Conn, env); err != nil {
		return err
	}
	tuneGC(env, c.Conns)
	var prior *result.File
	if c.Resume != "" {
		f, err := result.Read(c.Resume)
		if err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		if f.Command != "search" {
			return config.Usagef("--resume %s: a results file of %q, not of search", c.Resume, f.Command)
		}
		prior = f
	}
	var startFrom *result.File
	if c.StartFrom != "" {
		f, err := result.Read(c.StartFrom)
		if err != nil {
			return fmt.Errorf("--start-from: %w", err)
		}
		if f.Command != "search" {
			return config.Usagef("--start-from %s: a results file of %q, not of search", c.StartFrom, f.Command)
		}
		startFrom = f
	}
	if err := result.CheckWritable(c.JSON); err != nil {
		return err
	}

	file := result.NewFile("search")
	file.CommandLine = redactArgs(env.Args)
	file.Config = config.Values(fs)
	save := func() error {
		file.FinishedAt = time.Now().UTC()
		return result.Write(c.JSON, file)
	}

	// failed records why the search could not start in the results file, which is
	// always written once it was checked writable.
	failed := func(err error) error {
		if ctx.Err() != nil {
			file.Interrupted = true
		} else {
			file.Error = env.Scrub(err.Error())
		}
		if werr := save(); werr != nil {
			fmt.Fprintf(env.Stderr, "pgceiling: %s\n", env.Scrub(werr.Error()))
		}
		return err
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return failed(err)
	}
	defer t.Close()
	s, err := newSearchSession(ctx, env, &c, t)
	if s != nil {
		defer s.close()
	}
	if err != nil {
		return failed(err)
	}
	file.Server = s.disclosure
	file.Warnings = append(file.Warnings, s.warnings...)
	if w := c.Fraud.Warning(); w != "" && slices.Contains(c.Workloads, "oltp") {
		file.Warnings = append(file.Warnings, w)
		fmt.Fprintf(env.Stderr, "pgceiling: warning: %s\n", w)
	}
	fmt.Fprintf(env.Stderr, "pgceiling search: %s; results in %s\n", c.String(), c.JSON)

	sweeps := c.Sweeps()
	var runErr error
	for i, sw := range sweeps {
		var priorProbes []result.Probe
		var estimate float64
		if prior != nil {
			if ps := prior.Sweep(sw); ps != nil {
				priorProbes, estimate = ps.Probes, ps.CalibratedRate
			}
		}
		var from float64
		if startFrom != nil {
			if s := startFrom.Sweep(sw); s != nil {
				from = s.Knee
			}
			if from <= 0 {
				return failed(config.Usagef("--start-from %s: no knee for %s with synchronous_commit=%s", c.StartFrom, sw.Workload, sw.SyncCommit))
			}
		}
		file.Sweeps = append(file.Sweeps, result.Sweep{Workload: sw.Workload, SyncCommit: sw.SyncCommit, KeepGrowth: c.KeepGrowth})
		idx := len(file.Sweeps) - 1
		label := fmt.Sprintf("sweep %d/%d %s sync=%s", i+1, len(sweeps), sw.Workload, sw.SyncCommit)
		fill := func(snap *result.Sweep) {
			fillSweep(snap, sw, c.KeepGrowth)
			if startFrom != nil {
				snap.StartFrom = c.StartFrom
			}
		}
		res, err := s.sweep(ctx, label, sw, priorProbes, estimate, from, func(snap result.Sweep) {
			fill(&snap)
			file.Sweeps[idx] = snap
			if err := save(); err != nil {
				fmt.Fprintf(env.Stderr, "pgceiling: %s\n", env.Scrub(err.Error()))
			}
		})
		fill(&res)
		res.Bottleneck, res.BottleneckRate = observe.SweepBottleneck(&res)
		file.Sweeps[idx] = res
		fmt.Fprintf(env.Stderr, "%s: knee %s, bracket %s, %d probes, %.1f probe-minutes (%s)\n",
			label, report.KneeText(res), bracketText(res.Bracket), len(res.Probes), res.ProbeMinutes, res.Stop)
		if err != nil {
			runErr = err
			break
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			file.Interrupted = true
		} else {
			file.Error = env.Scrub(runErr.Error())
		}
	}
	if err := save(); err != nil {
		return err
	}
	if file.Interrupted {
		fmt.Fprintf(env.Stderr, "pgceiling: search interrupted; %s keeps every probe so far: continue with --resume %s\n", c.JSON, c.JSON)
		return runErr
	}
	if err := report.WriteText(env.Stdout, file); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if c.Report != "" {
		if _, err := report.WriteAll(c.Report, file); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	fmt.Fprintf(env.Stderr, "pgceiling: results in %s\n", c.JSON)
	return runErr
}

// fillSweep names a sweep.
func fillSweep(s *result.Sweep, sw result.SweepKey, keepGrowth bool) {
	s.Workload, s.SyncCommit, s.KeepGrowth = sw.Workload, sw.SyncCommit, keepGrowth
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

// searchSession is what every sweep of one search shares: the server, its schema and
// baseline, the driver's pool, the observer.
type searchSession struct {
	env        *Env
	c          *config.Search
	dsn        string
	admin      *pgx.Conn
	pool       *pgxpool.Pool
	sampler    *observe.Sampler
	spec       schema.Spec
	baseline   *schema.Baseline
	counter    func(ctx context.Context, table string) (int64, error) // exact row counts, cheap
	books      *pgxpool.Pool                                          // restore, checkpoint, row checks: survives restarts
	disclosure *result.Disclosure
	warnings   []string
	probes     int  // probes run so far, for seeds
	backfilled bool // the fraud window's history was written once
}

func newSearchSession(ctx context.Context, env *Env, c *config.Search, t *target) (*searchSession, error) {
	s := &searchSession{env: env, c: c, dsn: t.DSN}
	cfgDB, admin, err := t.dial(ctx)
	if err != nil {
		return s, err
	}
	s.admin = admin
	spec := schema.DefaultSpec()
	spec.Rows, spec.Wallets, spec.Zipf, spec.Seed = c.Rows, c.Wallets, c.Zipf, c.Seed
	if err := ensureSchema(ctx, env, cfgDB, s.admin, spec); err != nil {
		return s, err
	}
	if s.spec, err = schema.Check(ctx, s.admin); err != nil {
		return s, err
	}
	local := observe.LocalInfo{}
	if t.Embedded != nil {
		local = observe.LocalInfo{PostmasterPID: t.Embedded.PID(), Embedded: true}
	}
	if s.disclosure, err = observe.Disclose(ctx, s.admin, local); err != nil {
		return s, err
	}
	s.warnings = observe.Unsafe(s.disclosure, c.SweepsOn())
	if err := observe.RefuseUnsafe(s.warnings, c.Safety.AllowUnsafeServer); err != nil {
		return s, err
	}
	// The baseline is taken once: Restore returns to it before each probe (unless
	// --keep-growth), and it makes the row checks cheap either way.
	b, err := schema.TakeBaseline(ctx, s.admin)
	if err != nil {
		return s, err
	}
	if s.books, err = t.adminPool(ctx); err != nil {
		return s, err
	}
	s.counter = schema.Counter(s.books, b)
	if !c.KeepGrowth {
		s.baseline = &b
	}
	if s.pool, err = driver.NewPool(ctx, t.DSN, driverSession(c.Session), c.Conns, execModes[c.ExecMode]); err != nil {
		return s, err
	}
	if s.sampler, err = observe.NewSampler(ctx, samplerOptions(t.DSN, &c.Probe, local)); err != nil {
		return s, err
	}
	return s, nil
}

func (s *searchSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.sampler != nil {
		_ = s.sampler.Close(ctx)
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.books != nil {
		if s.baseline != nil { // leave the data as it was found
			_, _ = schema.Restore(ctx, s.books, *s.baseline)
		}
		s.books.Close()
	}
	if s.admin != nil {
		_ = s.admin.Close(ctx)
	}
}

// sweep runs one search.
func (s *searchSession) sweep(ctx context.Context, label string, sw result.SweepKey, prior []result.Probe, estimate, startFrom float64,
	onProbe func(result.Sweep)) (result.Sweep, error) {
	params := workload.Params{Wallets: s.spec.Wallets, Zipf: s.c.Zipf, SyncCommit: sw.SyncCommit.On(),
		FraudWindow: s.c.Fraud.Window, FraudLimit: s.c.Fraud.Limit}
	w, err := workload.New(sw.Workload, params)
	if err != nil {
		return result.Sweep{}, err
	}
	p := &sweepProber{s: s, w: w, label: label, cfg: driverConfig(&s.c.Probe, sw.SyncCommit)}
	p.cfg.Observer, p.cfg.CountRows = s.sampler, s.counter
	if rh, ok := w.(workload.HistoryReader); ok && !s.c.Fraud.NoBackfill {
		p.window, p.limit = rh.RecentHistory()
	}
	cfg := searchConfig(s.c)
	cfg.StartFrom, cfg.Estimate = startFrom, estimate
	cfg.OnStart = func(n int, rate float64, b result.Bracket) {
		p.started = true
		fmt.Fprintf(s.env.Stderr, "%s: probe %d at %.0f tx/s, bracket %s\n", label, n, rate, bracketText(b))
	}
	cfg.OnProbe = func(sw result.Sweep) {
		last := sw.Probes[len(sw.Probes)-1]
		p.endLive()
		from := ""
		if !p.started {
			from = " (from the resumed file)"
		}
		p.started = false
		fmt.Fprintf(s.env.Stderr, "%s: probe %d at %.0f tx/s%s: %s: %s (achieved %.0f, p99 %.1f ms); bracket %s\n",
			label, len(sw.Probes), last.TargetRate, from, last.Verdict, last.Reason, last.AchievedRate, last.Latency.P99,
			bracketText(sw.Bracket))
		onProbe(sw)
	}
	cfg.OnCalibrate = func(rate float64) {
		fmt.Fprintf(s.env.Stderr, "%s: calibrating at %.0f tx/s\n", label, rate)
	}
	return search.Run(ctx, p, cfg, prior)
}

func bracketText(b result.Bracket) string {
	switch {
	case b.Lo == 0 && b.Hi == 0:
		return "not yet"
	case b.Hi == 0:
		return fmt.Sprintf("[%.0f, ?)", b.Lo)
	case b.Lo == 0:
		return fmt.Sprintf("(?, %.0f]", b.Hi)
	}
	return fmt.Sprintf("[%.0f, %.0f] (%.1f %%)", b.Lo, b.Hi, 100*(b.Hi-b.Lo)/b.Lo)
}

// sweepProber runs the driver's probes for one sweep: before each probe it restores the
// data, back-fills the fraud window's recent history at the probe's rate and checkpoints;
// it passes the search's error budget and trend stop to the driver, and shows the
// driver's live line.
type sweepProber struct {
	s     *searchSession
	w     workload.Workload
	cfg   driver.Config
	label string
	// window and limit are the workload's recent history to back-fill before each probe
	// (window 0: none).
	window time.Duration
	limit  int64
	// started: OnStart announced the current probe (a probe reused from a resumed file
	// is not announced).
	started bool
	live    bool // a live line is drawn and not yet ended
}

var (
	_ search.LimitedProber = (*sweepProber)(nil)
	_ search.ShortProber   = (*sweepProber)(nil)
)

func (p *sweepProber) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return p.ProbeWithLimits(ctx, rate, search.Limits{Budget: -1})
}

func (p *sweepProber) ProbeWithLimits(ctx context.Context, rate float64, l search.Limits) (*result.Probe, error) {
	return p.run(ctx, rate, l, p.cfg.Warmup, p.cfg.Duration)
}

// ProbeShort is a calibration probe: prepared like every probe, shorter.
func (p *sweepProber) ProbeShort(ctx context.Context, rate float64, warmup, measured time.Duration) (*result.Probe, error) {
	pr, err := p.run(ctx, rate, search.Limits{Budget: -1}, warmup, measured)
	p.endLive()
	return pr, err
}

// prepare puts the server in the state every probe starts from: the data back at the
// baseline (unless --keep-growth), the fraud window's history back-filled at the probe's
// rate, a checkpoint (unless --no-checkpoint).
func (p *sweepProber) prepare(ctx context.Context, rate float64) (*result.Restore, *result.Backfill, error) {
	var rs *result.Restore
	if p.s.baseline != nil {
		r, err := schema.Restore(ctx, p.s.books, *p.s.baseline)
		if err != nil {
			return nil, nil, err
		}
		rs = &r
	}
	var bf *result.Backfill
	// With --keep-growth the probes' own rows stay: the window's history is back-filled
	// once, before the search's first probe, and then grows as in production.
	if p.window > 0 && (p.s.baseline != nil || !p.s.backfilled) {
		p.s.backfilled = true
		b, err := schema.Backfill(ctx, p.s.books, schema.BackfillSpec{Rate: rate, Window: p.window, Limit: p.limit,
			Wallets: p.s.spec.Wallets, Zipf: p.s.c.Zipf, Seed: p.s.c.Seed + int64(p.s.probes)})
		if err != nil {
			return nil, nil, err
		}
		bf = &b
	}
	if !p.s.c.NoCheckpoint {
		if err := schema.Checkpoint(ctx, p.s.books); err != nil {
			return nil, nil, err
		}
	}
	return rs, bf, nil
}

func (p *sweepProber) run(ctx context.Context, rate float64, l search.Limits, warmup, duration time.Duration) (*result.Probe, error) {
	p.s.probes++
	rs, bf, err := p.prepare(ctx, rate)
	if err != nil {
		return nil, fmt.Errorf("before the probe: %w", err)
	}
	cfg := p.cfg
	cfg.Rate, cfg.Warmup, cfg.Duration = rate, warmup, duration
	// The driver's ErrorBudget 0 means "no early abort"; a budget of 0 errors is then
	// judged at the end of the probe instead.
	cfg.ErrorBudget = max(l.Budget, 0)
	cfg.StopIf = l.StopIf
	cfg.Seed = p.s.c.Seed + int64(p.s.probes)
	last := time.Time{}
	cfg.OnSecond = func(sec result.Second, l driver.Live) {
		if !p.s.env.TTY && time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		line := fmt.Sprintf("  %s %4.0fs %-7s offered %6.0f/s achieved %6.0f/s p99 %7.1f ms queue %5d errors %d",
			p.label, l.Elapsed.Seconds(), l.Phase, l.OfferedRate, l.AchievedRate, l.P99Ms, l.Queue, l.Errors)
		if p.s.env.TTY {
			fmt.Fprintf(p.s.env.Stderr, "\r\033[K%s", line)
			p.live = true
		} else {
			fmt.Fprintln(p.s.env.Stderr, line)
		}
	}
	pr, err := driver.Run(ctx, p.s.pool, p.w, cfg)
	if pr != nil {
		pr.Restore, pr.Backfill = rs, bf
		observe.Finish(pr)
	}
	return pr, err
}

// endLive ends the in-place live line before a new line is printed.
func (p *sweepProber) endLive() {
	if p.live {
		fmt.Fprintln(p.s.env.Stderr)
		p.live = false
	}
}
