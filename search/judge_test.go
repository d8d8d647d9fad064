package search

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// series builds a measured per-second series from queue-wait values (lag constant).
func series(qw ...float64) []result.Second {
	out := make([]result.Second, len(qw))
	for i, v := range qw {
		out[i] = result.Second{T: i, Phase: result.PhaseMeasure, QueueWaitP99Ms: v, SchedLagMs: 1, SchedLagP99Ms: 0.5}
	}
	return out
}

func ramp(n int, from, to float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = from + (to-from)*float64(i)/float64(n-1)
	}
	return v
}

func flat(n int, x float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// noisy adds seeded uniform noise of ± amp ms to v (never below 0).
func noisy(v []float64, amp float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = max(0, x+amp*(2*rng.Float64()-1))
	}
	return out
}

func cat(parts ...[]float64) []float64 {
	var out []float64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// firstStop calls stop with every measured prefix, as the driver does once a second, and
// returns the first number of seconds at which it fired (0 = never) and its reason.
func firstStop(stop func([]result.Second) string, s []result.Second) (int, string) {
	return firstStopEvery(stop, s, 1)
}

func firstStopEvery(stop func([]result.Second) string, s []result.Second, every int) (int, string) {
	for k := 1; k <= len(s); k += every {
		if why := stop(s[:k]); why != "" {
			return k, why
		}
	}
	return 0, ""
}

func TestSteadyRule(t *testing.T) {
	spike := flat(40, 3)
	spike[36] = 900 // one stall in the last quarter
	stall := flat(11, 5)
	stall[6] = 120
	warm := append([]result.Second{{Phase: result.PhaseWarmup, QueueWaitP99Ms: 900}}, series(flat(20, 5)...)...)
	checkpoint := func(at int) []float64 {
		v := noisy(flat(30, 8), 1, uint64(at))
		for i := at; i < at+3 && i < len(v); i++ {
			v[i] = 300
		}
		return v
	}
	climbCollapse := cat(ramp(40, 10, 515), noisy(flat(20, 10), 2, 1))
	sec := time.Second
	for _, tc := range []struct {
		name     string
		s        []result.Second
		length   time.Duration
		verdict  string // result.Steady.Verdict
		series   string // the series that decided ("" = any)
		stopsBy  int    // StopIf must fire at or before this many seconds; 0 = never fires
		reasonIn string
	}{
		{"(a) 11 s at 5 ms with one 120 ms second", series(stall...), 11 * sec, SteadyOK, "", 0, ""},
		{"(b) 0 -> 26 ms over 10 s, 10 s probe", series(ramp(10, 0, 26)...), 10 * sec, SteadyOK, "", 0, ""},
		{"(c) 3,318 tx/s: 1.5 -> 37 ms over 10 s", series(ramp(10, 1.5, 37)...), 10 * sec, SteadyOK, "", 0, ""},
		{"(d) climb 10 -> 515 ms over 40 s then collapse, 60 s probe", series(climbCollapse...), 60 * sec, SteadyGrowing, SeriesQueueWait, 20, "queue wait p99 grew"},
		{"(e) 5 -> 400 ms over 30 s, 30 s probe", series(ramp(30, 5, 400)...), 30 * sec, SteadyGrowing, SeriesQueueWait, 29, "queue wait p99 grew"},
		{"(f) 3 s checkpoint at 300 ms, start", series(checkpoint(0)...), 30 * sec, SteadyOK, "", 0, ""},
		{"(f) 3 s checkpoint at 300 ms, middle", series(checkpoint(14)...), 30 * sec, SteadyOK, "", 0, ""},
		{"(f) 3 s checkpoint at 300 ms, end", series(checkpoint(27)...), 30 * sec, SteadyOK, "", 0, ""},
		{"flat", series(flat(40, 3)...), 40 * sec, SteadyOK, "", 0, ""},
		{"queue wait ramps 2 -> 400 ms", series(ramp(40, 2, 400)...), 40 * sec, SteadyGrowing, SeriesQueueWait, 0, "over half the 1s pool wait"},
		{"small ramp 2 -> 20 ms, 7 min probe", series(ramp(40, 2, 20)...), 420 * sec, SteadyOK, "", 0, ""},
		{"slow drift 100 -> 160 ms", series(ramp(40, 100, 160)...), 40 * sec, SteadyOK, "", 0, ""},
		{"one 900 ms stall in the last quarter", series(spike...), 40 * sec, SteadyOK, "", 0, ""},
		{"too short to judge", series(ramp(7, 0, 500)...), 7 * sec, SteadyTooShort, "", 0, ""},
		{"warm-up ignored", warm, 20 * sec, SteadyOK, "", 0, ""},
		{"queue grows late: flat 90 s then 5 -> 400 ms in 30 s", series(cat(noisy(flat(90, 5), 1, 3), ramp(30, 5, 400))...), 120 * sec, SteadyGrowing, SeriesQueueWait, 0, "over the last 60 s"},
	} {
		call := fmt.Sprintf("SteadyRule{}.Check(%s, pool wait 1s, probe %v)", tc.name, tc.length)
		st, why := SteadyRule{}.Check(tc.s, time.Second, tc.length)
		if st == nil || st.Verdict != tc.verdict || (why == "") != (tc.verdict != SteadyGrowing) {
			t.Errorf("%s = %+v, %q; want verdict %s", call, st, why, tc.verdict)
			continue
		}
		if tc.series != "" && st.Series != tc.series || !strings.Contains(why, tc.reasonIn) {
			t.Errorf("%s = %+v, %q; want series %q, reason containing %q", call, st, why, tc.series, tc.reasonIn)
		}
		if (st.Confidence != DefaultSteadyConfidence && st.Confidence != DefaultStopConfidence) || (tc.verdict != SteadyTooShort && st.LimitMs == 0) {
			t.Errorf("%s = %+v: want confidence %.2f and the limit recorded", call, st, DefaultSteadyConfidence)
		}
		k, stopWhy := firstStop(SteadyRule{}.StopIf(time.Second, tc.length), tc.s)
		switch {
		case tc.stopsBy == 0 && tc.verdict != SteadyGrowing && k != 0:
			t.Errorf("StopIf(%s) fired after %d s (%q); a steady probe must run its full length", tc.name, k, stopWhy)
		case tc.stopsBy > 0 && (k == 0 || k > tc.stopsBy):
			t.Errorf("StopIf(%s) fired after %d s (%q); want by %d s", tc.name, k, stopWhy, tc.stopsBy)
		}
	}
}

// TestSteadyRuleNoiseNeverStops: steady series with noise and one stall, over probe
// lengths from 30 s to 7 min and many seeds: StopIf never fires and Check passes.
func TestSteadyRuleNoiseNeverStops(t *testing.T) {
	for seed := uint64(1); seed <= 24; seed++ {
		for _, n := range []int{30, 120, 420} {
			lvl := []float64{2, 8, 40, 150}[seed%4]
			v := noisy(flat(n, lvl), lvl/2, seed)
			v[int(seed*7)%n] = 900 // one stall
			s := series(v...)
			length := time.Duration(n) * time.Second
			if k, why := firstStopEvery(SteadyRule{}.StopIf(time.Second, length), s, 1+n/100); k != 0 {
				t.Errorf("StopIf(seed %d, %d s at %.0f ± %.0f ms, one 900 ms stall) fired after %d s: %s", seed, n, lvl, lvl/2, k, why)
			}
			if st, why := (SteadyRule{}).Check(s, time.Second, length); why != "" {
				t.Errorf("Check(seed %d, %d s at %.0f ± %.0f ms, one stall) = %+v, %q; want steady", seed, n, lvl, lvl/2, st, why)
			}
		}
	}
}

// TestSteadyRuleLatency: the latency p99 series is judged against the same limit and named.
func TestSteadyRuleLatency(t *testing.T) {
	s := series(flat(40, 3)...)
	for i, v := range ramp(40, 50, 600) {
		s[i].P99Ms = v
	}
	st, why := SteadyRule{}.Check(s, time.Second, 40*time.Second)
	if st == nil || st.Series != SeriesLatency || !strings.HasPrefix(why, "latency p99 grew") {
		t.Errorf("Check(queue wait flat, latency p99 50 -> 600 ms over 40 s) = %+v, %q; want growing, decided by %s", st, why, SeriesLatency)
	}
}

func TestJudge(t *testing.T) {
	ok := func(mod func(p *result.Probe)) *result.Probe {
		p := &result.Probe{TargetRate: 1000, Scheduled: 100000, Committed: 100000, MeasuredS: 100, DurationS: 100, PoolWaitMs: 1000,
			Latency: result.Latency{P99: 20}, Series: series(flat(100, 2)...)}
		if mod != nil {
			mod(p)
		}
		return p
	}
	cfg := Config{MaxErrorRate: 0.001}
	slo := Config{MaxErrorRate: 0.001, P99SLO: 15 * time.Millisecond}
	late := Config{MaxErrorRate: 0.001, CountLate: true}
	for _, tc := range []struct {
		name string
		p    *result.Probe
		cfg  Config
		want result.Verdict
		why  string
	}{
		{"clean", ok(nil), cfg, result.Pass, "error rate"},
		{"exactly at the limit", ok(func(p *result.Probe) { p.Rejected = 100; p.Committed -= 100 }), cfg, result.Pass, ""},
		{"one over the limit", ok(func(p *result.Probe) { p.Rejected = 60; p.Failed[result.Deadlock] = 41 }), cfg, result.Fail, "error rate"},
		{"zero tolerance", ok(func(p *result.Probe) { p.Failed[result.Serialization] = 1 }), Config{}, result.Fail, "error rate"},
		{"cut short", ok(func(p *result.Probe) { p.CutShort = true; p.MeasuredS = 12 }), cfg, result.Fail, "cut short"},
		{"cut short by errors", ok(func(p *result.Probe) { p.CutShort, p.CutBy, p.MeasuredS = true, result.CutByErrors, 12 }), cfg, result.Fail, "cut short after 12 s"},
		{"cut short by trend", ok(func(p *result.Probe) {
			p.CutShort, p.CutBy, p.MeasuredS, p.Series = true, result.CutByTrend, 30, series(ramp(30, 5, 400)...)
		}), cfg, result.NotSteady, "cut short after 30 s: queue wait p99 grew"},
		{"cut short by the server", ok(func(p *result.Probe) { p.CutShort, p.CutBy = true, result.CutByServer }), cfg, result.Fault, "cut short"},
		{"(d) 1,938 tx/s: queue wait climbed 40 s then collapsed, p99 548 ms", ok(func(p *result.Probe) {
			p.DurationS, p.MeasuredS, p.Latency.P99 = 60, 60, 548
			p.Series = series(cat(ramp(40, 10, 515), flat(20, 12))...)
		}), cfg, result.NotSteady, "queue wait p99 grew"},
		{"(c) 3,318 tx/s: queue wait 1.5 -> 37 ms in 10 s, p99 52 ms", ok(func(p *result.Probe) {
			p.DurationS, p.MeasuredS, p.Latency.P99 = 10, 10, 52
			p.Series = series(ramp(10, 1.5, 37)...)
		}), cfg, result.Pass, ""},
		{"not steady names the wait that grew", ok(func(p *result.Probe) {
			p.Series = series(ramp(100, 1, 500)...)
			p.Observation = &result.Observation{WaitGrowth: &result.WaitShift{Event: "LWLock:WALWrite", FirstShare: 0.12, LastShare: 0.31}}
		}), cfg, result.NotSteady, "; waits grown: LWLock:WALWrite 12 % → 31 %"},
		{"(g) scheduler lag growing", ok(func(p *result.Probe) {
			for i, v := range ramp(100, 1, 200) {
				p.Series[i].SchedLagP99Ms = v
			}
		}), cfg, result.DriverLimited, "scheduler lag p99 grew"},
		{"scheduler lag level a quarter of the pool wait", ok(func(p *result.Probe) {
			for i := range p.Series {
				p.Series[i].SchedLagP99Ms = 300
			}
		}), cfg, result.DriverLimited, "at least 25 %"},
		{"errors while the driver lagged", ok(func(p *result.Probe) { p.Rejected, p.SchedLagP99Ms = 5000, 400 }), cfg, result.DriverLimited, "error rate"},
		{"cut short while the driver lagged", ok(func(p *result.Probe) { p.CutShort, p.CutBy, p.SchedLagP99Ms = true, result.CutByErrors, 400 }), cfg, result.DriverLimited, "while the driver's scheduler lag"},
		{"errors with a small lag stay the server's", ok(func(p *result.Probe) { p.Rejected, p.SchedLagP99Ms = 5000, 20 }), cfg, result.Fail, "error rate"},
		{"lag sized against the configured pool wait", ok(func(p *result.Probe) { p.Rejected, p.SchedLagP99Ms = 5000, 400 }),
			Config{MaxErrorRate: 0.001, PoolWait: 5 * time.Second}, result.Fail, "error rate"},
		{"late commits are not errors by default", ok(func(p *result.Probe) { p.Late = 500 }), cfg, result.Pass, ""},
		{"late commits counted (pgbench's rule)", ok(func(p *result.Probe) { p.Late = 500 }), late, result.Fail, "500 committed later than the pool wait 1000 ms"},
		{"late and rejected counted together", ok(func(p *result.Probe) { p.Late, p.Rejected = 60, 41 }), late, result.Fail, "error rate with late commits 0.101%"},
		{"late commits within the limit", ok(func(p *result.Probe) { p.Late, p.Rejected = 60, 40 }), late, result.Pass, ""},
		{"late commits while the driver lagged", ok(func(p *result.Probe) {
			p.Late = 500
			for i := range p.Series {
				p.Series[i].SchedLagP99Ms = 300
			}
		}), late, result.DriverLimited, "at least 25 %"},
		{"p99 over the SLO", ok(nil), slo, result.Fail, "SLO"},
		{"p99 under the SLO", ok(func(p *result.Probe) { p.Latency.P99 = 10 }), slo, result.Pass, ""},
		{"queue wait growing", ok(func(p *result.Probe) { p.Series = series(ramp(100, 1, 500)...) }), cfg, result.NotSteady, "queue wait"},
		{"errors beat not_steady", ok(func(p *result.Probe) { p.Series = series(ramp(100, 1, 500)...); p.Rejected = 500 }), cfg, result.Fail, ""},
		{"driver limited", ok(func(p *result.Probe) { p.DriverLimited = true; p.DriverLimitReason = "client CPU 1.9 cores" }), slo, result.DriverLimited, "client CPU"},
		{"driver limited but failing", ok(func(p *result.Probe) { p.DriverLimited = true; p.Rejected = 5000 }), cfg, result.Fail, "driver was behind"},
		{"driver limited and cut short", ok(func(p *result.Probe) { p.DriverLimited = true; p.CutShort = true }), cfg, result.Fail, "cut short"},
		{"probe error", ok(func(p *result.Probe) { p.Error = "connection refused" }), cfg, result.Fault, "connection refused"},
		{"mostly connection errors", ok(func(p *result.Probe) { p.Failed[result.Connection] = 3000; p.Rejected = 100 }), cfg, result.Fault, "connection errors"},
		{"a few connection errors within budget", ok(func(p *result.Probe) { p.Failed[result.Connection] = 50 }), cfg, result.Pass, ""},
		{"nothing scheduled", ok(func(p *result.Probe) { p.Scheduled, p.Committed = 0, 0 }), cfg, result.Fault, "nothing"},
	} {
		v, why := Judge(tc.p, tc.cfg)
		if v != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("Judge(%s, %+v) = %s, %q; want %s containing %q", tc.name, tc.cfg, v, why, tc.want, tc.why)
		}
		if (v == result.NotSteady) != (tc.p.Steady != nil && tc.p.Steady.Verdict == SteadyGrowing) {
			t.Errorf("Judge(%s): verdict %s with steady figures %+v", tc.name, v, tc.p.Steady)
		}
	}
}

