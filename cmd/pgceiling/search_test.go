package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// tinySearch is a search small enough for a test: the insert workload (cheapest init),
// a 2,000-row schema, 2 s probes without warm-up, a coarse bracket.
func tinySearch(jsonPath string, extra ...string) []string {
	return append([]string{"search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--rows", "2000",
		"--wallets", "50", "--warmup", "0s", "--duration", "2s", "--start-rate", "40", "--growth", "4",
		"--precision", "0.5", "--max-probes", "4", "--conns", "4", "--json", jsonPath}, extra...)
}

func TestSearchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"search", "--hold", "off", "--workload", "oltpp"}, 2, `did you mean "oltp"`},
		{[]string{"search", "--sync-commit", "on,offf", "--precision", "2"}, 2, "--precision"},
		{[]string{"search", "--profile", "standrd"}, 2, `did you mean "standard"`},
		{[]string{"search", "extra"}, 2, "unexpected argument"},
		{[]string{"search", "--json", filepath.Join(dir, "missing", "x.json")}, 1, "results file"},
		{[]string{"search", "--resume", filepath.Join(dir, "nope.json")}, 1, "--resume"},
	} {
		_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": "postgres://u:s3cret@127.0.0.1:1/x"}, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %s: code %d, stderr %q; want %d and one line containing %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
		if strings.Contains(stderr, "s3cret") {
			t.Errorf("pgceiling %s: password on stderr: %q", strings.Join(tc.args, " "), stderr)
		}
	}
}

// TestSearchUnreachable: a server that cannot be reached is one line, exit 1, no
// password, and a search that could not start leaves no results file behind.
func TestSearchUnreachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	_, stderr, code := cli(t, nil, "search", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=2", "--json", path)
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || strings.Contains(stderr, "s3cret") || !strings.Contains(stderr, "connect") {
		t.Errorf("search on an unreachable server: code %d, stderr %q; want 1 and one line about connecting, no password", code, stderr)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a search that could not start left %s behind (%v)", path, err)
	}
}

func TestSearchHelp(t *testing.T) {
	stdout, _, code := cli(t, nil, "search", "--help")
	for _, w := range []string{"--profile", "--resume", "--p99-slo", "--keep-growth", "--confirm", "--json"} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("search --help: code %d, no %s in %q", code, w, stdout)
		}
	}
}

func countEvents(t *testing.T, dsn string) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pgceiling.events").Scan(&n); err != nil {
		t.Fatalf("count events: %v", err)
	}
	return n
}

// TestSearchEndToEnd runs a tiny search on the test server: it initialises the missing
// schema, probes, writes the JSON, prints the summary and leaves the data as it found it;
// a --resume of the finished file then reuses every probe.
func TestSearchEndToEnd(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	path := filepath.Join(t.TempDir(), "s.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, tinySearch(path)...)
	if code != 0 {
		t.Fatalf("search: code %d\nstderr:\n%s", code, stderr)
	}
	for _, w := range []string{"initialising", "sweep 1/1 insert sync=off: probe 1 at 40 tx/s", "bracket", "results in"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("search progress lacks %q:\n%s", w, stderr)
		}
	}
	if !strings.Contains(stdout, "insert") {
		t.Errorf("summary lacks the sweep:\n%s", stdout)
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Command != "search" || len(f.Sweeps) != 1 || f.Server == nil || f.Config["workload"] != "insert" || f.Interrupted {
		t.Fatalf("results file: command %q, %d sweeps, server %v, config %v, interrupted %v", f.Command, len(f.Sweeps), f.Server, f.Config, f.Interrupted)
	}
	sw := f.Sweeps[0]
	if sw.Workload != "insert" || sw.SyncCommit != "off" || len(sw.Probes) == 0 || sw.Stop == "" || sw.ProbeMinutes <= 0 {
		t.Errorf("sweep: %+v", sw)
	}
	for i, p := range sw.Probes {
		if p.Verdict == "" || p.Reason == "" || !p.Balanced() || p.Workload != "insert" || p.SyncCommit != "off" {
			t.Errorf("probe %d: verdict %q reason %q balanced %v workload %q sync %q", i+1, p.Verdict, p.Reason, p.Balanced(), p.Workload, p.SyncCommit)
		}
		if p.RowsAtStart != 0 && !sw.KeepGrowth {
			t.Errorf("probe %d started with %d events rows; the data should be restored before each probe", i+1, p.RowsAtStart)
		}
	}
	if sw.Probes[0].TargetRate != 40 {
		t.Errorf("first probe at %.0f, want --start-rate 40", sw.Probes[0].TargetRate)
	}
	if n := countEvents(t, dsn); n != 0 {
		t.Errorf("after the search pgceiling.events has %d rows, want the 0 it started with", n)
	}

	// Resume the finished file: every probe is reused, none is run again.
	path2 := filepath.Join(t.TempDir(), "s2.json")
	_, stderr, code = cli(t, map[string]string{"PGCEILING_DSN": dsn}, tinySearch(path2, "--resume", path)...)
	if code != 0 {
		t.Fatalf("search --resume: code %d\n%s", code, stderr)
	}
	if announced.MatchString(stderr) || !strings.Contains(stderr, "from the resumed file") {
		t.Errorf("resume of a finished search ran probes:\n%s", stderr)
	}
	g, err := result.Read(path2)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Sweeps) != 1 || len(g.Sweeps[0].Probes) != len(sw.Probes) || g.Sweeps[0].Knee != sw.Knee ||
		!g.Sweeps[0].Probes[0].StartedAt.Equal(sw.Probes[0].StartedAt) {
		t.Errorf("resumed file: %d probes knee %.0f; want the %d original probes, knee %.0f", len(g.Sweeps[0].Probes), g.Sweeps[0].Knee, len(sw.Probes), sw.Knee)
	}
}

