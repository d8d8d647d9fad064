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
const IntervalMethod = "collapse-rate model: collapses at rate exp(a + b·rate) per second of steady running, each probe start and checkpoint weighing as many seconds (fitted), Firth-penalized fit to every judged probe's outcome and exposure, profile-likelihood interval"

// KneeInterval fits a model of when probes collapse to every judged probe — pass,
// fail and not_steady; fault, driver_limited and interrupted probes left out — and gives
// the rate that survives a reference window of window seconds with even odds, with its
// IntervalLevel (90 %) interval.
//
// The model: at a steady offered rate r the server collapses (a stall whose backlog the
// pool wait cannot absorb, a queue that runs away) at rate λ(r) = exp(a + b·r) per
// second, b > 0, and besides at the moments that stress it most: a probe's start, right
// after its CHECKPOINT, when every first write of a page logs a full-page image, and each
// checkpoint during the probe. Each such event is a chance to collapse worth θ seconds of
// steady running, so a probe of t seconds with e events (its start and the checkpoints
// observed in it) survives with probability exp(−λ(r)·(t + θe)): its exposure is t + θe.
// θ = 0 is a memoryless server, whose 15 s probes say little about a 6-minute hold; a
// large θ is a server whose collapses come at starts and checkpoints, for which a 15 s
// probe and a hold are nearly the same test. θ is fitted with a and b when the probes
// asked for windows of more than one length (short probes and holds; measured on the
// main job of 2026-12-06: 15 s probes passed 4 times of 4 at rates whose holds then
// collapsed 2-34 s in, and θ of 31-207 s fits those sweeps better than 0 by 2-10 units
// of log-likelihood).
//
// A probe that passed survived its exposure; one that failed at its window's end
// collapsed within it; one cut short (error budget, trend rule) collapsed within its
// exposure up to the cut, since a collapse found out in its first seconds may be its
// start's as well as a steady one (and one found out after 1 s still says more than one
// found out at the window's end). A hold is the exception: it counts as a fail of its
// whole window, whenever its collapse came, since when a checkpoint's collapse comes
// says when the checkpoint came, not how often the server collapses. Probes that all
// asked for one window length cannot tell a start's weight from their seconds, and
// nothing is carried from one length to another: they are read as memoryless (θ = 0,
// the model until 2026-12-06), a cut-short probe as a collapse between its t less the
// time the cut needs to find a collapse out (detectionDelay) and its t, which keeps a
// late collapse's time without reading a cut in the first seconds, whose time is the
// detection's, as a collapse rate (until 2026-12-06 the collapse was read at its t
// exactly: then fails cut after 1.0-1.2 s at every rate from 1,650 to 3,200 said the
// collapse rate did not grow with the rate, and a sweep that passed 1,600 for 30 s got
// 384-1,447).
//
// The estimate (Midpoint) is m with λ(m)·(window + θ·e) = ln 2, where e counts a probe
// of the reference window's events (its start and the checkpoints a completed probe of
// that length saw): the rate at which a probe of the reference window
// (ReferenceWindow) passes half the time. The fit is Firth's penalized
// maximum likelihood (log-likelihood + ½ log det of the Fisher information of a and b),
// finite when every pass lies below every fail; the interval is the profile penalized
// likelihood's: every m whose deviance, maximized over b and θ, is within the χ²₁
// quantile (2.706) of the best, within half the lowest rate probed and twice the
// highest. The fit may place m below every probe (a search that held its first rate has
// no probe lower down); the interval then says how far the data reach. nil without a
// pass and a fail at two rates or more.
func KneeInterval(probes []result.Probe, window float64) *result.Interval {
	return kneeInterval(probes, window, thetas)
}

