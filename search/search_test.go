package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// newSim returns a simulated server with a capacity drawn log-uniformly in [1000, 30000]
// tx/s, 1 % capacity noise, and a 5 s warm-up plus 120 s measured window.
func newSim(seed uint64) *sim {
	rng := rand.New(rand.NewPCG(seed, 1))
	return &sim{C: math.Round(1000 * math.Pow(30, rng.Float64())), Noise: 0.01, Seed: seed,
		Warmup: 5, Duration: 120}
}

// trueKnee is the simulated server's knee without capacity noise: scanning down from
// 1.05 C in 0.5 % steps, the first rate that passes for at least need of 3 seeds.
// Poisson arrivals alone blur the knee of a small server (its queue wanders near ρ = 1),
// so the tests accept a knee between the need=3 and the need=1 knees, widened by the
// precision and the capacity noise.
func trueKnee(s *sim, cfg Config, need int) float64 {
	cfg.Steady = SteadyRule{}
	for r := 1.05 * s.C; r > 0; r *= 0.995 {
		passed := 0
		for seed := uint64(1000); seed < 1003; seed++ {
			q := *s
			q.Noise, q.Seed, q.attempts, q.calls, q.budgets = 0, seed, nil, nil, nil
			p, _ := q.Probe(context.Background(), round(r))
			if v, _ := Judge(p, cfg); v == result.Pass {
				passed++
			}
		}
		if passed >= need {
			return round(r)
		}
	}
	return 0
}

// plainSim hides the simulated server's ShortProber: a search of it does not calibrate
// (it starts from DefaultStartRate unless told otherwise).
type plainSim struct{ s *sim }

func (p plainSim) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return p.s.Probe(ctx, rate)
}

func (p plainSim) ProbeWithLimits(ctx context.Context, rate float64, l Limits) (*result.Probe, error) {
	return p.s.ProbeWithLimits(ctx, rate, l)
}

// prober is s as a search sees it: with calibration (ShortProber) or without.
func prober(s *sim, calibrate bool) Prober {
	if calibrate {
		return s
	}
	return plainSim{s}
}

func baseConfig(s *sim) Config {
	return Config{MaxErrorRate: 0.001, Precision: 0.05, Duration: time.Duration(s.Duration) * time.Second}
}

func TestConvergesToTheKnee(t *testing.T) {
	for _, calibrate := range []bool{false, true} {
		for seed := uint64(1); seed <= 150; seed++ {
			s := newSim(seed)
			cfg := baseConfig(s)
			sw, err := Run(context.Background(), prober(s, calibrate), cfg, nil)
			if err != nil {
				t.Fatalf("seed %d calibrate=%v: Run: %v", seed, calibrate, err)
			}
			klo, khi := trueKnee(s, cfg, 3), trueKnee(s, cfg, 1)
			lo, hi := klo*(1-cfg.Precision-3*s.Noise), khi*(1+3*s.Noise)
			if !sw.Converged || sw.Stop != StopConverged || sw.Knee < lo || sw.Knee > hi {
				t.Errorf("seed %d calibrate=%v C=%.0f: knee %.0f (true knee %.0f..%.0f: want %.0f..%.0f) converged=%v stop=%q bracket=%+v probes=%d",
					seed, calibrate, s.C, sw.Knee, klo, khi, lo, hi, sw.Converged, sw.Stop, sw.Bracket, len(sw.Probes))
			}
			if b := sw.Bracket; b.Lo != sw.Knee || (b.Hi-b.Lo)/b.Lo > cfg.Precision {
				t.Errorf("seed %d: bracket %+v not within %.2f of knee %.0f", seed, b, cfg.Precision, sw.Knee)
			}
			if calibrate != (sw.CalibratedRate > 0) {
				t.Errorf("seed %d calibrate=%v: calibrated rate %.0f", seed, calibrate, sw.CalibratedRate)
			}
			for _, p := range sw.Probes {
				if !p.Balanced() || p.Verdict == "" || p.Reason == "" {
					t.Fatalf("seed %d: probe %+v: unbalanced or unjudged", seed, p.TargetRate)
				}
			}
		}
	}
}

