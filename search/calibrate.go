package search

import (
	"context"
	"errors"
	"time"
)

// Calibration policy (see Calibrate).
const (
	// CalibrationStartRate is the first calibration probe's rate, tx/s.
	CalibrationStartRate = 250.0
	// CalibrationGrowth multiplies the rate from one calibration probe to the next.
	CalibrationGrowth = 4.0
	// CalibrationTries bounds the calibration probes (250 × 4^5 = 256,000 tx/s).
	CalibrationTries = 6
	// CalibrationMaxErrorRate and CalibrationMinAchieved say a calibration probe saturated
	// the server: more than 1 % of its arrivals failed or were rejected, or it achieved
	// less than 90 % of its rate.
	CalibrationMaxErrorRate = 0.01
	CalibrationMinAchieved  = 0.9
	// CalibrationWarmup and CalibrationMeasured cap the short probes' warm-up and measured
	// window (each is also at most the probes' own).
	CalibrationWarmup   = 5 * time.Second
	CalibrationMeasured = 5 * time.Second
)

// Calibrate estimates the server's maximum throughput with short probes prepared as the
// real ones are (a ShortProber), so the estimate sees the probes' warm state: from
// CalibrationStartRate, × CalibrationGrowth up to CalibrationTries probes, each with a
// warm-up of min(cfg.Warmup, 5 s) and a measured window of min(cfg.Duration, 5 s), no
// error budget. The first probe that saturates the server (see CalibrationMaxErrorRate)
// ends it; the estimate is what the last probe achieved. Seconds is every calibration
// probe's warm-up and measured time (it counts in the sweep's probe-minutes).
func Calibrate(ctx context.Context, p ShortProber, cfg Config) (Calibration, error) {
	warmup := min(cfg.Warmup, CalibrationWarmup)
	measure := CalibrationMeasured
	if cfg.Duration > 0 {
		measure = min(cfg.Duration, measure)
	}
	var cal Calibration
	rate := CalibrationStartRate
	for i := 0; i < CalibrationTries; i++ {
		if cfg.OnCalibrate != nil {
			cfg.OnCalibrate(rate)
		}
		pr, err := p.ProbeShort(ctx, rate, warmup, measure)
		if pr != nil {
			cal.Seconds += pr.WarmupS + pr.MeasuredS
		}
		if err != nil {
			return cal, err
		}
		if pr == nil || pr.Interrupted {
			return cal, context.Canceled
		}
		cal.Rate = pr.AchievedRate
		if pr.ErrorRate() > CalibrationMaxErrorRate || pr.AchievedRate < CalibrationMinAchieved*rate {
			break
		}
		rate *= CalibrationGrowth
	}
	if cal.Rate <= 0 {
		return cal, errors.New("no transaction committed")
	}
	return cal, nil
}
