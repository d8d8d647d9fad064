package config

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// Claim is the configuration of `pgceiling claim`: the claimed rate and duration, the
// shapes to hold it with, the pass rule, the optional short search per shape, and every
// probe's shape (Probe, whose measured window is --for). Conn (--dsn) is bound by the
// command.
type Claim struct {
	Conn       Conn
	Rate       float64  // --rate: the claimed rate, tx/s
	Workloads  []string // --workload, in the order given
	SyncCommit result.SyncCommit
	Probe      // Duration is --for

	MaxErrorRate float64
	P99SLO       time.Duration
	FindKnee     bool
	KneeDuration time.Duration // measured window of each probe of the short search

	Wallets int   // 0 = the schema's (10,000 when made here)
	Rows    int64 // prefill when the schema is missing

	JSON     string
	Progress Output // only Progress and Quiet: claim has no --wide or --summary-json
}

// BindClaim adds claim's flags (all but --dsn) to fs, bound to c. The probe's measured
// window is --for (the claim's duration), not --duration.
func BindClaim(fs *pflag.FlagSet, c *Claim) {
	fs.Float64Var(&c.Rate, "rate", 0, "the claimed rate per second (Poisson arrivals): transactions, or rows for the copy shape; required")
	fs.StringSliceVar(&c.Workloads, "workload", []string{"insert", "oltp", "transfer"}, "shapes to hold the claim with, comma-separated (insert is the bare shape behind such claims; oltp and transfer the realistic ones)")
	bindChoice(fs, &c.SyncCommit, "sync-commit", result.SyncOn, "synchronous_commit of each transaction: on or off")
	probe := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	c.Probe.Bind(probe, false)
	probe.VisitAll(func(f *pflag.Flag) {
		if f.Name == "duration" {
			g := *f
			g.Name, g.Usage, g.DefValue = "for", "the claimed duration: each shape's probe holds the rate this long, measured, after --warmup; required", "0s"
			fs.AddFlag(&g)
			return
		}
		fs.AddFlag(f)
	})
	c.Duration = 0
	fs.Float64Var(&c.MaxErrorRate, "max-error-rate", result.DefaultMaxErrorRate, "the claim holds when (failed + rejected) / scheduled <= this")
	fs.DurationVar(&c.P99SLO, "p99-slo", 0, "the claim holds only if each shape's p99 latency is <= this (0 = no latency rule)")
	fs.BoolVar(&c.FindKnee, "find-knee", false, "also run a short search per shape and report its knee with its interval as the margin")
	fs.DurationVar(&c.KneeDuration, "knee-duration", 15*time.Second, "with --find-knee: the measured window of each probe of the short search")
	fs.IntVar(&c.Wallets, "wallets", 0, "wallets to pick from; 0 = all of the schema's (10,000 when the schema is created here)")
	fs.Int64Var(&c.Rows, "rows", 200_000, "transactions rows to prefill when the schema is missing (the embedded server)")
	fs.StringVar(&c.JSON, "json", "", "write the results file (the claim's verdicts in its claim section) to this JSON `FILE` (- = stdout, the text then goes to stderr)")
	fs.BoolVarP(&c.Progress.Quiet, "quiet", "q", false, "print only the verdict page: no progress lines (warnings and errors still go to stderr)")
	fs.Var(seconds{&c.Progress.Progress}, "progress", "`N` seconds between two progress lines when stderr is not a terminal (a terminal redraws its line every second)")
	c.Progress.Progress = 10 * time.Second
	fs.Lookup("progress").DefValue = "10"
}

// Validate reports every problem at once. workloads are the valid workload names.
func (c *Claim) Validate(workloads []string) error {
	var p Problems
	checkRate(&p, "--rate", c.Rate, false)
	if len(c.Workloads) == 0 {
		p.Addf("--workload: give at least one shape")
	}
	checkWorkloadList(&p, c.Workloads, workloads)
	checkSyncCommit(&p, c.SyncCommit)
	d := c.Duration
	if d < time.Second || d > MaxWindow {
		if d == 0 {
			p.Addf("--for is required: the claimed duration, e.g. --for 10m")
		} else {
			p.Addf("--for must be between 1s and %v, got %v", MaxWindow, d)
		}
		c.Duration = time.Second // checked here, not again as --duration
	}
	c.Probe.Check(&p)
	c.Duration = d
	if !(c.MaxErrorRate >= 0 && c.MaxErrorRate < 1) {
		p.Addf("--max-error-rate must be >= 0 and < 1 (0.001 = 0.1 %%), got %v", c.MaxErrorRate)
	}
	if c.P99SLO < 0 {
		p.Addf("--p99-slo must be >= 0 (0 = no latency rule), got %v", c.P99SLO)
	}
	if c.KneeDuration < time.Second || c.KneeDuration > MaxWindow {
		p.Addf("--knee-duration must be between 1s and %v, got %v", MaxWindow, c.KneeDuration)
	}
	if c.Wallets < 0 {
		p.Addf("--wallets must be >= 0 (0 = the schema's), got %d", c.Wallets)
	}
	if c.Rows < 1 {
		p.Addf("--rows must be >= 1, got %d", c.Rows)
	}
	if c.Progress.Progress < time.Second || c.Progress.Progress > time.Hour {
		p.Addf("--progress must be between 1 and 3600 seconds, got %v", c.Progress.Progress.Seconds())
	}
	return p.Err()
}
