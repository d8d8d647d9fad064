package search

import (
	"math"

	"github.com/pgceiling/pgceiling/result"
	"gonum.org/v1/gonum/stat/distuv"
)

// IntervalLevel is the confidence level of the knee's interval.
const IntervalLevel = 0.9

// IntervalMethod is recorded in result.Interval.Method.
const IntervalMethod = "Firth-penalized logistic fit of pass/fail against rate; profile penalized-likelihood interval of the 50 % pass rate"

// KneeInterval fits pass/fail against rate over every judged probe — pass = 1; fail and
// not_steady = 0; fault, driver_limited and interrupted probes left out — with the
// logistic model P(pass) = 1/(1 + exp(b·(rate − m))), m being the rate passed half the
// time. The fit is Firth's penalized maximum likelihood (the Jeffreys prior: log-likelihood
// + ½ log det of the Fisher information), which stays finite under perfect separation,
// the usual case in a bisection (every pass below every fail). The IntervalLevel (90 %)
// interval for m is the profile penalized likelihood's: every m whose penalized deviance,
// maximized over b, is within the χ²₁ quantile (2.706) of the best, clipped to the probed
// rates widened by widen (one bracket width) on each side, since with few probes the
// data cannot say more than "somewhere around the bracket". nil without a pass and a fail.
func KneeInterval(probes []result.Probe, widen float64) *result.Interval {
	var rates, ys []float64
	pass, fail := false, false
	for _, p := range probes {
		if p.Interrupted {
			continue
		}
		switch p.Verdict {
		case result.Pass:
			rates, ys, pass = append(rates, p.TargetRate), append(ys, 1), true
		case result.Fail, result.NotSteady:
			rates, ys, fail = append(rates, p.TargetRate), append(ys, 0), true
		}
	}
	if !pass || !fail {
		return nil
	}
	lo, mid, hi := fitLogistic(rates, ys, widen)
	return &result.Interval{Lo: lo, Hi: hi, Level: IntervalLevel, Midpoint: mid, Method: IntervalMethod,
		Probes: len(rates)}
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

// logit is the pass/fail data in standardized rates x = (rate - c) / sc.
type logit struct {
	x, y []float64
}

// pll is the Firth-penalized log-likelihood at midpoint m and steepness b (x units):
// P(pass) = σ(-b(x - m)), the penalty ½ log det of the information of (β0, β1).
func (d logit) pll(m, b float64) float64 {
	var ll, sw, swx, swxx float64
	for i, x := range d.x {
		eta := -b * (x - m)
		if d.y[i] == 1 {
			ll += logSigmoid(eta)
		} else {
			ll += logSigmoid(-eta)
		}
		p := 1 / (1 + math.Exp(-eta))
		w := p * (1 - p)
		sw += w
		swx += w * x
		swxx += w * x * x
	}
	det := sw*swxx - swx*swx
	if det <= 0 {
		return math.Inf(-1)
	}
	return ll + 0.5*math.Log(det)
}

func logSigmoid(eta float64) float64 {
	if eta > 0 {
		return -math.Log1p(math.Exp(-eta))
	}
	return eta - math.Log1p(math.Exp(eta))
}

// steepness is the grid of b the profile starts from: 0 and ± 0.01 … 10⁴, log-spaced.
var steepness = func() []float64 {
	const k = 14
	g := make([]float64, 0, 2*k+1)
	for i := k - 1; i >= 0; i-- {
		g = append(g, -math.Exp(math.Log(0.01)+float64(i)*math.Log(1e6)/(k-1)))
	}
	g = append(g, 0)
	for i := 0; i < k; i++ {
		g = append(g, math.Exp(math.Log(0.01)+float64(i)*math.Log(1e6)/(k-1)))
	}
	return g
}()

// profile is max over b of pll(m, b): a grid, then golden section between the best
// point's neighbours.
func (d logit) profile(m float64) float64 {
	best, k := math.Inf(-1), 0
	for i, b := range steepness {
		if v := d.pll(m, b); v > best {
			best, k = v, i
		}
	}
	a, c := steepness[max(k-1, 0)], steepness[min(k+1, len(steepness)-1)]
	f := func(b float64) float64 { return d.pll(m, b) }
	_, v := goldenMax(f, a, c, 25)
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

// fitLogistic returns the interval and the midpoint m (in rates) of the Firth fit of ys
// against rates, clipped to [min - widen, max + widen].
func fitLogistic(rates, ys []float64, widen float64) (lo, mid, hi float64) {
	rmin, rmax, mean := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range rates {
		rmin, rmax, mean = min(rmin, r), max(rmax, r), mean+r/float64(len(rates))
	}
	if widen <= 0 {
		widen = 0.05 * rmax
	}
	var ss float64
	for _, r := range rates {
		ss += (r - mean) * (r - mean)
	}
	sc := math.Sqrt(ss / float64(len(rates)))
	if sc <= 0 {
		sc = widen
	}
	d := logit{x: make([]float64, len(rates)), y: ys}
	for i, r := range rates {
		d.x[i] = (r - mean) / sc
	}
	xlo, xhi := (rmin-widen-mean)/sc, (rmax+widen-mean)/sc
	const grid = 60
	step := (xhi - xlo) / grid
	prof := make([]float64, grid+1)
	kBest := 0
	for i := range prof {
		prof[i] = d.profile(xlo + float64(i)*step)
		if prof[i] > prof[kBest] {
			kBest = i
		}
	}
	mBest, vBest := goldenMax(d.profile, max(xlo, xlo+float64(kBest-1)*step), min(xhi, xlo+float64(kBest+1)*step), 40)
	if prof[kBest] > vBest {
		mBest, vBest = xlo+float64(kBest)*step, prof[kBest]
	}
	crit := distuv.ChiSquared{K: 1}.Quantile(IntervalLevel) / 2 // on the log-likelihood scale
	in := func(m float64) bool { return vBest-d.profile(m) <= crit }
	// the outermost grid points within the cut-off, then bisection to the crossing
	first, last := -1, -1
	for i, v := range prof {
		if vBest-v <= crit {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		first, last = kBest, kBest
	}
	xl, xh := xlo+float64(first)*step, xlo+float64(last)*step
	if first > 0 {
		xl = crossing(in, xl-step, xl)
	}
	if last < grid {
		xh = crossing(in, xh+step, xh)
	}
	xl, xh = min(xl, mBest), max(xh, mBest)
	return mean + sc*xl, mean + sc*mBest, mean + sc*xh
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
