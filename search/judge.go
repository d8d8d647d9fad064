package search

import (
	"fmt"
	"sort"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Steady-state defaults (see SteadyRule).
const (
	// DefaultSteadyMinGrowth is the smallest rise of the per-second queue wait (or
	// scheduler lag) between the first and last quarter of the measured window that can
	// make a probe not_steady: below it, growth is noise next to a transaction's latency.
	DefaultSteadyMinGrowth = 25 * time.Millisecond
	// DefaultSteadyRatio is the relative rise (last quarter against first) that, together
	// with the absolute one, makes a probe not_steady: 1 means "more than doubled".
	DefaultSteadyRatio = 1.0
	// MinSteadySeconds is the shortest measured series the rule judges; shorter probes
	// (cut short, or a tiny --duration) are not judged for steadiness.
	MinSteadySeconds = 8
	// FaultConnectionShare is the share of a probe's failed and rejected arrivals that
	// must be connection errors for the probe to count as a server fault rather than a fail.
	FaultConnectionShare = 0.5
)

// SteadyRule decides whether a probe's measured window was in steady state.
//
// The measured seconds of the per-second series are split into quarters. For queue wait
// (per-second p99) and for scheduler lag separately, m1 is the median of the first
// quarter and m4 the median of the last. The probe is not steady when, for either
// series, m4 - m1 > max(MinGrowth, Ratio × m1). Medians make one stall (a checkpoint, an
// autovacuum) in the last quarter harmless; the absolute floor keeps millisecond noise
// out; the ratio asks for a real trend, not a level. A probe with fewer than
// MinSteadySeconds measured seconds is not judged.
type SteadyRule struct {
	MinGrowth time.Duration // default DefaultSteadyMinGrowth
	Ratio     float64       // default DefaultSteadyRatio
	Off       bool          // judge by errors (and the SLO) only, e.g. to compare with pgbench
}

func (r SteadyRule) withDefaults() SteadyRule {
	if r.MinGrowth <= 0 {
		r.MinGrowth = DefaultSteadyMinGrowth
	}
	if r.Ratio <= 0 {
		r.Ratio = DefaultSteadyRatio
	}
	return r
}

// Check returns "" when the series is steady (or too short to judge), else the reason.
func (r SteadyRule) Check(series []result.Second) string {
	if r.Off {
		return ""
	}
	r = r.withDefaults()
	var qw, lag []float64
	for _, s := range series {
		if s.Phase == result.PhaseMeasure {
			qw = append(qw, s.QueueWaitP99Ms)
			lag = append(lag, s.SchedLagMs)
		}
	}
	if len(qw) < MinSteadySeconds {
		return ""
	}
	minMs := float64(r.MinGrowth) / float64(time.Millisecond)
	for _, x := range []struct {
		name string
		v    []float64
	}{{"queue wait", qw}, {"scheduler lag", lag}} {
		q := len(x.v) / 4
		m1, m4 := median(x.v[:q]), median(x.v[len(x.v)-q:])
		if m4-m1 > max(minMs, r.Ratio*m1) {
			return fmt.Sprintf("%s kept growing through the measured window: median p99 %.1f ms in the first quarter, %.1f ms in the last",
				x.name, m1, m4)
		}
	}
	return ""
}

func driverReason(p *result.Probe) string {
	if p.DriverLimitReason == "" {
		return "the driver could not keep up"
	}
	return p.DriverLimitReason
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Judge gives a probe its verdict and a one-line reason, in this order:
//
//   - fault: the probe could not complete (Error set), or at least FaultConnectionShare
//     of its failed and rejected arrivals (and more than the error budget) were
//     connection errors: the server went away, which says nothing about its ceiling
//     (retried once, then the search stops);
//   - fail: (failed + rejected) / scheduled > MaxErrorRate, or the probe was cut short
//     by its error budget — even when the driver also reports it was behind: its lag
//     (tens of milliseconds) cannot make arrivals wait the pool wait (a second), so the
//     rejections are the server's; the reason then mentions the driver;
//   - driver_limited: the driver, not the server, was the limit of a probe that met the
//     error rule (neither pass nor fail: retried once, then the search stops and says
//     so); the SLO is not judged then, since lag inflates latency;
//   - fail: p99 > P99SLO when an SLO is given;
//   - not_steady: the error rate and SLO were met but queue wait or scheduler lag kept
//     growing (SteadyRule): a longer probe at this rate would fail;
//   - pass.
func Judge(p *result.Probe, cfg Config) (verdict, reason string) {
	if p.Error != "" {
		return result.Fault, "probe error: " + p.Error
	}
	bad := p.FailedAndRejected()
	if conn := p.Failed[result.Connection]; bad > 0 && float64(conn) >= FaultConnectionShare*float64(bad) &&
		float64(bad) > cfg.MaxErrorRate*float64(p.Scheduled) {
		return result.Fault, fmt.Sprintf("%d of %d failed arrivals were connection errors", conn, bad)
	}
	also := ""
	if p.DriverLimited {
		also = " (the driver was behind too: " + driverReason(p) + ")"
	}
	if p.CutShort {
		r := p.CutReason
		if r == "" {
			r = "errors exceeded the probe's budget"
		}
		return result.Fail, fmt.Sprintf("cut short after %.0f s: %s%s", p.MeasuredS, r, also)
	}
	if p.Scheduled == 0 {
		return result.Fault, "nothing was scheduled in the measured window"
	}
	if er := p.ErrorRate(); er > cfg.MaxErrorRate {
		return result.Fail, fmt.Sprintf("error rate %.3g%% > %.3g%% (%d failed, %d rejected of %d)%s",
			100*er, 100*cfg.MaxErrorRate, p.Failed.Total(), p.Rejected, p.Scheduled, also)
	}
	if cfg.P99SLO > 0 && !p.DriverLimited {
		slo := float64(cfg.P99SLO) / float64(time.Millisecond)
		if p.Latency.P99 > slo {
			return result.Fail, fmt.Sprintf("p99 %.1f ms > SLO %.1f ms", p.Latency.P99, slo)
		}
	}
	if p.DriverLimited {
		return result.DriverLimited, driverReason(p)
	}
	if r := cfg.Steady.Check(p.Series); r != "" {
		return result.NotSteady, r
	}
	return result.Pass, fmt.Sprintf("error rate %.3g%%, p99 %.1f ms", 100*p.ErrorRate(), p.Latency.P99)
}
