package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// Search is the configuration of `pgceiling search`: which sweeps to run (workloads ×
// synchronous_commit settings), the pass rule, the search's precision, each probe's
// shape, and where results go. Conn (--dsn) is bound by the command.
type Search struct {
	Conn        Conn
	Workloads   []string            // --workload, in the order given
	SyncCommits []result.SyncCommit // --sync-commit, in the order given
	Profile     string              // --profile quick|standard; "" = quick embedded, standard with --dsn

	StartRate    float64 // 0 = calibrate
	Growth       float64
	Precision    float64
	MaxErrorRate float64
	P99SLO       time.Duration
	Confirm      int
	Repeats      int    // each final edge is probed this many times in all; 0 = the profile's
	Rounds       int    // every sweep is searched this many rounds, one after the other; 0 = the profile's
	StartFrom    string // a results file whose knee starts the bracket (no calibration)
	MaxProbes    int
	// Hold is the final hold step's window (--hold): "auto" (one checkpoint cycle of the
	// server, see HoldWindow), "off", or a duration. "" = the profile's.
	Hold         string
	NoEarlyAbort bool
	// NoSteadyCheck judges probes by errors (and --p99-slo) only, without the not_steady
	// rule: for comparing with tools that have no such rule.
	NoSteadyCheck bool
	// CountLate counts commits later than the pool wait as errors (pgbench's rule).
	CountLate bool

	// Probe is every probe's shape; its warm-up and window default to the profile's.
	Probe
	KeepGrowth   bool
	NoCheckpoint bool

	Rows    int64 // prefill when the schema is missing
	Wallets int   // wallets to create when the schema is missing

	JSON   string // results file; default pgceiling-search-YYYYmmdd-HHMMSS.json
	Resume string // continue the search recorded in this results file
	Report string // also render the report into this directory
	Config string // --config file
	Output
}

// Profile is a preset of a search's probe length, precision and prefill size.
type Profile struct {
	Name      string
	Warmup    time.Duration
	Duration  time.Duration
	Precision float64
	Rows      int64
	Repeats   int // each final edge probed this many times in all
	Rounds    int // rounds of all the sweeps (--rounds)
	Hold      string
	Summary   string
}

// Profiles are the presets of --profile. standard is DESIGN.md's methodology (a full
// checkpoint cycle per probe, indexes larger than shared_buffers); quick is sized so the
// embedded four-sweep main job finishes in about five minutes on two cores.
var Profiles = []Profile{
	{Name: "quick", Warmup: 5 * time.Second, Duration: 15 * time.Second, Precision: 0.10, Rows: 1_000_000, Repeats: 2, Rounds: 2, Hold: HoldAuto,
		Summary: "5 s warm-up, 15 s probes, 10 % precision, edges probed twice in each of 2 rounds, the knee held for a checkpoint cycle, 1 M rows"},
	{Name: "standard", Warmup: 30 * time.Second, Duration: 7 * time.Minute, Precision: 0.05, Rows: 50_000_000, Repeats: 3, Rounds: 1, Hold: HoldAuto,
		Summary: "30 s warm-up, 7 min probes, 5 % precision, edges probed 3 times, 50 M rows: the methodology"},
}

