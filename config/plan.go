package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Plan is the configuration of `pgceiling plan RESULTS.json`: today's traffic, its growth,
// the peak factor, which workloads, and where the JSON goes.
type Plan struct {
	Current    Rate    // --current: today's rate, tx/s
	Growth     Growth  // --growth: a year's growth, compounding
	PeakFactor float64 // --peak-factor: today's peak = current × this
	Workloads  []string
	JSON       string // "" none, "-" stdout (the text then goes to stderr), else a file
}

// Bind adds plan's flags to fs.
func (c *Plan) Bind(fs *pflag.FlagSet) {
	fs.Var(&c.Current, "current", "today's rate of the workload's transactions, e.g. 800/s or 800 (tx/s); required")
	fs.Var(&c.Growth, "growth", "how fast the traffic grows, compounding: 40%/year, 40% (a year), 3%/month or 0.4; required")
	fs.Float64Var(&c.PeakFactor, "peak-factor", 1, "today's peak is --current times this (1: --current is the peak)")
	fs.StringSliceVar(&c.Workloads, "workload", nil, "plan only these workloads (comma-separated); default every workload in the file")
	fs.StringVar(&c.JSON, "json", "", "also write the plan as JSON to this `FILE` (- = stdout, the text then goes to stderr)")
}

// Validate reports every problem at once.
func (c *Plan) Validate() error {
	var p Problems
	if !c.Current.Given {
		p.Addf("--current is required: today's rate, e.g. --current 800/s")
	}
	if !c.Growth.Given {
		p.Addf("--growth is required: e.g. --growth 40%%/year (0 for none)")
	}
	if !(c.PeakFactor >= 1) || math.IsInf(c.PeakFactor, 0) || c.PeakFactor > 1000 {
		p.Addf("--peak-factor must be a number from 1 to 1000 (today's peak over --current), got %v", c.PeakFactor)
	}
	return p.Err()
}

// Rate is a rate in transactions per second given as "800", "800/s" or "800 tx/s".
type Rate struct {
	V     float64
	Given bool
}

// ParseRate reads a rate in tx/s: "800", "800/s", "800tx/s", "800 tx/s"; it must be a
// finite number > 0.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	for _, suffix := range []string{"tx/s", "/s"} {
		if strings.HasSuffix(t, suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a rate > 0 in tx/s such as 800/s or 800, got %q", s)
	}
	return v, nil
}

func (r *Rate) String() string {
	if r == nil || !r.Given {
		return ""
	}
	return strconv.FormatFloat(r.V, 'g', -1, 64) + "/s"
}

// Set parses the flag's value.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	r.V, r.Given = v, true
	return nil
}

// Type names the value in --help.
func (*Rate) Type() string { return "rate" }

// Growth is a yearly growth as a fraction (0.4 = 40 %/year), compounding.
type Growth struct {
	PerYear float64
	Given   bool
}

// ParseGrowth reads a growth: "40%/year" ("/yr", "/y" too), "40%" (a year), "3%/month"
// ("/mo"; compounded to a year), or a fraction "0.4". It must be above -100 %.
func ParseGrowth(s string) (float64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(strings.ToLower(s)), " ", "")
	periods := 1.0
	for _, u := range []struct {
		suffix string
		n      float64
	}{{"/year", 1}, {"/yr", 1}, {"/y", 1}, {"/month", 12}, {"/mo", 12}} {
		if strings.HasSuffix(t, u.suffix) {
			t, periods = strings.TrimSuffix(t, u.suffix), u.n
			break
		}
	}
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= -1 || v > 100 {
		return 0, fmt.Errorf("want a growth such as 40%%/year, 40%%, 3%%/month or 0.4 (above -100%%), got %q", s)
	}
	return math.Pow(1+v, periods) - 1, nil
}

func (g *Growth) String() string {
	if g == nil || !g.Given {
		return ""
	}
	return strconv.FormatFloat(100*g.PerYear, 'g', 4, 64) + "%/year"
}

// Set parses the flag's value.
func (g *Growth) Set(s string) error {
	v, err := ParseGrowth(s)
	if err != nil {
		return err
	}
	g.PerYear, g.Given = v, true
	return nil
}

// Type names the value in --help.
func (*Growth) Type() string { return "growth" }
