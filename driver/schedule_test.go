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

// splitRun is a probe's schedule across a mid-probe split, as an auto loop engine issues
// it: one loop's per streams at rate until the instant at, when a second loop with per
// fresh streams joins and every stream runs at rate/(2*per). The first loop applies the
// change only after issuing its arrivals before at-late (a loop that lags behind its
// schedule; late 0: one on time). It returns each stream's intended offsets before
// horizon: the first loop's streams, then the new loop's.
func splitRun(rate float64, per int, seed int64, at, late, horizon time.Duration) [][]time.Duration {
	out := make([][]time.Duration, 2*per)
	var old []*stream
	for j := range per {
		old = append(old, newStream(rate/float64(per), seed, j))
	}
	issue := func(j int, s *stream, before time.Duration) {
		for s.peek() < before {
			out[j] = append(out[j], s.advance())
		}
	}
	for j, s := range old {
		issue(j, s, at-late)
		s.resplit(rateChange{at: at, meanNs: 1e9 * float64(2*per) / rate})
		issue(j, s, horizon)
	}
	for j := range per {
		issue(per+j, newStreamAt(rate/float64(2*per), seed, per+j, at), horizon)
	}
	return out
}

// mergedOffsets is every stream's offsets in time order, in seconds.
func mergedOffsets(streams [][]time.Duration) []float64 {
	var all []float64
	for _, s := range streams {
		for _, at := range s {
			all = append(all, at.Seconds())
		}
	}
	sort.Float64s(all)
	return all
}

// A loop added mid-probe changes no intended start before the split, moves each stream's
// pending arrival across it instead of dropping or repeating it, and continues each
// stream from the same draws: nothing is duplicated or skipped, however late the loop
// applies the change.
func TestSplitNeitherDuplicatesNorSkips(t *testing.T) {
	const rate, per = 3000.0, 2
	const at, horizon = 1500 * time.Millisecond, 3 * time.Second
	for _, late := range []time.Duration{0, 700 * time.Microsecond, 20 * time.Millisecond} {
		for seed := int64(1); seed <= 5; seed++ {
			got := splitRun(rate, per, seed, at, late, horizon)
			for j := range per {
				ref := newStream(rate/per, seed, j) // the same stream, never split
				var before []time.Duration
				for ref.peek() < at {
					before = append(before, ref.advance())
				}
				s := got[j]
				if len(s) < len(before)+2 || fmt.Sprint(s[:len(before)]) != fmt.Sprint(before) {
					t.Fatalf("late %v, seed %d, stream %d: arrivals before the split %v..., want the unsplit stream's %d", late, seed, j, s[:min(len(s), 3)], len(before))
				}
				// The pending arrival is moved: its wait past the split doubles (the stream's
				// rate halves), and each later gap is the unsplit stream's next draw, doubled.
				refAt, prev := ref.advance(), s[len(before)]
				if want := at + time.Duration(math.Round(float64(refAt-at)*2)); prev < want-1 || prev > want+1 {
					t.Fatalf("late %v, seed %d, stream %d: first arrival after the split %v, want the pending %v moved to %v", late, seed, j, prev, refAt, want)
				}
				for i, x := range s[len(before)+1:] {
					refNext := ref.advance()
					if d := (x - prev) - 2*(refNext-refAt); x <= prev || d < -2 || d > 2 {
						t.Fatalf("late %v, seed %d, stream %d: gap %d after the split %v, want twice the unsplit gap %v", late, seed, j, i, x-prev, refNext-refAt)
					}
					prev, refAt = x, refNext
				}
			}
			for j := per; j < 2*per; j++ {
				if len(got[j]) == 0 || got[j][0] < at || !sort.SliceIsSorted(got[j], func(a, b int) bool { return got[j][a] < got[j][b] }) {
					t.Fatalf("late %v, seed %d: new stream %d starts %v: want increasing offsets from the split %v", late, seed, j, got[j][:min(3, len(got[j]))], at)
				}
			}
		}
	}
}

// Two changes reach a loop together (it lagged through both): they apply in order, each
// at its own instant, and the stream's arrivals between them run at the middle rate.
func TestSplitStackedChanges(t *testing.T) {
	const meanNs = 1e6 // 1,000/s
	s, ref := newStream(1e9/meanNs, 9, 0), newStream(1e9/meanNs, 9, 0)
	t1, t2 := 5*time.Millisecond, 9*time.Millisecond
	s.resplit(rateChange{at: t1, meanNs: 2 * meanNs})
	s.resplit(rateChange{at: t2, meanNs: 3 * meanNs})
	// The same draws by hand: gaps scaled by 1 before t1, 2 between t1 and t2, 3 after.
	scale := func(x time.Duration) time.Duration { // the unsplit offset x on the split clock
		y := float64(x)
		if y > float64(t1) {
			y = float64(t1) + 2*(y-float64(t1))
		}
		if y > float64(t2) {
			y = float64(t2) + 1.5*(y-float64(t2))
		}
		return time.Duration(y)
	}
	for i := range 200 {
		got, want := s.advance(), scale(ref.advance())
		if d, tol := got-want, time.Duration(5+2*i); d < -tol || d > tol { // each gap is rounded to the nanosecond
			t.Fatalf("arrival %d at %v, want %v (changes at %v to 500/s and %v to 333/s)", i, got, want, t1, t2)
		}
	}
	if len(s.changes) != 0 {
		t.Errorf("%d changes left pending after the stream passed both", len(s.changes))
	}
}

