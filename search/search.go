package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Prober runs one probe at a fixed offered rate (transactions per second) and returns
// what it measured. Implemented by the driver (through the command) and by the tests'
// simulated server.
type Prober interface {
	Probe(ctx context.Context, rate float64) (*result.Probe, error)
}

// BudgetProber is the optional ability to stop a probe early: the prober ends the probe
// (marking it CutShort) as soon as the failed plus rejected arrivals in its measured
// window exceed budget, since it can no longer pass. A negative budget means no early
// abort. The search calls it instead of Probe when the prober has it and early abort is on.
type BudgetProber interface {
	ProbeWithBudget(ctx context.Context, rate float64, budget int64) (*result.Probe, error)
}

// Calibration is a quick closed-loop (or saturating) estimate of the server's maximum
// throughput, used to start the bracket near the knee instead of growing from a low rate.
type Calibration struct {
	Rate    float64 // estimated maximum throughput, tx/s
	Seconds float64 // what the calibration cost, added to the sweep's probe-minutes
}

// Defaults used when a Config field is zero.
const (
	DefaultGrowth    = 2.0
	DefaultPrecision = 0.05
	DefaultMaxProbes = 40
	// DefaultStartRate is where the bracket starts without a start rate or calibration.
	DefaultStartRate = 100.0
	// DefaultMinRate: a search whose probes fail down to this rate stops (no passing rate).
	DefaultMinRate = 1.0
	// DefaultMaxRate: a search that still passes here stops (the bracket never closed).
	DefaultMaxRate = 1e7
	// CalibratedStart is the fraction of the calibration estimate probed first: an
	// open-loop knee sits below the closed-loop maximum.
	CalibratedStart = 0.8
)

// Stop reasons recorded in result.Sweep.Stop.
const (
	StopConverged     = "converged"
	StopConfirmed     = "converged and confirmed"
	StopDriverLimited = "driver_limited"
	StopFault         = "fault"
	StopMaxProbes     = "max_probes"
	StopInterrupted   = "interrupted"
	StopNoPass        = "no_pass"
	StopMaxRate       = "max_rate"
)

// Config is one search's rules.
type Config struct {
	// StartRate is the first probe's rate; 0 = calibrate (Calibrate or Estimate), else
	// DefaultStartRate.
	StartRate float64
	// Growth multiplies the rate while every probe passes (and divides it while every
	// probe fails) until the bracket closes; default 2. After a calibration the step is
	// 1 + 4 × Precision (at most Growth), since the estimate is already near the knee.
	Growth float64
	// Precision ends the bisection when (hi - lo) / lo <= Precision; default 0.05.
	Precision float64
	// MaxErrorRate is the pass rule's (failed + rejected) / scheduled limit, e.g. 0.001.
	MaxErrorRate float64
	// P99SLO, when > 0, also requires p99 latency (intended start to commit) <= it.
	P99SLO time.Duration
	// Confirm repeats the probes at the final bracket's edges this many times; the knee
	// is the highest rate that passed every time it was probed.
	Confirm int
	// MaxProbes bounds the probes (repeats and retries included); default 40.
	MaxProbes int
	// MinRate and MaxRate bound the rates probed (defaults DefaultMinRate, DefaultMaxRate).
	MinRate, MaxRate float64

	// Duration is each probe's measured window, used for the error budget
	// floor(MaxErrorRate × rate × Duration); 0 disables early abort.
	Duration time.Duration
	// NoEarlyAbort turns the error budget off: every probe runs its full length.
	NoEarlyAbort bool

	// Calibrate, when set and StartRate is 0, estimates the maximum throughput before the
	// first probe.
	Calibrate func(ctx context.Context) (Calibration, error)
	// Estimate is a calibration already made (a resumed search): used instead of calling
	// Calibrate, so a resumed search retraces the same rates.
	Estimate float64

	// Steady is the not_steady rule.
	Steady SteadyRule

	// OnStart, when set, is called before each probe: its number (from 1), rate and the
	// bracket so far. Live progress.
	OnStart func(n int, rate float64, b result.Bracket)
	// OnProbe, when set, is called after each probe (reused ones included) with the sweep
	// so far: its last probe is the one just judged, Bracket is current. The command
	// writes the results file from it (checkpoint).
	OnProbe func(s result.Sweep)
}

func (c Config) withDefaults() Config {
	if c.Growth <= 1 {
		c.Growth = DefaultGrowth
	}
	if c.Precision <= 0 {
		c.Precision = DefaultPrecision
	}
	if c.MaxProbes <= 0 {
		c.MaxProbes = DefaultMaxProbes
	}
	if c.MinRate <= 0 {
		c.MinRate = DefaultMinRate
	}
	if c.MaxRate <= 0 {
		c.MaxRate = DefaultMaxRate
	}
	return c
}

