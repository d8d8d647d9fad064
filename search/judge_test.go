package search

import (
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// series builds a measured per-second series from queue-wait values (lag constant).
func series(qw ...float64) []result.Second {
	out := make([]result.Second, len(qw))
	for i, v := range qw {
		out[i] = result.Second{T: i, Phase: result.PhaseMeasure, QueueWaitP99Ms: v, SchedLagMs: 1}
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

func TestSteadyRule(t *testing.T) {
	spike := flat(40, 3)
	spike[36] = 900 // one stall in the last quarter
	lag := series(flat(40, 2)...)
	for i := range lag {
		lag[i].SchedLagMs = float64(i) * 5 // scheduler falling behind
	}
	warm := append([]result.Second{{Phase: result.PhaseWarmup, QueueWaitP99Ms: 0}}, series(flat(20, 5)...)...)
	for i := 1; i < len(warm); i++ {
		warm[i].QueueWaitP99Ms = 5
	}
	for _, tc := range []struct {
		name   string
		s      []result.Second
		steady bool
	}{
		{"flat", series(flat(40, 3)...), true},
		{"queue wait ramps 2 -> 400 ms", series(ramp(40, 2, 400)...), false},
		{"small ramp 2 -> 20 ms (under the 25 ms floor)", series(ramp(40, 2, 20)...), true},
		{"high level, slow drift 100 -> 160 ms (under doubling)", series(ramp(40, 100, 160)...), true},
		{"one spike in the last quarter", series(spike...), true},
		{"scheduler lag grows", lag, false},
		{"too short to judge", series(ramp(7, 0, 500)...), true},
		{"warm-up ignored", warm, true},
	} {
		why := SteadyRule{}.Check(tc.s)
		if (why == "") != tc.steady {
			t.Errorf("SteadyRule{}.Check(%s) = %q, want steady=%v", tc.name, why, tc.steady)
		}
	}
	if why := (SteadyRule{MinGrowth: time.Millisecond}).Check(series(ramp(40, 2, 20)...)); why == "" {
		t.Errorf("SteadyRule{MinGrowth: 1ms}.Check(ramp 2..20) = steady, want not steady")
	}
}

func TestJudge(t *testing.T) {
	ok := func(mod func(p *result.Probe)) *result.Probe {
		p := &result.Probe{TargetRate: 1000, Scheduled: 100000, Committed: 100000, MeasuredS: 100, DurationS: 100,
			Latency: result.Latency{P99: 20}, Series: series(flat(100, 2)...)}
		if mod != nil {
			mod(p)
		}
		return p
	}
	cfg := Config{MaxErrorRate: 0.001}
	slo := Config{MaxErrorRate: 0.001, P99SLO: 15 * time.Millisecond}
	for _, tc := range []struct {
		name string
		p    *result.Probe
		cfg  Config
		want string
		why  string
	}{
		{"clean", ok(nil), cfg, result.Pass, "error rate"},
		{"exactly at the limit", ok(func(p *result.Probe) { p.Rejected = 100; p.Committed -= 100 }), cfg, result.Pass, ""},
		{"one over the limit", ok(func(p *result.Probe) { p.Rejected = 60; p.Failed[result.Deadlock] = 41 }), cfg, result.Fail, "error rate"},
		{"zero tolerance", ok(func(p *result.Probe) { p.Failed[result.Serialization] = 1 }), Config{}, result.Fail, "error rate"},
		{"cut short", ok(func(p *result.Probe) { p.CutShort = true; p.MeasuredS = 12 }), cfg, result.Fail, "cut short"},
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
	}
}

func TestSteadyRuleOff(t *testing.T) {
	grow := series(ramp(40, 5, 500)...)
	if r := (SteadyRule{}).Check(grow); r == "" {
		t.Fatalf("SteadyRule{}.Check(queue wait 5 -> 500 ms) = steady, want not steady")
	}
	if r := (SteadyRule{Off: true}).Check(grow); r != "" {
		t.Errorf("SteadyRule{Off: true}.Check = %q, want \"\" (rule switched off)", r)
	}
}
