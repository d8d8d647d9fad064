package search

import (
	"math"
	"slices"

	"github.com/pgceiling/pgceiling/result"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// IntervalLevel is the confidence level of the knee's interval.
const IntervalLevel = 0.9

// IntervalMethod is recorded in result.Interval.Method.
const IntervalMethod = "collapse-rate model: Poisson collapses at rate exp(a + b·rate), Firth-penalized fit to every judged probe's outcome and seconds, profile-likelihood interval"

// KneeInterval fits a model of when probes collapse to every judged probe — pass,
// fail and not_steady; fault, driver_limited and interrupted probes left out — and gives
// the rate that survives a reference window of window seconds with even odds, with its
// IntervalLevel (90 %) interval.
//
// The model: at a steady offered rate r the server collapses (a stall whose backlog the
// pool wait cannot absorb, a queue that runs away) as a Poisson process of rate
// λ(r) = exp(a + b·r), b > 0: the time to a collapse is exponential. A probe that passed
// survived its t measured seconds (probability e^(−λt)). One cut short (by its error
// budget or the trend rule) collapsed at about t, the moment it was found out (density
// λe^(−λt)); one judged failed at its window's end collapsed somewhere within it
// (1 − e^(−λt)). So a 6-minute hold weighs 24 times a 15 s probe's pass, a probe that
// collapsed in its first second says more than one found out at its end, and short passes
// above a failed hold and a hold failing below short passes are one picture: a rate whose
// collapses come every few minutes passes most 15 s probes and few holds. A hold is the
// exception: it counts as a pass or a fail of its whole window, whenever its collapse
// came. It starts at a CHECKPOINT and takes in the next one at a fixed second, whose
// stall no short probe reaches and which is not a Poisson event (measured: `oltp`
// sync=off holds at 2,524 and 2,644 tx/s collapsed 294 s and 319 s into 360 s, at the
// checkpoint), so its collapse's time says when the checkpoint came, not how often the
// server collapses. The estimate (Midpoint) is m with λ(m)·window = ln 2: the rate at
// which a probe of the reference window (ReferenceWindow) passes half the time. The fit is Firth's
// penalized maximum likelihood (log-likelihood + ½ log det of the Fisher information),
// finite when every pass lies below every fail; the interval is the profile penalized
// likelihood's: every m whose deviance, maximized over b, is within the χ²₁ quantile
// (2.706) of the best, within half the lowest rate probed and twice the highest. The fit
// may place m below every probe (a search that held its first rate has no probe lower
// down); the interval then says how far the data reach. nil without a pass and a fail at
// two rates or more.
func KneeInterval(probes []result.Probe, window float64) *result.Interval {
	var c collapses
	var rates []float64
	pass, fail := false, false
	for _, p := range probes {
		if p.Interrupted {
			continue
		}
		t := max(p.MeasuredS, 1) // a probe cut short in its warm-up: its first second
		var d float64
		switch p.Verdict {
		case result.Pass:
			pass = true
		case result.Fail, result.NotSteady:
			d, fail = within, true
			switch {
			case p.Hold: // a fail of its whole window, whenever it came (see above)
				t = max(p.DurationS, t)
			case p.MeasuredS < p.DurationS-0.1:
				d = at
			}
		default:
			continue
		}
		rates = append(rates, p.TargetRate)
		c.t, c.d, c.T = append(c.t, t), append(c.d, d), append(c.T, max(p.DurationS, t))
	}
	if !pass || !fail || slices.Min(rates) == slices.Max(rates) { // one rate: no slope to fit
		return nil
	}
	if window <= 0 {
		window = slices.Max(c.T)
	}
	lo, mid, hi, ok := c.fit(rates, window)
	if !ok {
		return nil
	}
	return &result.Interval{Lo: lo, Hi: hi, Level: IntervalLevel, Midpoint: mid, Method: IntervalMethod,
		Probes: len(rates), WindowS: window}
}

// Refit fits sw's knee interval again from the probes it recorded, with this version's
// model (KneeInterval), for the window seconds, or with 0 the window the search itself
// takes (ReferenceWindow): so files made before a change of the interval's method can be
// read with the current one. nil where KneeInterval gives none.
func Refit(sw result.Sweep, window float64) *result.Interval {
	if window == 0 {
		window = ReferenceWindow(sw.Probes, sw.HoldS, 0)
	}
	return KneeInterval(sw.Probes, window)
}

// ReferenceWindow is the window, in seconds, a sweep's knee interval refers to: the hold's
// (holdS) once a hold ran, else probe, the probes' measured window (0: KneeInterval takes
// the longest window asked). Before a hold ran a 6-minute estimate from 15 s probes alone
// would rest on the model's reach, not on data.
func ReferenceWindow(probes []result.Probe, holdS, probe float64) float64 {
	for _, p := range probes {
		if p.Hold && !p.Interrupted {
			return holdS
		}
	}
	return probe
}

// RatioRange is the range of the ratio of two knees given their intervals, e.g.
// synchronous_commit off over on: [a.Lo / b.Hi, a.Hi / b.Lo]. ok is false when either
// interval is missing or b's could be zero.
func RatioRange(a, b *result.Interval) (lo, hi float64, ok bool) {
	if a == nil || b == nil || b.Lo <= 0 || b.Hi <= 0 {
		return 0, 0, false
	}
	return a.Lo / b.Hi, a.Hi / b.Lo, true
}

// A probe's outcome in collapses.d: survived, collapsed at its t, collapsed within it.
const (
	survived = 0
	at       = 1
	within   = 2
)

// collapses is the probes' data: standardized rates x = (rate - mean) / sc, seconds run
// t, seconds asked for T, outcome d; and k = log(ln 2 / window).
type collapses struct {
	x, t, T, d []float64
	k          float64
}

// pll is the Firth-penalized log-likelihood at the standardized even-odds rate m and
// slope b (x units): log λ(x) = k + b(x − m), so that λ(m)·window = ln 2. The penalty is
// ½ log det of the Fisher information of (a, b), each probe weighted as if only its pass
// or fail at the end of the window asked for, T, were seen: with μ = λT the weight is
// μ² e^(−μ) / (1 − e^(−μ)). A collapse seen at its second carries more information
// (1 − e^(−μ)), so this prior is the more conservative one, and unlike that one its
// weights vanish as the slope grows, which keeps the fit finite when every pass lies
// below every fail and every fail ran its whole window.
func (c collapses) pll(m, b float64) float64 {
	var ll, sw, xbar, ss float64 // ss = Σw(x − x̄)², by West's weighted update (no cancellation)
	for i, x := range c.x {
		eta := c.k + b*(x-m)
		lambda := math.Exp(eta)
		lt := lambda * c.t[i] // +Inf when exp overflows: −Inf below, no NaN (t ≥ 1)
		switch c.d[i] {
		case survived:
			ll -= lt
		case at:
			ll += eta - lt
		case within:
			ll += math.Log(-math.Expm1(-lt)) // −Inf when λt underflows to 0
		}
		if mu := lambda * c.T[i]; mu > 0 && mu < 700 {
			w := mu * mu * math.Exp(-mu) / -math.Expm1(-mu)
			sw += w
			d := x - xbar
			xbar += d * w / sw
			ss += w * d * (x - xbar)
		}
	}
	if sw <= 0 || ss <= 0 || math.IsInf(ll, -1) || math.IsNaN(ll) {
		return math.Inf(-1)
	}
	return ll + 0.5*math.Log(sw*ss) // det of the information = Σw · Σw(x − x̄)²
}

// slopes is the grid of b the profile starts from: 10⁻³ … 10⁴, log-spaced (b > 0: a
// higher rate collapses sooner).
var slopes = func() []float64 {
	const k = 22
	g := make([]float64, k)
	for i := range g {
		g[i] = math.Exp(math.Log(1e-3) + float64(i)*math.Log(1e7)/(k-1))
	}
	return g
}()

// profile is max over b of pll(m, b): the grid, then golden section between the best
// point's neighbours.
func (c collapses) profile(m float64) float64 {
	best, k := math.Inf(-1), 0
	for i, b := range slopes {
		if v := c.pll(m, b); v > best {
			best, k = v, i
		}
	}
	lo, hi := slopes[max(k-1, 0)], slopes[min(k+1, len(slopes)-1)]
	_, v := goldenMax(func(b float64) float64 { return c.pll(m, b) }, lo, hi, 30)
	return max(best, v)
}

// goldenMax maximizes a unimodal f on [a, c].
func goldenMax(f func(float64) float64, a, c float64, iter int) (x, fx float64) {
	g := (math.Sqrt(5) - 1) / 2
	x1, x2 := c-g*(c-a), a+g*(c-a)
	f1, f2 := f(x1), f(x2)
	for i := 0; i < iter; i++ {
		if f1 < f2 {
			a, x1, f1 = x1, x2, f2
			x2 = a + g*(c-a)
			f2 = f(x2)
		} else {
			c, x2, f2 = x2, x1, f1
			x1 = c - g*(c-a)
			f1 = f(x1)
		}
	}
	if f1 > f2 {
		return x1, f1
	}
	return x2, f2
}

// fit standardizes rates into c.x and returns the interval and the estimate (in rates)
// of the model, within [min / 2, 2 max]; ok is false when no fit exists.
func (c *collapses) fit(rates []float64, window float64) (lo, mid, hi float64, ok bool) {
	rmin, rmax := slices.Min(rates), slices.Max(rates)
	mean, sc := stat.PopMeanStdDev(rates, nil)
	if sc <= 0 {
		sc = max(rmax/10, 1)
	}
	c.k = math.Log(math.Ln2 / window)
	c.x = make([]float64, len(rates))
	for i, r := range rates {
		c.x[i] = (r - mean) / sc
	}
	xl, xm, xh, ok := profileInterval(c.profile, (rmin/2-mean)/sc, (2*rmax-mean)/sc)
	return mean + sc*xl, mean + sc*xm, mean + sc*xh, ok
}

// profileInterval maximizes the profile log-likelihood prof over [xlo, xhi] (a grid, then
// golden section around the best grid point) and returns the IntervalLevel interval —
// every x within the χ²₁ quantile's half of the best — with the maximum; ok is false when
// prof is −∞ everywhere.
func profileInterval(prof func(float64) float64, xlo, xhi float64) (lo, best, hi float64, ok bool) {
	const grid = 100
	step := (xhi - xlo) / grid
	at := func(i int) float64 { return xlo + float64(i)*step }
	vals := make([]float64, grid+1)
	kBest := 0
	for i := range vals {
		vals[i] = prof(at(i))
		if vals[i] > vals[kBest] {
			kBest = i
		}
	}
	if math.IsInf(vals[kBest], -1) {
		return 0, 0, 0, false
	}
	mBest, vBest := goldenMax(prof, at(max(kBest-1, 0)), at(min(kBest+1, grid)), 40)
	if vals[kBest] > vBest {
		mBest, vBest = at(kBest), vals[kBest]
	}
	crit := distuv.ChiSquared{K: 1}.Quantile(IntervalLevel) / 2 // on the log-likelihood scale
	in := func(m float64) bool { return vBest-prof(m) <= crit }
	// The outermost grid points within the cut-off (or, when the peak is narrower than a
	// step, none: mBest alone is inside), then bisection from the inside to the grid point
	// beyond, which is outside.
	first, last := -1, -1
	for i, v := range vals {
		if vBest-v <= crit {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	xl, xh := mBest, mBest
	left, right := int(math.Floor((mBest-xlo)/step)), int(math.Ceil((mBest-xlo)/step)) // outside
	if first >= 0 {
		xl, xh = min(at(first), mBest), max(at(last), mBest)
		left, right = first-1, last+1
	}
	if left >= 0 {
		xl = crossing(in, at(left), xl)
	}
	if right <= grid {
		xh = crossing(in, at(right), xh)
	}
	return xl, mBest, xh, true
}

// crossing bisects between out (not in the interval) and in (in it) for the boundary.
func crossing(in func(float64) bool, out, inside float64) float64 {
	for i := 0; i < 20; i++ {
		m := (out + inside) / 2
		if in(m) {
			inside = m
		} else {
			out = m
		}
	}
	return inside
}
