package search

import (
	"cmp"
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

// Limits are what the search asks a prober to stop a probe early for: either can only
// cut a probe that would fail, so passing probes always run their full length.
type Limits struct {
	// Budget is the error budget: the prober ends the probe (CutShort, CutBy
	// result.CutByErrors) as soon as the failed plus rejected arrivals of its measured
	// window exceed it, since it can no longer pass. < 0 = no budget.
	Budget int64
	// StopIf, when set, is called about once a second with the measured seconds finalized
	// so far; a non-empty reason ends the probe (CutShort, CutBy result.CutByTrend,
	// CutReason the reason): its growth is decided (see SteadyRule.StopIf).
	StopIf func(measured []result.Second) string
	// Measured, when > 0, is the probe's measured window instead of the prober's own:
	// the search's hold step (Config.Hold).
	Measured time.Duration
}

// LimitedProber is the optional ability to stop a probe early (Limits). The search calls
// it instead of Probe when the prober has it; early abort off (or no Duration) gives
// Limits{Budget: -1}.
type LimitedProber interface {
	ProbeWithLimits(ctx context.Context, rate float64, l Limits) (*result.Probe, error)
}

// ShortProber is the optional ability to run a short probe (a warm-up and measured window
// of the given lengths, no limits) prepared exactly as a real probe (same data restore,
// history back-fill and checkpoint), so the calibration sees the probes' warm state. The
// search calibrates with it (see Calibrate) when StartRate, StartFrom and Estimate are 0.
type ShortProber interface {
	ProbeShort(ctx context.Context, rate float64, warmup, measured time.Duration) (*result.Probe, error)
}

// Calibration is a quick estimate of the server's maximum throughput, used to start the
// bracket near the knee instead of growing from a low rate.
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
	// open-loop knee sits below the saturated throughput.
	CalibratedStart = 0.8
)

// Stop reasons recorded in result.Sweep.Stop.
const (
	StopConverged = "converged"
	// StopConfirmed: converged, and each final edge was probed Repeats times in all.
	StopConfirmed = "converged and confirmed"
	// StopHeldWalk: converged by the hold walk (Config.Hold): the knee held and a failed
	// hold lies within the precision above it.
	StopHeldWalk      = "converged on holds"
	StopDriverLimited = "driver_limited"
	StopFault         = "fault"
	StopHostSteal     = "host_steal"
	StopMaxProbes     = "max_probes"
	StopInterrupted   = "interrupted"
	StopNoPass        = "no_pass"
	StopMaxRate       = "max_rate"
)

