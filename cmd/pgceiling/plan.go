package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/plan"
	"github.com/pgceiling/pgceiling/result"
)

func init() {
	register(command{name: "plan", summary: "turn a search's knees into headroom, a date, and what sharding by wallet would buy", run: runPlan})
}

const planSynopsis = `Usage: pgceiling plan RESULTS.json --current 800/s --growth 40%/year [--peak-factor 3] [--workload W]

Reads a search's results file and, per workload, sets today's peak (--current × --peak-factor) against the knee and its interval: the headroom, the month the peak reaches the knee under compound growth (a range from the interval's ends; "already past", or "never" at no growth), what limits it (the bottleneck line), the levers the search measured (the synchronous_commit off/on knee ratio; the connection count if it varied), and what sharding by wallet would buy given the measured skew: the bound no number of shards lifts the ceiling past, and the shard count beyond which adding shards buys nothing, with its assumptions. Pure arithmetic on the file: no server.`

func runPlan(_ context.Context, env *Env, args []string) error {
	var c config.Plan
	fs := newFlagSet(env, "plan", planSynopsis)
	c.Bind(fs)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "%s\n\nFlags:\n%s", reflow(planSynopsis, env.width()), fs.FlagUsagesWrapped(env.width()))
	}
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return config.Usagef("plan: which results file? (usage: pgceiling plan RESULTS.json --current 800/s --growth 40%%/year)")
	case 1:
	default:
		return config.Usagef("plan: one results file at a time, got %d (%q ...)", fs.NArg(), fs.Arg(1))
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if err := config.CheckOutputFile("--json", c.JSON); err != nil {
		return err
	}
	env.textToStderr = c.JSON == config.Stdout
	name := fs.Arg(0)
	f, err := result.Read(name)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	p, err := plan.Make(f, plan.Options{Current: c.Current.V, PeakFactor: c.PeakFactor, Growth: c.Growth.PerYear,
		Workloads: c.Workloads, Now: time.Now().UTC(), Source: name})
	if errors.Is(err, plan.ErrNoKnees) || (err != nil && len(c.Workloads) > 0) {
		return config.Usagef("plan: %v", err)
	}
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if err := plan.WriteText(env.text(), p, env.width()); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	switch c.JSON {
	case "":
	case config.Stdout:
		return writeJSON(env.Stdout, p)
	default:
		var b bytes.Buffer
		if err := writeJSON(&b, p); err != nil {
			return err
		}
		if err := result.WriteFileAtomic(c.JSON, b.Bytes()); err != nil {
			return fmt.Errorf("plan --json: %w", err)
		}
	}
	return nil
}
