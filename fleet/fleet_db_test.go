package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/search"
	"github.com/pgceiling/pgceiling/workload"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// testServer is a fresh database with a small pgceiling schema; it returns the DSN.
func testServer(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	spec := schema.Spec{Wallets: 100, Rows: 2_000, Months: 1, Zipf: 1, Seed: 1}
	if _, err := schema.Init(context.Background(), cfg, spec, schema.InitOptions{Workers: 1}); err != nil {
		t.Fatalf("init the schema: %v", err)
	}
	return dsn
}

var testSpec = Spec{Workload: "insert", Params: workload.Params{SyncCommit: true}, Session: driver.DefaultSession(),
	ExecMode: pgx.QueryExecModeCacheStatement}

func testOptions(t *testing.T, who string) Options {
	return Options{Name: "t", Timeout: 2 * time.Second, JoinTimeout: 30 * time.Second, Lead: time.Second,
		Say: func(f string, a ...any) { t.Logf(who+": "+f, a...) }}
}

// leaderPool is the leader's own driver pool and workload.
func leaderPool(t *testing.T, dsn string) (*pgxpool.Pool, workload.Workload) {
	t.Helper()
	pool, err := driver.NewPool(context.Background(), dsn, testSpec.Session, 4, testSpec.ExecMode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	w, err := workload.New(testSpec.Workload, testSpec.Params)
	if err != nil {
		t.Fatal(err)
	}
	return pool, w
}

// follow runs a follower in a goroutine; its error arrives on the channel.
func follow(ctx context.Context, dsn string, opt Options) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dsn, 0, opt) }()
	return done
}

// TestTwoDrivers: a leader and a follower (the follower's code in a goroutine, through
// the control tables of the real server) offer half the rate each; the merged probe's
// books balance, its histograms hold both drivers' commits, the fleet's row check holds,
// and the follower exits when the leader ends the run.
func TestTwoDrivers(t *testing.T) {
	dsn := testServer(t)
	ctx := context.Background()
	done := follow(ctx, dsn, testOptions(t, "follower"))
	l, err := Lead(ctx, dsn, 2, testOptions(t, "leader"))
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	l.SetSpec(testSpec)
	pool, w := leaderPool(t, dsn)
	p, err := l.Run(ctx, pool, w, driver.Config{Rate: 200, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, Conns: 4, Seed: 3})
	l.Close("test over")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the follower: %v", err)
	}
	if p.Fleet == nil || len(p.Fleet.Parts) != 2 || p.Error != "" {
		t.Fatalf("fleet %+v, error %q", p.Fleet, p.Error)
	}
	var sched, comm int64
	for _, pt := range p.Fleet.Parts {
		if pt.Committed == 0 || pt.TargetRate != 100 || pt.Error != "" {
			t.Errorf("part %+v", pt)
		}
		sched, comm = sched+pt.Scheduled, comm+pt.Committed
	}
	if p.Scheduled != sched || p.Committed != comm || p.Scheduled != p.Committed+p.Failed.Total()+p.Rejected {
		t.Errorf("merged books %d = %d + %d + %d; parts scheduled %d committed %d", p.Scheduled, p.Committed,
			p.Failed.Total(), p.Rejected, sched, comm)
	}
	if p.Latency.Count != p.Committed {
		t.Errorf("merged latency holds %d commits, the books %d", p.Latency.Count, p.Committed)
	}
	if !p.Checks.RowsOK || len(p.Checks.Problems) > 0 {
		t.Errorf("the fleet's row check: %+v", p.Checks)
	}
	if abs(p.Fleet.Parts[1].LateMs) > 500 {
		t.Errorf("the follower started %v ms off the planned instant", p.Fleet.Parts[1].LateMs)
	}
	if v, why := search.Judge(p, search.Config{MaxErrorRate: 0.001}); v != result.Pass {
		t.Errorf("verdict %s (%s), want pass at 200 tx/s", v, why)
	}
	if _, err := json.Marshal(p); err != nil {
		t.Error(err)
	}
}