// Config is one search's rules.
type Config struct {
	// StartRate is the first probe's rate; 0 = StartFrom, else Estimate, else calibrate
	// (ShortProber, or Calibrate), else DefaultStartRate.
	StartRate float64
	// StartFrom is a previous knee of the same sweep (--start-from): the first probe runs
	// at it, with the fine step, and there is no calibration.
	StartFrom float64
	// Growth multiplies the rate while every probe passes (and divides it while every
	// probe fails) until the bracket closes; default 2. Started from a calibration or
	// StartFrom the step is 1 + 4 × Precision (at most Growth), since the start is
	// already near the knee.
	Growth float64
	// Precision ends the bisection when (hi - lo) / lo <= Precision; default 0.05.
	Precision float64
	// MaxErrorRate is the pass rule's (failed + rejected) / scheduled limit, e.g. 0.001.
	MaxErrorRate float64
	// P99SLO, when > 0, also requires p99 latency (intended start to commit) <= it.
	P99SLO time.Duration
	// CountLate also counts the commits later than the pool wait (result.Probe.Late)
	// against MaxErrorRate: pgbench's --latency-limit rule, under which a transaction that
	// started on time but finished late is as bad as one never started.
	CountLate bool
	// Repeats is how many times in all each final edge of the bracket is probed (0 or 1:
	// once). A rate counts by the majority of its verdicts, so repeats can move the
	// bracket down (lo's majority failed) or up (hi's majority passed); the search then
	// bisects again and repeats at the new edges. See Run for the knee.
	Repeats int
	// Hold is the measured window of the final hold step; 0 = none. Once the bracket has
	// converged and its edges have their Repeats verdicts, the knee is probed once more
	// for Hold (the prober must be a LimitedProber): long enough to take in one of the
	// server's checkpoint cycles, which a short probe can miss. A failed hold counts its
	// rate as failed whatever the shorter probes there said (it saw more of the server):
	// the bracket's hi drops to it and the search goes on below by holds alone (see
	// holdWalk); the knee is then the highest rate that held (result.Sweep.Held), with a
	// failed hold within Precision above it. A held rate is not held again.
	Hold time.Duration
	// Round and Earlier make this Run a later round of a sweep (--rounds): Earlier is the
	// sweep as its earlier rounds left it, and Round counts this one (from 1; 0 = a search
	// of one round). Earlier's probes count in the bracket and the interval as if this Run
	// had made them (unlike prior's, which stand in for probes not yet run); there is no
	// calibration nor pool scan (PriorPool is the pool, when scanned), each final edge of the
	// bracket is probed until it has Repeats × Round verdicts, MaxProbes bounds this round's
	// probes, and every probe of the round is marked with Round. A machine that got slower
	// or faster since the earlier rounds then shows as edges that no longer agree: a rate
	// whose verdicts tie counts as failed, the bracket moves and is bisected again, and the
	// interval, fitted to every round's probes, widens with the overlap.
	Round   int
	Earlier *result.Sweep
	// Confirm is the older form of Repeats: Confirm extra probes per edge, i.e. Repeats
	// at least Confirm + 1. Deprecated: set Repeats.
	Confirm int
	// MaxProbes bounds the probes (repeats and retries included); default 40.
	MaxProbes int
	// MinRate and MaxRate bound the rates probed (defaults DefaultMinRate, DefaultMaxRate).
	MinRate, MaxRate float64

	// Duration is each probe's measured window: the error budget is
	// floor(MaxErrorRate × rate × Duration), and the steady-state rule projects one
	// Duration ahead; 0 disables early abort.
	Duration time.Duration
	// Warmup is each probe's warm-up; the calibration's short probes warm up for
	// min(Warmup, 5 s).
	Warmup time.Duration
	// PoolWait is how long an arrival may wait for a connection before it is rejected
	// (the driver's --pool-wait): the steady-state rule's yardstick. Default the probe's
	// own, else result.DefaultPoolWait.
	PoolWait time.Duration
	// NoEarlyAbort turns the early stops off (error budget and trend): every probe runs
	// its full length.
	NoEarlyAbort bool

	// PoolScan: choose the pool size by ScanPool before the first probe (--conns auto;
	// the prober must be a PoolProber), up to PoolScanMax connections (0: the package's
	// PoolScanMax). PriorPool is the scan of a resumed search: its pool is used again,
	// without scanning. OnPoolProbe, when set, is called before each scan probe.
	PoolScan    bool
	PoolScanMax int
	PriorPool   *result.PoolScan
	OnPoolProbe func(conns int, rate float64)
	// OnPoolPoint, when set, is called with each scan probe's point; OnPoolChosen with
	// the finished scan.
	OnPoolPoint  func(pt result.PoolPoint)
	OnPoolChosen func(ps result.PoolScan)

	// Estimate is a calibration already made (a resumed search): used instead of
	// calibrating, so a resumed search retraces the same rates.
	Estimate float64
	// OnCalibrate, when set, is called before each calibration probe with its rate.
	OnCalibrate func(rate float64)

	// Steady is the not_steady rule.
	Steady SteadyRule

	// OnStart, when set, is called before each probe: its number (from 1), rate and the
	// bracket so far. Live progress.
	OnStart func(n int, rate float64, b result.Bracket)
	// OnHold, when set, is also called before each hold probe (Hold), before OnStart.
	OnHold func(rate float64, window time.Duration)
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
	c.Repeats = max(c.Repeats, c.Confirm+1, 1)
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
	// holding: the probe being run is a hold (Config.Hold); held and unheld are the
	// rates whose hold passed and failed.
	holding      bool
	held, unheld map[float64]bool
	priorHolds   map[float64][]result.Probe
	// earlier is how many of sweep.Probes came from the earlier rounds (Config.Earlier).
	earlier int
}

