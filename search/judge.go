package search

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/result"
)

// Steady-state defaults (see SteadyRule).
const (
	// MinSteadySeconds is the shortest measured series the rule judges: below ten points
	// Sen's interval is too wide to say anything, and a shorter probe (a tiny --duration)
	// is judged by errors only (result.Steady.Verdict "too_short").
	MinSteadySeconds = 10
	// DefaultLimitShare is the share of the pool wait a series may be projected to reach
	// one more probe length ahead (at the slope's lower confidence limit) and still be
	// steady: half, so a steady probe leaves half the pool wait as margin.
	DefaultLimitShare = 0.5
	// DefaultStopShare is the share of the pool wait the early stop (StopIf) asks a series
	// to be projected past — from its lower slope limit, over the rest of the window plus
	// one more probe length — before it calls a probe decided: half again the end test's
	// margin, so a probe stopped early would have failed the end test even with its trend
	// somewhat flattening. (The whole pool wait would be safer still but could never stop a
	// 30 s probe whose queue wait climbs 5 -> 400 ms, which certainly fails.)
	DefaultStopShare = 0.75
	// DefaultStopConfidence is the two-sided level of the slope's interval in the early
	// stop's test (StopIf, and the same test over every first k seconds in Check): the
	// test is applied once a second, each second another chance for noise to look like a
	// trend, so it asks for more confidence than the end test's single look.
	DefaultStopConfidence = 0.99
	// DefaultSteadyConfidence is the two-sided level of Sen's interval for the slope. Its
	// lower limit is then a one-sided 95 % bound: a series is called growing only when
	// it grows with 95 % confidence.
	DefaultSteadyConfidence = 0.90
	// DriverLagShare is the share of the pool wait the driver's own scheduler lag (p99)
	// may reach (as a level, or projected from a significant growth) before the probe says
	// more about the client than the server: such a probe is driver_limited.
	DriverLagShare = 0.25
	// FaultConnectionShare is the share of a probe's failed and rejected arrivals that
	// must be connection errors for the probe to count as a server fault rather than a fail.
	FaultConnectionShare = 0.5
)

// Series names recorded in result.Steady.Series.
const (
	SeriesQueueWait = "queue_wait_p99"
	SeriesLatency   = "latency_p99"
	SeriesSchedLag  = "sched_lag_p99"
)

// Verdicts of the steady-state rule (result.Steady.Verdict).
const (
	SteadyOK       = "steady"
	SteadyGrowing  = "growing"
	SteadyTooShort = "too_short"
)

// SteadyRule decides whether a probe's measured window was in steady state: whether its
// per-second queue wait p99 (and, separately, its per-second latency p99) trends upward
// fast enough that a longer probe would run into the pool wait.
//
// A window W of measured seconds (at least MinSteadySeconds) is growing against a limit
// Λ over a horizon H when
//
//	slopeLo > 0  and  level + slopeLo × H > Λ
//
// where the slope is Theil-Sen's (the median of the pairwise slopes), slopeLo is the lower
// limit of Sen's two-sided Confidence interval for it (Kendall's S, normal approximation,
// ties not corrected, which only widens the interval), and level is the Theil-Sen line's
// value at W's last second. A median of pairwise slopes ignores one stall or a few seconds
// of checkpoint (they are outliers, not a trend), and projecting from the lower limit
// means a probe is failed only for growth it is confident of. Sizing against the pool
// wait asks whether the growth matters: a rise from 1 to 30 ms is not one.
//
// The series is growing — the probe not_steady — when any of:
//
//   - the whole window, or its last half (a queue that starts to grow late), is growing
//     against LimitShare × pool wait over one more probe length (the end test);
//   - some first k seconds (k every second up to 20 s, then every 5 % of the window so
//     far) were already decided: growing, with slopeLo from the StopConfidence interval,
//     against StopShare × pool wait over the rest of the window plus one more probe
//     length (the test StopIf applies while the probe runs), so a probe run in full gets the verdict an early stop would have
//     given it even when its queue later collapsed.
//
// The queue wait is judged first, then the latency p99; the first growing one decides.
type SteadyRule struct {
	LimitShare float64 // default DefaultLimitShare
	StopShare  float64 // default DefaultStopShare; at least LimitShare
	// StopConfidence is the early stop's two-sided level; default DefaultStopConfidence,
	// at least Confidence.
	StopConfidence float64
	Confidence     float64 // two-sided level of the slope's interval; default DefaultSteadyConfidence
	Off            bool    // judge by errors (and the SLO) only, e.g. to compare with pgbench
}