// Across a split the probe's arrivals stay a Poisson stream at its rate: counts per
// second are Poisson(rate) before, across and after it (a dispersion test), the wait from
// the split to the next arrival is exponential at the rate (the merged stream forgets the
// split: KS), and the merged gaps are exponential at the rate (KS, per seeded run).
func TestSplitKeepsPoisson(t *testing.T) {
	const rate, per, runs = 2000.0, 2, 200
	const horizon = 4 * time.Second
	var counts [4][]float64 // per second, per run
	var residual []float64
	crit := func(n int) float64 { return 1.63 / math.Sqrt(float64(n)) } // KS at alpha = 0.01
	badGaps := 0
	for seed := int64(1); seed <= runs; seed++ {
		at := 1500*time.Millisecond + time.Duration(seed)*time.Millisecond // mid-second, varying
		late := time.Duration(seed%3) * 400 * time.Microsecond
		all := mergedOffsets(splitRun(rate, per, seed, at, late, horizon))
		var c [4]float64
		for _, x := range all {
			c[int(x)]++
		}
		for i := range c {
			counts[i] = append(counts[i], c[i])
		}
		i := sort.SearchFloat64s(all, at.Seconds())
		residual = append(residual, all[i]-at.Seconds())
		if d := ksDistance(gapsOf(all), rate); d > crit(len(all)) {
			badGaps++
		}
	}
	// Dispersion: sum of (x - rate)^2 / rate over n independent Poisson(rate) counts is
	// about chi-square with n degrees of freedom.
	for sec, cs := range counts {
		var disp, sum float64
		for _, x := range cs {
			disp += (x - rate) * (x - rate) / rate
			sum += x
		}
		p := distuv.ChiSquared{K: float64(len(cs))}.CDF(disp)
		if p < 0.001 || p > 0.999 {
			t.Errorf("second %d (split at 1.5 s + seed ms): counts' dispersion %.1f on %d runs (chi-square p %.4f): not Poisson(%v)", sec, disp, len(cs), p, rate)
		}
		if mean := sum / float64(len(cs)); math.Abs(mean-rate) > 4*math.Sqrt(rate/float64(len(cs))) {
			t.Errorf("second %d: mean count %.1f over %d runs, want %v within 4 sd", sec, mean, len(cs), rate)
		}
	}
	if d := ksDistance(residual, rate); d > crit(len(residual)) {
		t.Errorf("wait from the split to the next arrival: KS distance %.4f > %.4f from Exp(%v)", d, crit(len(residual)), rate)
	}
	if badGaps > 6 { // at alpha = 0.01, 200 runs reject about 2; more than 6 has p < 0.005
		t.Errorf("%d of %d seeded runs' merged gaps fail the KS test against Exp(%v)", badGaps, runs, rate)
	}
}

// The tests above must be able to fail: a split that restarts every stream at the split
// (dropping the pending arrivals' waits) keeps the rate but makes the wait after the
// split shorter than exponential; one that forgets to slow the old streams doubles the
// rate after it.
func TestSplitTestsDetectWrongSplits(t *testing.T) {
	const rate, per, runs = 2000.0, 2, 200
	at := 1500 * time.Millisecond
	var fast []float64
	var residual []float64
	for seed := int64(1); seed <= runs; seed++ {
		got := splitRun(rate, per, seed, at, 0, 2*time.Second)
		// Wrong: the old streams keep their rate (no resplit), the new ones add theirs.
		var n float64
		for j := range per {
			s := newStream(rate/per, seed, j)
			for s.peek() < 2*time.Second {
				if s.advance() >= at {
					n++
				}
			}
			for _, x := range got[per+j] {
				if x < 2*time.Second {
					n++
				}
			}
		}
		fast = append(fast, n/(2*time.Second-at).Seconds())
		// Wrong: the pending arrival is replaced by a fresh one drawn at the old stream's
		// rate from the split: the wait after the split is the min of 2*per exponentials,
		// per of them at twice the rate.
		first := math.Inf(1)
		for j := range 2 * per {
			s := newStream(rate/per, seed+1000, j)
			if j >= per {
				s = newStream(rate/(2*per), seed+1000, j)
			}
			first = min(first, s.peek().Seconds())
		}
		residual = append(residual, first)
	}
	var sum float64
	for _, r := range fast {
		sum += r
	}
	if mean := sum / runs; math.Abs(mean-rate) < 0.2*rate {
		t.Errorf("no resplit: rate after the split %.0f/s, want the rate test to see about 1.5x %v", mean, rate)
	}
	if d := ksDistance(residual, rate); d < 1.63/math.Sqrt(runs) {
		t.Errorf("fresh draws at the old rate: KS distance %.4f, want a rejection", d)
	}
}