// Run searches for the knee. prior holds probes from an earlier, interrupted search of
// the same sweep (a results file given to --resume): when the search wants a rate that a
// prior probe already measured, it reuses that probe (judged again under cfg) instead of
// running it; prior faults and interrupted probes are not reused.
//
// Each probed rate counts by the majority of its pass/fail verdicts: it passed when more
// than half of them passed (a tie is a fail: conservative). The bracket's hi is the lowest
// rate whose majority failed, its lo the highest rate below hi whose majority passed,
// and the knee is lo: the highest rate that passed with every lower probed rate passing
// too. A pass above a failing rate does not count, so the knee never rises past a rate
// the server failed. After the bracket is within Precision, each edge is probed until
// it has Repeats verdicts; when that moves an edge the search bisects again.
//
// The returned sweep has every probe, the bracket, the knee, the interval (see
// KneeInterval), the stop reason and the probe-minutes (warm-up and calibration
// included). Workload, SyncCommit and StartFrom are left for the caller. On interruption
// Run returns the sweep so far with Stop "interrupted" and the context's error; a probe
// interrupted midway is kept, marked Interrupted, and not judged.
func Run(ctx context.Context, p Prober, cfg Config, prior []result.Probe) (result.Sweep, error) {
	cfg = cfg.withDefaults()
	s := &searcher{p: p, cfg: cfg, prior: map[float64][]result.Probe{},
		passes: map[float64]int{}, fails: map[float64]int{},
		held: map[float64]bool{}, unheld: map[float64]bool{}, priorHolds: map[float64][]result.Probe{}}
	if cfg.Repeats > 1 {
		s.sweep.Repeats = cfg.Repeats
	}
	if _, ok := p.(LimitedProber); !ok {
		cfg.Hold = 0 // a plain Prober runs its own window only
		s.cfg = cfg
	}
	s.sweep.HoldS = cfg.Hold.Seconds()
	if e := cfg.Earlier; e != nil {
		s.takeEarlier(e)
	}
	for _, pp := range prior {
		if pp.Interrupted || pp.Verdict == result.Fault || pp.Error != "" || pp.Verdict == "" {
			continue
		}
		if pp.Hold {
			s.priorHolds[pp.TargetRate] = append(s.priorHolds[pp.TargetRate], pp)
			continue
		}
		s.prior[pp.TargetRate] = append(s.prior[pp.TargetRate], pp)
	}
	err := s.run(ctx)
	s.finish()
	return s.sweep, err
}

// takeEarlier starts the sweep where its earlier rounds left it: their probes, verdicts,
// holds, pool and cost.
func (s *searcher) takeEarlier(e *result.Sweep) {
	s.sweep.Probes = append([]result.Probe(nil), e.Probes...)
	s.sweep.CalibratedRate, s.sweep.RoundKnees = e.CalibratedRate, append([]float64(nil), e.RoundKnees...)
	s.earlier = len(e.Probes)
	secs := e.ProbeMinutes * 60
	for _, p := range e.Probes {
		secs -= p.WarmupS + p.MeasuredS
		if p.Interrupted {
			continue
		}
		switch p.Verdict {
		case result.Pass:
			s.passes[p.TargetRate]++
			if p.Hold {
				s.held[p.TargetRate] = true
			}
		case result.Fail, result.NotSteady:
			s.fails[p.TargetRate]++
			if p.Hold {
				s.unheld[p.TargetRate] = true
			}
		}
	}
	s.calSeconds = max(secs, 0) // the earlier calibration and pool scan
}

// errStop ends the search without an error to return.
var errStop = errors.New("search stopped")

