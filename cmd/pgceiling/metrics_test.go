package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/metrics"
	"github.com/pgceiling/pgceiling/metrics/metricstest"
	"github.com/pgceiling/pgceiling/result"
)

var metricsURL = regexp.MustCompile(`metrics at (http://\S+/metrics)`)

// metricsCLI runs a command line with --metrics-addr 127.0.0.1:0 in-process. During the
// command it waits for the metrics' URL on stderr and then scrapes until until says yes
// (the returned during); when the command ends, it scrapes once more from the hook that
// runs before the server stops, after the last books are in (end).
func metricsCLI(t *testing.T, dsn string, until func(metricstest.Samples) bool, args ...string) (stderr string, code int, during, end metricstest.Samples) {
	t.Helper()
	args = append(args, "--metrics-addr", "127.0.0.1:0")
	var out bytes.Buffer
	var errb lockedBuffer
	e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "PGCEILING_DSN" {
			return dsn
		}
		return ""
	}, Args: append([]string{"pgceiling"}, args...)}
	var endErr error
	e.metricsClosing = func(url string) {
		end, endErr = metricstest.Scrape(url)
		if endErr == nil {
			_, endErr = metricstest.OpenMetrics(url)
		}
	}
	watched := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		url := ""
		for ; time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			if url == "" {
				if m := metricsURL.FindStringSubmatch(errb.String()); m != nil {
					url = m[1]
				}
				continue
			}
			s, err := metricstest.Scrape(url)
			if err == nil && until(s) {
				during = s
				watched <- nil
				return
			}
		}
		watched <- fmt.Errorf("no scrape during the command met the condition (metrics URL %q)", url)
	}()
	code = Main(ctx, e, args)
	cancel()
	if err := <-watched; err != nil {
		t.Errorf("%v; stderr:\n%s", err, errb.String())
	}
	if endErr != nil || end == nil {
		t.Fatalf("scrape at the end: %v; stderr:\n%s", endErr, errb.String())
	}
	return errb.String(), code, during, end
}

func mkey(name string, labels ...string) string { return metricstest.Key(name, labels...) }

// booksOf is the metrics' counters for phase, as a probe's books: scheduled, committed,
// failed by class and rejected.
func booksOf(s metricstest.Samples, phase string) (scheduled, committed, rejected int64, failed result.Counts) {
	for c := range result.NumClasses {
		if c != result.PoolTimeout {
			failed[c] = int64(s[mkey("pgceiling_failed_total", "phase", phase, "class", c.String())])
		}
	}
	return int64(s[mkey("pgceiling_offered_total", "phase", phase)]), int64(s[mkey("pgceiling_committed_total", "phase", phase)]),
		int64(s[mkey("pgceiling_rejected_total", "phase", phase)]), failed
}

// seriesSums sums the committed arrivals and offered arrivals of phase's seconds.
func seriesSums(ps []result.Probe, phase string) (offered, committed int64) {
	for _, p := range ps {
		for _, s := range p.Series {
			if s.Phase == phase {
				offered += s.Offered
				committed += s.Committed
			}
		}
	}
	return offered, committed
}

// checkBooks compares the metrics scraped at the end with the probes of the results
// file: the measured window's counters are the sum of the books, the warm-up's the sum
// of the series' warm-up seconds, and each latency histogram holds every commit of its
// phase's summarised seconds.
func checkBooks(t *testing.T, s metricstest.Samples, ps []result.Probe) {
	t.Helper()
	var want result.Probe
	for _, p := range ps {
		want.Scheduled += p.Scheduled
		want.Committed += p.Committed
		want.Rejected += p.Rejected
		for c := range want.Failed {
			want.Failed[c] += p.Failed[c]
		}
	}
	scheduled, committed, rejected, failed := booksOf(s, result.PhaseMeasure)
	if scheduled != want.Scheduled || committed != want.Committed || rejected != want.Rejected || failed != want.Failed || committed == 0 {
		t.Errorf("measured counters: scheduled %d committed %d rejected %d failed %v; the results file's books: %d %d %d %v",
			scheduled, committed, rejected, failed, want.Scheduled, want.Committed, want.Rejected, want.Failed)
	}
	for _, ph := range []string{result.PhaseWarmup, result.PhaseMeasure} {
		offered, commits := seriesSums(ps, ph)
		if ph == result.PhaseWarmup && (s[mkey("pgceiling_offered_total", "phase", ph)] != float64(offered) ||
			s[mkey("pgceiling_committed_total", "phase", ph)] != float64(commits)) {
			t.Errorf("warm-up counters: offered %v committed %v; the series' warm-up seconds: %d %d", s[mkey("pgceiling_offered_total", "phase", ph)],
				s[mkey("pgceiling_committed_total", "phase", ph)], offered, commits)
		}
		if n := s[mkey("pgceiling_latency_seconds_count", "phase", ph)]; n != float64(commits) {
			t.Errorf("pgceiling_latency_seconds_count{phase=%q} = %v, want the series' %d commits", ph, n, commits)
		}
	}
	if n := s[mkey("pgceiling_probes_total")]; n != float64(len(ps)) || s[mkey("pgceiling_probe_running")] != 0 {
		t.Errorf("at the end: probes_total %v (want %d), probe_running %v (want 0)", n, len(ps), s[mkey("pgceiling_probe_running")])
	}
}

