package main

import (
	"context"
	"fmt"
	"io"
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

const claimSynopsis = `Does the server hold a claimed rate for a claimed duration? For each shape (--workload: insert, the bare one-row shape behind such claims, and the realistic oltp and transfer) one probe offers --rate for --for after --warmup, exactly as run does, and is judged by search's rule: (failed + rejected) / scheduled <= --max-error-rate, p99 <= --p99-slo when given, and steady. The verdict page gives per shape held or not, p99 at the rate, the bottleneck, and the server settings that differ from such claims' usual small print (fsync, synchronous_commit, full_page_writes, the indexes on the table, the batch size); --find-knee adds a short search per shape whose knee and interval are the margin. Exit 0 when the claim holds for every shape, 3 when it does not (the results are still written).

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
	env.say("pgceiling claim: %s tx/s for %v (after %v warm-up) with %s, synchronous_commit=%s, %d connections",
		claimRate(c.Rate), c.Duration, c.Warmup, strings.Join(c.Workloads, ", "), c.SyncCommit, c.Conns)

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
	writeClaimPage(env.text(), file, env.width())
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
		return config.Thresholdf("claim: the server did not hold %s tx/s for %v with %s", claimRate(c.Rate), c.Duration, strings.Join(not, ", "))
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
	env.say("%s: %s tx/s for %v", label, claimRate(c.Rate), c.Duration)
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
	sh.Batch = 1
	if b, ok := w.(interface{ BatchSize() int }); ok && b.BatchSize() > 0 {
		sh.Batch = b.BatchSize()
	}
	for _, tb := range s.disclosure.Tables {
		if tb.Name == sh.Table {
			sh.Indexes = tb.Indexes
		}
	}
	sh.SmallPrint = smallPrint(s.disclosure, c.SyncCommit, sh)
	verdict := "held"
	if !sh.Held {
		verdict = "NOT held: " + sh.Reason
	}
	env.say("%s: %s (achieved %s tx/s, p99 %s ms)", label, verdict, claimRate(sh.AchievedTx), thousands.Format(sh.P99Ms, 1))
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
		env.say("%s knee: probe %d at %s tx/s: %s", label, len(sw.Probes), claimRate(last.TargetRate), last.Verdict)
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

// smallPrint sets the settings behind a shape's figure beside what claims of a bare
// insert rate usually run with: no fsync, no synchronous commit, no full-page writes, a
// table without secondary indexes, rows batched per statement.
func smallPrint(d *result.Disclosure, sync result.SyncCommit, sh result.ClaimShape) []result.SmallPrint {
	setting := func(name string) string {
		if d == nil || d.Settings[name] == "" {
			return "unknown"
		}
		return d.Settings[name]
	}
	out := []result.SmallPrint{
		{Setting: "fsync", Here: setting("fsync"), Claims: "off"},
		{Setting: "synchronous_commit", Here: string(sync) + " (per transaction)", Claims: "off"},
		{Setting: "full_page_writes", Here: setting("full_page_writes"), Claims: "off"},
		{Setting: "indexes on " + sh.Table, Here: fmt.Sprint(sh.Indexes), Claims: "the key's alone, or none"},
		{Setting: "batch", Here: rowsText(sh.Batch) + " per statement", Claims: "hundreds to thousands of rows per statement or COPY"},
	}
	out[0].Differs = out[0].Here == "on"
	out[1].Differs = sync.On()
	out[2].Differs = out[2].Here == "on"
	out[3].Differs = sh.Indexes > 1
	out[4].Differs = sh.Batch < 100
	return out
}

func rowsText(n int) string {
	if n == 1 {
		return "1 row"
	}
	return thousands.Format(float64(n), 0) + " rows"
}

// claimSentence sets the bare vendor shape (insert) beside the realistic ones: "the
// server holds 62,000 single-row inserts/s; the same server's oltp knee is 3,100 tx/s".
func claimSentence(cl *result.Claim) string {
	var parts []string
	r := claimRate(cl.RateTxS)
	for _, sh := range cl.Shapes {
		knee := ""
		if sh.KneeTxS > 0 {
			knee = fmt.Sprintf("knee is %s tx/s", claimRate(sh.KneeTxS))
		}
		var p string
		switch {
		case sh.Workload == "insert" && sh.Held:
			p = fmt.Sprintf("the server holds %s single-row inserts/s", r)
		case sh.Workload == "insert":
			p = fmt.Sprintf("the server does not hold %s single-row inserts/s (it committed %s/s)", r, claimRate(sh.AchievedTx))
		case knee != "":
			p = fmt.Sprintf("the same server's %s %s", sh.Workload, knee)
		case sh.Held:
			p = fmt.Sprintf("it holds %s %s tx/s too", r, sh.Workload)
		default:
			p = fmt.Sprintf("%s committed %s of the %s tx/s offered", sh.Workload, claimRate(sh.AchievedTx), r)
		}
		if sh.Workload == "insert" && knee != "" {
			p += "; its insert " + knee
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// writeClaimPage prints the verdict page.
func writeClaimPage(w io.Writer, f *result.File, width int) {
	cl := f.Claim
	verdict := "HOLDS for every shape"
	if !cl.Held {
		verdict = "does NOT hold"
	}
	slo := ""
	if cl.P99SLOMs > 0 {
		slo = fmt.Sprintf(", p99 <= %s ms", thousands.Format(cl.P99SLOMs, 1))
	}
	claimLine(w, 0, fmt.Sprintf("pgceiling claim: %s tx/s for %v: %s (rule: errors <= %s%s, steady)",
		claimRate(cl.RateTxS), time.Duration(cl.ForS*float64(time.Second)), verdict, share(cl.MaxErrorRate), slo), width)
	if f.Server != nil {
		claimLine(w, 2, "server "+f.Server.Version, width)
	}
	for _, sh := range cl.Shapes {
		fmt.Fprintln(w)
		v := "held"
		if !sh.Held {
			v = "NOT held (" + string(sh.Verdict) + ")"
		}
		claimLine(w, 0, fmt.Sprintf("%s (synchronous_commit=%s): %s: achieved %s tx/s, errors %s, p99 %s ms",
			sh.Workload, sh.SyncCommit, v, claimRate(sh.AchievedTx), share(sh.ErrorRate), thousands.Format(sh.P99Ms, 1)), width)
		if !sh.Held && sh.Reason != "" {
			claimLine(w, 2, "why: "+sh.Reason, width)
		}
		if sh.Bottleneck != "" {
			claimLine(w, 2, "bottleneck: "+sh.Bottleneck, width)
		}
		if sh.KneeTxS > 0 {
			m := fmt.Sprintf("margin: knee %s; the claimed rate is %s× the knee", kneeOf(sh), thousands.Format(cl.RateTxS/sh.KneeTxS, 2))
			if iv := sh.Interval; iv != nil && cl.RateTxS >= iv.Lo && cl.RateTxS <= iv.Hi {
				m += ", inside its interval: another run may give the other verdict"
			}
			claimLine(w, 2, m, width)
		} else if sh.KneeSweep != nil {
			claimLine(w, 2, "margin: the short search found no knee ("+sh.KneeSweep.Stop+")", width)
		}
		var diff []string
		for _, sp := range sh.SmallPrint {
			if sp.Differs {
				diff = append(diff, fmt.Sprintf("%s %s (claims: %s)", sp.Setting, sp.Here, sp.Claims))
			}
		}
		if len(diff) > 0 {
			claimLine(w, 2, "unlike the usual claim: "+strings.Join(diff, "; "), width)
		}
	}
	fmt.Fprintln(w)
	claimLine(w, 0, "In short: "+cl.Sentence+".", width)
}

// claimLine prints s indented by indent, wrapped to width, continuation lines 4 further in.
func claimLine(w io.Writer, indent int, s string, width int) {
	pad := strings.Repeat(" ", indent)
	for i, l := range wrapWords(s, width-1-indent) {
		if i > 0 {
			l = "    " + l
		}
		fmt.Fprintln(w, pad+l)
	}
}

// share formats a fraction as a percentage with at most two decimals: "0.1 %", "10.52 %".
func share(v float64) string {
	s := strings.TrimRight(strings.TrimRight(thousands.Format(100*v, 2), "0"), ".")
	return s + " %"
}

func kneeOf(sh result.ClaimShape) string {
	return report.KneeText(result.Sweep{Knee: sh.KneeTxS, Interval: sh.Interval})
}

// claimRate formats tx/s as the reports do: whole numbers with thousands separators.
func claimRate(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return thousands.Format(v, 1)
	}
	return thousands.Format(v, 0)
}