// Budget is the error budget of a probe at rate: floor(maxErrorRate × rate × duration),
// the most failed plus rejected arrivals the probe may have and still pass.
func Budget(maxErrorRate, rate float64, duration time.Duration) int64 {
	return int64(math.Floor(maxErrorRate * rate * duration.Seconds()))
}

// searcher is one Run's state.
type searcher struct {
	p     Prober
	cfg   Config
	prior map[float64][]result.Probe // unused prior probes by rate, in order
	sweep result.Sweep
	// passes and fails per rate (every attempt that got a pass/fail verdict).
	passes, fails map[float64]int
	// calSeconds is what the calibration cost.
	calSeconds float64
}

// Run searches for the knee. prior holds probes from an earlier, interrupted search of
// the same sweep (a results file given to --resume): when the search wants a rate that a
// prior probe already measured, it reuses that probe (judged again under cfg) instead of
// running it; prior faults and interrupted probes are not reused.
//
// The returned sweep has every probe, the bracket, the knee (the highest passing rate,
// or the highest that passed every repeat with Confirm), the stop reason and the
// probe-minutes (warm-up and calibration included). Workload and SyncCommit are left for
// the caller. On interruption Run returns the sweep so far with Stop "interrupted" and
// the context's error; a probe interrupted midway is kept, marked Interrupted, and not
// judged.
func Run(ctx context.Context, p Prober, cfg Config, prior []result.Probe) (result.Sweep, error) {
	cfg = cfg.withDefaults()
	s := &searcher{p: p, cfg: cfg, prior: map[float64][]result.Probe{},
		passes: map[float64]int{}, fails: map[float64]int{}}
	for _, pp := range prior {
		if pp.Interrupted || pp.Verdict == result.Fault || pp.Error != "" || pp.Verdict == "" {
			continue
		}
		s.prior[pp.TargetRate] = append(s.prior[pp.TargetRate], pp)
	}
	err := s.run(ctx)
	s.finish()
	return s.sweep, err
}

// errStop ends the search without an error to return.
var errStop = errors.New("search stopped")

func (s *searcher) run(ctx context.Context) error {
	cfg := s.cfg
	rate, step := cfg.StartRate, cfg.Growth
	if rate <= 0 {
		est := cfg.Estimate
		if est <= 0 && cfg.Calibrate != nil {
			c, err := cfg.Calibrate(ctx)
			if err != nil {
				if ctx.Err() != nil {
					s.sweep.Stop = StopInterrupted
					return ctx.Err()
				}
				return fmt.Errorf("calibration: %w", err)
			}
			est = c.Rate
			s.calSeconds = c.Seconds
		}
		if est > 0 {
			s.sweep.CalibratedRate = est
			rate = round(CalibratedStart * est)
			step = min(cfg.Growth, 1+4*cfg.Precision)
		} else {
			rate = DefaultStartRate
		}
	}
	rate = min(max(rate, cfg.MinRate), cfg.MaxRate)
	b := &s.sweep.Bracket

	// Bracket, then bisect.
	for !s.narrow() {
		v, err := s.probe(ctx, rate)
		if err != nil {
			return s.stopped(err)
		}
		if v == result.Pass {
			b.Lo = rate
		} else {
			b.Hi = rate
		}
		s.notify()
		switch {
		case b.Hi == 0:
			if rate >= cfg.MaxRate {
				s.sweep.Stop = StopMaxRate
				return nil
			}
			rate = min(round(rate*step), cfg.MaxRate)
		case b.Lo == 0:
			if rate <= cfg.MinRate {
				s.sweep.Stop = StopNoPass
				return nil
			}
			rate = max(round(rate/step), cfg.MinRate)
		default:
			rate = round((b.Lo + b.Hi) / 2)
			if rate <= b.Lo || rate >= b.Hi { // rates are whole tx/s: cannot split further
				s.sweep.Stop = StopConverged
				s.sweep.Converged = true
				return nil
			}
		}
	}
	s.sweep.Converged = true
	s.sweep.Stop = StopConverged

	// Confirm: repeat both edges; a rate that fails any repeat no longer counts as passing.
	if cfg.Confirm > 0 {
		for i := 0; i < cfg.Confirm; i++ {
			for _, r := range []float64{b.Lo, b.Hi} {
				if _, err := s.probe(ctx, r); err != nil {
					return s.stopped(err)
				}
				s.notify()
			}
		}
		s.sweep.Stop = StopConfirmed
	}
	return nil
}

// narrow reports whether the bracket is closed and within the precision.
func (s *searcher) narrow() bool {
	b := s.sweep.Bracket
	return b.Lo > 0 && b.Hi > 0 && (b.Hi-b.Lo)/b.Lo <= s.cfg.Precision
}

