package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/config"
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
	register(command{name: "claim", summary: "check a claimed rate (a vendor's 100k inserts/s) for a duration, shape by shape", run: runClaim})
}

const claimSynopsis = `Does the server hold a claimed rate for a claimed duration? For each shape (--workload: insert, the bare one-row shape behind such claims, and the realistic oltp and transfer) one probe offers --rate for --for after --warmup, exactly as run does, and is judged by search's rule: (failed + rejected) / scheduled <= --max-error-rate, p99 <= --p99-slo when given, and steady. The verdict page gives per shape held or not, p99 at the rate, the bottleneck, and the server settings that differ from such claims' usual small print (fsync, synchronous_commit, full_page_writes, the indexes on the table, the batch size); --find-knee adds a short search per shape whose knee and interval are the margin. The copy shape reads --rate as rows/s (its arrivals are rows) and its page gives rows/s. Exit 0 when the claim holds for every shape, 3 when it does not (the results are still written).

Without --dsn: a throwaway server, initialised with --rows rows first, removed afterwards. With --dsn the schema must exist (pgceiling init); the data is put back as it was after each probe.`

func runClaim(ctx context.Context, env *Env, args []string) error {
	var c config.Claim
	fs := newFlagSet(env, "claim", claimSynopsis)
	bindConn(fs, &c.Conn)
	config.BindClaim(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.Validate(workload.Names()); err != nil {
		return err
	}
	if err := checkDSN(c.Conn, env); err != nil {
		return err
	}
	tuneGC(env, c.Conns)
	setOutput(env, &c.Progress, c.JSON)
	if err := config.CheckOutputFile("--json", c.JSON); err != nil {
		return err
	}
	lm, err := startMetrics(env, "claim", c.MetricsAddr)
	if err != nil {
		return err
	}
	defer lm.close()
	file := result.NewFile("claim")
	file.CommandLine = redactArgs(env.Args)
	file.Config = config.Values(fs)
	cl := &result.Claim{RateTxS: c.Rate, ForS: c.Duration.Seconds(), MaxErrorRate: c.MaxErrorRate,
		P99SLOMs: float64(c.P99SLO) / float64(time.Millisecond)}
	file.Claim = cl

	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	env.atForcedExit(t.Close)
	spec := schema.DefaultSpec()
	spec.Rows, spec.Zipf, spec.Seed = c.Rows, c.Zipf, c.Seed
	if c.Wallets > 0 {
		spec.Wallets = c.Wallets
	}
	s, err := openProbeServer(ctx, env, t, &c.Probe, serverPlan{create: &spec, wallets: c.Wallets, syncOn: c.SyncCommit.On(),
		restore: true, checkpoint: true})
	defer s.close()
	if err != nil {
		return err
	}
	s.metrics = lm
	file.Server = s.disclosure
	file.Warnings = append(file.Warnings, s.warnings...)
	env.say("pgceiling claim: %s%s for %v (after %v warm-up) with %s, synchronous_commit=%s, %d connections",
		claimRate(c.Rate), claimUnit(c.Workloads), c.Duration, c.Warmup, strings.Join(c.Workloads, ", "), c.SyncCommit, c.Conns)

	var runErr error
	for i, name := range c.Workloads {
		label := fmt.Sprintf("shape %d/%d %s", i+1, len(c.Workloads), name)
		sh, sw, err := claimShape(ctx, env, s, &c, label, name)
		if sw != nil {
			file.Sweeps = append(file.Sweeps, *sw)
		}
		if err != nil {
			runErr = err
			break
		}
		cl.Shapes = append(cl.Shapes, sh)
	}
	cl.Held = runErr == nil && len(cl.Shapes) == len(c.Workloads)
	for _, sh := range cl.Shapes {
		cl.Held = cl.Held && sh.Held
	}
	cl.Sentence = claimSentence(cl)
	file.FinishedAt = time.Now().UTC()
	switch {
	case runErr == nil:
	case ctx.Err() != nil || env.Interrupted():
		file.Interrupted = true
	default:
		file.Error = env.Scrub(runErr.Error())
	}
	if c.JSON != "" {
		if err := writeResults(env, c.JSON, file); err != nil {
			return err
		}
	}
	if file.Interrupted {
		return context.Canceled
	}
	if runErr != nil {
		return runErr
	}
	if err := report.WriteClaim(env.text(), file, env.width()); err != nil {
		return err
	}
	if c.JSON != "" && c.JSON != config.Stdout {
		env.say("pgceiling: results in %s", c.JSON)
	}
	if !cl.Held {
		var not []string
		for _, sh := range cl.Shapes {
			if !sh.Held {
				not = append(not, sh.Workload)
			}
		}
		return config.Thresholdf("claim: the server did not hold %s%s for %v with %s", claimRate(c.Rate), claimUnit(not), c.Duration, strings.Join(not, ", "))
	}
	return nil
}

// claimShape runs the claim's probe of one shape (and, with --find-knee, its short
// search) and judges it. The sweep holds the claim's probe, as a run's does.
func claimShape(ctx context.Context, env *Env, s *probeServer, c *config.Claim, label, name string) (result.ClaimShape, *result.Sweep, error) {
	sh := result.ClaimShape{Workload: name, SyncCommit: c.SyncCommit}
	w, err := s.workload(ctx, name, &c.Probe, c.SyncCommit)
	if err != nil {
		return sh, nil, err
	}
	judge := search.Config{MaxErrorRate: c.MaxErrorRate, P99SLO: c.P99SLO, Duration: c.Duration, Warmup: c.Warmup,
		PoolWait: c.PoolWait}
	u := " " + result.RateUnit(name) // rows/s for copy, whose arrivals are rows
	env.say("%s: %s%s for %v", label, claimRate(c.Rate), u, c.Duration)
	p := &sweepProber{s: s, w: w, cfg: driverConfig(&c.Probe, c.SyncCommit), live: newLiveLine(env, "  "+label+" ", c.Progress.Progress)}
	pr, err := p.ProbeWithLimits(ctx, c.Rate, search.Limits{Budget: search.Budget(c.MaxErrorRate, c.Rate, c.Duration),
		StopIf: judge.Steady.StopIf(c.PoolWait, c.Duration)})
	p.live.end()
	if err != nil {
		if ctx.Err() != nil {
			return sh, nil, context.Canceled
		}
		return sh, nil, err
	}
	sw := &result.Sweep{Workload: name, SyncCommit: c.SyncCommit, ProbeMinutes: (pr.WarmupS + pr.MeasuredS) / 60}
	if pr.Interrupted || ctx.Err() != nil {
		// Stopped by a signal: the probe is kept as it is, unjudged.
		sw.Probes = []result.Probe{*pr}
		return sh, sw, context.Canceled
	}
	pr.Verdict, pr.Reason = search.Judge(pr, judge)
	sw.Probes = []result.Probe{*pr}
	sh.Verdict, sh.Reason = pr.Verdict, pr.Reason
	sh.Held = pr.Verdict == result.Pass && len(pr.Checks.Problems) == 0
	if len(pr.Checks.Problems) > 0 {
		sh.Reason = strings.TrimPrefix(sh.Reason+"; checks failed: "+strings.Join(pr.Checks.Problems, "; "), "; ")
	}
	sh.AchievedTx, sh.ErrorRate, sh.P99Ms = pr.AchievedRate, pr.ErrorRate(), pr.Latency.P99
	if pr.Observation != nil {
		sh.Bottleneck = pr.Observation.Bottleneck
	}
	sh.Table = w.Table()
	batch := batchOf(w, pr)
	sh.Batch = batch.rows
	for _, tb := range s.disclosure.Tables {
		if tb.Name == sh.Table {
			sh.Indexes = tb.Indexes
		}
	}
	sh.SmallPrint = smallPrint(s.disclosure, c.SyncCommit, sh, batch)
	verdict := "held"
	if !sh.Held {
		verdict = "NOT held: " + sh.Reason
	}
	env.say("%s: %s (achieved %s%s, p99 %s ms)", label, verdict, claimRate(sh.AchievedTx), u, thousands.Format(sh.P99Ms, 1))
	if !c.FindKnee {
		return sh, sw, nil
	}
	ks, err := claimKnee(ctx, env, s, c, label, name)
	if err != nil {
		return sh, sw, err
	}
	sh.KneeSweep, sh.KneeTxS, sh.Interval = ks, ks.Knee, ks.Interval
	return sh, sw, nil
}

// claimKnee runs a short search of one shape: calibrated, 10 % precision, each edge
// probed once, probes of --knee-duration after at most 5 s of warm-up.
func claimKnee(ctx context.Context, env *Env, s *probeServer, c *config.Claim, label, name string) (*result.Sweep, error) {
	w, err := s.workload(ctx, name, &c.Probe, c.SyncCommit)
	if err != nil {
		return nil, err
	}
	pc := c.Probe
	pc.Warmup, pc.Duration = min(c.Warmup, 5*time.Second), c.KneeDuration
	p := &sweepProber{s: s, w: w, cfg: driverConfig(&pc, c.SyncCommit), live: newLiveLine(env, "  "+label+" knee ", c.Progress.Progress)}
	cfg := search.Config{Growth: 2, Precision: 0.1, MaxErrorRate: c.MaxErrorRate, P99SLO: c.P99SLO, Repeats: 1, MaxProbes: 16,
		Warmup: pc.Warmup, Duration: pc.Duration, PoolWait: c.PoolWait}
	cfg.OnProbe = func(sw result.Sweep) {
		p.live.end()
		last := sw.Probes[len(sw.Probes)-1]
		env.say("%s knee: probe %d at %s %s: %s", label, len(sw.Probes), claimRate(last.TargetRate), result.RateUnit(name), last.Verdict)
	}
	env.say("%s: a short search for its knee (%v probes)", label, pc.Duration)
	sw, err := search.Run(ctx, p, cfg, nil)
	p.live.end()
	sw.Workload, sw.SyncCommit = name, c.SyncCommit
	sw.Bottleneck, sw.BottleneckRate = observe.SweepBottleneck(&sw)
	if err != nil {
		if ctx.Err() != nil {
			return &sw, context.Canceled
		}
		return &sw, err
	}
	env.say("%s: knee %s", label, report.KneeText(sw))
	return &sw, nil
}

// batch is how many rows a shape writes at once, as the small print discloses it.
type batch struct {
	rows    int    // the most rows one statement or COPY writes (ClaimShape.Batch)
	here    string // what the small print says
	differs bool   // fewer than claims' hundreds of rows at once
}

// batchOf is the shape's batch: for copy, the most rows one COPY writes and how long a
// batch waits for them (--copy-batch, --copy-wait), with the mean the probe's batches
// had; for insert, the rows one statement writes (--batch, its RowsPerTx); for the other
// workloads one row per statement. It differs from the usual claim below 100 rows at
// once: copy's by the mean its probe made (at a low rate its batches close on the wait,
// with few rows each).
func batchOf(w workload.Workload, pr *result.Probe) batch {
	if _, ok := w.(workload.Copier); ok && pr.Copy != nil {
		c := pr.Copy
		wait := "no wait"
		if c.MaxWaitMs > 0 {
			wait = "at most " + thousands.Format(c.MaxWaitMs, 0) + " ms of wait"
		}
		b := batch{rows: c.MaxRows, here: fmt.Sprintf("COPY of up to %s, %s (--copy-batch, --copy-wait)", rowsText(c.MaxRows), wait)}
		b.differs = c.MaxRows < 100
		if c.Batches > 0 {
			b.here += fmt.Sprintf("; %s rows per COPY on average", thousands.Format(c.MeanRows, 0))
			b.differs = c.MeanRows < 100
		}
		return b
	}
	n := 1
	if r, ok := w.(workload.RowsPerTxer); ok && r.RowsPerTx() > 0 {
		n = r.RowsPerTx()
	}
	return batch{rows: n, here: rowsText(n) + " per statement", differs: n < 100}
}

// smallPrint sets the settings behind a shape's figure beside what claims of a bare
// insert rate usually run with: no fsync, no synchronous commit, no full-page writes, a
// table without secondary indexes, rows batched per statement or COPY.
func smallPrint(d *result.Disclosure, sync result.SyncCommit, sh result.ClaimShape, b batch) []result.SmallPrint {
	setting := func(name string) string {
		if d == nil || d.Settings[name] == "" {
			return "unknown"
		}
		return d.Settings[name]
	}
	out := []result.SmallPrint{
		{Setting: "fsync", Here: setting("fsync"), Claims: "off"},
		{Setting: "synchronous_commit", Here: string(sync) + syncScope(sh.Workload), Claims: "off"},
		{Setting: "full_page_writes", Here: setting("full_page_writes"), Claims: "off"},
		{Setting: "indexes on " + sh.Table, Here: fmt.Sprint(sh.Indexes), Claims: "the key's alone, or none"},
		{Setting: "batch", Here: b.here, Claims: "hundreds to thousands of rows per statement or COPY"},
	}
	out[0].Differs = out[0].Here == "on"
	out[1].Differs = sync.On()
	out[2].Differs = out[2].Here == "on"
	out[3].Differs = sh.Indexes > 1
	out[4].Differs = b.differs
	return out
}

// syncScope says where the shape sets synchronous_commit: insert and copy once per
// session (autocommit statements and COPY have no transaction to SET LOCAL in), the
// others in each transaction.
func syncScope(workload string) string {
	if workload == "insert" || workload == "copy" {
		return " (per session)"
	}
	return " (per transaction)"
}

func rowsText(n int) string {
	if n == 1 {
		return "1 row"
	}
	return thousands.Format(float64(n), 0) + " rows"
}

// claimSentence sets the bare vendor shape (insert) beside the realistic ones: "the
// server holds 62,000 single-row inserts/s; the same server's oltp knee is 3,100 tx/s".
// copy's rates are rows/s, the others' tx/s.
func claimSentence(cl *result.Claim) string {
	var parts []string
	r := claimRate(cl.RateTxS)
	for _, sh := range cl.Shapes {
		u := result.RateUnit(sh.Workload)
		knee := ""
		if sh.KneeTxS > 0 {
			knee = fmt.Sprintf("knee is %s %s", claimRate(sh.KneeTxS), u)
		}
		inserts := "single-row inserts/s"
		if sh.Batch > 1 {
			inserts = fmt.Sprintf("inserts/s of %s each", rowsText(sh.Batch))
		}
		var p string
		switch {
		case sh.Workload == "insert" && sh.Held:
			p = fmt.Sprintf("the server holds %s %s", r, inserts)
		case sh.Workload == "insert":
			p = fmt.Sprintf("the server does not hold %s %s (it committed %s/s)", r, inserts, claimRate(sh.AchievedTx))
		case knee != "":
			p = fmt.Sprintf("the same server's %s %s", sh.Workload, knee)
		case sh.Held && sh.Workload == "copy":
			p = fmt.Sprintf("it holds %s rows/s by COPY too", r)
		case sh.Held:
			p = fmt.Sprintf("it holds %s %s %s too", r, sh.Workload, u)
		default:
			p = fmt.Sprintf("%s committed %s of the %s %s offered", sh.Workload, claimRate(sh.AchievedTx), r, u)
		}
		if sh.Workload == "insert" && knee != "" {
			p += "; its insert " + knee
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// claimRate formats a rate as the claim's page does: whole numbers with thousands
// separators, one decimal for a fraction below 100.
func claimRate(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return thousands.Format(v, 1)
	}
	return thousands.Format(v, 0)
}

// claimUnit is the unit of the claimed rate over the shapes: tx/s, rows/s when copy is
// the only one (its arrivals are rows), "/s" when they differ.
func claimUnit(workloads []string) string {
	u := ""
	for _, w := range workloads {
		switch su := result.RateUnit(w); {
		case u == "":
			u = " " + su
		case " "+su != u:
			return "/s"
		}
	}
	return u
}
