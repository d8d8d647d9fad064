package config

import (
	"time"

	"github.com/spf13/pflag"
)

// Fraud is oltp's fraud check, shared by run and search: how far back it counts the
// wallet's payments and the most it counts ("more than N payments in the window?"), and
// whether each probe starts with the window's history back-filled.
type Fraud struct {
	Window time.Duration
	Limit  int64
	// NoBackfill starts probes without the recent history the fraud window would hold in
	// steady state (for comparison with the seed's method; the check then warms up
	// during the probe).
	NoBackfill bool
}

// Defaults of the fraud check (workload.DefaultFraudWindow and DefaultFraudLimit hold the
// same values; config does not import workload). Why: with 10,000 Zipf-1.0 wallets and a
// one-hour window every wallet reaches 20 payments above about 550 tx/s, so each check
// reads 20 recent index entries at any rate and any probe length.
const (
	DefaultFraudWindow = time.Hour
	DefaultFraudLimit  = 20
	// MaxFraudWindow bounds --fraud-window: init's history ends this long before init, so
	// the window only ever holds a probe's own recent history.
	MaxFraudWindow = 24 * time.Hour
)

// Bind adds --fraud-window, --fraud-limit and --no-backfill to fs.
func (f *Fraud) Bind(fs *pflag.FlagSet) {
	fs.DurationVar(&f.Window, "fraud-window", DefaultFraudWindow,
		"oltp's fraud check counts the wallet's payments of this last period (at most 24h)")
	fs.Int64Var(&f.Limit, "fraud-limit", DefaultFraudLimit,
		"oltp's fraud check counts at most this many payments (a velocity rule); 0 = the seed's unbounded count, which has no steady state")
	fs.BoolVar(&f.NoBackfill, "no-backfill", false,
		"do not back-fill the fraud window's recent history before each probe (the check then warms up during the probe)")
}

// Check records problems with the fraud settings.
func (f *Fraud) Check(p *Problems) {
	if f.Window <= 0 || f.Window > MaxFraudWindow {
		p.Addf("--fraud-window must be > 0 and <= %v, got %v", MaxFraudWindow, f.Window)
	}
	if f.Limit < 0 {
		p.Addf("--fraud-limit must be >= 0 (0 = unbounded), got %d", f.Limit)
	}
}

// Warning is the line to show when the settings give oltp no steady state, else "".
func (f *Fraud) Warning() string {
	if f.Limit == 0 {
		return "--fraud-limit 0: oltp's fraud check counts every payment of the window, so its cost grows with every payment of the hot wallets: it has no steady state, and knees depend on the probe length"
	}
	return ""
}
