// Command refit prints each sweep's knee with its interval fitted again, by the current
// search.KneeInterval, from the probes a results file recorded — so results files made
// before a change of the interval's method can be read with the new one — and, given two
// or more files, for each pair of runs of the same sweep, whether each one's knee and
// estimate lie inside the other's interval and its repeat interval (where a second run's
// estimate lands 9 times in 10) and whether the two intervals overlap: the repeatability
// check, counted over pairs of sweeps that both finished (converged).
//
// Usage, from anywhere inside the module:
//
//	go run ./bench/refit [-window SECONDS] FILE.json [FILE.json ...]
//
// The reference window is the sweep's hold window (hold_s) once a hold ran, else its
// probes' measured window, as pgceiling search takes it; -window sets one for every
// sweep, so searches made with different probe lengths answer the same question ("which
// rate does a probe of SECONDS pass half the time?"). Rates are tx/s (rows/s for copy).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// fitted is one sweep of one file, its interval fitted again.
type fitted struct {
	path, name string // the file as given, and its base name (the path where two share one)
	sw         result.Sweep
	iv         *result.Interval
}

func main() {
	fs := flag.NewFlagSet("refit", flag.ContinueOnError)
	window := fs.Float64("window", 0, "reference window in seconds for every sweep (0: each sweep's own)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/refit [-window SECONDS] FILE.json [FILE.json ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() < 1 || *window < 0 {
		fs.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, fs.Args(), *window); err != nil {
		fmt.Fprintln(os.Stderr, "refit:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, files []string, fixed float64) error {
	var all []fitted
	for _, f := range files {
		name := filepath.Base(f)
		if slices.ContainsFunc(files, func(g string) bool { return g != f && filepath.Base(g) == name }) {
			name = f
		}
		rf, err := result.Read(f)
		if err != nil {
			return err
		}
		for _, sw := range rf.Sweeps {
			all = append(all, fitted{path: f, name: name, sw: sw, iv: search.Refit(sw, fixed)})
		}
	}
	fmt.Fprintln(w, "| file | sweep | knee | held | refitted: a probe of the window passes half the time at | 90 % interval | a repeat's estimate (90 %) | window | start or checkpoint worth | recorded interval |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, a := range all {
		est, iv, repeat, win, ev := "-", "-", "-", "-", "-"
		if a.iv != nil {
			est, iv, win = fmt.Sprintf("%.0f", a.iv.Midpoint), fmt.Sprintf("%.0f-%.0f", a.iv.Lo, a.iv.Hi), fmt.Sprintf("%.0f s", a.iv.WindowS)
			repeat = fmt.Sprintf("%.0f-%.0f", a.iv.RepeatLo, a.iv.RepeatHi)
			ev = fmt.Sprintf("%.0f s", a.iv.EventS)
		}
		rec := "-"
		if r := a.sw.Interval; r != nil {
			rec = fmt.Sprintf("%.0f-%.0f", r.Lo, r.Hi)
		}
		fmt.Fprintf(w, "| %s | %s %s | %.0f | %v | %s | %s | %s | %s | %s | %s |\n", a.name, a.sw.Workload, a.sw.SyncCommit,
			a.sw.Knee, a.sw.Held, est, iv, repeat, win, ev, rec)
	}
	if len(files) < 2 {
		return nil
	}
	// Each pair of runs once: is each one's knee (and estimate) inside the other's
	// interval, and do the intervals overlap? Two correct 90 % intervals of one server
	// overlap about 98 times in 100, while a second run's estimate falls inside the first's
	// interval only about 3 times in 4, and inside its repeat interval 9 times in 10
	// (docs/methodology.md, "Two runs of the same server").
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| sweep | A | B | A's knee in B's interval | B's knee in A's | A's estimate in B's | B's estimate in A's | A's estimate in B's repeat interval | B's in A's | intervals overlap |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	var knees, estimates, repeats, overlaps count
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.path == b.path || a.sw.Workload != b.sw.Workload || a.sw.SyncCommit != b.sw.SyncCommit || a.iv == nil || b.iv == nil {
				continue
			}
			// A sweep that did not finish (interrupted, stopped in its hold or after its
			// first round) is shown but not counted: its knee is not the search's answer.
			done := a.sw.Converged && b.sw.Converged
			ab, ba := knees.add(done, in(a.sw.Knee, b.iv)), knees.add(done, in(b.sw.Knee, a.iv))
			eab, eba := estimates.add(done, in(a.iv.Midpoint, b.iv)), estimates.add(done, in(b.iv.Midpoint, a.iv))
			rab, rba := repeats.add(done, b.iv.RepeatContains(a.iv.Midpoint)), repeats.add(done, a.iv.RepeatContains(b.iv.Midpoint))
			ov := overlaps.add(done, a.iv.Overlaps(b.iv))
			note := ""
			if !done {
				note = " (a sweep did not finish: not counted)"
			}
			fmt.Fprintf(w, "| %s %s%s | %s: %.0f (%.0f: %.0f-%.0f) | %s: %.0f (%.0f: %.0f-%.0f) | %v | %v | %v | %v | %v | %v | %v |\n",
				a.sw.Workload, a.sw.SyncCommit, note, a.name, a.sw.Knee, a.iv.Midpoint, a.iv.Lo, a.iv.Hi,
				b.name, b.sw.Knee, b.iv.Midpoint, b.iv.Lo, b.iv.Hi, ab, ba, eab, eba, rab, rba, ov)
		}
	}
	fmt.Fprintf(w, "\nOf the pairs of finished sweeps:\n%d of %d knees inside the other file's interval\n", knees.yes, knees.n)
	fmt.Fprintf(w, "%d of %d estimates inside the other file's interval\n", estimates.yes, estimates.n)
	fmt.Fprintf(w, "%d of %d estimates inside the other file's repeat interval\n", repeats.yes, repeats.n)
	fmt.Fprintf(w, "%d of %d pairs of intervals overlap\n", overlaps.yes, overlaps.n)
	return nil
}

// in says whether rate lies inside iv (a knee of 0, a sweep that found none, never does).
func in(rate float64, iv *result.Interval) bool { return rate > 0 && iv.Contains(rate) }

// count counts yes answers of n questions.
type count struct{ yes, n int }

// add counts answer b when counted is true; it returns b.
func (c *count) add(counted, b bool) bool {
	if !counted {
		return b
	}
	c.n++
	if b {
		c.yes++
	}
	return b
}
