package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/metrics/metricstest"
	"github.com/pgceiling/pgceiling/result"
)

// hist is a driver-like histogram (µs) holding n values of each of vs.
func hist(n int64, vs ...time.Duration) *hdrhistogram.Histogram {
	h := newHist()
	for _, v := range vs {
		_ = h.RecordValues(v.Microseconds(), n)
	}
	return h
}

func scrape(t *testing.T, url string) metricstest.Samples {
	t.Helper()
	s, err := metricstest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// want checks each key's value in s.
func want(t *testing.T, when string, s metricstest.Samples, vals map[string]float64) {
	t.Helper()
	for k, v := range vals {
		got, ok := s[k]
		if !ok || got != v {
			t.Errorf("%s: %s = %v (present %v), want %v", when, k, got, ok, v)
		}
	}
}

func key(name string, labels ...string) string { return metricstest.Key(name, labels...) }

// TestProbeBooks feeds one probe's seconds as the driver summarises them, scrapes during
// the probe (the counters are the seconds' sums) and after its end (the measured window's
// counters are the probe's books, which include arrivals settled after their second was
// closed; the warm-up's are its series).
func TestProbeBooks(t *testing.T) {
	m := New("run")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	m.ProbeStart(Probe{Workload: "oltp", SyncCommit: result.SyncOn, Rate: 200})
	var timeout result.Counts
	timeout[result.StatementTimeout] = 1
	timeout[result.PoolTimeout] = 3
	secs := []result.Second{
		{T: 0, Phase: result.PhaseWarmup, Offered: 190, Committed: 190, P99Ms: 4},
		// Summarised at the probe's end with two arrivals still in flight.
		{T: 1, Phase: result.PhaseMeasure, Offered: 205, Committed: 199, Failed: timeout, P99Ms: 9},
	}
	m.Second(secs[0], hist(190, 1500*time.Microsecond), hist(190, 50*time.Microsecond))
	m.Second(secs[1], hist(100, 1500*time.Microsecond, 40*time.Millisecond), hist(200, 50*time.Microsecond))
	m.Live(driver.Live{Elapsed: 2 * time.Second, Phase: result.PhaseMeasure, OfferedRate: 201, AchievedRate: 198, Queue: 7})

	during := scrape(t, srv.URL)
	want(t, "during the probe", during, map[string]float64{
		key("pgceiling_offered_total", "phase", "warmup"):                               190,
		key("pgceiling_offered_total", "phase", "measure"):                              205,
		key("pgceiling_committed_total", "phase", "measure"):                            199,
		key("pgceiling_failed_total", "phase", "measure", "class", "statement_timeout"): 1,
		key("pgceiling_failed_total", "phase", "measure", "class", "deadlock"):          0,
		key("pgceiling_rejected_total", "phase", "measure"):                             3,
		key("pgceiling_latency_seconds_count", "phase", "measure"):                      200,
		key("pgceiling_latency_seconds_bucket", "phase", "measure", "le", "0.001"):      0,
		key("pgceiling_latency_seconds_bucket", "phase", "measure", "le", "0.002"):      100,
		key("pgceiling_latency_seconds_bucket", "phase", "measure", "le", "0.03"):       100,
		key("pgceiling_latency_seconds_bucket", "phase", "measure", "le", "0.05"):       200,
		key("pgceiling_latency_seconds_bucket", "phase", "measure", "le", "+Inf"):       200,
		key("pgceiling_queue_wait_seconds_count", "phase", "warmup"):                    190,
		key("pgceiling_queue_wait_seconds_bucket", "phase", "warmup", "le", "0.0001"):   190,
		key("pgceiling_probe_running"):                                                  1,
		key("pgceiling_probe_info", "workload", "oltp", "sync_commit", "on"):            1,
		key("pgceiling_probe_target_rate"):                                              200,
		key("pgceiling_probe_phase", "phase", "measure"):                                1,
		key("pgceiling_probe_phase", "phase", "warmup"):                                 0,
		key("pgceiling_probe_offered_rate"):                                             201,
		key("pgceiling_probe_committed_rate"):                                           198,
		key("pgceiling_probe_queue"):                                                    7,
		key("pgceiling_probe_p99_latency_seconds"):                                      0.009,
		key("pgceiling_probes_total"):                                                   0,
		key("pgceiling_info", "command", "run", "version", result.ToolVersion):          1,
	})
	if sum := during[key("pgceiling_latency_seconds_sum", "phase", "measure")]; sum < 4.1 || sum > 4.2 {
		t.Errorf("latency sum %v s, want 100 × 1.5 ms + 100 × 40 ms = 4.15 s", sum)
	}
	if during.Has("pgceiling_search_bracket_low") || during.Has("pgceiling_server_cpu_ratio") {
		t.Errorf("run exports the search's bracket or an unmeasured server CPU: %v", during)
	}

	// The books: the two arrivals in flight settled after their second was summarised.
	var failed result.Counts
	failed[result.StatementTimeout] = 2
	p := &result.Probe{Scheduled: 205, Committed: 200, Failed: failed, Rejected: 3, Series: secs,
		Observation: &result.Observation{ServerLocal: true, ServerCPUSeconds: 1.5, ServerCPUShare: 0.4,
			Waits: []result.WaitShare{{Event: "CPU", Samples: 60, Share: 0.6}, {Event: "IO:WALSync", Samples: 40, Share: 0.4}}}}
	m.ProbeEnd(p)
	after := scrape(t, srv.URL)
	want(t, "after the probe", after, map[string]float64{
		key("pgceiling_offered_total", "phase", "warmup"):                               190,
		key("pgceiling_offered_total", "phase", "measure"):                              205,
		key("pgceiling_committed_total", "phase", "measure"):                            200,
		key("pgceiling_failed_total", "phase", "measure", "class", "statement_timeout"): 2,
		key("pgceiling_rejected_total", "phase", "measure"):                             3,
		key("pgceiling_probe_running"):                                                  0,
		key("pgceiling_probes_total"):                                                   1,
		key("pgceiling_server_cpu_seconds_total"):                                       1.5,
		key("pgceiling_server_cpu_ratio"):                                               0.4,
		key("pgceiling_wait_share", "event", "IO:WALSync"):                              0.4,
		key("pgceiling_wait_samples_total", "event", "CPU"):                             60,
	})
	if after.Has("pgceiling_probe_queue") {
		t.Error("pgceiling_probe_queue exported with no probe running")
	}
	// The next probe adds to the books.
	m.ProbeStart(Probe{Workload: "insert", SyncCommit: result.SyncOff, Rate: 400})
	m.Second(result.Second{T: 0, Phase: result.PhaseMeasure, Offered: 10, Committed: 10}, nil, nil)
	next := scrape(t, srv.URL)
	want(t, "during a second probe", next, map[string]float64{
		key("pgceiling_committed_total", "phase", "measure"):                    210,
		key("pgceiling_probe_info", "workload", "insert", "sync_commit", "off"): 1,
	})
	if next.Has(key("pgceiling_probe_info", "workload", "oltp", "sync_commit", "on")) {
		t.Error("the previous probe's sweep is still exported")
	}
}

// TestSearchGauges: the search's bracket, probe number, sweep and verdicts.
func TestSearchGauges(t *testing.T) {
	m := New("search")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	m.Sweep(2, 4)
	m.SearchProbe(3, result.Bracket{Lo: 400, Hi: 800})
	m.ProbeStart(Probe{Workload: "transfer", SyncCommit: result.SyncOff, Rate: 600})
	m.ProbeEnd(&result.Probe{})
	m.Verdict(result.Pass)
	m.Bracket(result.Bracket{Lo: 600, Hi: 800})
	want(t, "search", scrape(t, srv.URL), map[string]float64{
		key("pgceiling_search_bracket_low"):                       600,
		key("pgceiling_search_bracket_high"):                      800,
		key("pgceiling_probe_number"):                             3,
		key("pgceiling_probe_sweep"):                              2,
		key("pgceiling_probe_sweeps"):                             4,
		key("pgceiling_search_verdicts_total", "verdict", "pass"): 1,
		key("pgceiling_probe_target_rate"):                        600,
	})
}

// TestServe: OpenMetrics when asked for, a free port for port 0, and a taken port
// refused at once.
func TestServe(t *testing.T) {
	m := New("run")
	s, err := Serve("127.0.0.1:0", m.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || strings.HasSuffix(s.Addr(), ":0") {
		t.Errorf("Serve(127.0.0.1:0): URL %s", s.URL())
	}
	body, err := metricstest.OpenMetrics(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# TYPE pgceiling_committed counter", `pgceiling_committed_total{phase="measure"} 0`,
		"# TYPE pgceiling_latency_seconds histogram", "# TYPE process_cpu_seconds counter"} {
		if !strings.Contains(body, w) {
			t.Errorf("OpenMetrics exposition lacks %q:\n%s", w, body)
		}
	}
	_, err = Serve(s.Addr(), m.Handler())
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Serve(%s) a second time: %v, want address already in use", s.Addr(), err)
	}
}
