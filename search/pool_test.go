package search

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// poolServer is a simulated server whose saturated throughput depends on the pool size
// (sat[n]; a pool size missing from it saturates at 1 tx/s): a scan probe achieves
// min(rate, sat[n] × (1 + drift × k)) for its k-th scan probe (from 0) and loses the
// rest; a search probe at rate with the pool in use passes when rate <= 0.9 × sat[pool].
// It records every call.
type poolServer struct {
	sat       map[int]float64
	drift     float64 // the server's capacity grows by this share of sat per scan probe
	pool      int
	scans     []result.PoolPoint // what each scan probe was asked (conns, rate)
	used      []int              // UsePool's arguments
	probed    []int              // the pool in use at each search probe
	cancelAt  int                // > 0: the scan probe with this number (from 1) is interrupted
	failScans bool               // every scan probe errs
}

func (s *poolServer) ProbePool(ctx context.Context, rate float64, conns int, warmup, measured time.Duration) (*result.Probe, error) {
	s.scans = append(s.scans, result.PoolPoint{Conns: conns, Rate: rate})
	if s.failScans {
		return nil, errors.New("server went away")
	}
	secs := measured.Seconds()
	p := &result.Probe{TargetRate: rate, WarmupS: warmup.Seconds(), MeasuredS: secs, Conns: conns}
	if len(s.scans) == s.cancelAt {
		p.Interrupted = true
		return p, nil
	}
	got := min(rate, s.sat[conns]*(1+s.drift*float64(len(s.scans)-1)))
	if got <= 0 {
		got = 1
	}
	p.Scheduled = int64(rate * secs)
	p.Committed = int64(got * secs)
	p.Rejected = p.Scheduled - p.Committed
	p.AchievedRate = got
	return p, nil
}

func (s *poolServer) UsePool(conns int) { s.pool, s.used = conns, append(s.used, conns) }

func (s *poolServer) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	s.probed = append(s.probed, s.pool)
	p := &result.Probe{TargetRate: rate, MeasuredS: 10, Scheduled: int64(rate * 10), Conns: s.pool}
	if rate <= 0.9*s.sat[s.pool] {
		p.Committed, p.AchievedRate = p.Scheduled, rate
	} else {
		p.Committed = int64(0.9 * s.sat[s.pool] * 10)
		p.Rejected = p.Scheduled - p.Committed
		p.AchievedRate = 0.9 * s.sat[s.pool]
	}
	return p, nil
}

// convoy is a server like the 2-core test machine's transfer (measured 2026-12-05): the
// saturated throughput falls as the pool grows past 4 (a hot row's lock convoy).
var convoy = map[int]float64{4: 2000, 8: 1550, 16: 1520, 32: 1130, 64: 940}

func conns(pts []result.PoolPoint) []int {
	var n []int
	for _, p := range pts {
		n = append(n, p.Conns)
	}
	return n
}

