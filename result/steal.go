package result

import "math"

// DefaultMaxErrorRate is the pass rule's default limit on (failed + rejected) /
// scheduled (search's and claim's --max-error-rate): 0.1 %.
const DefaultMaxErrorRate = 0.001

// Breakdown is the measured second (0 = the window's first) in which the probe began to
// fail: the first whose failed and rejected arrivals were more than maxErrorRate of its
// offered ones (so a lone error long before a collapse does not count), else, for a probe
// cut short (by the steady-state rule's trend), the second it was cut in. ok is false for
// a probe that ran its full length without such a second.
func (p *Probe) Breakdown(maxErrorRate float64) (second int, ok bool) {
	first := -1
	for _, s := range p.Series {
		if s.Phase != PhaseMeasure {
			continue
		}
		if first < 0 {
			first = s.T
		}
		if bad := s.Failed.Total(); bad > 0 && float64(bad) > maxErrorRate*float64(s.Offered) {
			return s.T - first, true
		}
	}
	if p.CutShort {
		return max(int(math.Ceil(p.MeasuredS))-1, 0), true
	}
	return 0, false
}

// StealBefore is the mean of the observation's per-second steal (HostStealSeries) over the
// lead seconds up to and including measured second at (fewer at the window's start), and
// how many seconds it averaged: 0 when the series does not reach them.
func (o *Observation) StealBefore(at, lead int) (share float64, n int) {
	if o == nil {
		return 0, 0
	}
	for i := max(at-lead+1, 0); i <= at && i < len(o.HostStealSeries); i++ {
		share += o.HostStealSeries[i]
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return share / float64(n), n
}

// StealAtBreakdown is the steal over the StealLeadS seconds up to the probe's breakdown
// (Breakdown with maxErrorRate): its mean share, the breakdown's measured second and the
// seconds averaged. n is 0 when the probe did not break down or its steal is not known
// there. At least StealOnsetLimit makes a failure the neighbours' (HostSteal).
func (p *Probe) StealAtBreakdown(maxErrorRate float64) (share float64, at, n int) {
	at, ok := p.Breakdown(maxErrorRate)
	if !ok {
		return 0, 0, 0
	}
	share, n = p.Observation.StealBefore(at, StealLeadS)
	return share, at, n
}

// Stealing is why the machine's steal makes a probe's result its neighbours' (Stolen).
type Stealing struct {
	// Share is the share of the machine's CPU the hypervisor gave other guests: over
	// the whole probe, or over the StealLeadS seconds up to its breakdown (AtBreakdown).
	Share       float64
	AtBreakdown bool
	At, N       int // the breakdown's measured second and the seconds averaged (AtBreakdown)
}

// Stolen is the steal rule, one for the search's verdict (HostSteal) and the bottleneck
// line: a probe during which the hypervisor took at least StealLimit of the machine's CPU
// for other guests (o.HostStealShare), or else one that broke down (Breakdown with
// maxErrorRate) after at least StealOnsetLimit over the StealLeadS seconds before
// (StealAtBreakdown; p may be nil, which skips this part). ok is false when neither holds
// or o is nil.
func Stolen(o *Observation, p *Probe, maxErrorRate float64) (s Stealing, ok bool) {
	if o == nil {
		return s, false
	}
	if o.HostStealShare >= StealLimit {
		return Stealing{Share: o.HostStealShare}, true
	}
	if p == nil {
		return s, false
	}
	if share, at, n := p.StealAtBreakdown(maxErrorRate); n > 0 && share >= StealOnsetLimit {
		return Stealing{Share: share, AtBreakdown: true, At: at, N: n}, true
	}
	return s, false
}
