package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/internal/thousands"
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
calibration starts the bracket near the knee; with --conns auto (the default) each sweep
then scans pool sizes (4, 8, 16, ... and back) with short overload probes and uses the
smallest pool within 3 % of the best mean throughput (a larger pool lowers many servers'
ceiling);
failing probes stop once their errors exceed the budget. The results file is rewritten after every probe; Ctrl-C keeps it, and
--resume FILE continues without repeating probes.

Without --dsn: a throwaway server, initialised with the profile's rows, all four sweeps,
the side-by-side table, the JSON, and the server removed.`

func runSearch(ctx context.Context, env *Env, args []string) error {
	var c config.Search
	fs := newFlagSet(env, "search", searchSynopsis)
	bindConn(fs, &c.Conn)
	config.BindSearch(fs, &c)
	var fl config.Fleet
	config.BindFleet(fs, &fl, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	haveDSN := c.Conn.DSN != "" || env.Getenv(config.EnvDSN) != ""
	if err := fl.Validate(haveDSN); err != nil {
		return err
	}
	if err := c.ApplyProfile(fs, haveDSN, time.Now()); err != nil {
		return err
	}
	if len(c.Scripts) > 0 && !fs.Changed("workload") {
		c.Workloads = []string{workload.CustomName}
	}
	if err := c.Validate(workloadNames()); err != nil {
		return err
	}
	if err := checkScripts(c.Scripts); err != nil {
		return err
	}
	if err := checkDSN(c.Conn, env); err != nil {
		return err
	}
	if c.Conns == 0 && fl.Drivers > 1 {
		c.Conns = result.DefaultConns // a fleet's drivers share one pool size: no scan
		env.say("pgceiling search: --drivers %d: --conns auto is not supported by a fleet; each driver uses %d connections (give --conns N to choose)", fl.Drivers, c.Conns)
	}
	tuneGC(env, poolSize(&c.Probe))
	prior, err := readSearchFile("--resume", c.Resume)
	if err != nil {
		return err
	}
	startFrom, err := readSearchFile("--start-from", c.StartFrom)
	if err != nil {
		return err
	}
	setOutput(env, &c.Output, c.JSON)
	lm, err := startMetrics(env, "search", c.MetricsAddr)
	if err != nil {
		return err
	}
	defer lm.close()
	if err := checkOutputs(c.JSON, c.SummaryJSON, c.Report); err != nil {
		return err
	}

	file := &searchResults{File: result.NewFile("search"), path: c.JSON, env: env}
	file.CommandLine = redactArgs(env.Args)
	file.Config = config.Values(fs)
	// failed records why the search stopped in the results file once a probe ran; a
	// search that could not start leaves no results file behind (nor touches a resumed
	// one).
	failed := func(err error) error {
		file.end(ctx, err)
		if file.probes() > 0 {
			file.saveOrWarn()
		}
		return err
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return failed(err)
	}
	defer t.Close()
	spec := schema.DefaultSpec()
	spec.Rows, spec.Wallets, spec.Zipf, spec.Seed = c.Rows, c.Wallets, c.Zipf, c.Seed
	s, err := openProbeServer(ctx, env, t, &c.Probe, serverPlan{create: &spec, syncOn: c.SweepsOn(),
		restore: !c.KeepGrowth, checkpoint: !c.NoCheckpoint})
	defer s.close()
	if err != nil {
		return failed(err)
	}
	s.metrics = lm
	ld, err := leadFleet(ctx, env, s, t, &c.Probe, fl, "pgceiling search")
	if err != nil {
		return failed(err)
	}
	if ld != nil {
		defer func() { ld.Close("the search ended") }()
	}
	file.Server = s.disclosure
	file.Warnings = append(file.Warnings, s.warnings...)
	if w := c.Fraud.Warning(); w != "" && slices.Contains(c.Workloads, "oltp") {
		file.Warnings = append(file.Warnings, w)
		env.warnf("%s", w)
	}
	ct := ""
	if s.disclosure != nil {
		ct = s.disclosure.Settings["checkpoint_timeout"]
	}
	hold, err := c.HoldWindow(ct)
	if err != nil {
		return failed(err)
	}
	if hold > 0 {
		env.say("pgceiling search: each knee is then held for %v (--hold %s; the server's checkpoint_timeout is %s)", hold, c.Hold, ct)
	}
	where := c.JSON
	if where == config.Stdout {
		where = "stdout at the end"
	}
	env.say("pgceiling search: %s; results in %s", c.String(), where)

	sweeps := c.Sweeps()
	rounds := max(c.Rounds, 1)
	at := map[result.SweepKey]int{} // each sweep's index in file.Sweeps
	var runErr error
searching:
	for r := 1; r <= rounds; r++ {
		for i, sw := range sweeps {
			var earlier *result.Sweep
			if r > 1 {
				if e := file.Sweeps[at[sw]]; e.Converged { // a sweep that did not converge has no edges to take up
					earlier = &e
				} else {
					continue
				}
			}
			start, err := sweepStart(&c, sw, prior, startFrom, r)
			if err != nil {
				return failed(err)
			}
			if r == rounds {
				start.hold = hold // the knee is held once, as the last round leaves it
			}
			if earlier != nil {
				start.earlier, start.pool = earlier, earlier.Pool
			}
			label := fmt.Sprintf("sweep %d/%d %s sync=%s", i+1, len(sweeps), sw.Workload, sw.SyncCommit)
			if rounds > 1 {
				start.round = r
				label = fmt.Sprintf("round %d/%d sweep %d/%d %s sync=%s", r, rounds, i+1, len(sweeps), sw.Workload, sw.SyncCommit)
			}
			if r == 1 {
				file.Sweeps = append(file.Sweeps, result.Sweep{Workload: sw.Workload, SyncCommit: sw.SyncCommit, KeepGrowth: c.KeepGrowth})
				at[sw] = len(file.Sweeps) - 1
			}
			idx := at[sw]
			s.metrics.sweep(i+1, len(sweeps))
			res, err := runSweep(ctx, env, s, &c, label, sw, start, func(snap result.Sweep) {
				fillSweep(&snap, sw, &c)
				file.Sweeps[idx] = snap
				file.saveOrWarn()
			})
			fillSweep(&res, sw, &c)
			res.Bottleneck, res.BottleneckRate = observe.SweepBottleneck(&res)
			file.Sweeps[idx] = res
			pool := ""
			if res.Pool != nil && res.Pool.Conns > 0 {
				pool = fmt.Sprintf(", pool %d connections", res.Pool.Conns)
			}
			env.say("%s: knee %s%s, bracket %s, %d probes, %.1f probe-minutes (%s)%s",
				label, report.KneeText(res), pool, bracketText(res.Bracket), len(res.Probes), res.ProbeMinutes, res.Stop, report.RoundsText(res))
			if err != nil {
				runErr = err
				break searching
			}
		}
	}
	runErr = file.end(ctx, runErr)
	if runErr == nil {
		runErr = faulted(file.File)
	}
	return finishSearch(env, &c, file, runErr)
}

// faulted is the error a search exits 1 with when a sweep stopped because a probe could
// not complete twice (the server or a driver went away): that sweep's knee, if any, comes
// from the probes before the fault. The sweep's stop reason already says so in the
// results file, so it is not recorded again as the file's error.
func faulted(f *result.File) error {
	var bad []string
	for _, sw := range f.Sweeps {
		if strings.HasPrefix(sw.Stop, search.StopFault) {
			bad = append(bad, fmt.Sprintf("%s sync=%s (%s)", sw.Workload, sw.SyncCommit, sw.Stop))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("a probe could not complete twice, so the search stopped these sweeps early: %s; the results file keeps every probe", strings.Join(bad, "; "))
}

// finishSearch writes the results file as the search ended and, unless it was
// interrupted, prints the summary and renders --report.
func finishSearch(env *Env, c *config.Search, file *searchResults, runErr error) error {
	if err := file.save(); err != nil {
		return err
	}
	if c.JSON == config.Stdout {
		if err := writeResults(env, c.JSON, file.File); err != nil {
			return err
		}
	}
	if err := writeSummary(env, c.SummaryJSON, file.File, nil); err != nil {
		return err
	}
	if file.Interrupted {
		if c.JSON != config.Stdout {
			// The hint is a line of its own, never wrapped, so it can be copied whole.
			env.warnf("search interrupted; %s keeps every probe so far; continue with:", c.JSON)
			fmt.Fprintf(env.Stderr, "    --resume %s\n", c.JSON)
		}
		return runErr
	}
	if err := writeText(env.text(), file.File, env.width(), c.Wide); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if c.Report != "" {
		if _, err := report.WriteAll(c.Report, file.File); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	if c.JSON != config.Stdout {
		env.say("pgceiling: results in %s", c.JSON)
	}
	return runErr
}

// searchResults is a search's results file, rewritten after every probe.
type searchResults struct {
	*result.File
	path string
	env  *Env
}

// save rewrites the results file; with --json - (stdout) it is written once, at the end.
func (r *searchResults) save() error {
	r.FinishedAt = time.Now().UTC()
	if r.path == config.Stdout {
		return nil
	}
	return result.Write(r.path, r.File)
}

// probes counts the probes in the file so far.
func (r *searchResults) probes() int {
	n := 0
	for _, s := range r.Sweeps {
		n += len(s.Probes)
	}
	return n
}

// saveOrWarn saves the file, only warning when it cannot: the search goes on.
func (r *searchResults) saveOrWarn() {
	if err := r.save(); err != nil {
		printWrapped(r.env.Stderr, "pgceiling: "+r.env.Scrub(err.Error()), r.env.width())
	}
}

// end records why the search ended early (err nil: it did not): interrupted, or the
// error, scrubbed of passwords. It returns err.
func (r *searchResults) end(ctx context.Context, err error) error {
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		r.Interrupted = true
	default:
		r.Error = r.env.Scrub(err.Error())
	}
	return err
}

// readSearchFile reads the results file of an earlier search named by flag (nil when
// path is empty).
func readSearchFile(flag, path string) (*result.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := result.Read(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if f.Command != "search" {
		return nil, config.Usagef("%s %s: a results file of %q, not of search", flag, path, f.Command)
	}
	return f, nil
}

// start is where a sweep starts.
type start struct {
	prior    []result.Probe   // probes of the resumed file, reused
	round    int              // the round (--rounds), from 1; 0 in a search of one round
	earlier  *result.Sweep    // the sweep as the rounds before left it (nil in the first)
	estimate float64          // the resumed file's calibration
	knee     float64          // the --start-from file's knee
	pool     *result.PoolScan // the resumed file's pool scan (--conns auto)
	hold     time.Duration    // the hold step's window (0: none)
}

// sweepStart is where round r of the sweep sw starts: its probes of that round and its
// calibration in the resumed file prior, its knee in the --start-from file (either may
// be nil).
func sweepStart(c *config.Search, sw result.SweepKey, prior, startFrom *result.File, r int) (start, error) {
	var st start
	if prior != nil {
		if ps := prior.Sweep(sw); ps != nil {
			for _, p := range ps.Probes {
				if max(p.Round, 1) == r {
					st.prior = append(st.prior, p)
				}
			}
			st.estimate = ps.CalibratedRate
			if ps.Pool != nil && ps.Pool.Conns > 0 {
				st.pool = ps.Pool
			}
		}
	}
	if startFrom != nil {
		if ks := startFrom.Sweep(sw); ks != nil {
			st.knee = ks.Knee
		}
		if st.knee <= 0 {
			return st, config.Usagef("--start-from %s: no knee for %s with synchronous_commit=%s", c.StartFrom, sw.Workload, sw.SyncCommit)
		}
	}
	return st, nil
}

// fillSweep names a sweep and says how its probes were made.
func fillSweep(s *result.Sweep, sw result.SweepKey, c *config.Search) {
	s.Workload, s.SyncCommit, s.KeepGrowth, s.StartFrom = sw.Workload, sw.SyncCommit, c.KeepGrowth, c.StartFrom
}

// runSweep runs the search of one sweep on s.
func runSweep(ctx context.Context, env *Env, s *probeServer, c *config.Search, label string, sw result.SweepKey, st start,
	onProbe func(result.Sweep)) (result.Sweep, error) {
	w, err := s.workload(ctx, sw.Workload, &c.Probe, sw.SyncCommit)
	if err != nil {
		return result.Sweep{}, err
	}
	p := &sweepProber{s: s, w: w, cfg: driverConfig(&c.Probe, sw.SyncCommit), live: newLiveLine(env, "  "+label+" ", c.Progress)}
	cfg := searchConfig(c)
	cfg.StartFrom, cfg.Estimate, cfg.Hold, cfg.PriorPool = st.knee, st.estimate, st.hold, st.pool
	cfg.Round, cfg.Earlier = st.round, st.earlier
	cfg.PoolScanMax = s.scanMax
	unit := result.RateUnit(sw.Workload) // rows/s for copy
	cfg.OnPoolProbe = func(conns int, rate float64) {
		env.say("%s: pool scan, %d connections at %.0f %s (overload: the throughput with every connection busy)", label, conns, rate, unit)
	}
	cfg.OnPoolPoint = func(pt result.PoolPoint) {
		sat := "every connection busy"
		if !pt.Saturated {
			sat = "not saturated"
		}
		if n := len(pt.Windows); n > 1 {
			env.say("%s: pool scan, %d connections again: %s %s committed, mean %s (%s)", label, pt.Conns,
				thousands.Format(pt.Windows[n-1], 0), unit, thousands.Format(pt.Achieved, 0), sat)
			return
		}
		env.say("%s: pool scan, %d connections: %s %s committed (%s)", label, pt.Conns, thousands.Format(pt.Achieved, 0), unit, sat)
	}
	cfg.OnPoolChosen = func(ps result.PoolScan) {
		if ps.Conns == ps.Best {
			env.say("%s: pool scan: %d connections, the best by the mean of its two windows", label, ps.Conns)
			return
		}
		env.say("%s: pool scan: %d connections, the smallest pool within %.0f %% of the best (%d connections) by the mean of its two windows", label, ps.Conns, 100*(1-ps.Within), ps.Best)
	}
	cfg.OnStart = func(n int, rate float64, b result.Bracket) {
		p.started = true
		s.metrics.searchProbe(n, b)
		env.say("%s: probe %d at %.0f %s, bracket %s", label, n, rate, unit, bracketText(b))
	}
	cfg.OnHold = func(rate float64, d time.Duration) {
		env.say("%s: holding %.0f %s for %v (a checkpoint cycle; shorter probes can miss its stalls)", label, rate, unit, d)
	}
	cfg.OnProbe = func(sw result.Sweep) {
		last := sw.Probes[len(sw.Probes)-1]
		p.live.end()
		from := ""
		if !p.started {
			from = " (from the resumed file)"
		}
		p.started = false
		s.metrics.judged(last.Verdict, sw.Bracket)
		p99 := "-" // nothing committed, nothing measured
		if last.Committed > 0 {
			p99 = fmt.Sprintf("%.1f ms", last.Latency.P99)
		}
		env.say("%s: probe %d at %.0f %s%s: %s: %s (achieved %.0f, p99 %s); bracket %s",
			label, len(sw.Probes), last.TargetRate, unit, from, last.Verdict, last.Reason, last.AchievedRate, p99,
			bracketText(sw.Bracket))
		onProbe(sw)
	}
	cfg.OnCalibrate = func(rate float64) {
		env.say("%s: calibrating at %.0f %s", label, rate, unit)
	}
	return search.Run(ctx, p, cfg, st.prior)
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

// sweepProber runs the driver's probes for one sweep, each prepared by the server's
// steps: it passes the search's error budget and trend stop to the driver, gives probe n
// of the search the seed + n (cfg has the seed), and shows the driver's live line.
type sweepProber struct {
	s    *probeServer
	w    workload.Workload
	cfg  driver.Config
	live *liveLine
	// started: OnStart announced the current probe (a probe reused from a resumed file
	// is not announced).
	started bool
}

var (
	_ search.LimitedProber = (*sweepProber)(nil)
	_ search.ShortProber   = (*sweepProber)(nil)
	_ search.PoolProber    = (*sweepProber)(nil)
)

// ProbePool is a pool-scan probe: prepared like every probe, shorter, with conns
// connections.
func (p *sweepProber) ProbePool(ctx context.Context, rate float64, conns int, warmup, measured time.Duration) (*result.Probe, error) {
	keep := p.cfg.Conns
	p.cfg.Conns = conns
	defer func() { p.cfg.Conns = keep }()
	return p.ProbeShort(ctx, rate, warmup, measured)
}

// UsePool sets the pool size of the probes that follow (the scan's choice).
func (p *sweepProber) UsePool(conns int) { p.cfg.Conns = conns }

func (p *sweepProber) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return p.ProbeWithLimits(ctx, rate, search.Limits{Budget: -1})
}

func (p *sweepProber) ProbeWithLimits(ctx context.Context, rate float64, l search.Limits) (*result.Probe, error) {
	d := p.cfg.Duration
	if l.Measured > 0 {
		d = l.Measured // the hold step
	}
	return p.run(ctx, rate, l, p.cfg.Warmup, d)
}

// ProbeShort is a calibration probe: prepared like every probe, shorter.
func (p *sweepProber) ProbeShort(ctx context.Context, rate float64, warmup, measured time.Duration) (*result.Probe, error) {
	pr, err := p.run(ctx, rate, search.Limits{Budget: -1}, warmup, measured)
	p.live.end()
	return pr, err
}

func (p *sweepProber) run(ctx context.Context, rate float64, l search.Limits, warmup, duration time.Duration) (*result.Probe, error) {
	p.s.probes++
	cfg := p.cfg
	cfg.Rate, cfg.Warmup, cfg.Duration = rate, warmup, duration
	// The driver's ErrorBudget 0 means "no early abort"; a budget of 0 errors is then
	// judged at the end of the probe instead.
	cfg.ErrorBudget = max(l.Budget, 0)
	cfg.StopIf = l.StopIf
	cfg.Seed += int64(p.s.probes)
	cfg.OnSecond = p.live.show
	return p.s.probe(ctx, p.w, cfg)
}
