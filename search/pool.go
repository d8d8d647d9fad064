package search

import (
	"context"
	"errors"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Pool-size scan policy (see ScanPool).
const (
	// PoolScanFirst is the first pool size scanned; each next one doubles it.
	PoolScanFirst = 4
	// PoolScanCalibrate is the pool size of the calibration before a scan (its estimate
	// only sets the scan's rate).
	PoolScanCalibrate = 16
	// PoolScanMax is the largest pool size scanned by default (Config.PoolScanMax).
	PoolScanMax = 64
	// PoolScanOverload is the scan's offered rate as a multiple of the throughput
	// estimate: far enough above it that every pool is saturated.
	PoolScanOverload = 2.0
	// PoolScanGain is how much better than the best so far a pool must do to count as an
	// improvement; the scan stops after PoolScanPatience doublings without one.
	PoolScanGain     = 1.05
	PoolScanPatience = 2
	// PoolScanWithin: the smallest pool whose saturated throughput is at least this share
	// of the best is chosen. The knee follows the rate at which a queue drains, which is
	// the chosen pool's saturated throughput, so the choice gives up at most 3 % of it, and
	// where noise flips the choice between two pools their drain rates are within 3 %.
	// (Until 2026-12-06 it was 0.9, so a flip sat where the two drained 10 % apart.)
	PoolScanWithin = 0.97
	// PoolScanMeasured caps each scan probe's measured window (warm-up: as the
	// calibration's, CalibrationWarmup).
	PoolScanMeasured = 10 * time.Second
	// poolScanRaises bounds how often one pool is probed again at twice the rate when its
	// probe did not saturate the server.
	poolScanRaises = 4
)

// PoolProber is the optional ability to run a short overload probe with a given pool
// size, prepared as a real probe, and to set the pool size of the probes that follow.
// The search scans pool sizes with it when Config.PoolScan is set (--conns auto).
type PoolProber interface {
	ProbePool(ctx context.Context, rate float64, conns int, warmup, measured time.Duration) (*result.Probe, error)
	UsePool(conns int)
}

// ScanPool finds the pool size at which the server's saturated throughput peaks. Why: an
// open-loop driver's connections are all busy whenever a queue forms, so the throughput
// a pool of n gets with every connection busy is the rate at which a queue drains. When
// it falls as n grows (a hot row's lock convoy; LWLock contention on a small server), a
// large pool makes the server metastable: a short stall builds a queue that the busier
// server serves more slowly than it built, and the knee then depends on how long one
// measured. The scan offers PoolScanOverload × estimate (doubled for a pool whose probe
// did not saturate the server) to pools of PoolScanFirst, 2×, 4×, ... up to max, stops
// after PoolScanPatience doublings without a PoolScanGain improvement, then probes the
// same pools again in the reverse order at the same rates (4, 8, 16, 16, 8, 4: every
// pool's two windows have the same mean time, so a server that drifts linearly during the
// scan favours none), and chooses, by the mean of each pool's two windows, the smallest
// pool with at least PoolScanWithin of the best's throughput. One window per pool was not
// enough: six scans of one server measured pools 4 and 8 with a coefficient of variation
// of 7 % and 12 %, and the choice flipped in 3 of 4 sweeps across three runs.
func ScanPool(ctx context.Context, p PoolProber, cfg Config, estimate float64, maxConns int) (*result.PoolScan, error) {
	warmup := min(cfg.Warmup, CalibrationWarmup)
	measure := PoolScanMeasured
	if cfg.Duration > 0 {
		measure = min(cfg.Duration, measure)
	}
	if maxConns <= 0 {
		maxConns = PoolScanMax
	}
	rate := PoolScanOverload * max(estimate, CalibrationStartRate)
	scan := &result.PoolScan{Within: PoolScanWithin}
	// probe runs one scan probe, counts its seconds, and says whether it saturated.
	probe := func(n int, rate float64) (*result.Probe, bool, error) {
		if cfg.OnPoolProbe != nil {
			cfg.OnPoolProbe(n, rate)
		}
		pr, err := p.ProbePool(ctx, rate, n, warmup, measure)
		if pr != nil {
			scan.Seconds += pr.WarmupS + pr.MeasuredS
		}
		if err != nil {
			return nil, false, err
		}
		if pr == nil || pr.Interrupted {
			return nil, false, context.Canceled
		}
		return pr, pr.ErrorRate() > CalibrationMaxErrorRate || pr.AchievedRate < CalibrationMinAchieved*rate, nil
	}
	best, since := -1, 0
	for n := PoolScanFirst; n <= maxConns && since < PoolScanPatience; n *= 2 {
		var pt result.PoolPoint
		for raise := 0; ; raise++ {
			pr, sat, err := probe(n, rate)
			if err != nil {
				return scan, err
			}
			pt = result.PoolPoint{Conns: n, Rate: rate, Achieved: pr.AchievedRate, ErrorRate: pr.ErrorRate(), Saturated: sat}
			if pt.Saturated || raise == poolScanRaises {
				break
			}
			rate *= 2 // not above this pool's capacity: offer more, to this pool and the next
		}
		pt.Windows = []float64{pt.Achieved}
		scan.Points = append(scan.Points, pt)
		if cfg.OnPoolPoint != nil {
			cfg.OnPoolPoint(pt)
		}
		switch {
		case best < 0:
			best = 0
		case pt.Achieved >= PoolScanGain*scan.Points[best].Achieved:
			best, since = len(scan.Points)-1, 0
		default:
			if pt.Achieved > scan.Points[best].Achieved {
				best = len(scan.Points) - 1
			}
			since++
		}
	}
	if best < 0 {
		return scan, errors.New("no transaction committed")
	}
	// The way back: each pool again, at the rate its first window saturated (or reached).
	for i := len(scan.Points) - 1; i >= 0; i-- {
		pt := &scan.Points[i]
		pr, sat, err := probe(pt.Conns, pt.Rate)
		if err != nil {
			return scan, err
		}
		pt.Windows = append(pt.Windows, pr.AchievedRate)
		pt.Achieved = (pt.Achieved + pr.AchievedRate) / 2
		pt.ErrorRate = (pt.ErrorRate + pr.ErrorRate()) / 2
		pt.Saturated = pt.Saturated && sat
		if cfg.OnPoolPoint != nil {
			cfg.OnPoolPoint(*pt)
		}
	}
	best = 0
	for i, pt := range scan.Points {
		if pt.Achieved > scan.Points[best].Achieved {
			best = i
		}
	}
	if scan.Points[best].Achieved <= 0 {
		return scan, errors.New("no transaction committed")
	}
	scan.Best = scan.Points[best].Conns
	for _, pt := range scan.Points {
		if pt.Achieved >= PoolScanWithin*scan.Points[best].Achieved {
			scan.Conns = pt.Conns
			break
		}
	}
	return scan, nil
}

// PoolScanLimit is the largest pool the scan tries when free connections are available
// to the pool: the largest of PoolScanFirst, 2×, 4×, ... up to PoolScanMax that fits, or
// 0 when not even PoolScanFirst does.
func PoolScanLimit(free int) int {
	n := 0
	for c := PoolScanFirst; c <= min(free, PoolScanMax); c *= 2 {
		n = c
	}
	return n
}

// chosen is the scan's point of its chosen pool.
func chosen(scan *result.PoolScan) result.PoolPoint {
	for _, pt := range scan.Points {
		if pt.Conns == scan.Conns {
			return pt
		}
	}
	return result.PoolPoint{}
}