func TestScanPoolStopsAfterTwoPoolsWithoutGain(t *testing.T) {
	s := &poolServer{sat: convoy}
	ps, err := ScanPool(context.Background(), s, Config{Warmup: 5 * time.Second, Duration: time.Minute}, 1500, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 4 is best; 8 and 16 do not beat it by 5 %, so 32 and 64 are never probed; then
	// the same pools again on the way back.
	if got := conns(ps.Points); !slices.Equal(got, []int{4, 8, 16}) {
		t.Errorf("scanned pools %v, want [4 8 16]", got)
	}
	if got := conns(s.scans); !slices.Equal(got, []int{4, 8, 16, 16, 8, 4}) {
		t.Errorf("scan probes with pools %v, want [4 8 16 16 8 4]", got)
	}
	if ps.Conns != 4 || ps.Best != 4 || ps.Within != PoolScanWithin {
		t.Errorf("chose %d (best %d, within %v), want 4 (best 4)", ps.Conns, ps.Best, ps.Within)
	}
	for _, p := range ps.Points {
		if !p.Saturated || p.Rate != 3000 || p.Achieved != convoy[p.Conns] || !slices.Equal(p.Windows, []float64{convoy[p.Conns], convoy[p.Conns]}) {
			t.Errorf("point %+v: want saturated at 3,000 tx/s (2 × the estimate), achieved %v in both windows", p, convoy[p.Conns])
		}
	}
	// 6 probes of 5 s warm-up + 10 s (PoolScanMeasured caps the 1-minute window).
	if ps.Seconds != 90 {
		t.Errorf("scan seconds %v, want 90", ps.Seconds)
	}
}

func TestScanPoolChoosesTheSmallestPoolNearTheBest(t *testing.T) {
	// An LWLock-bound server: 16 is best, 8 within 3 % of it (98 %), 4 not.
	sat := map[int]float64{4: 2000, 8: 2750, 16: 2800, 32: 2700, 64: 2000}
	s := &poolServer{sat: sat}
	ps, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 2000, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 8 beats 4 by 37 %; 16 and 32 do not beat 8 by 5 %: the scan stops after 32.
	if got := conns(ps.Points); !slices.Equal(got, []int{4, 8, 16, 32}) {
		t.Errorf("scanned pools %v, want [4 8 16 32]", got)
	}
	if ps.Best != 16 || ps.Conns != 8 {
		t.Errorf("best %d chose %d, want best 16 and the smallest within 3 %% of it, 8", ps.Best, ps.Conns)
	}
	// 8 at 93 % of 16 is not within 3 %: 16 is chosen.
	sat = map[int]float64{4: 2000, 8: 2600, 16: 2800, 32: 2700, 64: 2000}
	ps, err = ScanPool(context.Background(), &poolServer{sat: sat}, Config{Warmup: time.Second, Duration: 5 * time.Second}, 2000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Best != 16 || ps.Conns != 16 {
		t.Errorf("8 at 93 %% of 16: best %d chose %d, want 16 and 16", ps.Best, ps.Conns)
	}
	// The largest pool bounds the scan.
	s = &poolServer{sat: map[int]float64{4: 1000, 8: 2000, 16: 4000, 32: 8000, 64: 16000}}
	ps, err = ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 20000, 16)
	if err != nil {
		t.Fatal(err)
	}
	if got := conns(ps.Points); !slices.Equal(got, []int{4, 8, 16}) || ps.Conns != 16 {
		t.Errorf("scan up to 16: pools %v chose %d, want [4 8 16] and 16", got, ps.Conns)
	}
}

// TestScanPoolCancelsDrift: a server whose capacity grows 15 % per scan probe (a cache
// warming, a checkpoint ending) makes a later pool look better than an earlier one of the
// same capacity. Alone, the way up would choose 8 over 4 (2,300 vs 2,000); the way back
// probes them in the reverse order, so each pool's two windows have the same mean time and
// the means tie (3,050 each): the smaller pool is chosen.
func TestScanPoolCancelsDrift(t *testing.T) {
	s := &poolServer{sat: map[int]float64{4: 2000, 8: 2000, 16: 1600, 32: 1200}, drift: 0.15}
	ps, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 5000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := conns(s.scans); !slices.Equal(got, []int{4, 8, 16, 32, 32, 16, 8, 4}) {
		t.Fatalf("scan probes with pools %v, want [4 8 16 32 32 16 8 4]", got)
	}
	up4, up8 := ps.Points[0].Windows[0], ps.Points[1].Windows[0]
	if up8 < up4/PoolScanWithin {
		t.Errorf("the way up measured 4 at %v and 8 at %v: the test needs 8 ahead by more than 3 %%", up4, up8)
	}
	for _, p := range ps.Points {
		want := s.sat[p.Conns] * (1 + 0.15*3.5)
		if len(p.Windows) != 2 || math.Abs(p.Achieved-want) > 1e-6 {
			t.Errorf("pool %d: windows %v mean %v, want two with mean %v", p.Conns, p.Windows, p.Achieved, want)
		}
	}
	if ps.Conns != 4 {
		t.Errorf("chose %d (best %d), want 4: the drift is not the pool's", ps.Conns, ps.Best)
	}
}

func TestScanPoolRaisesTheRateWhenAPoolIsNotSaturated(t *testing.T) {
	// The estimate (500) was far too low: 2 × 500 does not saturate a pool of 4.
	s := &poolServer{sat: map[int]float64{4: 3000, 8: 2500, 16: 2400}}
	ps, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 500, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rates []float64
	for _, p := range s.scans {
		rates = append(rates, p.Rate)
	}
	// 1,000 and 2,000 were below the pool's 3,000; 4,000 saturates it and the next pools,
	// and the way back offers each pool the rate that saturated it.
	if want := []float64{1000, 2000, 4000, 4000, 4000, 4000, 4000, 4000}; !slices.Equal(rates, want) {
		t.Errorf("scan probe rates %v, want %v", rates, want)
	}
	if len(ps.Points) != 3 || ps.Points[0].Achieved != 3000 || !ps.Points[0].Saturated || ps.Conns != 4 {
		t.Errorf("points %+v chose %d, want pool 4 at 3,000 saturated, chosen", ps.Points, ps.Conns)
	}
	// A server that no rate saturates (bounded raises) records the point as unsaturated.
	s = &poolServer{sat: map[int]float64{4: 1e9, 8: 1e9, 16: 1e9}}
	ps, err = ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 500, 8)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Points[0].Saturated || len(s.scans) != 2*(poolScanRaises+1)+2 {
		t.Errorf("points %+v after %d probes: want the first unsaturated after %d raises, and two probes back", ps.Points, len(s.scans), poolScanRaises)
	}
}