// start returns the first rate and the step of the bracket's growth.
func (s *searcher) start(ctx context.Context) (rate, step float64, err error) {
	cfg := s.cfg
	fine := min(cfg.Growth, 1+4*cfg.Precision)
	pp, scan := s.p.(PoolProber)
	scan = scan && cfg.PoolScan
	if scan && cfg.PriorPool != nil { // a resumed search: the same pool, no scan
		if err := s.usePriorPool(pp); err != nil {
			return 0, 0, err
		}
		scan = false
	}
	if !scan {
		switch {
		case cfg.StartRate > 0:
			return cfg.StartRate, cfg.Growth, nil
		case cfg.StartFrom > 0:
			return round(cfg.StartFrom), fine, nil
		}
	}
	est := cfg.Estimate
	if est <= 0 {
		est = max(cfg.StartFrom, cfg.StartRate)
	}
	if est <= 0 {
		var c Calibration
		if scan {
			pp.UsePool(min(PoolScanCalibrate, PoolScanLimit(cmp.Or(cfg.PoolScanMax, PoolScanMax))))
		}
		if sp, ok := s.p.(ShortProber); ok {
			c, err = Calibrate(ctx, sp, cfg)
		}
		s.calSeconds = c.Seconds
		if err != nil {
			return 0, 0, s.startErr(ctx, "calibration", err)
		}
		est = c.Rate
	}
	if scan {
		ps, err := ScanPool(ctx, pp, cfg, est, cfg.PoolScanMax)
		s.calSeconds += ps.Seconds
		s.sweep.Pool = ps
		if err != nil {
			return 0, 0, s.startErr(ctx, "pool scan", err)
		}
		pp.UsePool(ps.Conns)
		if cfg.OnPoolChosen != nil {
			cfg.OnPoolChosen(*ps)
		}
		switch {
		case cfg.StartRate > 0:
			return cfg.StartRate, cfg.Growth, nil
		case cfg.StartFrom > 0:
			return round(cfg.StartFrom), fine, nil
		}
		// The chosen pool's saturated throughput is a better estimate than the
		// calibration's, made with another pool.
		est = chosen(ps).Achieved
	}
	if est > 0 {
		s.sweep.CalibratedRate = est
		return round(CalibratedStart * est), fine, nil
	}
	return DefaultStartRate, cfg.Growth, nil
}

// usePriorPool gives pp the pool of a resumed search or an earlier round
// (Config.PriorPool), if the server still has room for it.
func (s *searcher) usePriorPool(pp PoolProber) error {
	if n := s.cfg.PriorPool.Conns; s.cfg.PoolScanMax > 0 && n > s.cfg.PoolScanMax {
		return fmt.Errorf("the resumed sweep %s ran with a pool of %d connections (--conns auto's scan); this server has room for %d now: "+
			"free connections (or raise max_connections) to resume it, or start a new search",
			s.sweep.Workload+" sync="+string(s.sweep.SyncCommit), n, s.cfg.PoolScanMax)
	}
	pp.UsePool(s.cfg.PriorPool.Conns)
	s.sweep.Pool = s.cfg.PriorPool
	return nil
}

// startErr is the error of a failed calibration or pool scan (what names it).
func (s *searcher) startErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		s.sweep.Stop = StopInterrupted
		return ctx.Err()
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (s *searcher) run(ctx context.Context) error {
	cfg := s.cfg
	var (
		rate, step float64
		hold, done bool
		err        error
	)
	if s.cfg.Earlier != nil { // a later round: on from the earlier rounds' bracket
		if pp, ok := s.p.(PoolProber); ok && cfg.PoolScan && cfg.PriorPool != nil {
			if err := s.usePriorPool(pp); err != nil {
				return err
			}
		}
		step = min(cfg.Growth, 1+4*cfg.Precision)
		s.sweep.Bracket = s.bracket()
		if rate, hold, done = s.next(s.sweep.Bracket, step); done {
			return nil
		}
	} else {
		if rate, step, err = s.start(ctx); err != nil {
			return err
		}
		rate = min(max(rate, cfg.MinRate), cfg.MaxRate)
	}
	for {
		s.holding = hold
		_, err := s.probe(ctx, rate)
		s.holding = false
		if err != nil {
			return s.stopped(err)
		}
		b := s.bracket()
		s.sweep.Bracket = b
		s.notify()
		if rate, hold, done = s.next(b, step); done {
			return nil
		}
	}
}