// TestFourDrivers: a leader and three followers (goroutines, through the real server's
// control tables) run two probes in a row; each merged probe has four parts that all
// committed at a quarter of the rate, books that are the parts' sums and balance, a
// latency histogram holding every commit, and the fleet's row check holding.
func TestFourDrivers(t *testing.T) {
	dsn := testServer(t)
	ctx := context.Background()
	var dones []<-chan error
	for k := 1; k <= 3; k++ {
		dones = append(dones, follow(ctx, dsn, testOptions(t, fmt.Sprintf("follower %d", k))))
	}
	l, err := Lead(ctx, dsn, 4, testOptions(t, "leader"))
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	l.SetSpec(testSpec)
	pool, w := leaderPool(t, dsn)
	var probes []*result.Probe
	for n, rate := range []float64{160, 240} {
		p, err := l.Run(ctx, pool, w, driver.Config{Rate: rate, Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond,
			Conns: 3, Seed: int64(10 + n)})
		if err != nil {
			l.Close("test failed")
			t.Fatalf("Run %d: %v", n+1, err)
		}
		probes = append(probes, p)
	}
	l.Close("test over")
	for k, done := range dones {
		if err := <-done; err != nil {
			t.Errorf("follower %d: %v", k+1, err)
		}
	}
	for n, p := range probes {
		if p.Fleet == nil || len(p.Fleet.Parts) != 4 || p.Error != "" {
			t.Fatalf("probe %d: fleet %+v, error %q", n+1, p.Fleet, p.Error)
		}
		var sched, comm, bad int64
		ids := map[int]bool{}
		for _, pt := range p.Fleet.Parts {
			ids[pt.Driver] = true
			if pt.Committed == 0 || pt.TargetRate != p.TargetRate/4 || pt.Scheduled != pt.Committed+pt.Failed || pt.Error != "" {
				t.Errorf("probe %d: part %+v: want commits at a quarter of %v and balanced books", n+1, pt, p.TargetRate)
			}
			sched, comm, bad = sched+pt.Scheduled, comm+pt.Committed, bad+pt.Failed
		}
		if len(ids) != 4 {
			t.Errorf("probe %d: parts of drivers %v, want 0 to 3", n+1, ids)
		}
		if !p.Balanced() || p.Scheduled != sched || p.Committed != comm || p.FailedAndRejected() != bad {
			t.Errorf("probe %d: merged books %d = %d + %d + %d; parts %d = %d + %d", n+1, p.Scheduled, p.Committed,
				p.Failed.Total(), p.Rejected, sched, comm, bad)
		}
		if p.Latency.Count != p.Committed {
			t.Errorf("probe %d: merged latency holds %d commits, the books %d", n+1, p.Latency.Count, p.Committed)
		}
		if !p.Checks.RowsOK || len(p.Checks.Problems) > 0 {
			t.Errorf("probe %d: the fleet's row check: %+v", n+1, p.Checks)
		}
	}
	if probes[0].TargetRate != 160 || probes[1].TargetRate != 240 {
		t.Errorf("target rates %v and %v, want 160 and 240", probes[0].TargetRate, probes[1].TargetRate)
	}
}

