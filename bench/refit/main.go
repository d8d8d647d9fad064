// Command refit prints each sweep's knee with its interval fitted again, by the current
// search.KneeInterval, from the probes a results file recorded — so results files made
// before a change of the interval's method can be read with the new one — and, given two
// or more files, whether each file's knee lies inside every other file's interval for
// the same sweep: the repeatability check "a second run falls inside".
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

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// fitted is one sweep of one file, its interval fitted again.
type fitted struct {
	file string
	sw   result.Sweep
	iv   *result.Interval
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
		rf, err := result.Read(f)
		if err != nil {
			return err
		}
		for _, sw := range rf.Sweeps {
			window := fixed
			if window == 0 {
				window = search.ReferenceWindow(sw.Probes, sw.HoldS, 0)
			}
			all = append(all, fitted{file: filepath.Base(f), sw: sw, iv: search.KneeInterval(sw.Probes, window)})
		}
	}
	fmt.Fprintln(w, "| file | sweep | knee | held | refitted: a probe of the window passes half the time at | 90 % interval | window | recorded interval |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, a := range all {
		est, iv, win := "-", "-", "-"
		if a.iv != nil {
			est, iv, win = fmt.Sprintf("%.0f", a.iv.Midpoint), fmt.Sprintf("%.0f-%.0f", a.iv.Lo, a.iv.Hi), fmt.Sprintf("%.0f s", a.iv.WindowS)
		}
		rec := "-"
		if r := a.sw.Interval; r != nil {
			rec = fmt.Sprintf("%.0f-%.0f", r.Lo, r.Hi)
		}
		fmt.Fprintf(w, "| %s | %s %s | %.0f | %v | %s | %s | %s | %s |\n", a.file, a.sw.Workload, a.sw.SyncCommit,
			a.sw.Knee, a.sw.Held, est, iv, win, rec)
	}
	if len(files) < 2 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| sweep | knee of | inside the refitted interval of | knee | interval | inside |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	inside, pairs := 0, 0
	for _, a := range all {
		for _, b := range all {
			if a.file == b.file || a.sw.Workload != b.sw.Workload || a.sw.SyncCommit != b.sw.SyncCommit || b.iv == nil || a.sw.Knee == 0 {
				continue
			}
			in := a.sw.Knee >= b.iv.Lo && a.sw.Knee <= b.iv.Hi
			pairs++
			if in {
				inside++
			}
			fmt.Fprintf(w, "| %s %s | %s | %s | %.0f | %.0f-%.0f | %v |\n", a.sw.Workload, a.sw.SyncCommit, a.file, b.file,
				a.sw.Knee, b.iv.Lo, b.iv.Hi, in)
		}
	}
	fmt.Fprintf(w, "\n%d of %d knees inside the other file's interval\n", inside, pairs)
	return nil
}
