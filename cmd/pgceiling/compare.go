package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgceiling/pgceiling/compare"
	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/report"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

func init() {
	register(command{name: "compare", summary: "set two results files side by side; fail a pipeline on a regression", run: runCompare})
}

const compareSynopsis = `Usage: pgceiling compare A.json B.json [--fail-if-knee-drops 10%] [--fail-if-p99-rises 20%] [--report DIR] [--refit]

Sets two results files of the same command side by side: per sweep the knee, its interval and bracket, the p99 at the knee and the bottleneck (for run and claim files, whose sweeps are single probes, the offered and achieved rates, errors and p99; rates in rows/s for copy), then the server settings and flags that differ. With a gate, a regression of B against A past it makes the command exit 3 (0 otherwise), so a pipeline can fail a release on it: a knee (a run's achieved rate) that dropped by more than --fail-if-knee-drops, or is missing, or a p99 that rose by more than --fail-if-p99-rises. --refit fits the knee intervals of both files again from their recorded probes with this version's method, so files made before a change of the method (the logistic fit of files before 2026-12-05) compare on one.`

func runCompare(_ context.Context, env *Env, args []string) error {
	var c config.Compare
	fs := newFlagSet(env, "compare", compareSynopsis)
	c.Bind(fs)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "%s\n\nFlags:\n%s", reflow(compareSynopsis, env.width()), fs.FlagUsagesWrapped(env.width()))
	}
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return config.Usagef("compare: want two results files, got %d (usage: pgceiling compare A.json B.json [flags])", fs.NArg())
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if err := config.CheckOutputDir("--report", c.Report); err != nil {
		return err
	}
	nameA, nameB := fs.Arg(0), fs.Arg(1)
	var files [2]*result.File
	for i, name := range []string{nameA, nameB} {
		f, err := result.Read(name)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		if c.Refit && f.Command == "search" {
			for j := range f.Sweeps {
				f.Sweeps[j].Interval = search.Refit(f.Sweeps[j], 0)
			}
		}
		files[i] = f
	}
	var opt compare.Options
	opt.KneeDrop, opt.P99Rise = c.Gates()
	cmp, err := compare.Compare(files[0], files[1], nameA, nameB, opt)
	if err != nil {
		return config.Usagef("compare: %v", err)
	}
	if err := cmp.WriteText(env.Stdout, env.width(), c.Wide); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if c.Report != "" {
		paths, err := report.WriteCompare(c.Report, files[0], files[1], nameA, nameB)
		if err != nil {
			return fmt.Errorf("compare --report: %w", err)
		}
		env.say("pgceiling compare: %d charts in %s", len(paths)/2, c.Report)
	}
	if len(cmp.Broken) > 0 {
		return config.Thresholdf("compare: %d regression(s): %s", len(cmp.Broken), strings.Join(cmp.Broken, "; "))
	}
	return nil
}
