package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

func init() {
	register(command{name: "run", summary: "one probe: a fixed Poisson rate of one workload, measured exactly", run: runRun})
}

const runSynopsis = `Fires one workload at a fixed offered rate (open loop: Poisson arrivals that never wait
for a response) for a warm-up and a measured window, then prints the summary table and,
with --json, writes the result. Latency runs from each arrival's intended start to the
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
	if c.JSON != "" {
		if err := result.CheckWritable(c.JSON); err != nil {
			return err
		}
	}
	file := result.NewFile("run")
	file.CommandLine = redactArgs(env.Args)
	file.Config = config.Values(fs)

	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	env.atForcedExit(t.Close)
	p, disclosure, warnings, err := runProbe(ctx, env, &c, t)
	if err != nil {
		return err
	}
	file.Server = disclosure
	file.Warnings = warnings
	file.Sweeps = []result.Sweep{{Workload: p.Workload, SyncCommit: c.SyncCommit, Probes: []result.Probe{*p},
		ProbeMinutes: (p.WarmupS + p.MeasuredS) / 60}}
	file.Interrupted = p.Interrupted || env.Interrupted()
	file.FinishedAt = time.Now().UTC()
	if err := report.WriteText(env.Stdout, file); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if c.JSON != "" {
		if err := result.Write(c.JSON, file); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "pgceiling: result in %s\n", c.JSON)
	}
	switch {
	case p.Error != "":
		where := ""
		if c.JSON != "" {
			where = "; the partial result is in " + c.JSON
		}
		return fmt.Errorf("%s%s", p.Error, where)
	case len(p.Checks.Problems) > 0:
		return fmt.Errorf("the probe's checks FAILED: %s", strings.Join(p.Checks.Problems, "; "))
	case file.Interrupted:
		return context.Canceled
	}
	return nil
}

// runProbe prepares the server (schema, safety, pool, observer) and runs the probe.
func runProbe(ctx context.Context, env *Env, c *config.Run, t *target) (*result.Probe, *result.Disclosure, []string, error) {
	cfgDB, admin, err := t.dial(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if t.Embedded != nil {
		spec := schema.DefaultSpec()
		spec.Rows, spec.Zipf, spec.Seed = c.Rows, c.Zipf, c.Seed
		if c.Wallets > 0 {
			spec.Wallets = c.Wallets
		}
		if err := ensureSchema(ctx, env, cfgDB, admin, spec); err != nil {
			return nil, nil, nil, err
		}
	}
	spec, err := schema.Check(ctx, admin)
	if err != nil {
		return nil, nil, nil, err
	}
	baseline, err := schema.TakeBaseline(ctx, admin)
	if err != nil {
		return nil, nil, nil, err
	}
	wallets := spec.Wallets
	if c.Wallets > 0 {
		if c.Wallets > spec.Wallets {
			return nil, nil, nil, config.Usagef("--wallets %d: the schema has only %d wallets", c.Wallets, spec.Wallets)
		}
		wallets = c.Wallets
	}
	local := observe.LocalInfo{}
	if t.Embedded != nil {
		local = observe.LocalInfo{PostmasterPID: t.Embedded.PID(), Embedded: true}
	}
	disclosure, err := observe.Disclose(ctx, admin, local)
	if err != nil {
		return nil, nil, nil, err
	}
	warnings := observe.Unsafe(disclosure, c.SyncCommit.On())
	if err := observe.RefuseUnsafe(warnings, c.Safety.AllowUnsafeServer); err != nil {
		return nil, nil, nil, err
	}
	w, err := workload.New(c.Workload, workload.Params{Wallets: wallets, Zipf: c.Zipf, SyncCommit: c.SyncCommit.On(),
		FraudWindow: c.Fraud.Window, FraudLimit: c.Fraud.Limit})
	if err != nil {
		return nil, nil, nil, config.Usagef("%v", err)
	}
	if msg := c.Fraud.Warning(); msg != "" && c.Workload == "oltp" {
		warnings = append(warnings, msg)
		fmt.Fprintf(env.Stderr, "pgceiling: warning: %s\n", msg)
	}
	pool, err := driver.NewPool(ctx, t.DSN, driverSession(c.Session), c.Conns, execModes[c.ExecMode])
	if err != nil {
		return nil, nil, nil, err
	}
	defer pool.Close()
	books, err := t.adminPool(ctx) // survives a restart, unlike the admin session
	if err != nil {
		return nil, nil, nil, err
	}
	defer books.Close()
	sampler, err := observe.NewSampler(ctx, samplerOptions(t.DSN, &c.Probe, local))
	if err != nil {
		return nil, nil, nil, err
	}
	defer sampler.Close(context.WithoutCancel(ctx))

	// The fraud window's recent history, at this probe's rate and skew, anchored now: the
	// check reads from the first second what it reads in steady state.
	var bf *result.Backfill
	if rh, ok := w.(workload.HistoryReader); ok && !c.Fraud.NoBackfill {
		window, limit := rh.RecentHistory()
		fmt.Fprintf(env.Stderr, "pgceiling run: back-filling the last %v of payments at %g tx/s...\n", window, c.Rate)
		b, err := schema.Backfill(ctx, books, schema.BackfillSpec{Rate: c.Rate, Window: window, Limit: limit,
			Wallets: wallets, Zipf: c.Zipf, Seed: c.Seed})
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, nil, context.Canceled
			}
			return nil, nil, nil, err
		}
		bf = &b
	}
	fmt.Fprintf(env.Stderr, "pgceiling run: %s at %g tx/s, synchronous_commit=%s, %v warm-up + %v measured, %d connections\n",
		c.Workload, c.Rate, c.SyncCommit, c.Warmup, c.Duration, c.Conns)
	prog := &progress{env: env}
	cfg := driverConfig(&c.Probe, c.SyncCommit)
	cfg.Rate, cfg.Observer, cfg.OnSecond, cfg.CountRows = c.Rate, sampler, prog.show, schema.Counter(books, baseline)
	p, err := driver.Run(ctx, pool, w, cfg)
	prog.end()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, context.Canceled
		}
		return nil, nil, nil, err
	}
	p.Backfill = bf
	observe.Finish(p)
	return p, disclosure, warnings, nil
}

// progress draws the live line: in place every second on a terminal, else a plain line
// every 10 s.
type progress struct {
	env  *Env
	last time.Time
	live bool
}

func (p *progress) show(_ result.Second, l driver.Live) {
	if !p.env.TTY && !p.last.IsZero() && time.Since(p.last) < 10*time.Second {
		return
	}
	p.last = time.Now()
	line := fmt.Sprintf("%5.0fs %-7s offered %7.0f/s achieved %7.0f/s p99 %8.1f ms queue %5d errors %d",
		l.Elapsed.Seconds(), l.Phase, l.OfferedRate, l.AchievedRate, l.P99Ms, l.Queue, l.Errors)
	if p.env.TTY {
		fmt.Fprintf(p.env.Stderr, "\r\033[K%s", line)
		p.live = true
	} else {
		fmt.Fprintln(p.env.Stderr, line)
	}
}

func (p *progress) end() {
	if p.live {
		fmt.Fprintln(p.env.Stderr)
		p.live = false
	}
}