func (r SteadyRule) withDefaults() SteadyRule {
	if r.LimitShare <= 0 {
		r.LimitShare = DefaultLimitShare
	}
	if r.StopShare <= 0 {
		r.StopShare = DefaultStopShare
	}
	r.StopShare = max(r.StopShare, r.LimitShare)
	if r.Confidence <= 0 || r.Confidence >= 1 {
		r.Confidence = DefaultSteadyConfidence
	}
	if r.StopConfidence <= 0 || r.StopConfidence >= 1 {
		r.StopConfidence = DefaultStopConfidence
	}
	r.StopConfidence = max(r.StopConfidence, r.Confidence)
	return r
}

// measured returns the measured seconds' values of one field, in time order.
func measured(series []result.Second, f func(result.Second) float64) []float64 {
	var v []float64
	for _, s := range series {
		if s.Phase == result.PhaseMeasure {
			v = append(v, f(s))
		}
	}
	return v
}

func queueWait(s result.Second) float64  { return s.QueueWaitP99Ms }
func latencyP99(s result.Second) float64 { return s.P99Ms }
func schedLag(s result.Second) float64   { return s.SchedLagP99Ms }

// seriesLabel is how a reason names a series.
var seriesLabel = map[string]string{SeriesQueueWait: "queue wait p99", SeriesLatency: "latency p99",
	SeriesSchedLag: "scheduler lag p99"}

// Check judges a probe's per-second series against the pool wait, probeLength being the
// probe's measured window (the projection horizon). It returns the figures of the series
// that decided (the queue wait's when steady; nil when the rule is Off) and "" when
// steady or too short to judge, else the reason, naming the series and its figures.
func (r SteadyRule) Check(series []result.Second, poolWait, probeLength time.Duration) (*result.Steady, string) {
	if r.Off {
		return nil, ""
	}
	r = r.withDefaults()
	if poolWait <= 0 {
		poolWait = result.DefaultPoolWait
	}
	qw := measured(series, queueWait)
	L := probeLength.Seconds()
	if L <= 0 {
		L = float64(len(qw))
	}
	pw := ms(poolWait)
	if len(qw) < MinSteadySeconds {
		return &result.Steady{Series: SeriesQueueWait, Seconds: len(qw), Confidence: r.Confidence,
			LimitMs: r.LimitShare * pw, Verdict: SteadyTooShort}, ""
	}
	for _, x := range []struct {
		name string
		y    []float64
	}{{SeriesQueueWait, qw}, {SeriesLatency, measured(series, latencyP99)}} {
		if st, why := r.endTest(x.name, x.y, pw, L); why != "" {
			return st, why
		}
		if st, why := r.prefixTest(x.name, x.y, pw, L); why != "" {
			return st, why
		}
	}
	t := fitTrend(qw, r.Confidence)
	return r.figures(SeriesQueueWait, t, t.level+max(t.lo, 0)*L, r.LimitShare*pw, r.Confidence, SteadyOK), ""
}

// StopIf returns the early-stop test for a probe of length probeLength: given the
// measured seconds finalized so far, it returns a reason when the queue wait's (or the
// latency p99's) growth is already decided — growing against the whole pool wait over the
// rest of the window plus one more probe length — so the probe would certainly be
// not_steady, and "" otherwise (always "" for a steady series, however noisy, and before
// MinSteadySeconds). The driver calls it about once a second. nil when the rule is Off.
func (r SteadyRule) StopIf(poolWait, probeLength time.Duration) func(measured []result.Second) string {
	if r.Off {
		return nil
	}
	r = r.withDefaults()
	if poolWait <= 0 {
		poolWait = result.DefaultPoolWait
	}
	pw, L := ms(poolWait), probeLength.Seconds()
	return func(sec []result.Second) string {
		for _, x := range []struct {
			name string
			f    func(result.Second) float64
		}{{SeriesQueueWait, queueWait}, {SeriesLatency, latencyP99}} {
			y := measured(sec, x.f)
			if _, why := r.decided(x.name, y, pw, L); why != "" {
				return why
			}
		}
		return ""
	}
}

