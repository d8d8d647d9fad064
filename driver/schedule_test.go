package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pgceiling/pgceiling/result"
)

// ksDistance is the Kolmogorov–Smirnov distance between the sample and the exponential
// distribution at rate.
func ksDistance(gaps []float64, rate float64) float64 {
	sort.Float64s(gaps)
	exp := distuv.Exponential{Rate: rate}
	n := float64(len(gaps))
	var d float64
	for i, g := range gaps {
		f := exp.CDF(g)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

// arrivals returns the first n intended offsets (seconds) of a probe at rate split into k
// streams, merged in time order as the driver issues them.
func arrivals(rate float64, k int, seed int64, n int) []float64 {
	var ss []*stream
	for i := range k {
		ss = append(ss, newStream(rate/float64(k), seed, i))
	}
	return merged(ss, n)
}

// merged returns the first n intended offsets (seconds) of the streams ss merged in time
// order, as a loop issues the streams it owns.
func merged(ss []*stream, n int) []float64 {
	out := make([]float64, 0, n)
	for len(out) < n {
		best := 0
		for i, s := range ss {
			if s.peek() < ss[best].peek() {
				best = i
			}
		}
		out = append(out, ss[best].advance().Seconds())
	}
	return out
}

func TestScheduleIsPoisson(t *testing.T) {
	const rate, n, runs = 1000.0, 5000, 20
	// Critical KS distance at alpha = 0.01.
	crit := 1.63 / math.Sqrt(n)
	for _, k := range []int{1, 4} {
		var total, span float64
		rejected := 0
		for seed := int64(1); seed <= runs; seed++ {
			at := arrivals(rate, k, seed, n)
			gaps := make([]float64, n)
			prev := 0.0
			for i, a := range at {
				gaps[i] = a - prev
				prev = a
			}
			total += n
			span += at[n-1]
			if d := ksDistance(gaps, rate); d > crit {
				rejected++
				t.Logf("arrivals(%v, %d streams, seed %d): KS distance %.4f > %.4f", rate, k, seed, d, crit)
			}
		}
		if got := total / span; math.Abs(got-rate)/rate > 0.01 {
			t.Errorf("%d streams: mean rate over %d seeded runs = %.2f/s, want %v/s within 1%%", k, runs, got, rate)
		}
		// At alpha = 0.01, 20 runs reject 0 or 1 by chance; more means the gaps are not exponential.
		if rejected > 2 {
			t.Errorf("%d streams: %d of %d seeded runs fail the KS test against Exp(%v)", k, rejected, runs, rate)
		}
	}
}

// gapsOf turns intended offsets into the gaps between them (the first from 0).
func gapsOf(at []float64) []float64 {
	gaps := make([]float64, len(at))
	prev := 0.0
	for i, a := range at {
		gaps[i] = a - prev
		prev = a
	}
	return gaps
}

// k loops split the probe's schedule: every stream belongs to exactly one loop, each loop's
// own streams merged are a Poisson stream of rate/k (exponential gaps at rate/k), and all
// the loops' arrivals merged are the probe's Poisson stream at rate.
func TestLoopsSplitTheSchedule(t *testing.T) {
	const rate, n, runs = 12000.0, 4000, 20 // 3 streams by default: 4 for 2 loops, 3 for 3
	crit := 1.63 / math.Sqrt(n)             // KS at alpha = 0.01
	for _, k := range []int{2, 3} {
		cfg := Config{Rate: rate, Duration: time.Second, Threads: k}.withDefaults()
		if cfg.loops() != k || cfg.Streams%k != 0 {
			t.Fatalf("%d loops: loops() %d, streams %d: want k loops and a multiple of k streams", k, cfg.loops(), cfg.Streams)
		}
		owner := make([]int, cfg.Streams)
		for i := range owner {
			owner[i] = -1
		}
		for i := range k {
			own := loopStreams(i, k, cfg.Streams)
			if len(own) != cfg.Streams/k {
				t.Errorf("%d loops: loop %d owns %d of %d streams, want an equal share", k, i, len(own), cfg.Streams)
			}
			for _, j := range own {
				if owner[j] >= 0 {
					t.Errorf("%d loops: stream %d owned by loops %d and %d", k, j, owner[j], i)
				}
				owner[j] = i
			}
		}
		for j, o := range owner {
			if o < 0 {
				t.Errorf("%d loops: stream %d owned by no loop", k, j)
			}
		}
		bad := make([]int, k+1) // per loop, and (index k) all merged
		var spans [2]float64    // loop 0's and all's, for the rates
		for seed := int64(1); seed <= runs; seed++ {
			var all []*stream
			for i := range k {
				var ss []*stream
				for _, j := range loopStreams(i, k, cfg.Streams) {
					ss = append(ss, newStream(rate/float64(cfg.Streams), seed, j))
				}
				at := merged(ss, n)
				if d := ksDistance(gapsOf(at), rate/float64(k)); d > crit {
					bad[i]++
				}
				if i == 0 {
					spans[0] += at[n-1]
				}
			}
			for j := range cfg.Streams {
				all = append(all, newStream(rate/float64(cfg.Streams), seed, j))
			}
			at := merged(all, n)
			if d := ksDistance(gapsOf(at), rate); d > crit {
				bad[k]++
			}
			spans[1] += at[n-1]
		}
		for i, b := range bad {
			if b > 2 { // at alpha = 0.01, 20 runs reject 0 or 1 by chance
				t.Errorf("%d loops, %s: %d of %d seeded runs fail the KS test", k, map[bool]string{true: "all merged", false: fmt.Sprintf("loop %d", i)}[i == k], b, runs)
			}
		}
		if got := runs * n / spans[0]; math.Abs(got-rate/float64(k))/(rate/float64(k)) > 0.01 {
			t.Errorf("%d loops: loop 0 issues %.1f/s, want %v/s within 1%%", k, got, rate/float64(k))
		}
		if got := runs * n / spans[1]; math.Abs(got-rate)/rate > 0.01 {
			t.Errorf("%d loops: all loops issue %.1f/s, want %v/s within 1%%", k, got, rate)
		}
	}
}

func TestKSDetectsNonExponential(t *testing.T) {
	// The test above must be able to fail: evenly spaced gaps are far from exponential.
	gaps := make([]float64, 5000)
	for i := range gaps {
		gaps[i] = 0.001
	}
	if d := ksDistance(gaps, 1000); d < 1.63/math.Sqrt(5000) {
		t.Errorf("ksDistance(constant gaps) = %v, want a rejection", d)
	}
}

func TestScheduleNeverDrifts(t *testing.T) {
	const rate, seed = 2500.0, 42
	s := newStream(rate, seed, 3)
	// Recompute the gaps independently from the same seed: the n-th intended time must be
	// exactly the sum of the first n gaps, however the scheduler is timed.
	rng := rand.New(rand.NewPCG(uint64(seed), 3+0x9e3779b97f4a7c15))
	var sum time.Duration
	for i := range 200_000 {
		sum += time.Duration(math.Round(rng.ExpFloat64() * 1e9 / rate))
		if got := s.advance(); got != sum {
			t.Fatalf("arrival %d: intended offset %v, want the sum of gaps %v", i, got, sum)
		}
	}
	if d := sum.Seconds() - 200_000/rate; math.Abs(d) > 0.01*200_000/rate {
		t.Errorf("200,000 arrivals at %v/s span %v, want about %vs", rate, sum, 200_000/rate)
	}
}

func TestSeedsDiffer(t *testing.T) {
	a, b := arrivals(100, 1, 1, 10), arrivals(100, 1, 2, 10)
	c := arrivals(100, 1, 1, 10)
	if fmt.Sprint(a) == fmt.Sprint(b) || fmt.Sprint(a) != fmt.Sprint(c) {
		t.Errorf("arrivals by seed: seed 1 %v, seed 2 %v, seed 1 again %v: want reproducible and seed-dependent", a, b, c)
	}
}

func TestAutoStreams(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{{1, 1}, {5000, 1}, {5001, 2}, {20000, 4}, {1e7, 8}} {
		if got := autoStreams(c.rate); got != c.want {
			t.Errorf("autoStreams(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		err  error
		want result.Class
	}{
		{pg("57014"), result.StatementTimeout},
		{pg("55P03"), result.LockTimeout},
		{pg("40P01"), result.Deadlock},
		{pg("40001"), result.Serialization},
		{pg("25P03"), result.IdleInTxTimeout},
		{pg("08006"), result.Connection},
		{pg("08P01"), result.Connection},
		{pg("57P01"), result.Connection},
		{pg("57P02"), result.Connection},
		{pg("57P03"), result.Connection},
		{pg("53300"), result.TooManyConnections},
		{pg("23505"), result.Other},
		{pg("22012"), result.Other},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), result.Connection},
		{io.EOF, result.Connection},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, result.Connection},
		{errors.New("something else"), result.Other},
		{context.Canceled, result.Other},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