// TestRampIsAPoissonProcessOfRisingRate checks the warm-up's ramp: the arrivals before the
// ramp's end come at the linearly rising rate (counts per bin against the cumulative
// intensity rate·t²/2R), and every arrival after it is exactly the unramped stream's,
// shifted by R/2, so the measured window is the same Poisson stream at the full rate.
func TestRampIsAPoissonProcessOfRisingRate(t *testing.T) {
	const rate, k, seeds = 2000.0, 4, 200
	const ramp = 2 * time.Second
	R := ramp.Seconds()
	edges := []float64{0, 0.5, 1, 1.5, 2, 3}
	count := make([]float64, len(edges)-1)
	for seed := int64(1); seed <= seeds; seed++ {
		for i := range k {
			s := newStream(rate/k, seed, i).withRamp(ramp)
			ref := newStream(rate/k, seed, i)
			for {
				at := s.advance().Seconds()
				u := ref.advance()
				if at >= edges[len(edges)-1] {
					break
				}
				if u >= ramp/2 && at != (u+ramp/2).Seconds() {
					t.Fatalf("seed %d stream %d: arrival at %vs after the ramp, want the unramped %v + R/2", seed, i, at, u)
				}
				for b := range count {
					if at >= edges[b] && at < edges[b+1] {
						count[b]++
					}
				}
			}
		}
	}
	lambda := func(t float64) float64 { // cumulative intensity
		if t < R {
			return rate * t * t / (2 * R)
		}
		return rate * (t - R/2)
	}
	for b := range count {
		want := seeds * (lambda(edges[b+1]) - lambda(edges[b]))
		if d := math.Abs(count[b] - want); d > 4*math.Sqrt(want) {
			t.Errorf("arrivals in [%v, %v) s: %v over %d seeds, want %.0f ± %.0f (a rate rising linearly to %v/s over %v)",
				edges[b], edges[b+1], count[b], seeds, want, 4*math.Sqrt(want), rate, ramp)
		}
	}
	if count[0] >= count[3] {
		t.Errorf("the ramp's first half second has %v arrivals and its last %v: the rate does not rise", count[0], count[3])
	}
}

// TestRampAcrossARateChange: a rate change inside the ramp (an auto loop engine's split)
// keeps the ramp's shape: from the change on, the intensity is the new rate times t/R.
func TestRampAcrossARateChange(t *testing.T) {
	const rate, seeds = 1000.0, 400
	const ramp = 2 * time.Second
	R, t0, end := ramp.Seconds(), 1.0, 1.8
	var before, after float64
	for seed := int64(1); seed <= seeds; seed++ {
		s := newStream(rate, seed, 0).withRamp(ramp)
		ref, same := newStream(rate, seed, 0).withRamp(ramp), newStream(rate, seed, 0).withRamp(ramp)
		same.resplit(rateChange{at: time.Duration(t0 * 1e9), meanNs: 1e9 / rate}) // no change of rate
		for {
			a, b := ref.advance(), same.advance()
			if a != b {
				t.Fatalf("seed %d: a change to the same rate at %vs moved an arrival: %v, want %v", seed, t0, b, a)
			}
			if a.Seconds() >= end {
				break
			}
		}
		doubled := false
		for {
			if !doubled && s.peek().Seconds() >= t0 {
				s.resplit(rateChange{at: time.Duration(t0 * 1e9), meanNs: 1e9 / (2 * rate)})
				doubled = true
			}
			at := s.advance().Seconds()
			if at >= end {
				break
			}
			if at < t0 {
				before++
			} else {
				after++
			}
		}
	}
	wantBefore := seeds * rate * t0 * t0 / (2 * R)
	wantAfter := seeds * 2 * rate * (end*end - t0*t0) / (2 * R)
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"before the change", before, wantBefore}, {"after it, at twice the rate", after, wantAfter}} {
		if d := math.Abs(c.got - c.want); d > 4*math.Sqrt(c.want) {
			t.Errorf("arrivals %s: %v, want %.0f ± %.0f", c.what, c.got, c.want, 4*math.Sqrt(c.want))
		}
	}
}