// endTest applies the end test to the whole window and to its last half.
func (r SteadyRule) endTest(name string, y []float64, pw, L float64) (*result.Steady, string) {
	limit := r.LimitShare * pw
	wins := [][]float64{y}
	if len(y)/2 >= MinSteadySeconds {
		wins = append(wins, y[len(y)-len(y)/2:])
	}
	for i, w := range wins {
		if !significant(w, r.Confidence) {
			continue
		}
		t := fitTrend(w, r.Confidence)
		proj := t.level + t.lo*L
		if t.lo > 0 && proj > limit {
			where := ""
			if i == 1 {
				where = fmt.Sprintf(" over the last %d s", len(w))
			}
			return r.figures(name, t, proj, limit, r.Confidence, SteadyGrowing),
				fmt.Sprintf("%s grew %s ms/s (%s CI %s-%s)%s to %s ms; projected %s ms after another %v, over %s the %v pool wait",
					seriesLabel[name], num(t.slope), pct(r.Confidence), num(t.lo), num(t.hi), where, num(t.level),
					num(proj), secs(L), share(r.LimitShare), secs(pw/1000))
		}
	}
	return nil, ""
}

// decided applies the early-stop test to y, the first len(y) seconds of a window of L.
func (r SteadyRule) decided(name string, y []float64, pw, L float64) (*result.Steady, string) {
	if len(y) < MinSteadySeconds || !significant(y, r.StopConfidence) {
		return nil, ""
	}
	t := fitTrend(y, r.StopConfidence)
	h := max(L-float64(len(y)), 0) + L
	proj, limit := t.level+t.lo*h, r.StopShare*pw
	if t.lo > 0 && proj > limit {
		return r.figures(name, t, proj, limit, r.StopConfidence, SteadyGrowing),
			fmt.Sprintf("%s grew %s ms/s (%s CI %s-%s) to %s ms in the first %d s; projected %s ms after another %v, over %s the %v pool wait",
				seriesLabel[name], num(t.slope), pct(r.StopConfidence), num(t.lo), num(t.hi), num(t.level), len(y),
				num(proj), secs(h), share(r.StopShare), secs(pw/1000))
	}
	return nil, ""
}

// prefixTest applies the early-stop test to the first k seconds of y as StopIf would have
// while the probe ran: every k from MinSteadySeconds to 20, then every 5 % of k (a
// decided trend stays decided that long), and the whole series. Kendall's counts are kept incrementally,
// so only the prefixes whose growth is significant are fitted.
func (r SteadyRule) prefixTest(name string, y []float64, pw, L float64) (*result.Steady, string) {
	notUp := 0
	for k := 1; k <= len(y); k++ {
		for i := 0; i < k-1; i++ {
			if y[k-1] <= y[i] {
				notUp++
			}
		}
		if k < MinSteadySeconds || (k < len(y) && k%max(1, k/20) != 0) {
			continue // every second at first, then every 5 % of the elapsed window, and the end
		}
		if lo, _ := senRanks(k, r.StopConfidence); lo < 1 || notUp >= lo {
			continue
		}
		if st, why := r.decided(name, y[:k], pw, L); why != "" {
			return st, why
		}
	}
	return nil, ""
}

func (r SteadyRule) figures(name string, t trend, proj, limit, conf float64, verdict string) *result.Steady {
	return &result.Steady{Series: name, Seconds: t.n, LevelMs: t.level, SlopeMsPerS: t.slope,
		SlopeLo: finite(t.lo), SlopeHi: finite(t.hi), Confidence: conf, ProjectedMs: proj,
		LimitMs: limit, Verdict: verdict}
}

// driverLag returns why the driver's own scheduler lag makes the probe say more about the
// client than the server ("" when it does not): the window's lag p99, or the level of the
// per-second lag p99 (median of its last MinSteadySeconds seconds), reaching
// DriverLagShare of the pool wait, or its growth (the end test) projected past it.
func driverLag(p *result.Probe, r SteadyRule, pw, L float64) string {
	r = r.withDefaults()
	limit := DriverLagShare * pw
	if p.SchedLagP99Ms >= limit {
		return fmt.Sprintf("the driver's scheduler lag p99 was %s ms, at least %s of the %v pool wait",
			num(p.SchedLagP99Ms), pct(DriverLagShare), secs(pw/1000))
	}
	lag := measured(p.Series, schedLag)
	if len(lag) < MinSteadySeconds {
		return ""
	}
	if lvl := median(lag[len(lag)-MinSteadySeconds:]); lvl >= limit {
		return fmt.Sprintf("the driver's scheduler lag p99 was %s ms in the last %d s, at least %s of the %v pool wait",
			num(lvl), MinSteadySeconds, pct(DriverLagShare), secs(pw/1000))
	}
	r.LimitShare = DriverLagShare
	if _, why := r.endTest(SeriesSchedLag, lag, pw, L); why != "" {
		return "the driver fell behind: " + why
	}
	return ""
}