// announced matches the line that announces a probe about to run.
var announced = regexp.MustCompile(`: probe \d+ at \d+ tx/s, bracket`)

// cancelWriter collects stderr and calls cancel once it sees trigger.
type cancelWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	cancel  func()
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cancel != nil && strings.Contains(w.buf.String(), w.trigger) {
		w.cancel()
		w.cancel = nil
	}
	return len(p), nil
}

// TestSearchInterruptAndResume interrupts a search during its second probe, as Ctrl-C
// would: exit 130, the file marked interrupted with the first probe kept; --resume then
// continues from it without running the first probe again.
func TestSearchInterruptAndResume(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	path := filepath.Join(t.TempDir(), "s.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	env := &Env{Stdout: &out, Getenv: func(k string) string { return map[string]string{"PGCEILING_DSN": dsn}[k] }}
	errw := &cancelWriter{trigger: "probe 2 at", cancel: func() { env.signal.Store(int32(syscall.SIGINT)); cancel() }}
	env.Stderr = errw
	args := tinySearch(path, "--max-probes", "6")
	env.Args = append([]string{"pgceiling"}, args...)
	code := Main(ctx, env, args)
	if code != 130 {
		t.Fatalf("interrupted search: code %d, want 130\n%s", code, errw.buf.String())
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Interrupted || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) < 1 || f.Sweeps[0].Stop != "interrupted" {
		t.Fatalf("interrupted file: interrupted %v, sweeps %+v", f.Interrupted, f.Sweeps)
	}
	first := f.Sweeps[0].Probes[0]
	if !strings.Contains(errw.buf.String(), "--resume "+path) {
		t.Errorf("no resume hint:\n%s", errw.buf.String())
	}
	_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, tinySearch(path, "--max-probes", "6", "--resume", path)...)
	if code != 0 {
		t.Fatalf("search --resume: code %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "probe 1 at 40 tx/s, bracket") {
		t.Errorf("resume ran probe 1 again:\n%s", stderr)
	}
	g, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Interrupted || len(g.Sweeps[0].Probes) < 2 || !g.Sweeps[0].Probes[0].StartedAt.Equal(first.StartedAt) {
		t.Errorf("resumed file: interrupted %v, %d probes, first started %v (want %v)", g.Interrupted, len(g.Sweeps[0].Probes),
			g.Sweeps[0].Probes[0].StartedAt, first.StartedAt)
	}
}

// TestSearchOLTPPreparesEachProbe: a tiny oltp search restores the data before each
// probe (timed), back-fills the fraud window's history at the probe's rate (recorded),
// and records what the fraud check read; --start-from a finished file then starts the
// bracket at its knee without calibrating.
func TestSearchOLTPPreparesEachProbe(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	args := func(path string, extra ...string) []string {
		return append([]string{"search", "--hold", "off", "--workload", "oltp", "--sync-commit", "off", "--rows", "5000", "--wallets", "100",
			"--warmup", "1s", "--duration", "3s", "--growth", "4", "--precision", "0.5", "--max-probes", "3", "--repeats", "1",
			"--conns", "4", "--fraud-window", "10m", "--json", path}, extra...)
	}
	first := filepath.Join(dir, "a.json")
	_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, args(first, "--start-rate", "30")...)
	if code != 0 {
		t.Fatalf("search: code %d\n%s", code, stderr)
	}
	f, err := result.Read(first)
	if err != nil {
		t.Fatal(err)
	}
	sw := f.Sweeps[0]
	for i, p := range sw.Probes {
		if p.Restore == nil || p.Restore.Seconds <= 0 {
			t.Errorf("probe %d: restore %+v, want it timed", i+1, p.Restore)
		}
		// 100 Zipf wallets, a 10 min window: min(20, rate × 600 × p_k) rows each.
		if p.Backfill == nil || p.Backfill.Rows <= 0 || p.Backfill.Rate != p.TargetRate || p.Backfill.WindowS != 600 {
			t.Errorf("probe %d at %.0f tx/s: back-fill %+v, want rows at the probe's rate over 600 s", i+1, p.TargetRate, p.Backfill)
		}
		if fc := p.FraudCheck; fc == nil || fc.Checks == 0 || fc.Limit != 20 || fc.Max > 20 || fc.WindowS != 600 {
			t.Errorf("probe %d: fraud check %+v, want checks of at most 20 rows over 600 s", i+1, fc)
		}
	}
	if sw.Knee <= 0 {
		t.Fatalf("no probe passed (stop %q); 30 tx/s on 4 connections should", sw.Stop)
	}
	second := filepath.Join(dir, "b.json")
	_, stderr, code = cli(t, map[string]string{"PGCEILING_DSN": dsn}, args(second, "--start-from", first, "--max-probes", "1")...)
	if code != 0 {
		t.Fatalf("search --start-from: code %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "calibrating") {
		t.Errorf("search --start-from calibrated:\n%s", stderr)
	}
	g, err := result.Read(second)
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Sweeps[0]; s.StartFrom != first || len(s.Probes) == 0 || s.Probes[0].TargetRate != sw.Knee {
		t.Errorf("--start-from: sweep start_from %q, first probe at %v; want %q and the earlier knee %.0f", s.StartFrom,
			s.Probes, first, sw.Knee)
	}
}

// TestSearchHoldsTheKnee: with --hold the converged knee is probed once more for the hold's
// window, marked as a hold, and the sweep says it held (or, when it did not, the knee is
// below the failed hold).
func TestSearchHoldsTheKnee(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var sw result.Sweep
	// One connection and a 50 ms p99 SLO put the knee within a few probes of the start.
	// A burst of another guest's CPU use (steal) can stop a search (host_steal): that is
	// the machine, not the hold, so such a search is run again, at most three times.
	for try := 1; ; try++ {
		path := filepath.Join(t.TempDir(), "s.json")
		_, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, tinySearch(path, "--start-rate", "50",
			"--conns", "1", "--p99-slo", "50ms", "--repeats", "1", "--max-probes", "16", "--hold", "3s")...)
		if code != 0 {
			t.Fatalf("search --hold 3s: code %d\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "held for 3s") {
			t.Errorf("search --hold 3s does not announce the hold:\n%s", stderr)
		}
		f, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		sw = f.Sweeps[0]
		if strings.HasPrefix(sw.Stop, search.StopHostSteal) && try < 3 {
			t.Logf("search %d stopped by steal (%s); again", try, sw.Stop)
			continue
		}
		break
	}
	if sw.HoldS != 3 || !sw.Converged {
		for _, p := range sw.Probes {
			t.Logf("probe at %.0f hold=%v: %s: %s", p.TargetRate, p.Hold, p.Verdict, p.Reason)
		}
		t.Fatalf("sweep: hold_s %v converged %v stop %q; want 3, converged", sw.HoldS, sw.Converged, sw.Stop)
	}
	holds := 0
	for i, p := range sw.Probes {
		want := 2.0
		if p.Hold {
			holds++
			want = 3
			if p.Verdict != result.Pass && p.TargetRate <= sw.Knee {
				t.Errorf("probe %d: a failed hold at %.0f, not above the knee %.0f", i+1, p.TargetRate, sw.Knee)
			}
		}
		if p.DurationS != want {
			t.Errorf("probe %d (hold %v): %.0f s, want %.0f", i+1, p.Hold, p.DurationS, want)
		}
	}
	last := sw.Probes[len(sw.Probes)-1]
	if holds == 0 || !sw.Held || !last.Hold || last.Verdict != result.Pass || last.TargetRate != sw.Knee {
		t.Errorf("%d holds, held %v, last probe hold=%v %s at %.0f; want the knee %.0f's passing hold last", holds, sw.Held,
			last.Hold, last.Verdict, last.TargetRate, sw.Knee)
	}
}

// TestSearchConnsAuto: without --conns a sweep first scans pool sizes (4, 8, 16, ... and back)
// with overload probes on the real server, runs every probe with the pool it chose,
// records the scan and prints it in the notes; --resume reuses the scan without scanning
// again; --conns N scans nothing.
func TestSearchConnsAuto(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	args := func(extra ...string) []string {
		return append([]string{"search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--rows", "2000",
			"--wallets", "50", "--warmup", "0s", "--duration", "2s", "--precision", "0.5", "--repeats", "1"}, extra...)
	}
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, args("--max-probes", "1", "--json", path)...)
	if code != 0 {
		t.Fatalf("search: code %d\nstderr:\n%s", code, stderr)
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sw := f.Sweeps[0]
	ps := sw.Pool
	if ps == nil || len(ps.Points) < search.PoolScanPatience+1 {
		t.Fatalf("sweep pool scan %+v: want at least %d points\nstderr:\n%s", ps, search.PoolScanPatience+1, stderr)
	}
	best, chosenSeen := bestOf(ps), false
	for i, pt := range ps.Points {
		if pt.Conns != search.PoolScanFirst<<i || pt.Achieved <= 0 || pt.Rate <= 0 {
			t.Errorf("scan point %d: %+v, want %d connections with a rate and an achieved throughput", i, pt, search.PoolScanFirst<<i)
		}
		if len(pt.Windows) != 2 || math.Abs(pt.Achieved-(pt.Windows[0]+pt.Windows[1])/2) > 1e-9 {
			t.Errorf("scan point %d: %+v, want two windows (up and back) and achieved their mean", i, pt)
		}
		if pt.Conns < ps.Conns && pt.Achieved >= ps.Within*best {
			t.Errorf("pool %d was within %.0f %% of the best but %d was chosen", pt.Conns, 100*(1-ps.Within), ps.Conns)
		}
		chosenSeen = chosenSeen || pt.Conns == ps.Conns && pt.Achieved >= ps.Within*best
	}
	if !strings.Contains(stderr, fmt.Sprintf("pool scan, %d connections again:", search.PoolScanFirst)) {
		t.Errorf("progress lacks the way back's line for pool %d:\n%s", search.PoolScanFirst, stderr)
	}
	chose := fmt.Sprintf("pool scan: %d connections, the smallest pool within 3 %% of the best (%d connections)", ps.Conns, ps.Best)
	if ps.Conns == ps.Best {
		chose = fmt.Sprintf("pool scan: %d connections, the best by the mean", ps.Conns)
	}
	if !strings.Contains(strings.Join(strings.Fields(stderr), " "), chose) { // lines are wrapped
		t.Errorf("progress lacks %q:\n%s", chose, stderr)
	}
	if !chosenSeen || ps.Seconds <= 0 {
		t.Errorf("chosen pool %d not among the points %+v (seconds %v)", ps.Conns, ps.Points, ps.Seconds)
	}
	for i, p := range sw.Probes {
		if p.Conns != ps.Conns {
			t.Errorf("probe %d used %d connections, the scan chose %d", i+1, p.Conns, ps.Conns)
		}
	}
	if want := fmt.Sprintf("pool %d connections (--conns auto", ps.Conns); !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}
	if !strings.Contains(stderr, "pool scan, 4 connections at") {
		t.Errorf("progress lacks the scan:\n%s", stderr)
	}

	// Resumed with one more probe allowed: the same pool, no scan.
	_, stderr, code = cli(t, map[string]string{"PGCEILING_DSN": dsn}, args("--max-probes", "2", "--resume", path)...)
	if code != 0 {
		t.Fatalf("resume: code %d\nstderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "pool scan, ") {
		t.Errorf("the resumed search scanned again:\n%s", stderr)
	}
	g, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if gp := g.Sweeps[0].Pool; gp == nil || gp.Conns != ps.Conns || len(g.Sweeps[0].Probes) < 2 {
		t.Errorf("resumed sweep: pool %+v, %d probes; want pool %d and 2 probes", gp, len(g.Sweeps[0].Probes), ps.Conns)
	}
	for i, p := range g.Sweeps[0].Probes {
		if p.Conns != ps.Conns {
			t.Errorf("resumed probe %d used %d connections, want %d", i+1, p.Conns, ps.Conns)
		}
	}

	// A fixed pool: no scan, every probe with it.
	fixed := filepath.Join(dir, "fixed.json")
	_, stderr, code = cli(t, map[string]string{"PGCEILING_DSN": dsn}, args("--max-probes", "1", "--start-rate", "40", "--conns", "3", "--json", fixed)...)
	if code != 0 {
		t.Fatalf("--conns 3: code %d\nstderr:\n%s", code, stderr)
	}
	h, err := result.Read(fixed)
	if err != nil {
		t.Fatal(err)
	}
	if h.Sweeps[0].Pool != nil || h.Sweeps[0].Probes[0].Conns != 3 || strings.Contains(stderr, "pool scan, ") {
		t.Errorf("--conns 3: pool %+v, probe conns %d", h.Sweeps[0].Pool, h.Sweeps[0].Probes[0].Conns)
	}
}

// bestOf is the highest saturated throughput of a pool scan.
func bestOf(ps *result.PoolScan) float64 {
	b := 0.0
	for _, pt := range ps.Points {
		b = max(b, pt.Achieved)
	}
	return b
}

// TestSearchRounds: with --rounds 2 every sweep converges once, then each is taken up
// again in the same order: its probes of round 2 come after every sweep's round 1, are
// marked round 2, start at an edge without a calibration, and the hold step comes in
// round 2 only. The file records the knee after each round.
func TestSearchRounds(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var f *result.File
	var stderr string
	for try := 1; ; try++ { // a burst of steal can stop a search: see TestSearchHoldsTheKnee
		path := filepath.Join(t.TempDir(), "s.json")
		var code int
		args := tinySearch(path, "--start-rate", "50", "--conns", "1", "--p99-slo", "50ms", "--repeats", "1",
			"--rounds", "2", "--max-probes", "16", "--hold", "2s")
		args[slices.Index(args, "--sync-commit")+1] = "off,on" // two sweeps
		_, stderr, code = cli(t, map[string]string{"PGCEILING_DSN": dsn}, args...)
		if code != 0 {
			t.Fatalf("search --rounds 2: code %d\n%s", code, stderr)
		}
		var err error
		if f, err = result.Read(path); err != nil {
			t.Fatal(err)
		}
		if stolen := slices.ContainsFunc(f.Sweeps, func(s result.Sweep) bool { return strings.HasPrefix(s.Stop, search.StopHostSteal) }); stolen && try < 3 {
			t.Logf("search %d stopped by steal; again", try)
			continue
		}
		break
	}
	// Progress: both sweeps' round 1, then both sweeps' round 2.
	last := -1
	for _, w := range []string{"round 1/2 sweep 1/2 insert sync=off: probe 1", "round 1/2 sweep 2/2 insert sync=on: probe 1",
		"round 2/2 sweep 1/2 insert sync=off: probe", "round 2/2 sweep 2/2 insert sync=on: probe"} {
		i := strings.Index(stderr, w)
		if i < last {
			t.Fatalf("progress lacks %q after the lines before it:\n%s", w, stderr)
		}
		last = i
	}
	if len(f.Sweeps) != 2 {
		t.Fatalf("%d sweeps, want 2 (one per setting, both rounds in each)", len(f.Sweeps))
	}
	for _, sw := range f.Sweeps {
		name := sw.Workload + " sync=" + string(sw.SyncCommit)
		if sw.Rounds != 2 || len(sw.RoundKnees) != 2 || sw.RoundKnees[1] != sw.Knee || !sw.Converged || !sw.Held {
			t.Errorf("%s: rounds %d, knees by round %v, knee %.0f, converged %v, held %v; want 2 rounds ending at the held knee",
				name, sw.Rounds, sw.RoundKnees, sw.Knee, sw.Converged, sw.Held)
		}
		round, firstOf2 := 1, -1
		for i, p := range sw.Probes {
			if p.Round < round || p.Round > 2 {
				t.Errorf("%s: probe %d marked round %d after round %d", name, i+1, p.Round, round)
			}
			if p.Round == 2 && firstOf2 < 0 {
				firstOf2 = i
			}
			round = p.Round
			if p.Hold && p.Round != 2 {
				t.Errorf("%s: probe %d is a hold in round %d; the hold belongs to the last round", name, i+1, p.Round)
			}
		}
		if firstOf2 <= 0 {
			t.Fatalf("%s: no probe of round 2", name)
		}
		// Round 2 opens at round 1's bracket edge: its knee, without a calibration.
		if r := sw.Probes[firstOf2].TargetRate; r != sw.RoundKnees[0] {
			t.Errorf("%s: round 2's first probe at %.0f; want round 1's knee %.0f", name, r, sw.RoundKnees[0])
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(stderr), " "), "2 rounds, the knee after each:") { // lines are wrapped
		t.Errorf("progress lacks the knee after each round:\n%s", stderr)
	}
}