// TestFollowerLostIsAFault: a follower that dies after acknowledging a plan (its process
// ends: no upload, no heartbeat) leaves the leader a merged probe with an error and the
// leader's own part, which the search judges a fault.
func TestFollowerLostIsAFault(t *testing.T) {
	dsn := testServer(t)
	ctx := context.Background()
	fctx, kill := context.WithCancel(ctx)
	defer kill()
	fopt := testOptions(t, "follower")
	say := fopt.Say
	fopt.Say = func(f string, a ...any) {
		say(f, a...)
		if strings.Contains(fmt.Sprintf(f, a...), "starting in") {
			kill() // dies once the plan is acknowledged
		}
	}
	done := follow(fctx, dsn, fopt)
	l, err := Lead(ctx, dsn, 2, testOptions(t, "leader"))
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	defer l.Close("")
	l.SetSpec(testSpec)
	pool, w := leaderPool(t, dsn)
	p, err := l.Run(ctx, pool, w, driver.Config{Rate: 100, Duration: 2 * time.Second, Conns: 4, Seed: 3})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the killed follower returned %v", err)
	}
	if p.Error == "" || len(p.Fleet.Missing) != 1 || p.Fleet.Missing[0] != 1 || p.Committed == 0 {
		t.Fatalf("error %q, missing %v, committed %d: want an error naming driver 1 and the leader's part kept",
			p.Error, p.Fleet.Missing, p.Committed)
	}
	if v, why := search.Judge(p, search.Config{MaxErrorRate: 0.001}); v != result.Fault {
		t.Errorf("verdict %s (%s), want fault", v, why)
	}
}

// TestLeaderLostStopsFollower: a follower whose leader stops beating mid-probe stops its
// probe and returns ErrLeaderGone with a message, long before the probe's end.
func TestLeaderLostStopsFollower(t *testing.T) {
	dsn := testServer(t)
	ctx := context.Background()
	done := follow(ctx, dsn, testOptions(t, "follower"))
	l, err := Lead(ctx, dsn, 2, testOptions(t, "leader"))
	if err != nil {
		t.Fatalf("Lead: %v", err)
	}
	defer l.pool.Close()
	// The leader publishes a minute-long probe and dies: its heartbeat stops.
	var now time.Time
	if err := l.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	plan := newPlan(1, 2, driver.Config{Rate: 50, Duration: time.Minute, Conns: 2, Seed: 1}, testSpec, now.Add(500*time.Millisecond))
	body, _ := json.Marshal(plan)
	if _, err := l.pool.Exec(ctx, "INSERT INTO pgceiling.fleet_plan (name, epoch, probe, plan) VALUES ($1, $2, 1, $3)",
		l.opt.Name, l.epoch, body); err != nil {
		t.Fatal(err)
	}
	l.stop()
	l.beats.Wait()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLeaderGone) || !strings.Contains(err.Error(), "heartbeat") {
			t.Errorf("the follower returned %v, want the leader gone", err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the follower stopped %v after the leader", d)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the follower still runs 45 s after its leader died (the probe is 60 s)")
	}
}

// TestFollowerRefusesSkewedClock: a follower whose clock is 200 ms off refuses to join,
// says why, and the leader sees the refusal.
func TestFollowerRefusesSkewedClock(t *testing.T) {
	dsn := testServer(t)
	ctx := context.Background()
	fopt := testOptions(t, "follower")
	fopt.Now = func() time.Time { return time.Now().Add(200 * time.Millisecond) }
	lopt := testOptions(t, "leader")
	lopt.JoinTimeout = 3 * time.Second
	var refused []string
	say := lopt.Say
	lopt.Say = func(f string, a ...any) {
		say(f, a...)
		refused = append(refused, fmt.Sprintf(f, a...))
	}
	lerr := make(chan error, 1)
	go func() {
		l, err := Lead(ctx, dsn, 2, lopt)
		if err == nil {
			l.Close("")
		}
		lerr <- err
	}()
	err := Follow(ctx, dsn, 1, fopt)
	if err == nil || !strings.Contains(err.Error(), "--max-skew") {
		t.Errorf("Follow with a clock 200 ms ahead: %v, want a refusal naming --max-skew", err)
	}
	if err := <-lerr; err == nil || !strings.Contains(err.Error(), "0 of 1 followers") {
		t.Errorf("Lead: %v, want no follower", err)
	}
	if !strings.Contains(strings.Join(refused, "\n"), "refused to join") {
		t.Errorf("the leader did not show the refusal: %q", refused)
	}
}