// next is the search's next probe given the bracket b: its rate, and whether it is a
// hold; done (with the sweep's Stop set) when the search is over. step is the bracket's
// growth while it is open.
func (s *searcher) next(b result.Bracket, step float64) (rate float64, hold, done bool) {
	cfg := s.cfg
	if cfg.Hold > 0 && len(s.unheld) > 0 {
		return s.holdWalk(b)
	}
	switch {
	case b.Hi == 0:
		if b.Lo >= cfg.MaxRate {
			s.sweep.Stop = StopMaxRate
			return 0, false, true
		}
		return min(round(max(b.Lo, cfg.MinRate)*step), cfg.MaxRate), false, false
	case b.Lo == 0:
		if b.Hi <= cfg.MinRate {
			s.sweep.Stop = StopNoPass
			return 0, false, true
		}
		return max(round(b.Hi/step), cfg.MinRate), false, false
	}
	if !s.narrow(b) {
		rate = round((b.Lo + b.Hi) / 2)
		if rate > b.Lo && rate < b.Hi {
			return rate, false, false
		}
		// rates are whole tx/s: the bracket cannot split further
	}
	// Converged: repeat an edge that has fewer than its verdicts (Repeats per round), lo
	// first.
	need := cfg.Repeats * max(cfg.Round, 1)
	if n := s.passes[b.Lo] + s.fails[b.Lo]; n < need {
		return b.Lo, false, false
	}
	if n := s.passes[b.Hi] + s.fails[b.Hi]; n < need {
		return b.Hi, false, false
	}
	// Then hold the knee for a checkpoint cycle (Config.Hold); a failed hold lowers hi
	// and the search walks down by holds alone (above).
	if cfg.Hold > 0 && !s.held[b.Lo] {
		return b.Lo, true, false
	}
	s.sweep.Converged = true
	s.sweep.Held = s.held[b.Lo] // with a hold step, converging needs it
	s.sweep.Stop = StopConverged
	if need > 1 {
		s.sweep.Stop = StopConfirmed
	}
	return 0, false, true
}

// holdWalk is next once a hold has failed. The short probes passed up to that rate and
// could not see what failed it, so the search goes on by holds alone: below the failed
// hold at hi it holds one precision step lower when that hold ran at least half its
// window (the server collapsed late: the knee is near), two steps lower when it failed
// in its first half, or at lo if short probes passed closer to hi or less than half a
// precision step below that rate (two holds that close tell no more than one: on
// 2026-12-07 a walk held 2,234 tx/s above a short pass at 2,233, then 2,233); once a rate has held,
// it bisects between it and the failed hold above with holds until the two are within
// the precision. Short probes would only pass again, and each costs a warm-up and a
// window; a 6-minute hold that fails is cut at its collapse.
func (s *searcher) holdWalk(b result.Bracket) (rate float64, hold, done bool) {
	cfg := s.cfg
	if s.held[b.Lo] {
		if !s.narrow(b) {
			if rate = round((b.Lo + b.Hi) / 2); rate > b.Lo && rate < b.Hi {
				return rate, true, false
			}
		}
		s.sweep.Converged, s.sweep.Held, s.sweep.Stop = true, true, StopHeldWalk
		return 0, false, true
	}
	steps := 2.0
	if s.unheld[b.Hi] && s.holdSurvived(b.Hi) >= 0.5 {
		steps = 1
	}
	rate = max(HoldWalkRate(b.Hi, cfg.Precision, steps), b.Lo, cfg.MinRate)
	if b.Lo > 0 && (rate-b.Lo)/b.Lo < cfg.Precision/2 {
		rate = b.Lo
	}
	if rate >= b.Hi {
		s.sweep.Stop = StopNoPass
		return 0, false, true
	}
	return rate, true, false
}

// HoldWalkRate is the rate steps precision steps below a failed hold at hi: the whole
// rate at or above hi / (1 + steps × precision), so that a hold there that passes leaves a
// bracket within the precision (one step).
func HoldWalkRate(hi, precision, steps float64) float64 {
	r := hi / (1 + steps*precision)
	if r >= 10 {
		return math.Ceil(r)
	}
	return math.Ceil(r*10) / 10
}

// holdSurvived is the share of its window the last failed hold at rate ran before it
// was cut short (1 for one that ran to its end).
func (s *searcher) holdSurvived(rate float64) float64 {
	for i := len(s.sweep.Probes) - 1; i >= 0; i-- {
		p := s.sweep.Probes[i]
		if p.Hold && p.TargetRate == rate && p.Verdict != result.Pass && p.DurationS > 0 {
			return min(p.MeasuredS/p.DurationS, 1)
		}
	}
	return 1
}

// bracket is the bracket by majority (see Run): hi the lowest rate whose majority
// failed or whose hold failed, lo the highest rate below it whose majority passed; 0 for
// none.
func (s *searcher) bracket() result.Bracket {
	var b result.Bracket
	for r, f := range s.fails {
		if (f >= s.passes[r] || s.unheld[r]) && (b.Hi == 0 || r < b.Hi) {
			b.Hi = r
		}
	}
	for r, n := range s.passes {
		if n > s.fails[r] && !s.unheld[r] && r > b.Lo && (b.Hi == 0 || r < b.Hi) {
			b.Lo = r
		}
	}
	return b
}