// ProfileByName returns the named profile.
func ProfileByName(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

func profileNames() []string {
	var n []string
	for _, p := range Profiles {
		n = append(n, p.Name)
	}
	return n
}

// BindSearch adds search's flags (all but --dsn) to fs, bound to c. The flags a profile
// sets (--warmup, --duration, --precision, --rows) get the profile's values in
// ApplyProfile unless they were given.
func BindSearch(fs *pflag.FlagSet, c *Search) {
	fs.StringSliceVar(&c.Workloads, "workload", []string{"oltp", "transfer"}, "workloads to sweep (oltp, transfer, insert, copy; script with --script), comma-separated; copy's rates are rows/s")
	bindList(fs, &c.SyncCommits, "sync-commit", result.SyncCommits, "synchronous_commit settings to sweep (on, off), comma-separated")
	fs.StringVar(&c.Profile, "profile", "", "quick ("+Profiles[0].Summary+") or standard ("+Profiles[1].Summary+"); default quick without --dsn, standard with it; explicit flags override it")
	fs.Float64Var(&c.StartRate, "start-rate", 0, "first probe's rate in tx/s; 0 = calibrate with a short saturating probe")
	fs.Float64Var(&c.Growth, "growth", 2, "factor the rate grows by until a probe fails (after a calibration: 1 + 4 × precision)")
	fs.Float64Var(&c.Precision, "precision", 0, "stop bisecting when (hi - lo) / lo <= this (0 < p < 1); default from the profile")
	fs.Float64Var(&c.MaxErrorRate, "max-error-rate", result.DefaultMaxErrorRate, "a probe passes when (failed + rejected) / scheduled <= this")
	fs.DurationVar(&c.P99SLO, "p99-slo", 0, "a probe passes only if its p99 latency is <= this (0 = no latency rule)")
	fs.IntVar(&c.Confirm, "confirm", 0, "probe the final bracket's edges this many more times (on top of --repeats); the majority verdict counts, so the knee can move either way")
	fs.IntVar(&c.Repeats, "repeats", 0, "probe each final edge of the bracket this many times in all; the majority verdict per rate counts and feeds the knee's interval; default from the profile")
	fs.IntVar(&c.Rounds, "rounds", 0, "search every sweep this many rounds: once all sweeps have their knee, each is taken up again where it stopped and its bracket's edges are probed --repeats more times, minutes later; a machine that drifted meanwhile moves the knee (a tie fails) and widens the interval, fitted to every round's probes; the hold step comes in the last round; default from the profile")
	fs.StringVar(&c.StartFrom, "start-from", "", "start the bracket at the knees of this earlier results `FILE` instead of calibrating")
	fs.StringVar(&c.Hold, "hold", "", "after converging, probe the knee once more for this long; when that fails, step down by such holds alone until a rate holds with a failed hold within --precision above it: auto (the server's checkpoint_timeout + 1m, none when --duration already covers it), off, or a duration; default from the profile (auto)")
	fs.IntVar(&c.MaxProbes, "max-probes", 40, "most probes per sweep (retries and repeats included)")
	fs.BoolVar(&c.NoEarlyAbort, "no-early-abort", false, "run failing probes to the end instead of stopping them once their errors exceed the budget")
	fs.BoolVar(&c.NoSteadyCheck, "no-steady-check", false, "judge probes by errors (and --p99-slo) only, without the not_steady rule (growing queue wait); to compare with pgbench")
	fs.BoolVar(&c.CountLate, "count-late", false, "also count commits that finished later than --pool-wait after their intended start as errors (pgbench's --latency-limit rule: on time to start, too late to finish); default: only failed and rejected arrivals count, and late commits are reported")
	c.Probe.Bind(fs, true)
	fs.BoolVar(&c.KeepGrowth, "keep-growth", false, "let the tables grow across probes instead of restoring the data before each probe")
	fs.BoolVar(&c.NoCheckpoint, "no-checkpoint", false, "do not CHECKPOINT before each probe")
	fs.Int64Var(&c.Rows, "rows", 0, "transactions rows to prefill when the schema is missing; default from the profile")
	fs.IntVar(&c.Wallets, "wallets", 10_000, "wallets to create when the schema is missing")
	fs.StringVar(&c.JSON, "json", "", "results `FILE`, rewritten after every probe (default pgceiling-search-YYYYmmdd-HHMMSS.json; with --resume, the resumed file; - = stdout at the end, the text then goes to stderr)")
	fs.StringVar(&c.Resume, "resume", "", "continue the search recorded in this results `FILE`, reusing its probes")
	fs.StringVar(&c.Report, "report", "", "also write the report (tables, charts, HTML) into this `DIR` (checked writable before the search)")
	c.Output.Bind(fs, 5*time.Second)
	bindConfigFlag(fs, &c.Config)
}

// ApplyProfile resolves --profile (quick without a DSN, standard with one, unless given)
// and sets each of the profile's flags that was given neither on the command line nor in
// the config file. It also fills the default results file name from now.
func (c *Search) ApplyProfile(fs *pflag.FlagSet, haveDSN bool, now time.Time) error {
	if c.Profile == "" {
		c.Profile = "quick"
		if haveDSN {
			c.Profile = "standard"
		}
	}
	p, ok := ProfileByName(c.Profile)
	if !ok {
		return OneOf("--profile", c.Profile, profileNames())
	}
	set := func(name, v string) {
		if fl := fs.Lookup(name); fl != nil && !fl.Changed {
			_ = fl.Value.Set(v)
		}
	}
	set("warmup", p.Warmup.String())
	set("duration", p.Duration.String())
	set("precision", strconv.FormatFloat(p.Precision, 'g', -1, 64))
	set("rows", strconv.FormatInt(p.Rows, 10))
	set("repeats", strconv.Itoa(p.Repeats))
	set("rounds", strconv.Itoa(p.Rounds))
	set("hold", p.Hold)
	if c.JSON == "" {
		c.JSON = c.Resume
	}
	if c.JSON == "" {
		c.JSON = now.Format("pgceiling-search-20060102-150405.json")
	}
	return nil
}

// Validate reports every problem with the configuration at once. workloads are the valid
// workload names.
func (c *Search) Validate(workloads []string) error {
	var p Problems
	if len(c.Workloads) == 0 {
		p.Addf("--workload: give at least one of %s", strings.Join(workloads, ", "))
	}
	checkWorkloadList(&p, c.Workloads, workloads)
	c.Probe.checkScriptWorkload(&p, c.Workloads)
	if len(c.SyncCommits) == 0 {
		p.Addf("--sync-commit: give on, off or both")
	}
	seenSync := map[result.SyncCommit]bool{}
	for _, s := range c.SyncCommits {
		if checkSyncCommit(&p, s) && seenSync[s] {
			p.Addf("--sync-commit: %s given twice", s)
		}
		seenSync[s] = true
	}
	if _, ok := ProfileByName(c.Profile); !ok && c.Profile != "" {
		p.Addf("--profile: %v", OneOf("profile", c.Profile, profileNames()))
	}
	checkRate(&p, "--start-rate", c.StartRate, true)
	if !(c.Growth > 1) {
		p.Addf("--growth must be > 1, got %v", c.Growth)
	}
	if !(c.Precision > 0 && c.Precision < 1) {
		p.Addf("--precision must be between 0 and 1 (0.05 = 5 %%), got %v", c.Precision)
	}
	if !(c.MaxErrorRate >= 0 && c.MaxErrorRate < 1) {
		p.Addf("--max-error-rate must be >= 0 and < 1 (0.001 = 0.1 %%), got %v", c.MaxErrorRate)
	}
	if c.P99SLO < 0 {
		p.Addf("--p99-slo must be >= 0, got %v", c.P99SLO)
	}
	if c.Confirm < 0 {
		p.Addf("--confirm must be >= 0, got %d", c.Confirm)
	}
	if c.Repeats < 0 {
		p.Addf("--repeats must be >= 0, got %d", c.Repeats)
	}
	if c.Rounds < 0 {
		p.Addf("--rounds must be >= 0, got %d", c.Rounds)
	}
	if _, err := c.HoldWindow("5min"); err != nil {
		p.Addf("%v", err)
	}
	if c.StartFrom != "" && c.StartRate > 0 {
		p.Addf("--start-from and --start-rate both set the first rate: give one")
	}
	if c.MaxProbes < 1 {
		p.Addf("--max-probes must be >= 1, got %d", c.MaxProbes)
	}
	c.Probe.Check(&p)
	checkBatch(&p, c.Batch, c.Workloads)
	checkCopy(&p, c.Workloads, &c.Probe)
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	if c.Wallets < 2 {
		p.Addf("--wallets must be >= 2 (transfer moves money between two wallets), got %d", c.Wallets)
	}
	c.Output.Check(&p, c.JSON)
	return p.Err()
}

// HoldAuto is --hold's default: one checkpoint cycle of the server.
const HoldAuto = "auto"

// HoldMargin is what --hold auto adds to checkpoint_timeout: the prepared probe starts
// right after a CHECKPOINT, so the next timed checkpoint begins about checkpoint_timeout
// later (max_wal_size can bring it sooner), and the hold must run into it.
const HoldMargin = time.Minute

// HoldWindow is the hold step's measured window given the server's checkpoint_timeout
// setting as the server shows it ("5min"): 0 for off, and for auto when each probe's
// window already covers checkpoint_timeout + HoldMargin.
func (c *Search) HoldWindow(checkpointTimeout string) (time.Duration, error) {
	switch c.Hold {
	case "off", "0", "":
		return 0, nil
	case HoldAuto:
		ct, err := PGDuration(checkpointTimeout)
		if err != nil {
			return 0, fmt.Errorf("--hold auto: the server's checkpoint_timeout: %w", err)
		}
		if w := ct + HoldMargin; c.Duration < w {
			return w, nil
		}
		return 0, nil
	}
	d, err := time.ParseDuration(c.Hold)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("--hold must be auto, off or a duration of at least 1s (e.g. 6m), got %q", c.Hold)
	}
	return d, nil
}

