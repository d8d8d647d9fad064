package config

import (
	"time"

	"github.com/spf13/pflag"
)

// Inspect is the configuration of `pgceiling inspect`, which prints the server disclosure.
// Conn is bound by the CLI's shared --dsn flag.
type Inspect struct {
	Conn Conn
	// JSON prints the disclosure as JSON instead of tables.
	JSON bool
	// ConfigFile is the --config file of `name = value` lines.
	ConfigFile string
}

// Bind adds inspect's own flags (--json, --config) to fs.
func (c *Inspect) Bind(fs *pflag.FlagSet) {
	fs.BoolVar(&c.JSON, "json", false, "print the disclosure as JSON")
	bindConfigFlag(fs, &c.ConfigFile)
}

// Safety is the guard-rail flag of every probe (Probe): a server with fsync=off,
// full_page_writes=off or a global synchronous_commit=off (while sweeping "on") is refused
// unless the user says otherwise.
type Safety struct {
	AllowUnsafeServer bool
}

// Bind adds --allow-unsafe-server to fs.
func (s *Safety) Bind(fs *pflag.FlagSet) {
	fs.BoolVar(&s.AllowUnsafeServer, "allow-unsafe-server", false,
		"measure a server with fsync=off, full_page_writes=off or a global synchronous_commit=off anyway; the results and every report page carry the warning")
}

// Observe holds how run and search watch the server during each probe.
type Observe struct {
	// SampleInterval is the time between two wait-event samples of pg_stat_activity.
	SampleInterval time.Duration
}

// The bounds of --sample-interval: faster sampling costs the server, slower sampling
// leaves too few samples in a probe to attribute its bottleneck.
const (
	MinSampleInterval = 10 * time.Millisecond
	MaxSampleInterval = 10 * time.Second
)

// Bind adds --sample-interval (default 100ms) to fs.
func (o *Observe) Bind(fs *pflag.FlagSet) {
	fs.DurationVar(&o.SampleInterval, "sample-interval", 100*time.Millisecond,
		"time between two wait-event samples of pgceiling's backends during a probe")
}

// Check records a problem when SampleInterval is out of bounds.
func (o *Observe) Check(p *Problems) {
	if o.SampleInterval < MinSampleInterval || o.SampleInterval > MaxSampleInterval {
		p.Addf("--sample-interval %s: want between %s and %s", o.SampleInterval, MinSampleInterval, MaxSampleInterval)
	}
}