func TestSteadyRuleOff(t *testing.T) {
	grow := series(ramp(40, 5, 500)...)
	if _, r := (SteadyRule{}).Check(grow, time.Second, 40*time.Second); r == "" {
		t.Fatalf("SteadyRule{}.Check(queue wait 5 -> 500 ms) = steady, want not steady")
	}
	if st, r := (SteadyRule{Off: true}).Check(grow, time.Second, 40*time.Second); r != "" || st != nil {
		t.Errorf("SteadyRule{Off: true}.Check = %+v, %q, want nil, \"\" (rule switched off)", st, r)
	}
	if f := (SteadyRule{Off: true}).StopIf(time.Second, 40*time.Second); f != nil {
		t.Errorf("SteadyRule{Off: true}.StopIf = non-nil, want nil (no trend stop)")
	}
}

// TestTheilSen checks the fit against a sort on seeded series: slope, Sen's limits, level.
func TestTheilSen(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		n := 10 + int(seed)*3
		y := noisy(ramp(n, 0, float64(seed)), 5, seed)
		got := fitTrend(y, 0.9)
		var slopes []float64
		for j := 1; j < n; j++ {
			for i := 0; i < j; i++ {
				slopes = append(slopes, (y[j]-y[i])/float64(j-i))
			}
		}
		sort.Float64s(slopes)
		N := len(slopes)
		med := slopes[N/2]
		if N%2 == 0 {
			med = (slopes[N/2-1] + slopes[N/2]) / 2
		}
		lo, hi := senRanks(n, 0.9)
		if got.slope != med || got.lo != slopes[lo-1] || got.hi != slopes[hi-1] {
			t.Errorf("fitTrend(seed %d, n %d) = slope %g [%g, %g]; sorted: %g [%g, %g]", seed, n, got.slope, got.lo, got.hi, med, slopes[lo-1], slopes[hi-1])
		}
		if significant(y, 0.9) != (slopes[lo-1] > 0) {
			t.Errorf("significant(seed %d) = %v, Sen's lower limit %g", seed, significant(y, 0.9), slopes[lo-1])
		}
	}
}
