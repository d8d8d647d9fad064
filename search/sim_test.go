package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/pgceiling/pgceiling/result"
)

// sim is a simulated server for the search's tests: a fluid queue of capacity C tx/s
// (times a per-probe noise factor) fed by Poisson arrivals, stepped second by second
// through warm-up and measured window. Arrivals that would wait longer than the pool wait
// are rejected; latency p99 grows like base/(1-ρ) plus the queue wait. It honours an
// early-abort budget, and has variants whose capacity decays during a probe (not
// steady), that report driver_limited above a rate, and that fault on chosen calls.
type sim struct {
	C        float64 // capacity, tx/s
	Noise    float64 // standard deviation of the per-probe capacity factor
	Seed     uint64
	Warmup   float64 // s
	Duration float64 // s
	PoolWait float64 // s; default 1
	BaseP99  float64 // ms at zero load; default 5
	// Decay is the share of capacity lost by the end of a probe (cost growing as it runs).
	Decay float64
	// DriverLimit > 0: probes above this rate report driver_limited.
	DriverLimit float64
	// ErrorCalls / ConnCalls: 1-based call numbers that fail with an error / that see
	// mostly connection errors.
	ErrorCalls, ConnCalls map[int]bool
	// FlakyRate: every probe at exactly this rate after the first fails (confirm tests).
	FlakyRate float64

	calls    []float64
	budgets  []int64
	attempts map[float64]int
}

var _ BudgetProber = (*sim)(nil)

func (s *sim) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return s.ProbeWithBudget(ctx, rate, -1)
}

func (s *sim) ProbeWithBudget(ctx context.Context, rate float64, budget int64) (*result.Probe, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.calls = append(s.calls, rate)
	s.budgets = append(s.budgets, budget)
	n := len(s.calls)
	if s.attempts == nil {
		s.attempts = map[float64]int{}
	}
	attempt := s.attempts[rate]
	s.attempts[rate]++
	if s.ErrorCalls[n] {
		return nil, errors.New("connect: connection refused")
	}
	poolWait, base := s.PoolWait, s.BaseP99
	if poolWait == 0 {
		poolWait = 1
	}
	if base == 0 {
		base = 5
	}
	// Noise is a function of (seed, rate, attempt) so a resumed search sees the same
	// probe results as an uninterrupted one.
	rng := rand.New(rand.NewPCG(s.Seed, math.Float64bits(rate)^uint64(attempt)<<56))
	factor := 1 + s.Noise*rng.NormFloat64()
	if s.FlakyRate == rate && attempt > 0 {
		factor = 0.5
	}
	p := &result.Probe{TargetRate: rate, WarmupS: s.Warmup, DurationS: s.Duration, Conns: 50,
		PoolWaitMs: poolWait * 1000}
	if s.DriverLimit > 0 && rate > s.DriverLimit {
		p.DriverLimited = true
		p.DriverLimitReason = fmt.Sprintf("scheduler lag: the driver cannot issue %.0f/s", rate)
	}
	total := s.Warmup + s.Duration
	backlog := 0.0
	var p99s []float64
	for t := 0; t < int(total); t++ {
		measure := float64(t) >= s.Warmup
		capacity := s.C * factor * (1 - s.Decay*float64(t)/total)
		arrivals := poisson(rng, rate)
		served := capacity + math.Sqrt(capacity)*rng.NormFloat64()
		backlog += arrivals
		backlog -= min(backlog, max(served, 0))
		rejected := 0.0
		if backlog/capacity > poolWait {
			rejected = backlog - poolWait*capacity
			backlog -= rejected
		}
		waitMs := 1000 * backlog / capacity
		rho := min(rate/capacity, 0.99)
		sec := result.Second{T: t, Phase: result.PhaseWarmup, Offered: int64(arrivals),
			P50Ms: base / 2 / (1 - rho), P99Ms: base/(1-rho) + waitMs,
			QueueWaitP99Ms: waitMs + base*rho*rho/(1-rho)/4, SchedLagMs: 0.2}
		if measure {
			sec.Phase = result.PhaseMeasure
			sched, rej := int64(arrivals), int64(rejected)
			if s.ConnCalls[n] {
				p.Failed[result.Connection] += sched / 2
				rej = 0
			}
			sec.Failed[result.PoolTimeout] = rej
			sec.Committed = sched - rej - sec.Failed[result.Connection]
			p.Scheduled += sched
			p.Rejected += rej
			p.MeasuredS++
			p99s = append(p99s, sec.P99Ms)
		}
		p.Series = append(p.Series, sec)
		if measure && budget >= 0 && p.FailedAndRejected() > budget {
			p.CutShort = true
			p.CutReason = fmt.Sprintf("%d failed or rejected > budget %d", p.FailedAndRejected(), budget)
			break
		}
	}
	p.Committed = p.Scheduled - p.FailedAndRejected()
	if p.MeasuredS > 0 {
		p.AchievedRate = float64(p.Committed) / p.MeasuredS
	}
	sort.Float64s(p99s)
	if len(p99s) > 0 {
		p.Latency.P99 = p99s[int(0.99*float64(len(p99s)-1))]
		p.Latency.P50 = base / 2
	}
	return p, nil
}

// poisson draws a Poisson count: exact for small means, normal approximation above.
func poisson(rng *rand.Rand, mean float64) float64 {
	if mean > 50 {
		return max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64()))
	}
	l, k, prod := math.Exp(-mean), 0.0, rng.Float64()
	for prod > l {
		k++
		prod *= rng.Float64()
	}
	return k
}

// calibrator estimates the capacity as a short saturating probe would: within ±10 %.
func (s *sim) calibrator(seconds float64) func(context.Context) (Calibration, error) {
	return func(context.Context) (Calibration, error) {
		rng := rand.New(rand.NewPCG(s.Seed, 7))
		return Calibration{Rate: s.C * (1 + 0.05*rng.NormFloat64()), Seconds: seconds}, nil
	}
}
