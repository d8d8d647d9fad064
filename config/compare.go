package config

import (
	"github.com/spf13/pflag"
)

// Compare is the configuration of `pgceiling compare A B`: the regression gates, the
// overlay charts' directory and the text's width.
type Compare struct {
	KneeDrop Ratio  // --fail-if-knee-drops: B's knee below A's by more than this share
	P99Rise  Ratio  // --fail-if-p99-rises: B's p99 at the knee above A's by more than this share
	Report   string // overlay charts into this directory
	Wide     bool
	Refit    bool // fit each search sweep's knee interval again from its probes
}

// Bind adds compare's flags to fs.
func (c *Compare) Bind(fs *pflag.FlagSet) {
	BindRatio(fs, &c.KneeDrop, "fail-if-knee-drops", "exit 3 when a knee of B (a run's achieved rate) is below A's by more than this `SHARE` (10% or 0.1), or missing")
	BindRatio(fs, &c.P99Rise, "fail-if-p99-rises", "exit 3 when a p99 at the knee of B (a run's p99) is above A's by more than this `SHARE` (20% or 0.2)")
	fs.StringVar(&c.Report, "report", "", "also write overlay charts of the two files (PNG and SVG) into this `DIR`")
	fs.BoolVar(&c.Refit, "refit", false, "fit every search sweep's knee interval again from the probes its file recorded, with this version's method, so files made before a change of the method compare on one")
	fs.BoolVar(&c.Wide, "wide", false, "print tables whole instead of fitting them to the terminal's width ($COLUMNS, else 100)")
}

// Validate reports every problem with the gates at once.
func (c *Compare) Validate() error {
	var p Problems
	if c.KneeDrop.Set && c.KneeDrop.V >= 1 {
		p.Addf("--fail-if-knee-drops must be a share below 100%%, got %v", c.KneeDrop.V)
	}
	return p.Err()
}

// Gates returns the gates as shares, -1 for a gate not given.
func (c *Compare) Gates() (kneeDrop, p99Rise float64) {
	kneeDrop, p99Rise = -1, -1
	if c.KneeDrop.Set {
		kneeDrop = c.KneeDrop.V
	}
	if c.P99Rise.Set {
		p99Rise = c.P99Rise.V
	}
	return kneeDrop, p99Rise
}