// PGDuration parses a time setting as PostgreSQL shows it: a number with a unit of us,
// ms, s, min, h or d ("5min", "30s").
func PGDuration(v string) (time.Duration, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, fmt.Errorf("%q is not a duration with a unit", v)
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[strings.TrimSpace(v[i:])]
	if err != nil || unit == 0 {
		return 0, fmt.Errorf("%q is not a duration with a unit", v)
	}
	return time.Duration(n * float64(unit)), nil
}

// checkWorkloadList records each --workload name that is not one of valid, or given twice.
func checkWorkloadList(p *Problems, given, valid []string) {
	seen := map[string]bool{}
	for _, w := range given {
		if err := OneOf("workload", w, valid); err != nil {
			p.Addf("--workload: %v", err)
		} else if seen[w] {
			p.Addf("--workload: %s given twice", w)
		}
		seen[w] = true
	}
}

// Sweeps lists the sweeps to run in order: each workload with each synchronous_commit
// setting.
func (c *Search) Sweeps() []result.SweepKey {
	var out []result.SweepKey
	for _, w := range c.Workloads {
		for _, s := range c.SyncCommits {
			out = append(out, result.SweepKey{Workload: w, SyncCommit: s})
		}
	}
	return out
}

// SweepsOn reports whether any sweep runs with synchronous_commit on (the safety check
// then also refuses a server whose default is off).
func (c *Search) SweepsOn() bool { return slices.Contains(c.SyncCommits, result.SyncOn) }

// String describes the search in one line, for progress output.
func (c *Search) String() string {
	hold := ", no hold step"
	if c.Hold != "" && c.Hold != "off" && c.Hold != "0" {
		hold = ", hold " + c.Hold
	}
	pool := "pool scanned (--conns auto)"
	if c.Conns > 0 {
		pool = fmt.Sprintf("%d connections", c.Conns)
	}
	rounds := ""
	if c.Rounds > 1 {
		rounds = fmt.Sprintf(" in each of %d rounds", c.Rounds)
	}
	late := ""
	if c.CountLate {
		late = " (late commits counted)"
	}
	return fmt.Sprintf("profile %s: %v warm-up + %v probes, precision %g, edges probed %d times%s%s, %s, max error rate %g%s",
		c.Profile, c.Warmup, c.Duration, c.Precision, max(c.Repeats, 1), rounds, hold, pool, c.MaxErrorRate, late)
}