// kneeInterval is KneeInterval with θ taken from the grid given ({0}: a memoryless
// server, the model before 2026-12-06).
func kneeInterval(probes []result.Probe, window float64, grid []float64) *result.Interval {
	c := collapses{thetas: grid}
	var rates []float64
	pass, fail := false, false
	var holds []result.Probe // failed holds: exposed for their whole window
	for _, p := range probes {
		if p.Interrupted {
			continue
		}
		t := max(p.MeasuredS, 1) // a probe cut short in its warm-up: its first second
		d := survived
		switch p.Verdict {
		case result.Pass:
			pass = true
		case result.Fail, result.NotSteady:
			d, fail = collapsed, true
			if p.Hold { // a fail of its whole window, whenever it came (see above)
				holds = append(holds, p)
				continue
			}
			if p.MeasuredS < p.DurationS-0.1 {
				d = stalled // cut short (read as collapsed within its last detectionDelay when the probes are of one length)
			}
		default:
			continue
		}
		rates = append(rates, p.TargetRate)
		c.add(t, events(p), max(p.DurationS, t), d, max(t-detectionDelay(p), 0))
	}
	for _, p := range holds {
		T := max(p.DurationS, p.MeasuredS, 1)
		rates = append(rates, p.TargetRate)
		c.add(T, windowEvents(probes, T, events(p)), T, collapsed, 0)
	}
	if !pass || !fail || slices.Min(rates) == slices.Max(rates) { // one rate: no slope to fit
		return nil
	}
	if window <= 0 {
		window = slices.Max(c.T)
	}
	c.window, c.events = window, windowEvents(probes, window, 1)
	if slices.Max(c.T)-slices.Min(c.T) < 1 {
		// Probes of one length: nothing is carried from one window to another, and their
		// early collapses cannot tell a start's chance from a rate the server cannot
		// serve at all, so they are read as memoryless, each cut-short probe's collapse
		// at its t.
		c.thetas = []float64{0}
	} else {
		for i, d := range c.d {
			if d == stalled {
				c.d[i] = collapsed
			}
		}
	}
	f, theta, ok := c.fit(rates)
	if !ok {
		return nil
	}
	return &result.Interval{Lo: f.lo, Hi: f.hi, Level: IntervalLevel, Midpoint: f.best, Method: IntervalMethod,
		Probes: len(rates), WindowS: window, EventS: theta, RepeatLo: f.repeatLo, RepeatHi: f.repeatHi}
}

// detectionDelay is how long, at most, a cut-short probe's cut came after the collapse it
// found, in seconds: a pool wait and a second for a cut by errors that were all
// rejections (a request is rejected a pool wait after it was due, and the error budget
// is spent within about a second of a collapse), its whole t for a cut by the trend rule
// (a queue wait's growth is decided seconds after it began) or by errors of any other
// class (a statement or lock timeout comes a timeout after its transaction began), one
// second (the judge's step) otherwise.
func detectionDelay(p result.Probe) float64 {
	switch p.CutBy {
	case result.CutByErrors:
		if p.Failed.Total() > 0 {
			return p.MeasuredS
		}
		pw := p.PoolWaitMs / 1000
		if pw <= 0 {
			pw = 1
		}
		return pw + 1
	case result.CutByTrend:
		return p.MeasuredS
	}
	return 1
}

// events is a probe's collapse chances besides its seconds: its start and every
// checkpoint observed in it.
func events(p result.Probe) float64 {
	e := 1.0
	if o := p.Observation; o != nil && o.Checkpoints > 0 {
		e += float64(o.Checkpoints)
	}
	return e
}