func TestScanPoolInterruptedAndFailed(t *testing.T) {
	s := &poolServer{sat: convoy, cancelAt: 2}
	ps, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 1500, 0)
	if !errors.Is(err, context.Canceled) || len(ps.Points) != 1 {
		t.Errorf("interrupted scan: err %v points %+v, want context.Canceled after one point", err, ps.Points)
	}
	// Interrupted on the way back (probe 5 of 6, pool 8): the points so far, 16 with two
	// windows.
	s = &poolServer{sat: convoy, cancelAt: 5}
	ps, err = ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 1500, 0)
	if !errors.Is(err, context.Canceled) || len(ps.Points) != 3 || len(ps.Points[2].Windows) != 2 || len(ps.Points[1].Windows) != 1 {
		t.Errorf("interrupted on the way back: err %v points %+v, want context.Canceled, 16 measured twice, 8 once", err, ps.Points)
	}
	s = &poolServer{sat: convoy, failScans: true}
	if _, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 1500, 0); err == nil {
		t.Error("a scan whose probes fail returned no error")
	}
	s = &poolServer{sat: map[int]float64{}} // nothing ever commits... but 1 tx/s
	if ps, err := ScanPool(context.Background(), s, Config{Warmup: time.Second, Duration: 5 * time.Second}, 1500, 0); err != nil || ps.Conns != 4 {
		t.Errorf("a server at 1 tx/s: %v, pool %d", err, ps.Conns)
	}
}

func TestRunUsesThePoolTheScanChose(t *testing.T) {
	s := &poolServer{sat: convoy}
	cfg := Config{PoolScan: true, Estimate: 1500, Precision: 0.1, MaxErrorRate: 0.001,
		Warmup: time.Second, Duration: 10 * time.Second, Steady: SteadyRule{Off: true}}
	sw, err := Run(context.Background(), s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Pool == nil || sw.Pool.Conns != 4 || len(sw.Pool.Points) != 3 {
		t.Fatalf("sweep pool %+v, want the scan's choice 4", sw.Pool)
	}
	// Every search probe ran with the chosen pool, and the search started from its
	// saturated throughput (0.8 × 2,000), not from the calibration estimate (1,500).
	for i, n := range s.probed {
		if n != 4 {
			t.Errorf("probe %d ran with a pool of %d, want 4", i+1, n)
		}
	}
	if sw.CalibratedRate != 2000 || sw.Probes[0].TargetRate != 1600 {
		t.Errorf("estimate %v, first probe %v: want 2,000 and 1,600", sw.CalibratedRate, sw.Probes[0].TargetRate)
	}
	// The knee is the pool's: 0.9 × 2,000 = 1,800, within the 10 % precision.
	if sw.Knee > 1800 || sw.Knee < 1800/1.1 {
		t.Errorf("knee %v, want within 10 %% below 1,800", sw.Knee)
	}
	// The scan's time counts in the probe-minutes.
	if sw.ProbeMinutes < sw.Pool.Seconds/60 {
		t.Errorf("probe-minutes %v do not include the scan's %v s", sw.ProbeMinutes, sw.Pool.Seconds)
	}

	// Resumed with the scan recorded: the same pool, no scan probe.
	r := &poolServer{sat: convoy}
	cfg.PriorPool, cfg.Estimate = sw.Pool, sw.CalibratedRate
	sw2, err := Run(context.Background(), r, cfg, sw.Probes)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.scans) != 0 || !slices.Equal(r.used, []int{4}) || sw2.Pool != sw.Pool || sw2.Knee != sw.Knee {
		t.Errorf("resumed: %d scan probes, pools used %v, knee %v vs %v: want none, [4], the same knee", len(r.scans), r.used, sw2.Knee, sw.Knee)
	}

	// Resumed on a server with less room than the recorded pool: refused before any probe.
	small := &poolServer{sat: convoy}
	cfg.PoolScanMax = 2
	_, err = Run(context.Background(), small, cfg, sw.Probes)
	if err == nil || !strings.Contains(err.Error(), "pool of 4 connections") || !strings.Contains(err.Error(), "room for 2") {
		t.Errorf("resumed with room for 2, the recorded pool 4: err %v, want a refusal naming both", err)
	}
	if len(small.scans)+len(small.used)+len(small.probed) != 0 {
		t.Errorf("resumed with too little room: %d scans, pools used %v, %d probes; want nothing run", len(small.scans), small.used, len(small.probed))
	}
	cfg.PoolScanMax = 0

	// Without PoolScan (--conns N) nothing is scanned and the pool is never set.
	n := &poolServer{sat: convoy, pool: 64}
	cfg.PoolScan, cfg.PriorPool, cfg.Estimate = false, nil, 1500
	sw3, err := Run(context.Background(), n, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.scans) != 0 || len(n.used) != 0 || sw3.Pool != nil || sw3.Probes[0].TargetRate != 1200 {
		t.Errorf("--conns N: %d scans, used %v, pool %+v, first rate %v", len(n.scans), n.used, sw3.Pool, sw3.Probes[0].TargetRate)
	}

	// An interrupted scan stops the sweep as interrupted.
	c := &poolServer{sat: convoy, cancelAt: 2}
	cfg.PoolScan = true
	sw4, err := Run(context.Background(), c, cfg, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted scan: err %v stop %q", err, sw4.Stop)
	}
}