func TestBracketIsMonotonic(t *testing.T) {
	for _, calibrate := range []bool{false, true} {
		for seed := uint64(1); seed <= 100; seed++ {
			s := newSim(seed)
			cfg := baseConfig(s)
			var brackets []result.Bracket
			cfg.OnProbe = func(sw result.Sweep) { brackets = append(brackets, sw.Bracket) }
			sw, err := Run(context.Background(), prober(s, calibrate), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(brackets) != len(sw.Probes) {
				t.Fatalf("seed %d: OnProbe called %d times for %d probes", seed, len(brackets), len(sw.Probes))
			}
			for i := 1; i < len(brackets); i++ {
				a, b := brackets[i-1], brackets[i]
				if b.Lo < a.Lo || (a.Hi != 0 && (b.Hi == 0 || b.Hi > a.Hi)) {
					t.Errorf("seed %d calibrate=%v: bracket went %+v -> %+v", seed, calibrate, a, b)
				}
				if b.Hi != 0 && b.Lo >= b.Hi {
					t.Errorf("seed %d: bracket %+v inverted", seed, b)
				}
			}
		}
	}
}

func TestEarlyAbortCutsFailingProbesOnly(t *testing.T) {
	var full, cut float64
	for seed := uint64(1); seed <= 50; seed++ {
		s1, s2 := newSim(seed), newSim(seed)
		cfg := baseConfig(s1)
		with, err := Run(context.Background(), plainSim{s1}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.NoEarlyAbort = true
		without, err := Run(context.Background(), plainSim{s2}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if with.Knee != without.Knee {
			t.Errorf("seed %d: knee %.0f with early abort, %.0f without", seed, with.Knee, without.Knee)
		}
		for i, b := range s1.budgets {
			if want := Budget(0.001, s1.calls[i], 120*time.Second); b != want {
				t.Errorf("seed %d: probe at %.0f got budget %d, want %d", seed, s1.calls[i], b, want)
			}
		}
		for i, b := range s2.budgets {
			if b >= 0 || s2.stops[i] {
				t.Fatalf("seed %d: NoEarlyAbort still passed budget %d (trend stop %v)", seed, b, s2.stops[i])
			}
		}
		for i, st := range s1.stops {
			if !st {
				t.Errorf("seed %d: probe at %.0f ran without the trend stop", seed, s1.calls[i])
			}
		}
		for _, p := range with.Probes {
			if p.Verdict == result.Pass && (p.CutShort || p.MeasuredS != p.DurationS) {
				t.Errorf("seed %d: passing probe at %.0f ran %.0f of %.0f s", seed, p.TargetRate, p.MeasuredS, p.DurationS)
			}
			if want := map[string]result.Verdict{result.CutByErrors: result.Fail, result.CutByTrend: result.NotSteady}[p.CutBy]; p.CutShort && p.Verdict != want {
				t.Errorf("seed %d: probe at %.0f cut by %q judged %s, want %s", seed, p.TargetRate, p.CutBy, p.Verdict, want)
			}
		}
		full += without.ProbeMinutes
		cut += with.ProbeMinutes
	}
	if cut >= 0.8*full {
		t.Errorf("early abort: %.0f probe-minutes against %.0f without; want a clear saving", cut, full)
	}
}

func TestResumeDoesNotRepeatProbes(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := newSim(seed)
		cfg := baseConfig(s)
		whole, err := Run(context.Background(), s, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(whole.Probes); k++ {
			s2 := newSim(seed)
			cfg2 := baseConfig(s2)
			cfg2.Estimate = whole.CalibratedRate
			resumed, err := Run(context.Background(), s2, cfg2, whole.Probes[:k])
			if err != nil {
				t.Fatal(err)
			}
			if len(s2.shorts) > 0 {
				t.Fatalf("seed %d: resumed search calibrated again (%v)", seed, s2.shorts)
			}
			if len(s2.calls) != len(whole.Probes)-k {
				t.Errorf("seed %d, %d prior probes: resumed search ran %d probes, want %d", seed, k, len(s2.calls), len(whole.Probes)-k)
			}
			if resumed.Knee != whole.Knee || len(resumed.Probes) != len(whole.Probes) || resumed.Bracket != whole.Bracket {
				t.Errorf("seed %d, %d prior: resumed knee %.0f bracket %+v (%d probes), uninterrupted %.0f %+v (%d)",
					seed, k, resumed.Knee, resumed.Bracket, len(resumed.Probes), whole.Knee, whole.Bracket, len(whole.Probes))
			}
		}
	}
}

func TestInterruptThenResume(t *testing.T) {
	s := newSim(3)
	cfg := baseConfig(s)
	whole, err := Run(context.Background(), plainSim{newSim(3)}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg.OnStart = func(n int, rate float64, b result.Bracket) {
		if n == 4 {
			cancel()
		}
	}
	part, err := Run(ctx, plainSim{s}, cfg, nil)
	if !errors.Is(err, context.Canceled) || part.Stop != StopInterrupted || len(part.Probes) != 4 || !part.Probes[3].Interrupted {
		t.Fatalf("interrupted Run: err %v stop %q probes %d; want context.Canceled, interrupted, 3 probes and an interrupted 4th",
			err, part.Stop, len(part.Probes))
	}
	cfg.OnStart = nil
	s2 := newSim(3)
	rest, err := Run(context.Background(), plainSim{s2}, cfg, part.Probes)
	if err != nil {
		t.Fatal(err)
	}
	if rest.Knee != whole.Knee || len(s2.calls) != len(whole.Probes)-3 {
		t.Errorf("resumed after interrupt: knee %.0f with %d new probes; uninterrupted knee %.0f with %d probes",
			rest.Knee, len(s2.calls), whole.Knee, len(whole.Probes))
	}
}

func TestInterruptedProbeIsKeptNotReused(t *testing.T) {
	s := newSim(4)
	cfg := baseConfig(s)
	ctx, cancel := context.WithCancel(context.Background())
	p := proberFunc(func(ctx context.Context, rate float64) (*result.Probe, error) {
		if len(s.calls) == 2 {
			cancel()
			return &result.Probe{TargetRate: rate, Interrupted: true, WarmupS: 5, MeasuredS: 7}, ctx.Err()
		}
		return s.Probe(ctx, rate)
	})
	part, err := Run(ctx, p, cfg, nil)
	if !errors.Is(err, context.Canceled) || len(part.Probes) != 3 || !part.Probes[2].Interrupted || part.Probes[2].Verdict != "" {
		t.Fatalf("Run: err %v, probes %+v; want the third probe kept as interrupted and unjudged", err, part.Probes)
	}
	if part.ProbeMinutes <= 0 {
		t.Errorf("probe-minutes %.2f: the interrupted probe's time must count", part.ProbeMinutes)
	}
	s2 := newSim(4)
	if _, err := Run(context.Background(), plainSim{s2}, baseConfig(s2), part.Probes); err != nil {
		t.Fatal(err)
	}
	if len(s2.calls) == 0 || s2.calls[0] != part.Probes[2].TargetRate {
		t.Errorf("resume: first new probe at %v, want the interrupted rate %.0f run again", s2.calls, part.Probes[2].TargetRate)
	}
}

type proberFunc func(ctx context.Context, rate float64) (*result.Probe, error)

func (f proberFunc) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	return f(ctx, rate)
}

func TestP99SLOLowersTheKnee(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		s := newSim(seed)
		cfg := baseConfig(s)
		cfg.P99SLO = 50 * time.Millisecond // base 5 ms / (1-ρ) <= 50 ms  <=>  ρ <= 0.9
		sw, err := Run(context.Background(), plainSim{s}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		klo, khi := trueKnee(s, cfg, 3), trueKnee(s, cfg, 1)
		if sw.Knee < klo*(1-cfg.Precision-3*s.Noise) || sw.Knee > khi*(1+3*s.Noise) || khi > 0.92*s.C {
			t.Errorf("seed %d C=%.0f: knee with 50 ms SLO %.0f, want %.0f..%.0f (<= 0.9 C)", seed, s.C, sw.Knee, klo, khi)
		}
		sloFails := 0
		for _, p := range sw.Probes {
			if p.Verdict == result.Fail && strings.Contains(p.Reason, "SLO") {
				sloFails++
			}
		}
		if sloFails == 0 {
			t.Errorf("seed %d: no probe failed by the SLO", seed)
		}
	}
}

func TestDriverLimitedStopsTheSearch(t *testing.T) {
	s := newSim(5)
	s.C = 5000
	s.DriverLimit = 1000
	cfg := baseConfig(s)
	cfg.StartRate = 100
	sw, err := Run(context.Background(), s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := sw.Probes[len(sw.Probes)-1]
	if !strings.HasPrefix(sw.Stop, StopDriverLimited) || sw.Converged || last.Verdict != result.DriverLimited {
		t.Fatalf("stop %q converged %v last verdict %q; want driver_limited, not converged", sw.Stop, sw.Converged, last.Verdict)
	}
	if sw.Knee != 800 || last.TargetRate != 1600 || !last.Retry || len(s.calls) != 6 {
		t.Errorf("knee %.0f, last rate %.0f (retry %v), calls %v; want knee 800 (100..800 passed), stop at 1600 after one retry",
			sw.Knee, last.TargetRate, last.Retry, s.calls)
	}
	// A passing hiccup: the retry passes and the search goes on.
	h := newSim(5)
	h.C = 5000
	hp := proberFunc(func(ctx context.Context, rate float64) (*result.Probe, error) {
		p, err := h.Probe(ctx, rate)
		if len(h.calls) == 2 {
			p.DriverLimited, p.DriverLimitReason = true, "scheduler lag p99 25 ms"
		}
		return p, err
	})
	sw, err = Run(context.Background(), hp, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Probes[1].Verdict != result.DriverLimited || !sw.Probes[2].Retry || sw.Probes[2].Verdict != result.Pass || !sw.Converged {
		t.Errorf("one driver_limited hiccup: probes 2,3 %s, %s (retry %v); converged %v; want driver_limited then a passing retry",
			sw.Probes[1].Verdict, sw.Probes[2].Verdict, sw.Probes[2].Retry, sw.Converged)
	}
}

func TestNotSteadyProbeFails(t *testing.T) {
	// Capacity falls 10 % through the probe (cost growing as the table grows): at 925/s
	// the queue only starts to build late, so no arrival is rejected, but the queue wait
	// climbs: a longer probe would fail.
	s := &sim{C: 1000, Seed: 9, Warmup: 5, Duration: 120, Decay: 0.1}
	cfg := Config{MaxErrorRate: 0.001}
	p, err := s.Probe(context.Background(), 925)
	if err != nil {
		t.Fatal(err)
	}
	v, why := Judge(p, cfg)
	if p.ErrorRate() > cfg.MaxErrorRate || v != result.NotSteady {
		t.Fatalf("decaying server at 925/s: error rate %.4f, verdict %s (%s); want <= 0.001 and not_steady", p.ErrorRate(), v, why)
	}
	p, _ = (&sim{C: 1000, Seed: 9, Warmup: 5, Duration: 120}).Probe(context.Background(), 925)
	if v, why := Judge(p, cfg); v != result.Pass {
		t.Errorf("steady server at 925/s: verdict %s (%s), want pass", v, why)
	}
	// The search lands below every rate that was not steady.
	sd := &sim{C: 1000, Seed: 9, Warmup: 5, Duration: 120, Decay: 0.1}
	sw, err := Run(context.Background(), sd, Config{MaxErrorRate: 0.001, StartRate: 100, Duration: 120 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	notSteady := 0
	for _, p := range sw.Probes {
		if p.Verdict == result.NotSteady {
			notSteady++
			if p.TargetRate <= sw.Knee {
				t.Errorf("knee %.0f at or above a not_steady rate %.0f", sw.Knee, p.TargetRate)
			}
		}
	}
	if notSteady == 0 || sw.Knee < 700 || !sw.Converged {
		t.Errorf("decaying server: knee %.0f, %d not_steady probes, converged %v; want a converged knee above 700 bounded by not_steady probes",
			sw.Knee, notSteady, sw.Converged)
	}
}

func TestFaultIsRetriedOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *sim
	}{
		{"probe error", &sim{ErrorCalls: map[int]bool{2: true}}},
		{"connection errors", &sim{ConnCalls: map[int]bool{2: true}}},
	} {
		s := tc.s
		s.C, s.Seed, s.Warmup, s.Duration, s.Noise = 2000, 1, 5, 60, 0.01
		cfg := Config{MaxErrorRate: 0.001, StartRate: 100, Duration: 60 * time.Second}
		sw, err := Run(context.Background(), s, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		p1, p2 := sw.Probes[1], sw.Probes[2]
		if p1.Verdict != result.Fault || p1.Retry || p2.TargetRate != p1.TargetRate || !p2.Retry || p2.Verdict != result.Pass {
			t.Errorf("%s: probes 2,3 = %s/%v at %.0f, %s/%v at %.0f; want fault then a passing retry at the same rate",
				tc.name, p1.Verdict, p1.Retry, p1.TargetRate, p2.Verdict, p2.Retry, p2.TargetRate)
		}
		if !sw.Converged {
			t.Errorf("%s: search did not go on after the retry: stop %q", tc.name, sw.Stop)
		}
	}
	s := &sim{C: 2000, Seed: 1, Warmup: 5, Duration: 60, ErrorCalls: map[int]bool{2: true, 3: true}}
	sw, err := Run(context.Background(), s, Config{MaxErrorRate: 0.001, StartRate: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sw.Stop, StopFault) || len(sw.Probes) != 3 || sw.Converged {
		t.Errorf("two faults: stop %q after %d probes; want fault after 3", sw.Stop, len(sw.Probes))
	}
}

func TestConfirm(t *testing.T) {
	s := newSim(11)
	cfg := baseConfig(s)
	plain, err := Run(context.Background(), plainSim{newSim(11)}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Confirm = 2
	sw, err := Run(context.Background(), plainSim{s}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Probes) != len(plain.Probes)+4 || sw.Stop != StopConfirmed {
		t.Fatalf("confirm 2: %d probes (plain %d), stop %q; want 4 more and %q", len(sw.Probes), len(plain.Probes), sw.Stop, StopConfirmed)
	}
	if sw.Knee != plain.Knee {
		t.Errorf("confirm on a steady server moved the knee: %.0f -> %.0f", plain.Knee, sw.Knee)
	}
	// A knee that fails a repeat no longer counts: the knee drops to the next rate that
	// passed every time.
	f := newSim(11)
	f.FlakyRate = plain.Knee
	sw, err = Run(context.Background(), plainSim{f}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Knee >= plain.Knee || sw.Knee == 0 || sw.Bracket.Lo != sw.Knee || sw.Bracket.Hi != plain.Knee {
		t.Errorf("flaky knee %.0f: confirmed knee %.0f bracket %+v; want below it, bracket hi = %.0f", plain.Knee, sw.Knee, sw.Bracket, plain.Knee)
	}
}

func TestNoPassAndMaxProbes(t *testing.T) {
	var rates []float64
	down := proberFunc(func(ctx context.Context, rate float64) (*result.Probe, error) {
		rates = append(rates, rate)
		n := int64(rate * 10)
		return &result.Probe{TargetRate: rate, Scheduled: n, Committed: n / 2, Rejected: n - n/2, MeasuredS: 10, DurationS: 10}, nil
	})
	sw, err := Run(context.Background(), down, Config{MaxErrorRate: 0.001, StartRate: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Stop != StopNoPass || sw.Knee != 0 || sw.Converged || rates[len(rates)-1] != DefaultMinRate {
		t.Errorf("server failing every rate: stop %q knee %.0f converged %v rates %v; want no_pass after probing down to %v",
			sw.Stop, sw.Knee, sw.Converged, rates, DefaultMinRate)
	}
	for i := 1; i < len(rates); i++ {
		if rates[i] >= rates[i-1] {
			t.Errorf("rates did not fall: %v", rates)
		}
	}
	s := newSim(1)
	sw, err = Run(context.Background(), s, Config{MaxErrorRate: 0.001, StartRate: 1, MaxProbes: 3}, nil)
	if err != nil || sw.Stop != StopMaxProbes || len(sw.Probes) != 3 || sw.Converged {
		t.Errorf("MaxProbes 3: err %v stop %q probes %d converged %v", err, sw.Stop, len(sw.Probes), sw.Converged)
	}
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		er, rate float64
		d        time.Duration
		want     int64
	}{
		{0.001, 1000, 420 * time.Second, 420},
		{0.001, 1000, 10 * time.Second, 10},
		{0.001, 99, 10 * time.Second, 0},
		{0, 5000, time.Minute, 0},
		{0.01, 333, 15 * time.Second, 49},
	} {
		if got := Budget(tc.er, tc.rate, tc.d); got != tc.want {
			t.Errorf("Budget(%g, %g, %v) = %d, want %d", tc.er, tc.rate, tc.d, got, tc.want)
		}
	}
}

// TestRepeatsMoveTheKnee: repeats at the final edges count by majority and move the
// bracket either way, then the search bisects again and repeats at the new edges.
func TestRepeatsMoveTheKnee(t *testing.T) {
	for seed := uint64(11); seed <= 20; seed++ {
		s := newSim(seed)
		cfg := baseConfig(s)
		plain, err := Run(context.Background(), plainSim{newSim(seed)}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Repeats = 3
		for _, tc := range []struct {
			name string
			mod  func(s *sim)
			want func(knee float64) bool
			says string
		}{
			{"steady server", func(*sim) {}, func(k float64) bool { return k >= plain.Knee*(1-cfg.Precision) && k <= plain.Bracket.Hi }, "about the plain knee"},
			{"the knee fails its repeats", func(s *sim) { s.FlakyRate = plain.Knee }, func(k float64) bool { return k > 0 && k < plain.Knee }, "below the plain knee"},
			{"the first fail above the knee was unlucky", func(s *sim) { s.Boost = map[float64]bool{plain.Knee: true, plain.Bracket.Hi: true} }, func(k float64) bool { return k >= plain.Bracket.Hi }, "at or above the plain bracket's hi"},
		} {
			s := newSim(seed)
			tc.mod(s)
			sw, err := Run(context.Background(), plainSim{s}, cfg, nil)
			call := fmt.Sprintf("seed %d, %s: Run(Repeats 3) (plain knee %.0f, bracket %+v)", seed, tc.name, plain.Knee, plain.Bracket)
			if err != nil {
				t.Fatalf("%s: %v", call, err)
			}
			if !tc.want(sw.Knee) || sw.Stop != StopConfirmed || !sw.Converged || sw.Repeats != 3 || sw.Bracket.Lo != sw.Knee {
				t.Errorf("%s = knee %.0f bracket %+v stop %q converged %v repeats %d; want knee %s, stop %q",
					call, sw.Knee, sw.Bracket, sw.Stop, sw.Converged, sw.Repeats, tc.says, StopConfirmed)
				continue
			}
			// Both final edges were probed 3 times, and their majorities agree with the bracket.
			n, pass := map[float64]int{}, map[float64]int{}
			for _, p := range sw.Probes {
				n[p.TargetRate]++
				if p.Verdict == result.Pass {
					pass[p.TargetRate]++
				}
			}
			b := sw.Bracket
			if n[b.Lo] < 3 || n[b.Hi] < 3 || 2*pass[b.Lo] <= n[b.Lo] || 2*pass[b.Hi] > n[b.Hi] {
				t.Errorf("%s: edges %+v probed %d and %d times, passed %d and %d; want 3 each, lo's majority pass, hi's fail",
					call, b, n[b.Lo], n[b.Hi], pass[b.Lo], pass[b.Hi])
			}
			if (b.Hi-b.Lo)/b.Lo > cfg.Precision && round((b.Lo+b.Hi)/2) > b.Lo && round((b.Lo+b.Hi)/2) < b.Hi {
				t.Errorf("%s: bracket %+v not within the precision after the repeats", call, b)
			}
			if iv := sw.Interval; iv == nil || iv.Lo > b.Hi || iv.Hi < b.Lo {
				t.Errorf("%s: interval %+v does not meet the bracket %+v", call, iv, b)
			}
		}
	}
	// MaxProbes bounds the repeats.
	s := newSim(11)
	s.FlakyRate = 0 // steady
	cfg := baseConfig(s)
	cfg.Repeats, cfg.MaxProbes = 5, 8
	sw, err := Run(context.Background(), plainSim{s}, cfg, nil)
	if err != nil || sw.Stop != StopMaxProbes || len(sw.Probes) != 8 || sw.Converged {
		t.Errorf("Run(Repeats 5, MaxProbes 8) = err %v, stop %q, %d probes, converged %v; want max_probes after 8", err, sw.Stop, len(sw.Probes), sw.Converged)
	}
}

// TestSweepInterval: a converged search reports an interval around its bracket.
func TestSweepInterval(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		s := newSim(seed)
		sw, err := Run(context.Background(), s, baseConfig(s), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, iv := sw.Bracket, sw.Interval
		mid := (b.Lo + b.Hi) / 2
		w := b.Hi - b.Lo
		lo, hi := math.Inf(1), 0.0
		for _, p := range sw.Probes {
			lo, hi = min(lo, p.TargetRate), max(hi, p.TargetRate)
		}
		// Within the probed range widened by one bracket width, once there are five
		// verdicts; four (three passes of 120 s and a fail) cannot rule out a collapse
		// rate that does not grow with the rate, and the interval spans the fit's range.
		wlo, whi := lo-w, hi+w
		if len(sw.Probes) < 5 {
			wlo, whi = lo/2, 2*hi
		}
		if iv == nil || iv.Lo > mid || iv.Hi < mid || iv.Lo < wlo-1e-6 || iv.Hi > whi+1e-6 || iv.Level != 0.9 || iv.WindowS != s.Duration {
			t.Errorf("seed %d: interval %+v, bracket %+v, probes %.0f..%.0f; want it around %.1f within %.0f..%.0f, for the probes' %.0f s",
				seed, iv, b, lo, hi, mid, wlo, whi, s.Duration)
		}
	}
}

// TestCalibration: a ShortProber is calibrated with short probes from 250/s ×4 until one
// saturates; StartFrom skips the calibration and starts at the previous knee.
func TestCalibration(t *testing.T) {
	s := &sim{C: 5000, Seed: 1, Warmup: 30, Duration: 420, Noise: 0.01}
	cfg := Config{MaxErrorRate: 0.001, Duration: 420 * time.Second, Warmup: 30 * time.Second}
	var announced []float64
	cfg.OnCalibrate = func(r float64) { announced = append(announced, r) }
	sw, err := Run(context.Background(), s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{250, 1000, 4000, 16000}
	if fmt.Sprint(s.shorts) != fmt.Sprint(want) || fmt.Sprint(announced) != fmt.Sprint(want) {
		t.Errorf("calibration probes at %v (announced %v), want %v", s.shorts, announced, want)
	}
	if sw.CalibratedRate < 4500 || sw.CalibratedRate > 5500 || sw.Probes[0].TargetRate != round(CalibratedStart*sw.CalibratedRate) {
		t.Errorf("calibrated rate %.0f, first probe %.0f; want about 5000 and %.0f × it", sw.CalibratedRate, sw.Probes[0].TargetRate, CalibratedStart)
	}
	probeSecs := 0.0
	for _, p := range sw.Probes {
		probeSecs += p.WarmupS + p.MeasuredS
	}
	if cal := 60*sw.ProbeMinutes - probeSecs; math.Abs(cal-4*10) > 1e-6 {
		t.Errorf("calibration counted %.1f s in the probe-minutes, want 4 probes × (5 s warm-up + 5 s)", cal)
	}
	s = &sim{C: 5000, Seed: 1, Warmup: 30, Duration: 420, Noise: 0.01}
	cfg.StartFrom = 4700
	sw, err = Run(context.Background(), s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.shorts) != 0 || sw.CalibratedRate != 0 || sw.Probes[0].TargetRate != 4700 || sw.Probes[1].TargetRate != round(4700*1.2) || !sw.Converged {
		t.Errorf("StartFrom 4700: calibration %v, calibrated %.0f, first probes %.0f, %.0f, converged %v; want none, 4700 then 5640",
			s.shorts, sw.CalibratedRate, sw.Probes[0].TargetRate, sw.Probes[1].TargetRate, sw.Converged)
	}
}

// stealing runs s, but during the calls (1-based) in stolen a neighbour takes the CPU:
// the server has a tenth of its capacity and the probe records 40 % steal.
func stealing(s *sim, stolen func(n int) bool) proberFunc {
	return func(ctx context.Context, rate float64) (*result.Probe, error) {
		n, c := len(s.calls)+1, s.C
		if stolen(n) {
			s.C = c / 10
		}
		p, err := s.Probe(ctx, rate)
		s.C = c
		if stolen(n) && p != nil {
			p.Observation = &result.Observation{HostStealShare: 0.4}
		}
		return p, err
	}
}

func TestHostStealIsRepeatedNotBooked(t *testing.T) {
	s := newSim(5)
	s.C = 5000
	cfg := baseConfig(s)
	cfg.StartRate = 100
	sw, err := Run(context.Background(), stealing(s, func(n int) bool { return n == 4 || n == 5 }), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, p3, p4 := sw.Probes[3], sw.Probes[4], sw.Probes[5]
	if p2.Verdict != result.HostSteal || p3.Verdict != result.HostSteal || !strings.Contains(p2.Reason, "lost 40 % of its CPU") ||
		!p3.Retry || !p4.Retry || p4.Verdict != result.Pass || p4.TargetRate != p2.TargetRate {
		t.Fatalf("probes 4-6: %s/%v (%s), %s/%v, %s/%v at %.0f/%.0f; want two host_steal probes, then a passing retry at the same rate",
			p2.Verdict, p2.Retry, p2.Reason, p3.Verdict, p3.Retry, p4.Verdict, p4.Retry, p2.TargetRate, p4.TargetRate)
	}
	if !sw.Converged || sw.Knee < 4000 {
		t.Errorf("knee %.0f, converged %v (stop %q); want the server's knee (C = 5000), not the neighbours'", sw.Knee, sw.Converged, sw.Stop)
	}
	verdicts := 0
	for _, p := range sw.Probes {
		if p.Verdict == result.Pass || p.Verdict == result.Fail || p.Verdict == result.NotSteady {
			verdicts++
		}
	}
	if sw.Interval == nil || sw.Interval.Probes != verdicts {
		t.Errorf("interval %+v; want it fitted on the %d pass/fail verdicts only", sw.Interval, verdicts)
	}

	// A neighbour that never leaves: the search stops and says why.
	s = newSim(5)
	s.C = 5000
	sw, err = Run(context.Background(), stealing(s, func(n int) bool { return n >= 4 }), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sw.Stop, StopHostSteal) || sw.Converged || len(sw.Probes) != 4+MaxStealRepeats {
		t.Errorf("steal throughout: stop %q after %d probes, converged %v; want %s after %d probes",
			sw.Stop, len(sw.Probes), sw.Converged, StopHostSteal, 4+MaxStealRepeats)
	}
}

func TestJudgeHostSteal(t *testing.T) {
	s := &sim{C: 1000, Seed: 9, Warmup: 5, Duration: 60}
	cfg := Config{MaxErrorRate: 0.001}
	for _, tc := range []struct {
		rate, steal float64
		want        result.Verdict
	}{
		{500, 0.4, result.Pass},       // held the rate with less CPU: a pass
		{2000, 0.4, result.HostSteal}, // failed while the neighbours took 40 %
		{2000, 0.05, result.Fail},     // 5 % steal: the failure is the server's
		{2000, result.StealLimit, result.HostSteal},
	} {
		p, err := s.Probe(context.Background(), tc.rate)
		if err != nil {
			t.Fatal(err)
		}
		p.Observation = &result.Observation{HostStealShare: tc.steal}
		if v, why := Judge(p, cfg); v != tc.want {
			t.Errorf("rate %.0f with %.0f %% steal: %s (%s), want %s", tc.rate, 100*tc.steal, v, why, tc.want)
		}
	}
}

// TestRounds: a later round (Config.Earlier, Round) takes a converged sweep up where it
// stopped: no calibration, its first probe at an edge, each edge probed Repeats more
// times, its probes marked with the round. A server that got slower in between moves
// the knee down to the slower server's; one that got faster can raise it no higher than
// the faster server's (a tie fails); the interval is fitted to both rounds' probes.
func TestRounds(t *testing.T) {
	for seed := uint64(31); seed <= 38; seed++ {
		s := newSim(seed)
		cfg := baseConfig(s)
		cfg.Repeats, cfg.Round = 2, 1
		first, err := Run(context.Background(), prober(s, true), cfg, nil)
		if err != nil || !first.Converged || first.Rounds != 1 || len(first.RoundKnees) != 1 || first.RoundKnees[0] != first.Knee {
			t.Fatalf("seed %d: round 1 = %+v, %v; want converged, rounds 1, round knees [knee]", seed, first, err)
		}
		for _, p := range first.Probes {
			if p.Round != 1 {
				t.Fatalf("seed %d: a round-1 probe is marked round %d", seed, p.Round)
			}
		}
		for _, tc := range []struct {
			name  string
			scale float64
		}{{"steady", 1}, {"slower by a fifth", 0.8}, {"faster by a fifth", 1.2}} {
			s2 := newSim(seed)
			s2.C *= tc.scale
			s2.Seed = seed + 100 // other noise than round 1's
			cfg2 := cfg
			cfg2.Round, cfg2.Earlier = 2, &first
			calls := 0
			counting := proberFunc(func(ctx context.Context, rate float64) (*result.Probe, error) {
				calls++
				if calls == 1 && rate != first.Bracket.Lo {
					t.Errorf("seed %d, %s: round 2 started at %.0f; want round 1's edge %.0f", seed, tc.name, rate, first.Bracket.Lo)
				}
				return s2.Probe(ctx, rate)
			})
			sw, err := Run(context.Background(), counting, cfg2, nil)
			call := fmt.Sprintf("seed %d, %s: round 2 after knee %.0f (bracket %+v)", seed, tc.name, first.Knee, first.Bracket)
			if err != nil || !sw.Converged || sw.Rounds != 2 || len(sw.RoundKnees) != 2 || sw.RoundKnees[0] != first.Knee || sw.RoundKnees[1] != sw.Knee {
				t.Fatalf("%s = knee %.0f, rounds %d %v, converged %v, %v", call, sw.Knee, sw.Rounds, sw.RoundKnees, sw.Converged, err)
			}
			if len(sw.Probes) != len(first.Probes)+calls || calls < 2*cfg.Repeats {
				t.Errorf("%s: %d probes after %d + %d run; want the earlier ones kept and at least %d new", call, len(sw.Probes), len(first.Probes), calls, 2*cfg.Repeats)
			}
			n := map[float64]int{}
			for i, p := range sw.Probes {
				if want := 1 + min(i/len(first.Probes), 1); p.Round != want {
					t.Fatalf("%s: probe %d marked round %d, want %d", call, i, p.Round, want)
				}
				n[p.TargetRate]++
			}
			if b := sw.Bracket; n[b.Lo] < 4 || n[b.Hi] < 4 {
				t.Errorf("%s: edges %+v probed %d and %d times in all; want 4 each (2 per round)", call, b, n[b.Lo], n[b.Hi])
			}
			slow := trueKnee(s2, cfg, 3) // the round-2 server's knee (slower or faster)
			switch tc.scale {
			case 1:
				if sw.Knee < first.Knee*(1-2*cfg.Precision) || sw.Knee > first.Bracket.Hi {
					t.Errorf("%s: knee %.0f; want about round 1's", call, sw.Knee)
				}
			case 0.8:
				if sw.Knee >= first.Knee || sw.Knee < slow*(1-2*cfg.Precision) || sw.Knee > slow*(1+2*cfg.Precision) {
					t.Errorf("%s: knee %.0f; want below round 1's and near the slower server's %.0f", call, sw.Knee, slow)
				}
				// Fitted to both rounds, the interval lies between the two servers' knees or
				// reaches into that range.
				if iv := sw.Interval; iv == nil || iv.Hi < sw.Knee || iv.Lo > first.Knee {
					t.Errorf("%s: interval %+v does not meet [%.0f, %.0f], the rounds' knees", call, iv, sw.Knee, first.Knee)
				}
			case 1.2:
				// The knee rises only where the high edge's verdicts now pass by majority.
				if sw.Knee < first.Knee || sw.Knee > slow*(1+2*cfg.Precision) {
					t.Errorf("%s: knee %.0f; want from round 1's %.0f up to the faster server's %.0f", call, sw.Knee, first.Knee, slow)
				}
			}
		}
	}
}