// Judge gives a probe its verdict and a one-line reason, and records the steady-state
// rule's figures in p.Steady. In this order:
//
//   - fault: the probe could not complete (Error set, or cut short by CutByServer), or at
//     least FaultConnectionShare of its failed and rejected arrivals (and more than the
//     error budget) were connection errors: the server went away, which says nothing
//     about its ceiling (retried once, then the search stops);
//   - driver_limited, when the probe was cut short or broke the error rule while the
//     driver's scheduler lag was a large share of the pool wait (see driverLag): lag is
//     the client's, and at that size it can cause the rejections, so they are not booked
//     against the server;
//   - not_steady: cut short by the steady-state rule's early stop (CutByTrend): the
//     reason is the rule's, prefixed "cut short after N s: ";
//   - fail: cut short by the error budget, or (failed + rejected) / scheduled >
//     MaxErrorRate — even when the driver reports it was behind, as long as its lag is
//     small next to the pool wait (the reason then mentions the driver);
//   - fail, with CountLate: (failed + rejected + late) / scheduled > MaxErrorRate
//     (pgbench's --latency-limit rule; not judged when the driver was behind: lag
//     inflates latency);
//   - fail: p99 > P99SLO when an SLO is given (not judged when the driver was behind:
//     lag inflates latency);
//   - driver_limited: the driver, not the server, was the limit of a probe that met the
//     error rule (its DriverLimited flag, or its lag as above): neither pass nor fail,
//     retried once, then the search stops and says so;
//   - not_steady: the SteadyRule found the queue wait (or the latency p99) growing: a
//     longer probe at this rate would fail; the reason adds the wait event that grew
//     most (Observation.WaitGrowth) when known;
//   - pass.
//
// Then a fail or not_steady probe during which the hypervisor took at least
// result.StealLimit of the machine's CPU for other guests (Observation.HostStealShare),
// or at least result.StealOnsetLimit over the result.StealLeadS seconds up to the second
// it broke down (Observation.HostStealSeries), becomes host_steal (result.Stolen): it
// measured the neighbours (the reason keeps the verdict it would have had). A pass under
// steal stays a pass: the server held the rate with less CPU.
//
// The pool wait is Config.PoolWait, else the probe's, else result.DefaultPoolWait; the probe
// length is the probe's DurationS, else Config.Duration.
func Judge(p *result.Probe, cfg Config) (verdict result.Verdict, reason string) {
	v, r := judge(p, cfg)
	if (v != result.Fail && v != result.NotSteady) || p.Observation == nil {
		return v, r
	}
	s, ok := result.Stolen(p.Observation, p, cfg.MaxErrorRate)
	switch {
	case !ok:
	case s.AtBreakdown:
		return result.HostSteal, fmt.Sprintf("%s %s, after the machine lost %.0f %% of its CPU to other guests (steal) in the %d s up to measured second %d, where it broke down",
			v, r, 100*s.Share, s.N, s.At)
	default:
		return result.HostSteal, fmt.Sprintf("%s %s, while the machine lost %.0f %% of its CPU to other guests (steal)",
			v, r, 100*s.Share)
	}
	return v, r
}