// TestRunMetrics scrapes a real probe's metrics while it measures, and at its end checks
// that the counters equal the results file's books.
func TestRunMetrics(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "run.json")
	measuring := func(s metricstest.Samples) bool {
		return s[mkey("pgceiling_probe_phase", "phase", "measure")] == 1 && s[mkey("pgceiling_committed_total", "phase", "measure")] > 0
	}
	stderr, code, during, end := metricsCLI(t, dsn, measuring, "run", "--workload", "insert", "--rate", "100", "--warmup", "1s",
		"--duration", "4s", "--conns", "4", "--sync-commit", "on", "--json", path)
	if code != 0 {
		t.Fatalf("run: code %d, stderr:\n%s", code, stderr)
	}
	p := readRun(t, path)
	checkBooks(t, end, []result.Probe{*p})
	if w := p.Checks.CommittedTotal - p.Committed; end[mkey("pgceiling_committed_total", "phase", "warmup")] != float64(w) {
		t.Errorf("warm-up commits: metrics %v, the books' committed total less the measured: %d", end[mkey("pgceiling_committed_total", "phase", "warmup")], w)
	}
	for k, v := range map[string]float64{
		mkey("pgceiling_probe_running"):                                         1,
		mkey("pgceiling_probe_info", "workload", "insert", "sync_commit", "on"): 1,
		mkey("pgceiling_probe_target_rate"):                                     100,
		mkey("pgceiling_info", "command", "run", "version", result.ToolVersion): 1,
	} {
		if during[k] != v {
			t.Errorf("during the probe: %s = %v, want %v", k, during[k], v)
		}
	}
	if d, e := during[mkey("pgceiling_committed_total", "phase", "measure")], end[mkey("pgceiling_committed_total", "phase", "measure")]; d > e {
		t.Errorf("committed went down: %v during the probe, %v at the end", d, e)
	}
	if !during.Has("pgceiling_latency_seconds_bucket") || !during.Has("pgceiling_queue_wait_seconds_bucket") || !during.Has("process_cpu_seconds_total") {
		t.Errorf("histograms or process metrics missing during the probe")
	}
	if end[mkey("pgceiling_server_cpu_seconds_total")] <= 0 {
		t.Errorf("the server's CPU (%v s) missing at the end (the test server is local)", end[mkey("pgceiling_server_cpu_seconds_total")])
	}
	// The wait shares are those of the probe's own observation: with synchronous_commit
	// on, 400 commits each wait for a WAL flush, so the 100 ms sampler sees active
	// backends; the metric shows the results file's top events exactly.
	if p.Observation == nil || len(p.Observation.Waits) == 0 {
		t.Fatalf("the probe's observation has no wait samples: %+v", p.Observation)
	}
	for _, w := range p.Observation.Waits[:min(len(p.Observation.Waits), metrics.TopWaits)] {
		if got := end[mkey("pgceiling_wait_share", "event", w.Event)]; got != w.Share {
			t.Errorf("pgceiling_wait_share{event=%q} = %v, the results file's share %v", w.Event, got, w.Share)
		}
	}
}

// TestSearchMetrics: a short search's metrics at its end agree with every probe's books,
// its bracket and its verdicts.
func TestSearchMetrics(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	path := filepath.Join(t.TempDir(), "s.json")
	probing := func(s metricstest.Samples) bool { return s[mkey("pgceiling_probe_running")] == 1 }
	stderr, code, during, end := metricsCLI(t, dsn, probing, tinySearch(path)...)
	if code != 0 {
		t.Fatalf("search: code %d, stderr:\n%s", code, stderr)
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sw := f.Sweeps[0]
	checkBooks(t, end, sw.Probes)
	if end[mkey("pgceiling_search_bracket_low")] != sw.Bracket.Lo || end[mkey("pgceiling_search_bracket_high")] != sw.Bracket.Hi {
		t.Errorf("bracket: metrics [%v, %v], results file %+v", end[mkey("pgceiling_search_bracket_low")], end[mkey("pgceiling_search_bracket_high")], sw.Bracket)
	}
	verdicts := map[result.Verdict]float64{}
	for _, p := range sw.Probes {
		verdicts[p.Verdict]++
	}
	for v, n := range verdicts {
		if got := end[mkey("pgceiling_search_verdicts_total", "verdict", string(v))]; got != n {
			t.Errorf("verdict %s: metrics %v, results file %v", v, got, n)
		}
	}
	if during[mkey("pgceiling_probe_sweeps")] != 1 || during[mkey("pgceiling_probe_number")] < 1 || !during.Has("pgceiling_search_bracket_low") {
		t.Errorf("during the search: sweeps %v, probe number %v", during[mkey("pgceiling_probe_sweeps")], during[mkey("pgceiling_probe_number")])
	}
}

// TestMetricsAddrRefused: a taken port stops run and search in one line before they
// connect or write anything; a malformed address is a usage error.
func TestMetricsAddrRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	dir := t.TempDir()
	dsn := map[string]string{"PGCEILING_DSN": "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=5"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--rate", "10", "--metrics-addr", taken}, 1, "--metrics-addr " + taken + ": cannot serve the metrics"},
		{[]string{"search", "--json", filepath.Join(dir, "s.json"), "--metrics-addr", taken}, 1, "address already in use"},
		{[]string{"run", "--rate", "10", "--metrics-addr", "9187"}, 2, "--metrics-addr must be HOST:PORT"},
	} {
		_, stderr, code := cli(t, dsn, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "connect") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %q: code %d, stderr %q; want code %d and one line with %q, before any connection", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "s.json")); !os.IsNotExist(err) {
		t.Errorf("a search refused for its metrics address left a results file: %v", err)
	}
}