func TestPoolScanLimit(t *testing.T) {
	for _, c := range []struct{ free, want int }{
		{-3, 0}, {0, 0}, {3, 0}, {4, 4}, {7, 4}, {8, 8}, {15, 8}, {16, 16}, {63, 32}, {64, 64}, {1000, PoolScanMax},
	} {
		if got := PoolScanLimit(c.free); got != c.want {
			t.Errorf("PoolScanLimit(%d) = %d, want %d", c.free, got, c.want)
		}
	}
}

// calibratingPoolServer is a poolServer that can also calibrate (a ShortProber): its
// short probes achieve min(rate, sat[pool]) with the pool in use.
type calibratingPoolServer struct {
	poolServer
	calibratedWith []int // the pool in use at each calibration probe
}

func (s *calibratingPoolServer) ProbeShort(ctx context.Context, rate float64, warmup, measured time.Duration) (*result.Probe, error) {
	s.calibratedWith = append(s.calibratedWith, s.pool)
	got := min(rate, s.sat[s.pool])
	secs := measured.Seconds()
	p := &result.Probe{TargetRate: rate, WarmupS: warmup.Seconds(), MeasuredS: secs, Scheduled: int64(rate * secs),
		Committed: int64(got * secs), AchievedRate: got}
	p.Rejected = p.Scheduled - p.Committed
	return p, nil
}

// TestScanStaysWithinTheServersRoom: with PoolScanMax 8 (a server with room for 8-15 more
// connections) the calibration and the scan never ask for more than 8, although the
// throughput still grows with the pool, and the callbacks see every point and the choice.
func TestScanStaysWithinTheServersRoom(t *testing.T) {
	s := &calibratingPoolServer{poolServer: poolServer{sat: map[int]float64{4: 1000, 8: 2000, 16: 3000, 32: 4000, 64: 5000}}}
	var points []result.PoolPoint
	var chosenScans []result.PoolScan
	cfg := Config{PoolScan: true, PoolScanMax: 8, Precision: 0.1, MaxErrorRate: 0.001, Warmup: time.Second,
		Duration: 10 * time.Second, Steady: SteadyRule{Off: true}, MaxProbes: 3,
		OnPoolPoint:  func(pt result.PoolPoint) { points = append(points, pt) },
		OnPoolChosen: func(ps result.PoolScan) { chosenScans = append(chosenScans, ps) }}
	sw, err := Run(context.Background(), s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.calibratedWith) == 0 || slices.Max(s.calibratedWith) > 8 {
		t.Errorf("calibrated with pools %v, want some, none above 8", s.calibratedWith)
	}
	if got := conns(sw.Pool.Points); !slices.Equal(got, []int{4, 8}) || sw.Pool.Conns != 8 {
		t.Errorf("scanned %v, chose %d: want [4 8] and 8", got, sw.Pool.Conns)
	}
	for _, sc := range s.scans {
		if sc.Conns > 8 {
			t.Errorf("a scan probe asked for %d connections, above the room's 8", sc.Conns)
		}
	}
	if !slices.Equal(conns(points), []int{4, 8, 8, 4}) || len(chosenScans) != 1 || chosenScans[0].Conns != 8 {
		t.Errorf("OnPoolPoint saw %v, OnPoolChosen %+v: want [4 8 8 4] and one scan choosing 8", conns(points), chosenScans)
	}
}