func judge(p *result.Probe, cfg Config) (verdict result.Verdict, reason string) {
	p.Steady = nil
	if p.Error != "" {
		return result.Fault, "probe error: " + p.Error
	}
	bad := p.FailedAndRejected()
	if conn := p.Failed[result.Connection]; bad > 0 && float64(conn) >= FaultConnectionShare*float64(bad) &&
		float64(bad) > cfg.MaxErrorRate*float64(p.Scheduled) {
		return result.Fault, fmt.Sprintf("%d of %d failed arrivals were connection errors", conn, bad)
	}
	pool := cfg.PoolWait
	if pool <= 0 {
		pool = time.Duration(p.PoolWaitMs * float64(time.Millisecond))
	}
	if pool <= 0 {
		pool = result.DefaultPoolWait
	}
	length := time.Duration(p.DurationS * float64(time.Second))
	if length <= 0 {
		length = cfg.Duration
	}
	pw, L := ms(pool), length.Seconds()
	lag := driverLag(p, cfg.Steady, pw, L)
	also := ""
	if p.DriverLimited {
		also = " (the driver was behind too: " + driverReason(p) + ")"
	}
	if p.CutShort {
		r := p.CutReason
		switch {
		case p.CutBy == result.CutByServer:
			if r == "" {
				r = "the server went away"
			}
			return result.Fault, fmt.Sprintf("cut short after %.0f s: %s", p.MeasuredS, r)
		case lag != "":
			return result.DriverLimited, fmt.Sprintf("cut short after %.0f s while %s", p.MeasuredS, lag)
		case p.CutBy == result.CutByTrend:
			st, why := cfg.Steady.Check(p.Series, pool, length)
			p.Steady = st
			if why == "" {
				why = r
			}
			return result.NotSteady, fmt.Sprintf("cut short after %.0f s: %s%s", p.MeasuredS, why, waitsGrown(p))
		}
		if r == "" {
			r = "errors exceeded the probe's budget"
		}
		return result.Fail, fmt.Sprintf("cut short after %.0f s: %s%s", p.MeasuredS, r, also)
	}
	if p.Scheduled == 0 {
		return result.Fault, "nothing was scheduled in the measured window"
	}
	if er := p.ErrorRate(); er > cfg.MaxErrorRate {
		what := fmt.Sprintf("error rate %.3g%% > %.3g%% (%d failed, %d rejected of %d)",
			100*er, 100*cfg.MaxErrorRate, p.Failed.Total(), p.Rejected, p.Scheduled)
		if lag != "" {
			return result.DriverLimited, what + " while " + lag
		}
		return result.Fail, what + also
	}
	if cfg.CountLate && !p.DriverLimited && lag == "" && p.Late > 0 {
		if bad := p.FailedAndRejected() + p.Late; float64(bad) > cfg.MaxErrorRate*float64(p.Scheduled) {
			return result.Fail, fmt.Sprintf("error rate with late commits %.3g%% > %.3g%% (%d failed, %d rejected, %d committed later than the pool wait %.0f ms, of %d)",
				100*float64(bad)/float64(p.Scheduled), 100*cfg.MaxErrorRate, p.Failed.Total(), p.Rejected, p.Late, pw, p.Scheduled)
		}
	}
	if cfg.P99SLO > 0 && !p.DriverLimited && lag == "" {
		slo := ms(cfg.P99SLO)
		if p.Latency.P99 > slo {
			return result.Fail, fmt.Sprintf("p99 %.1f ms > SLO %.1f ms", p.Latency.P99, slo)
		}
	}
	if p.DriverLimited {
		return result.DriverLimited, driverReason(p)
	}
	if lag != "" {
		return result.DriverLimited, lag
	}
	st, why := cfg.Steady.Check(p.Series, pool, length)
	p.Steady = st
	if why != "" {
		return result.NotSteady, why + waitsGrown(p)
	}
	return result.Pass, fmt.Sprintf("error rate %.3g%%, p99 %.1f ms", 100*p.ErrorRate(), p.Latency.P99)
}

// waitsGrown names the wait event that grew most during the probe, for a not_steady reason.
func waitsGrown(p *result.Probe) string {
	if p.Observation == nil || p.Observation.WaitGrowth == nil {
		return ""
	}
	g := p.Observation.WaitGrowth
	return fmt.Sprintf("; waits grown: %s %.0f %% → %.0f %%", g.Event, 100*g.FirstShare, 100*g.LastShare)
}

func driverReason(p *result.Probe) string {
	if p.DriverLimitReason == "" {
		return "the driver could not keep up"
	}
	return p.DriverLimitReason
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// secs prints a number of seconds as a duration (7m0s, 1s, 1.5s).
func secs(s float64) time.Duration {
	return time.Duration(math.Round(s*10)) * time.Second / 10
}

// num prints a figure with 2-3 significant digits and thousands separators.
func num(v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return fmt.Sprint(v)
	case math.Abs(v) >= 100:
		return thousands.Format(math.Round(v), 0)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func pct(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) }

func share(f float64) string {
	if f == 0.5 {
		return "half"
	}
	return pct(f) + " of"
}

func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