// windowEvents is the events of a probe of window seconds run to its end: the most that
// any completed probe at least that long saw, or least when none did (at least its start).
func windowEvents(probes []result.Probe, window, least float64) float64 {
	e := max(least, 1)
	for _, p := range probes {
		if !p.Interrupted && p.Verdict == result.Pass && p.MeasuredS >= window-0.1 {
			e = max(e, events(p))
		}
	}
	return e
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

// A probe's outcome in collapses.d: survived its exposure, collapsed within it, or
// collapsed at its t (see KneeInterval).
const (
	survived  = 0
	collapsed = 1
	stalled   = 2 // cut short; read as collapsed within its exposure when θ is fitted
)

// collapses is the probes' data: standardized rates x = (rate - mean) / sc, seconds run
// t, events e and outcome d, seconds asked for T (the Fisher information's) and, for a
// stalled probe, the seconds it surely survived, s (its collapse came in (s, t]); the
// reference window and its events.
type collapses struct {
	x, t, e, T, d, s []float64
	window, events   float64
	thetas           []float64 // the grid of θ (thetas)
}

func (c *collapses) add(t, e, T float64, d int, s float64) {
	c.t, c.e, c.T, c.d, c.s = append(c.t, t), append(c.e, e), append(c.T, T), append(c.d, float64(d)), append(c.s, s)
}

// pll is the Firth-penalized log-likelihood at the standardized even-odds rate m, slope
// b (x units) and event weight θ (seconds): log λ(x) = k + b(x − m) with
// k = log(ln 2 / (window + θ·events)), so that a probe of the reference window at m
// survives with probability ½. The penalty is ½ log det of the Fisher information of
// (a, b), each probe weighted as if only its pass or fail at the end of the window asked
// for, T, were seen: with μ = λ(T + θe) the weight is μ² e^(−μ) / (1 − e^(−μ)). A
// collapse seen at its second carries more information, so this prior is the more
// conservative one, and its weights vanish as the slope grows, which keeps the fit
// finite when every pass lies below every fail and every fail ran its whole window.
func (c collapses) pll(m, b, theta float64) float64 {
	k := math.Log(math.Ln2 / (c.window + theta*c.events))
	var ll, sw, xbar, ss float64 // ss = Σw(x − x̄)², by West's weighted update (no cancellation)
	for i, x := range c.x {
		lambda := math.Exp(k + b*(x-m))
		lx := lambda * (c.t[i] + theta*c.e[i]) // +Inf when exp overflows: −Inf below, no NaN (t ≥ 1)
		switch c.d[i] {
		case survived:
			ll -= lx
		case collapsed:
			ll += math.Log(-math.Expm1(-lx)) // −Inf when λx underflows to 0
		case stalled: // a collapse in (s, t], θ = 0 (probes of one length)
			ll += -lambda*c.s[i] + math.Log(-math.Expm1(-lambda*(c.t[i]-c.s[i])))
		}
		if mu := lambda * (c.T[i] + theta*c.e[i]); mu > 0 && mu < 700 {
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

// slopeStep is the ratio of two neighbours in slopes.
var slopeStep = math.Pow(1e7, 1.0/21)

// slopes is the grid of b the profile starts from: 10⁻³ … 10⁴, 22 points log-spaced by
// slopeStep (b > 0: a higher rate collapses sooner).
var slopes = func() []float64 {
	g := make([]float64, 22)
	for i := range g {
		g[i] = 1e-3 * math.Pow(slopeStep, float64(i))
	}
	return g
}()

// thetas is the grid of θ, in seconds, the profile starts from: 0, and 1 … 10⁴ spaced
// by about 3.
var thetas = []float64{0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000}

// profile is max over b and θ of pll(m, b, θ), with the θ it takes: the grid, then golden
// section in log(1 + θ) between the best point's neighbours, there with b sought near
// the grid point's best.
func (c collapses) profile(m float64) (float64, float64) {
	best, bBest, k := math.Inf(-1), 0.0, 0
	for i, th := range c.thetas {
		if v, b := c.profileB(m, th); v > best {
			best, bBest, k = v, b, i
		}
	}
	if len(c.thetas) == 1 {
		return best, c.thetas[0]
	}
	lo, hi := math.Log1p(c.thetas[max(k-1, 0)]), math.Log1p(c.thetas[min(k+1, len(c.thetas)-1)])
	near := func(u float64) float64 {
		_, v := goldenMax(func(b float64) float64 { return c.pll(m, b, math.Expm1(u)) }, bBest/slopeStep, bBest*slopeStep, 12)
		return v
	}
	u, v := goldenMax(near, lo, hi, 10)
	if v > best {
		return v, math.Expm1(u)
	}
	return best, c.thetas[k]
}

// profileB is max over b of pll(m, b, θ), with the b it takes: the grid, then golden
// section between the best point's neighbours.
func (c collapses) profileB(m, theta float64) (float64, float64) {
	best, k := math.Inf(-1), 0
	for i, b := range slopes {
		if v := c.pll(m, b, theta); v > best {
			best, k = v, i
		}
	}
	lo, hi := slopes[max(k-1, 0)], slopes[min(k+1, len(slopes)-1)]
	b, v := goldenMax(func(b float64) float64 { return c.pll(m, b, theta) }, lo, hi, 16)
	if v > best {
		return v, b
	}
	return best, slopes[k]
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

// fit standardizes rates into c.x and returns the interval, the estimate and the repeat
// interval of the model in rates, within [min / 2, 2 max], and the θ of the estimate; ok
// is false when no fit exists.
func (c *collapses) fit(rates []float64) (profiled, float64, bool) {
	rmin, rmax := slices.Min(rates), slices.Max(rates)
	mean, sc := stat.PopMeanStdDev(rates, nil)
	if sc <= 0 {
		sc = max(rmax/10, 1)
	}
	c.x = make([]float64, len(rates))
	for i, r := range rates {
		c.x[i] = (r - mean) / sc
	}
	prof := func(m float64) float64 { v, _ := c.profile(m); return v }
	iv, ok := profileInterval(prof, (rmin/2-mean)/sc, (2*rmax-mean)/sc)
	if !ok {
		return profiled{}, 0, false
	}
	_, theta := c.profile(iv.best)
	at := func(x float64) float64 { return mean + sc*x }
	return profiled{lo: at(iv.lo), best: at(iv.best), hi: at(iv.hi), repeatLo: at(iv.repeatLo), repeatHi: at(iv.repeatHi)},
		theta, true
}

// profiled is profileInterval's result: the interval, the best point and the repeat
// interval (in the profile's units; fit turns them into rates).
type profiled struct {
	lo, best, hi       float64
	repeatLo, repeatHi float64
}

// profileInterval maximizes the profile log-likelihood prof over [xlo, xhi] (a grid, then
// golden section around the best grid point) and returns the IntervalLevel interval —
// every x within the χ²₁ quantile's half of the best — with the maximum, and the repeat
// interval: every x within twice that. A second, independent run whose estimate is as
// precise as this one's differs from it by √2 times one estimate's spread, so where the
// profile is quadratic (estimates near normal) its estimate falls inside the cut at twice
// the threshold, √2 times as wide, with the interval's level (result.Interval.RepeatLo).
// ok is false when prof is −∞ everywhere.
func profileInterval(prof func(float64) float64, xlo, xhi float64) (profiled, bool) {
	const grid = 40
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
		return profiled{}, false
	}
	mBest, vBest := goldenMax(prof, at(max(kBest-1, 0)), at(min(kBest+1, grid)), 25)
	if vals[kBest] > vBest {
		mBest, vBest = at(kBest), vals[kBest]
	}
	// cut is the set of x within crit of the best: the outermost grid points within it
	// (or, when the peak is narrower than a step, none: mBest alone is inside), then
	// bisection from the inside to the grid point beyond, which is outside.
	cut := func(crit float64) (float64, float64) {
		in := func(m float64) bool { return vBest-prof(m) <= crit }
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
		return xl, xh
	}
	crit := distuv.ChiSquared{K: 1}.Quantile(IntervalLevel) / 2 // on the log-likelihood scale
	r := profiled{best: mBest}
	r.lo, r.hi = cut(crit)
	r.repeatLo, r.repeatHi = cut(2 * crit)
	return r, true
}

// crossing bisects between out (not in the interval) and in (in it) for the boundary.
func crossing(in func(float64) bool, out, inside float64) float64 {
	for i := 0; i < 14; i++ { // to a 16,000th of a grid step
		m := (out + inside) / 2
		if in(m) {
			inside = m
		} else {
			out = m
		}
	}
	return inside
}
