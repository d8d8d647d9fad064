package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// sim is a simulated server for the search's tests: a fluid queue of capacity C tx/s
// (times a per-probe noise factor) fed by Poisson arrivals, stepped second by second
// through warm-up and measured window. Arrivals that would wait longer than the pool wait
// are rejected (unless NoReject: then overload shows only as a rising queue wait);
// latency p99 grows like base/(1-ρ) plus the queue wait. It honours the search's Limits
// (error budget and trend stop) and runs short calibration probes, and has variants whose capacity decays during a probe (not
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
	// FlakyFrom: when FlakyRate is set, the attempt from which probes at it fail
	// (default 1: every probe after the first).
	FlakyFrom int
	// Boost: every probe at one of these rates after the first sees 1.5 × the capacity
	// (an unlucky first probe: repeats move the knee up).
	Boost map[float64]bool
	// Capacities, when set, overrides C per rate (a server whose knee the repeats test
	// moves): probes at a listed rate see that capacity.
	Capacities map[float64]float64
	// NoReject: the pool is deep enough that no arrival is rejected; overload shows as a
	// queue wait that keeps rising.
	NoReject bool
	// StallAt, StallFor, StallFactor: a checkpoint-like cycle. From StallAt seconds after
	// a probe's start (warm-up included), and again every StallAt seconds, capacity drops
	// to StallFactor × C for StallFor seconds: a probe shorter than StallAt never sees it.
	StallAt, StallFor, StallFactor float64
	// StopEvery: call the trend stop every this many measured seconds (default 1; the
	// long cost test thins it, as the driver's once a second costs the same per call).
	StopEvery int

	calls    []float64
	budgets  []int64
	stops    []bool // StopIf was set
	shorts   []float64
	attempts map[float64]int
	measured []float64 // each call's measured window (s)
}

var (
	_ LimitedProber = (*sim)(nil)
	_ ShortProber   = (*sim)(nil)
)

func (s *sim) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return s.ProbeWithLimits(ctx, rate, Limits{Budget: -1})
}

func (s *sim) ProbeShort(ctx context.Context, rate float64, warmup, measured time.Duration) (*result.Probe, error) {
	s.shorts = append(s.shorts, rate)
	q := *s
	q.Warmup, q.Duration, q.calls, q.budgets, q.stops, q.attempts = warmup.Seconds(), measured.Seconds(), nil, nil, nil, nil
	q.Seed = s.Seed ^ 0x5eed
	return q.ProbeWithLimits(ctx, rate, Limits{Budget: -1})
}

func (s *sim) ProbeWithLimits(ctx context.Context, rate float64, l Limits) (*result.Probe, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	budget := l.Budget
	s.calls = append(s.calls, rate)
	s.budgets = append(s.budgets, budget)
	s.stops = append(s.stops, l.StopIf != nil)
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
	if s.FlakyRate == rate && attempt >= max(s.FlakyFrom, 1) {
		factor = 0.5
	}
	if s.Boost[rate] && attempt > 0 {
		factor = 1.5
	}
	C := s.C
	if c, ok := s.Capacities[rate]; ok {
		C = c
	}
	duration := s.Duration
	if l.Measured > 0 {
		duration = l.Measured.Seconds()
	}
	s.measured = append(s.measured, duration)
	p := &result.Probe{TargetRate: rate, WarmupS: s.Warmup, DurationS: duration, Conns: 50,
		PoolWaitMs: poolWait * 1000}
	if s.DriverLimit > 0 && rate > s.DriverLimit {
		p.DriverLimited = true
		p.DriverLimitReason = fmt.Sprintf("scheduler lag: the driver cannot issue %.0f/s", rate)
	}
	total := s.Warmup + duration
	backlog, served := 0.0, 0.0
	every := max(s.StopEvery, 1)
	var p99s []float64
	for t := 0; t < int(total); t++ {
		measure := float64(t) >= s.Warmup
		capacity := C * factor * (1 - s.Decay*float64(t)/total)
		if s.StallAt > 0 && t >= int(s.StallAt) && math.Mod(float64(t), s.StallAt) < s.StallFor {
			capacity *= s.StallFactor
		}
		arrivals := poisson(rng, rate)
		can := capacity + math.Sqrt(capacity)*rng.NormFloat64()
		backlog += arrivals
		done := min(backlog, max(can, 0))
		backlog -= done
		rejected := 0.0
		if !s.NoReject && backlog/capacity > poolWait {
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
			served += done
			p99s = append(p99s, sec.P99Ms)
		}
		p.Series = append(p.Series, sec)
		if measure && budget >= 0 && p.FailedAndRejected() > budget {
			p.CutShort, p.CutBy = true, result.CutByErrors
			p.CutReason = fmt.Sprintf("%d failed or rejected > budget %d", p.FailedAndRejected(), budget)
			break
		}
		if measure && l.StopIf != nil && int(p.MeasuredS)%every == 0 {
			if why := l.StopIf(p.Series); why != "" {
				p.CutShort, p.CutBy, p.CutReason = true, result.CutByTrend, why
				break
			}
		}
	}
	p.Committed = p.Scheduled - p.FailedAndRejected()
	p.CommittedInWindow = int64(served)
	if p.MeasuredS > 0 {
		p.AchievedRate = served / p.MeasuredS
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
