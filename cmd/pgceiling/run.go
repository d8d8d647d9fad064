package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

func init() {
	register(command{name: "run", summary: "one probe: a fixed Poisson rate of one workload, measured exactly", run: runRun})
}

const runSynopsis = `Fires one workload at a fixed offered rate (open loop: Poisson arrivals that never wait
for a response) for a warm-up and a measured window, then prints the summary table and,
with --json, writes the result (--json - writes it to stdout and the table to stderr).
--fail-on-error-rate and --p99-slo are thresholds, like k6's: the result is written and
the command exits 3 when the probe breaks one. Latency runs from each arrival's intended start to the
end of COMMIT; an arrival not started within --pool-wait is rejected (pool_timeout).
Every arrival in the window ends committed, failed (by error class) or rejected, and the
committed count is checked against the rows the database gained. Ctrl-C stops early and
still writes the result, marked interrupted.

Without --dsn: a throwaway server, initialised with --rows rows first, removed afterwards.
With --dsn the schema must exist (pgceiling init).`

func runRun(ctx context.Context, env *Env, args []string) error {
	var c config.Run
	fs := newFlagSet(env, "run", runSynopsis)
	bindConn(fs, &c.Conn)
	config.BindRun(fs, &c)
	var fl config.Fleet
	config.BindFleet(fs, &fl, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(c.Scripts) > 0 && !fs.Changed("workload") {
		c.Workload = workload.CustomName
	}
	if err := fl.Validate(c.Conn.DSN != "" || env.Getenv(config.EnvDSN) != ""); err != nil {
		return err
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
	tuneGC(env, c.Conns)
	setOutput(env, &c.Output, c.JSON)
	if err := checkOutputs(c.JSON, c.SummaryJSON, ""); err != nil {
		return err
	}
	lm, err := startMetrics(env, "run", c.MetricsAddr)
	if err != nil {
		return err
	}
	defer lm.close()
	file := result.NewFile("run")
	file.CommandLine = redactArgs(env.Args)
	file.Config = config.Values(fs)

	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	env.atForcedExit(t.Close)
	p, disclosure, warnings, err := runProbe(ctx, env, &c, t, lm, fl)
	if err != nil {
		return err
	}
	file.Server = disclosure
	file.Warnings = warnings
	file.Sweeps = []result.Sweep{{Workload: p.Workload, SyncCommit: c.SyncCommit, Probes: []result.Probe{*p},
		ProbeMinutes: (p.WarmupS + p.MeasuredS) / 60}}
	file.Interrupted = p.Interrupted || env.Interrupted()
	file.FinishedAt = time.Now().UTC()
	maxErr := -1.0
	if c.FailOnErrorRate.Set {
		maxErr = c.FailOnErrorRate.V
	}
	th := result.Thresholds(p, maxErr, c.P99SLO)
	if err := writeText(env.text(), file, env.width(), c.Wide); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	for _, l := range thresholdLines(th) {
		fmt.Fprintln(env.text(), l)
	}
	if c.JSON != "" {
		if err := writeResults(env, c.JSON, file); err != nil {
			return err
		}
		if c.JSON != config.Stdout {
			env.say("pgceiling: result in %s", c.JSON)
		}
	}
	if err := writeSummary(env, c.SummaryJSON, file, th); err != nil {
		return err
	}
	where := ""
	if c.JSON != "" && c.JSON != config.Stdout {
		where = "; the result is in " + c.JSON
	}
	switch {
	case p.Error != "":
		return fmt.Errorf("%s%s", p.Error, strings.Replace(where, "the result", "the partial result", 1))
	case len(p.Checks.Problems) > 0:
		return fmt.Errorf("the probe's checks FAILED: %s", strings.Join(p.Checks.Problems, "; "))
	case file.Interrupted:
		return context.Canceled
	}
	return brokenThresholds(th, where)
}

// runProbe readies the server (schema, safety, pools, observer) and runs the probe.
func runProbe(ctx context.Context, env *Env, c *config.Run, t *target, lm *liveMetrics, fl config.Fleet) (*result.Probe, *result.Disclosure, []string, error) {
	plan := serverPlan{wallets: c.Wallets, syncOn: c.SyncCommit.On(), onBackfill: func(window time.Duration, rate float64) {
		env.say("pgceiling run: back-filling the last %v of payments at %g tx/s...", window, rate)
	}}
	if t.Embedded != nil {
		spec := schema.DefaultSpec()
		spec.Rows, spec.Zipf, spec.Seed = c.Rows, c.Zipf, c.Seed
		if c.Wallets > 0 {
			spec.Wallets = c.Wallets
		}
		plan.create = &spec
	}
	s, err := openProbeServer(ctx, env, t, &c.Probe, plan)
	defer s.close()
	if err != nil {
		return nil, nil, nil, err
	}
	s.metrics = lm
	ld, err := leadFleet(ctx, env, s, t, &c.Probe, fl, "pgceiling run")
	if err != nil {
		return nil, nil, nil, err
	}
	if ld != nil {
		defer ld.Close("the run ended")
	}
	w, err := s.workload(ctx, c.Workload, &c.Probe, c.SyncCommit)
	if err != nil {
		return nil, nil, nil, err
	}
	warnings := s.warnings
	if msg := c.Fraud.Warning(); msg != "" && c.Workload == "oltp" {
		warnings = append(warnings, msg)
		env.warnf("%s", msg)
	}
	env.say("pgceiling run: %s at %g %s, synchronous_commit=%s, %v warm-up + %v measured, %d connections",
		c.Workload, c.Rate, result.RateUnit(c.Workload), c.SyncCommit, c.Warmup, c.Duration, c.Conns)
	live := newLiveLine(env, "", c.Progress)
	cfg := driverConfig(&c.Probe, c.SyncCommit)
	cfg.Rate, cfg.OnSecond = c.Rate, live.show
	p, err := s.probe(ctx, w, cfg)
	live.end()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, context.Canceled
		}
		return nil, nil, nil, err
	}
	return p, s.disclosure, warnings, nil
}