// narrow reports whether the bracket is closed and within the precision.
func (s *searcher) narrow(b result.Bracket) bool {
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

// MaxStealRepeats is how many times in a row a host_steal probe is run again before the
// search stops: a neighbour's burst of CPU use lasts minutes, not hours.
const MaxStealRepeats = 3

// probe runs (or reuses) one probe at rate and returns its verdict: pass, or a failing
// one (fail, not_steady). A fault or a driver_limited probe is retried once (marked Retry):
// both can be passing trouble (a restart, a busy client machine); a second one ends the
// search with errStop, as does MaxProbes. A host_steal probe is retried up to
// MaxStealRepeats times.
func (s *searcher) probe(ctx context.Context, rate float64) (result.Verdict, error) {
	for attempt := 0; ; attempt++ {
		if len(s.sweep.Probes)-s.earlier >= s.cfg.MaxProbes {
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
			if s.holding {
				s.held[rate] = true
			}
			return p.Verdict, nil
		case result.Fail, result.NotSteady:
			s.fails[rate]++
			if s.holding {
				s.unheld[rate] = true
			}
			return p.Verdict, nil
		case result.HostSteal:
			s.notify()
			if attempt < MaxStealRepeats {
				continue
			}
			s.sweep.Stop = StopHostSteal + ": " + p.Reason
			return "", errStop
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

// limits are the early stops of a probe at rate, and a hold's window.
func (s *searcher) limits(rate float64) Limits {
	d, measured := s.cfg.Duration, time.Duration(0)
	if s.holding {
		d, measured = s.cfg.Hold, s.cfg.Hold
	}
	if s.cfg.NoEarlyAbort || s.cfg.Duration <= 0 {
		return Limits{Budget: -1, Measured: measured}
	}
	return Limits{Budget: Budget(s.cfg.MaxErrorRate, rate, d),
		StopIf: s.cfg.Steady.StopIf(s.cfg.PoolWait, d), Measured: measured}
}

// one runs one probe at rate, or takes a prior probe at that rate, and judges it.
func (s *searcher) one(ctx context.Context, rate float64) (*result.Probe, error) {
	prior := s.prior
	if s.holding {
		prior = s.priorHolds
	}
	if q := prior[rate]; len(q) > 0 {
		p := q[0]
		prior[rate] = q[1:]
		p.Verdict, p.Reason = Judge(&p, s.cfg)
		p.Round = s.cfg.Round
		return &p, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.holding && s.cfg.OnHold != nil {
		s.cfg.OnHold(rate, s.cfg.Hold)
	}
	if s.cfg.OnStart != nil {
		s.cfg.OnStart(len(s.sweep.Probes)+1, rate, s.sweep.Bracket)
	}
	var (
		p   *result.Probe
		err error
	)
	switch pr := s.p.(type) {
	case LimitedProber:
		p, err = pr.ProbeWithLimits(ctx, rate, s.limits(rate))
	default:
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
	p.TargetRate, p.Hold = rate, s.holding
	p.Verdict, p.Reason = Judge(p, s.cfg)
	p.Round = s.cfg.Round
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

// update recomputes the bracket, knee and probe-minutes from the probes so far.
func (s *searcher) update() {
	s.sweep.Bracket = s.bracket()
	s.sweep.Knee = s.sweep.Bracket.Lo
	secs := s.calSeconds
	for _, p := range s.sweep.Probes {
		secs += p.WarmupS + p.MeasuredS
	}
	s.sweep.ProbeMinutes = secs / 60
}

// finish fills the knee, bracket, interval and cost once the search ends.
func (s *searcher) finish() {
	s.update()
	s.sweep.Interval = KneeInterval(s.sweep.Probes, ReferenceWindow(s.sweep.Probes, s.sweep.HoldS, s.cfg.Duration.Seconds()))
	if s.cfg.Round > 0 {
		s.sweep.Rounds = s.cfg.Round
		s.sweep.RoundKnees = append(s.sweep.RoundKnees, s.sweep.Knee)
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