// stopped records why the search ended early; it returns the error to give the caller.
func (s *searcher) stopped(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		s.sweep.Stop = StopInterrupted
	}
	return err
}

// probe runs (or reuses) one probe at rate and returns its verdict: pass, or a failing
// one (fail, not_steady). A fault or a driver_limited probe is retried once (marked Retry):
// both can be passing trouble (a restart, a busy client machine); a second one ends the
// search with errStop, as does MaxProbes.
func (s *searcher) probe(ctx context.Context, rate float64) (string, error) {
	for attempt := 0; ; attempt++ {
		if len(s.sweep.Probes) >= s.cfg.MaxProbes {
			s.sweep.Stop = StopMaxProbes
			return "", errStop
		}
		p, err := s.one(ctx, rate)
		if err != nil {
			return "", err
		}
		p.Retry = attempt > 0
		s.sweep.Probes = append(s.sweep.Probes, *p)
		switch p.Verdict {
		case result.Pass:
			s.passes[rate]++
			return p.Verdict, nil
		case result.Fail, result.NotSteady:
			s.fails[rate]++
			return p.Verdict, nil
		case result.DriverLimited, result.Fault:
			s.notify()
			if attempt == 0 {
				continue
			}
			stop := StopFault
			if p.Verdict == result.DriverLimited {
				stop = StopDriverLimited
			}
			s.sweep.Stop = stop + ": " + p.Reason
			return "", errStop
		}
	}
}

// one runs one probe at rate, or takes a prior probe at that rate, and judges it.
func (s *searcher) one(ctx context.Context, rate float64) (*result.Probe, error) {
	if q := s.prior[rate]; len(q) > 0 {
		p := q[0]
		s.prior[rate] = q[1:]
		p.Verdict, p.Reason = Judge(&p, s.cfg)
		return &p, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.cfg.OnStart != nil {
		s.cfg.OnStart(len(s.sweep.Probes)+1, rate, s.sweep.Bracket)
	}
	var (
		p   *result.Probe
		err error
	)
	bp, ok := s.p.(BudgetProber)
	if ok && !s.cfg.NoEarlyAbort && s.cfg.Duration > 0 {
		p, err = bp.ProbeWithBudget(ctx, rate, Budget(s.cfg.MaxErrorRate, rate, s.cfg.Duration))
	} else {
		p, err = s.p.Probe(ctx, rate)
	}
	if p == nil {
		p = &result.Probe{TargetRate: rate}
	}
	if ctx.Err() != nil || p.Interrupted {
		p.Interrupted = true
		p.Reason = "interrupted"
		s.sweep.Probes = append(s.sweep.Probes, *p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, context.Canceled
	}
	if err != nil && p.Error == "" {
		p.Error = err.Error()
	}
	p.TargetRate = rate
	p.Verdict, p.Reason = Judge(p, s.cfg)
	return p, nil
}

// notify reports the sweep so far to OnProbe.
func (s *searcher) notify() {
	if s.cfg.OnProbe == nil {
		return
	}
	s.update()
	snap := s.sweep
	snap.Probes = append([]result.Probe(nil), s.sweep.Probes...)
	s.cfg.OnProbe(snap)
}

// update recomputes the knee and probe-minutes from the probes so far.
func (s *searcher) update() {
	knee := 0.0
	for r, n := range s.passes {
		if n > 0 && s.fails[r] == 0 && r > knee {
			knee = r
		}
	}
	s.sweep.Knee = knee
	secs := s.calSeconds
	for _, p := range s.sweep.Probes {
		secs += p.WarmupS + p.MeasuredS
	}
	s.sweep.ProbeMinutes = secs / 60
}

// finish fills the knee and cost once the search ends.
func (s *searcher) finish() {
	s.update()
	b := &s.sweep.Bracket
	if b.Lo != s.sweep.Knee { // a confirm repeat failed at lo: the knee moved down
		hi := b.Hi
		for r, n := range s.fails {
			if n > 0 && r > s.sweep.Knee && (hi == 0 || r < hi) {
				hi = r
			}
		}
		*b = result.Bracket{Lo: s.sweep.Knee, Hi: hi}
		s.sweep.Converged = s.sweep.Knee > 0 && hi > 0 && (hi-s.sweep.Knee)/s.sweep.Knee <= s.cfg.Precision
		if s.sweep.Stop == StopConfirmed {
			s.sweep.Stop = "confirm lowered the knee"
		}
	}
}

// round keeps probe rates at whole transactions per second (so resumed searches match
// prior probes exactly) for rates above 10/s, and to 0.1 below.
func round(r float64) float64 {
	if r >= 10 {
		return math.Round(r)
	}
	return math.Round(r*10) / 10
}
