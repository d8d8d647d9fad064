package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// Stdout is the file name that means standard output (--json -, --summary-json -).
const Stdout = "-"

// Output is how run and search show their progress and what they write besides --json:
// the interval of plain progress lines, quiet and wide text, and the short summary file.
type Output struct {
	// Progress is the time between two plain progress lines when stderr is not a terminal
	// (on a terminal the line is redrawn every second).
	Progress time.Duration
	// Quiet prints only the summary: no progress, no announcements (warnings and errors
	// still go to stderr).
	Quiet bool
	// Wide prints the text tables whole instead of fitting them to the terminal's width.
	Wide bool
	// SummaryJSON is where the short summary goes (result.Summary): a file, "-" for
	// stdout, "" for none.
	SummaryJSON string
}

// Bind adds --progress, --quiet, --wide and --summary-json to fs; every is the default
// interval of plain progress lines.
func (o *Output) Bind(fs *pflag.FlagSet, every time.Duration) {
	fs.Var(seconds{&o.Progress}, "progress", "`N` seconds between two progress lines when stderr is not a terminal (a terminal redraws its line every second)")
	o.Progress = every
	fs.Lookup("progress").DefValue = seconds{&o.Progress}.String()
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "print only the summary: no progress lines (warnings and errors still go to stderr)")
	fs.BoolVar(&o.Wide, "wide", false, "print tables whole instead of fitting them to the terminal's width ($COLUMNS, else 100)")
	fs.StringVar(&o.SummaryJSON, "summary-json", "", "also write a short summary (per sweep: knee, interval, bracket, p99, bottleneck) as JSON to `FILE` (- = stdout)")
}

// Check records every problem with the output flags; json is the --json value (both
// cannot be stdout).
func (o *Output) Check(p *Problems, json string) {
	if o.Progress < time.Second || o.Progress > time.Hour {
		p.Addf("--progress must be between 1 and 3600 seconds, got %v", o.Progress.Seconds())
	}
	if json == Stdout && o.SummaryJSON == Stdout {
		p.Addf("--json - and --summary-json - both want stdout: send one of them to a file")
	}
}

// ToStdout reports whether a machine-readable output (--json or --summary-json) goes to
// stdout; the human text then goes to stderr.
func (o *Output) ToStdout(json string) bool { return json == Stdout || o.SummaryJSON == Stdout }

// seconds is a duration flag given in whole or fractional seconds ("5", "0.5"), or as a
// Go duration ("5s").
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil {
		return ""
	}
	return strconv.FormatFloat(s.d.Seconds(), 'f', -1, 64)
}

func (s seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e6 {
			return fmt.Errorf("want a number of seconds, got %q", v)
		}
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a number of seconds (5) or a duration (5s), got %q", v)
	}
	*s.d = d
	return nil
}

func (seconds) Type() string { return "seconds" }

// CheckOutputFile verifies before any work that flag's results file can be written at
// path: a directory, a missing directory or an unwritable one is refused now, not after a
// 40-minute search. "-" (stdout) and "" (none) pass.
func CheckOutputFile(flag, path string) error {
	if path == "" || path == Stdout {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s is a directory: give a file name, e.g. %s", flag, path, filepath.Join(path, "results.json"))
	}
	if err := result.CheckWritable(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// CheckOutputDir verifies before any work that flag's directory can be written: it exists
// and is a writable directory, or it can be created (its nearest existing parent is a
// writable directory).
func CheckOutputDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	probe := dir
	for {
		st, err := os.Stat(probe)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s %s: %s is not a directory", flag, dir, probe)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s %s: %v", flag, dir, errors.Unwrap(err))
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return fmt.Errorf("%s %s: no existing parent directory", flag, dir)
		}
		probe = parent
	}
	tmp, err := os.CreateTemp(probe, ".pgceiling-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: directory %s is not writable: %v", flag, dir, probe, errors.Unwrap(err))
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// ParseRatio reads a share given as a percentage ("10%", "0.1 %") or as a fraction
// ("0.1"), for thresholds such as --fail-if-knee-drops and --fail-on-error-rate.
func ParseRatio(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("want a share such as 10%% or 0.1, got %q", s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}

// Ratio is an optional share flag (ParseRatio): Set reports whether it was given.
type Ratio struct {
	V   float64
	Set bool
}

// ratioValue binds a Ratio to pflag; unset, --help shows no default.
type ratioValue struct{ r *Ratio }

func (r ratioValue) String() string {
	if r.r == nil || !r.r.Set {
		return ""
	}
	return strconv.FormatFloat(r.r.V, 'g', -1, 64)
}

func (r ratioValue) Set(s string) error {
	v, err := ParseRatio(s)
	if err != nil {
		return err
	}
	r.r.V, r.r.Set = v, true
	return nil
}

func (ratioValue) Type() string { return "share" }

// BindRatio adds an optional share flag to fs.
func BindRatio(fs *pflag.FlagSet, r *Ratio, name, usage string) {
	fs.Var(ratioValue{r}, name, usage)
}
