package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// now is the day every golden plan counts from.
var now = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestGolden plans recorded results files (the report package's fixtures and a small
// synthetic transfer search whose bottleneck is the hot wallet's row lock) and compares
// the text and JSON with the golden files (go test ./plan -update rewrites them).
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		o          Options
	}{
		{"search-ahead", "../report/testdata/search.json", Options{Current: 250, PeakFactor: 2, Growth: 0.4}},
		{"search-past", "../report/testdata/search.json", Options{Current: 800, PeakFactor: 3, Growth: 0.4, Workloads: []string{"oltp"}}},
		{"insert-keyless", "../report/testdata/fsync-off.json", Options{Current: 1000, PeakFactor: 3, Growth: 0.25}},
		{"transfer-lock", "testdata/transfer-lock.json", Options{Current: 100, PeakFactor: 3, Growth: 0.4}},
		{"transfer-lock-nogrowth", "testdata/transfer-lock.json", Options{Current: 100, PeakFactor: 3}},
		{"shapes", "testdata/shapes.json", Options{Current: 1000, PeakFactor: 3, Growth: 0.4}},
		{"copy", "testdata/shapes.json", Options{Current: 20000, PeakFactor: 3, Growth: 0.4, Workloads: []string{"copy"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := result.Read(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			tc.o.Now, tc.o.Source = now, filepath.Base(tc.file)
			p, err := Make(f, tc.o)
			if err != nil {
				t.Fatalf("Make(%s, %+v): %v", tc.file, tc.o, err)
			}
			var txt bytes.Buffer
			if err := WriteText(&txt, p, 100); err != nil {
				t.Fatal(err)
			}
			for i, l := range strings.Split(txt.String(), "\n") {
				if n := len([]rune(l)); n > 100 {
					t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
				}
			}
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "testdata/"+tc.name+".golden.txt", txt.Bytes())
			golden(t, "testdata/"+tc.name+".golden.json", append(js, '\n'))
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plan -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./plan -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestCopyUnit: the copy workload's arrivals are rows, so its plan speaks rows/s
// everywhere (knee, peak, headroom, levers, bottleneck, sharding); the other workloads
// of the same file keep tx/s, and a plan of both says what each counts.
func TestCopyUnit(t *testing.T) {
	f, err := result.Read("testdata/shapes.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		workloads []string
		want      []string
		not       []string
	}{
		{[]string{"copy"}, []string{"today: 20,000 rows/s, peak 60,000 rows/s", "copy (synchronous_commit=on): knee 183,540 rows/s",
			"today's peak of 60,000 rows/s", "at 191,520 rows/s:", "S × 183,540 rows/s", "shards → at most rows/s:"}, []string{"tx/s"}},
		{[]string{"insert"}, []string{"today: 20,000 tx/s", "knee 18,217 tx/s"}, []string{"rows/s"}},
		{[]string{"insert", "copy"}, []string{"today: 20,000/s, peak 60,000/s", "rates are rows/s for copy", "knee 18,217 tx/s", "knee 183,540 rows/s"}, nil},
	} {
		p, err := Make(f, Options{Current: 20000, PeakFactor: 3, Growth: 0.4, Workloads: tc.workloads, Now: now, Source: "shapes.json"})
		if err != nil {
			t.Fatalf("Make(shapes.json, --workload %v): %v", tc.workloads, err)
		}
		var b bytes.Buffer
		if err := WriteText(&b, p, 1000); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("plan --workload %v lacks %q:\n%s", tc.workloads, w, b.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("plan --workload %v says %q:\n%s", tc.workloads, w, b.String())
			}
		}
		for _, wl := range p.Workloads {
			if wl.Unit != result.RateUnit(wl.Workload) {
				t.Errorf("workload %s: unit %q, want %q", wl.Workload, wl.Unit, result.RateUnit(wl.Workload))
			}
		}
	}
}

// TestNoKnees: a run's results file has nothing to plan against.
func TestNoKnees(t *testing.T) {
	f, err := result.Read("../result/testdata/real-run.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Make(f, Options{Current: 100, Growth: 0.1, Now: now, Source: "real-run.json"})
	if !errors.Is(err, ErrNoKnees) {
		t.Fatalf("Make(real-run.json) error = %v, want ErrNoKnees", err)
	}
}

// TestUnknownWorkload names the workloads the file has.
func TestUnknownWorkload(t *testing.T) {
	f, err := result.Read("testdata/transfer-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Make(f, Options{Current: 100, Growth: 0.1, Now: now, Source: "x.json", Workloads: []string{"oltp"}})
	if err == nil || !strings.Contains(err.Error(), `no sweep of workload "oltp" (it has: transfer)`) {
		t.Fatalf("Make(--workload oltp) error = %v", err)
	}
}

// TestReach checks the compound-growth arithmetic: 1.4^t = knee/peak.
func TestReach(t *testing.T) {
	for _, tc := range []struct {
		peak   float64
		knee   Range
		growth float64
		status string
		years  float64
	}{
		{100, Range{Value: 196, Lo: 196, Hi: 196}, 0.4, ReachAhead, 2},     // 1.4^2 = 1.96
		{100, Range{Value: 140, Lo: 130, Hi: 150}, 0.4, ReachAhead, 1},     // 1.4^1
		{100, Range{Value: 100, Lo: 90, Hi: 110}, 0.4, ReachPartlyPast, 0}, // at the knee
		{200, Range{Value: 140, Lo: 130, Hi: 150}, 0.4, ReachPast, 0},
		{100, Range{Value: 140, Lo: 130, Hi: 150}, 0, ReachNever, 0},
		{100, Range{Value: 140, Lo: 130, Hi: 150}, -0.1, ReachNever, 0},
	} {
		r := reach(tc.peak, tc.knee, tc.growth, now)
		if r.Status != tc.status || math.Abs(r.Years-tc.years) > 1e-9 {
			t.Errorf("reach(%v, %+v, %v) = %+v, want status %s, %v years", tc.peak, tc.knee, tc.growth, r, tc.status, tc.years)
		}
		if r.Status == ReachAhead && !(r.YearsLo <= r.Years && r.Years <= r.YearsHi) {
			t.Errorf("reach(%v, %+v, %v): years %v not within %v-%v", tc.peak, tc.knee, tc.growth, r.Years, r.YearsLo, r.YearsHi)
		}
	}
	if r := reach(100, Range{Value: 196, Lo: 196, Hi: 196}, 0.4, now); r.Date != "2028-12" {
		t.Errorf("two years after %s: %s, want 2028-12", now.Format("2006-01-02"), r.Date)
	}
}

// TestZipfShare: with Zipf 1.0 the hottest of W keys gets 1/H(W) of the picks (about
// 10 % of 10,000); uniform gives 1/W.
func TestZipfShare(t *testing.T) {
	for _, tc := range []struct {
		n    int
		s    float64
		want float64
	}{
		{1, 1, 1}, {2, 1, 2.0 / 3}, {4, 1, 12.0 / 25}, {10000, 1, 1 / 9.787606036044348}, {100, 0, 0.01}, {2, 2, 0.8},
	} {
		if got := ZipfShare(tc.n, tc.s); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ZipfShare(%d, %v) = %v, want %v", tc.n, tc.s, got, tc.want)
		}
	}
}

// TestShardingBounds checks the bound arithmetic on constructed sweeps: a WAL-bound
// oltp is bounded by a whole shard for the hottest wallet (knee / share); a lock-bound
// transfer by the knee itself.
func TestShardingBounds(t *testing.T) {
	h := 1 / (1 + 1.0/2 + 1.0/3 + 1.0/4 + 1.0/5 + 1.0/6 + 1.0/7 + 1.0/8 + 1.0/9 + 1.0/10) // Zipf 1 over 10 keys
	mk := func(workload, bn string, svc float64) *result.Sweep {
		sk := result.Skew{Exponent: 1, Keys: 10, Picks: 100, HottestShare: 0.5} // few picks: the law's share
		return &result.Sweep{Workload: workload, SyncCommit: result.SyncOn, Knee: 1000, Bottleneck: bn, BottleneckRate: 1100,
			Probes: []result.Probe{{TargetRate: 1000, Verdict: result.Pass, Conns: 50, Skew: sk, Service: result.Latency{P50: svc}},
				{TargetRate: 1100, Verdict: result.Fail, Conns: 50, Skew: sk}}}
	}
	for _, tc := range []struct {
		name    string
		s       *result.Sweep
		bound   float64
		shards  int
		txShare float64
	}{
		{"oltp WAL", mk("oltp", "WAL flush: IO:WALSync 60 % of active samples", 2), 1000 / h, 3, h},
		// transfer touches two wallets, so 2h of its transactions touch the hottest; its
		// lock held 1.25 ms caps that wallet at 800/s, i.e. 800/2h in all, below the
		// shard's 1000/2h.
		{"transfer WAL", mk("transfer", "WAL flush: IO:WALSync 60 % of active samples", 1.25), 800 / (2 * h), 2, 2 * h},
		// A lock cap below the knee it held is wrong: the knee is the bound then.
		{"transfer WAL slow", mk("transfer", "WAL flush: IO:WALSync 60 % of active samples", 5), 1000, 1, 2 * h},
		{"transfer lock", mk("transfer", "lock contention: Lock:transactionid 50 % of active samples", 1.25), 1000, 1, 2 * h},
	} {
		w := &Workload{Knee: kneeRange(tc.s)}
		w.Bottleneck, w.Limit = bottleneck(tc.s)
		sh := sharding(tc.s, w)
		if math.Abs(sh.Bound.Value-tc.bound) > 1e-6 || sh.MaxUsefulShards != tc.shards || math.Abs(sh.TxShare-tc.txShare) > 1e-12 {
			t.Errorf("%s: bound %v, useful shards %d, tx share %v; want %v, %d, %v (%s)", tc.name, sh.Bound.Value,
				sh.MaxUsefulShards, sh.TxShare, tc.bound, tc.shards, tc.txShare, sh.Text)
		}
		last := sh.Ceilings[len(sh.Ceilings)-1]
		if last.Shards != sh.MaxUsefulShards || last.TxS > sh.Bound.Value+1e-9 {
			t.Errorf("%s: last ceiling %+v, want %d shards at most %v", tc.name, last, sh.MaxUsefulShards, sh.Bound.Value)
		}
	}
}

// TestConnsLever: probes at several pool sizes give the highest passing rate of each.
func TestConnsLever(t *testing.T) {
	s := &result.Sweep{Probes: []result.Probe{
		{TargetRate: 500, Conns: 20, Verdict: result.Pass}, {TargetRate: 700, Conns: 20, Verdict: result.Fail},
		{TargetRate: 900, Conns: 50, Verdict: result.Pass}, {TargetRate: 600, Conns: 50, Verdict: result.Pass}}}
	l := connsLever(s, "tx/s")
	if want := "connections: highest passing rate by pool size: 20 → 500 tx/s, 50 → 900 tx/s"; l.Text != want {
		t.Errorf("connsLever = %q, want %q", l.Text, want)
	}
}

// TestConnsLeverFromThePoolScan: a sweep whose pool the scan chose says what each pool
// did with every connection busy, and how much less the largest gets.
func TestConnsLeverFromThePoolScan(t *testing.T) {
	s := &result.Sweep{Probes: []result.Probe{{TargetRate: 1800, Conns: 8, Verdict: result.Pass}},
		Pool: &result.PoolScan{Conns: 8, Best: 8, Within: 0.9, Points: []result.PoolPoint{
			{Conns: 4, Achieved: 2157}, {Conns: 8, Achieved: 2566}, {Conns: 16, Achieved: 2075}, {Conns: 32, Achieved: 1606}}}}
	want := "connections: every probe used 8, chosen by the pool scan (--conns auto); throughput with every connection busy by pool size: " +
		"4 → 2,157 tx/s, 8 → 2,566 tx/s, 16 → 2,075 tx/s, 32 → 1,606 tx/s; a pool of 32 gets 37 % less: " +
		"an application with a larger pool (or without a pooler in front) sees a lower ceiling"
	if l := connsLever(s, "tx/s"); l.Text != want {
		t.Errorf("connsLever =\n%q, want\n%q", l.Text, want)
	}
	// A scan whose pool is not the probes' (a hand-edited file) is not used.
	s.Pool.Conns = 16
	if l := connsLever(s, "tx/s"); !strings.Contains(l.Text, "not varied") {
		t.Errorf("connsLever with a mismatched scan = %q", l.Text)
	}
}

// TestLimitOf classifies observe's bottleneck lines.
func TestLimitOf(t *testing.T) {
	for line, want := range map[string]Limit{
		"above the knee, at 600 tx/s: lock contention: Lock:transactionid 41 % of active samples": LimitHotLock,
		"lock contention: 50 % of active samples (Lock:tuple 30 %, Lock:transactionid 20 %)":      LimitHotLock,
		"lock contention: Lock:relation 60 % of active samples":                                   LimitUnattributed,
		"above the knee, at 191,520 rows/s: WAL flush: 70 % of active samples":                    LimitWALIO,
		"WAL flush: IO:WALSync 62 % of active samples, 0.33 syncs per commit":                     LimitWALIO,
		"at the knee, 1,250 tx/s: server CPU-bound: 95 % of its cores":                            LimitCPU,
		"client: driver-limited": LimitClient,
		"no single bottleneck (CPU 30 %, IO:WALSync 25 %, Lock:tuple 20 %)": LimitUnattributed,
	} {
		if got := limitOf(line); got != want {
			t.Errorf("limitOf(%q) = %s, want %s", line, got, want)
		}
	}
}

// TestClaimFile: a claim's results file is planned from its --find-knee short searches,
// not from its single probes at the claimed rate.
func TestClaimFile(t *testing.T) {
	s, err := result.Read("testdata/transfer-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	knee := s.Sweeps[0]
	f := &result.File{Command: "claim", Sweeps: []result.Sweep{{Workload: "transfer", SyncCommit: result.SyncOn,
		Probes: []result.Probe{{TargetRate: 100000, Verdict: result.Fail}}}},
		Claim: &result.Claim{Shapes: []result.ClaimShape{{Workload: "transfer", KneeSweep: &knee}}}}
	p, err := Make(f, Options{Current: 100, Growth: 0.4, Now: now, Source: "claim.json"})
	if err != nil || len(p.Workloads) != 1 || p.Workloads[0].Knee.Value != 400 {
		t.Fatalf("Make(claim file) = %+v, %v; want transfer's knee 400 from the short search", p, err)
	}
	f.Claim.Shapes[0].KneeSweep = nil
	if _, err := Make(f, Options{Current: 100, Growth: 0.4, Now: now, Source: "claim.json"}); !errors.Is(err, ErrNoKnees) {
		t.Errorf("Make(claim file without --find-knee) error = %v, want ErrNoKnees", err)
	}
}
