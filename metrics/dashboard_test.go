package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// exported is every sample name a search's registry serves once everything is fed
// (histograms as their _bucket, _sum and _count series).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := New("search")
	m.Sweep(1, 1)
	m.SearchProbe(1, result.Bracket{Lo: 1, Hi: 2})
	m.ProbeStart(Probe{Workload: "oltp", SyncCommit: result.SyncOn, Rate: 10})
	m.Live(driver.Live{Phase: result.PhaseMeasure})
	m.Second(result.Second{Phase: result.PhaseMeasure, Offered: 1, Committed: 1}, hist(1, time.Millisecond), hist(1, time.Microsecond))
	m.Verdict(result.Pass)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m.ProbeEnd(&result.Probe{Observation: &result.Observation{ServerLocal: true, Waits: []result.WaitShare{{Event: "CPU", Samples: 1, Share: 1}}}})
	more, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range append(fams, more...) {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
			continue
		}
		names[f.GetName()] = true
	}
	return names
}

var metricName = regexp.MustCompile(`\b(?:pgceiling|process)_[a-z0-9_]+`)

// TestDashboard: the Grafana dashboard is valid JSON, takes its data source from a
// variable, and every panel's every query names only metrics the package exports.
func TestDashboard(t *testing.T) {
	names := exported(t)
	b, err := os.ReadFile("../deploy/grafana/pgceiling.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string
		Templating struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			Title      string
			Datasource struct{ UID string }
			Targets    []struct {
				Expr       string
				Datasource struct{ UID string }
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/pgceiling.json: %v", err)
	}
	dsVar := false
	for _, v := range d.Templating.List {
		dsVar = dsVar || v.Type == "datasource" && v.Name == "datasource"
	}
	if !dsVar || len(d.Panels) < 8 {
		t.Fatalf("dashboard %q: data source variable %v, %d panels", d.Title, dsVar, len(d.Panels))
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q, %d queries; want ${datasource} and a query", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, q := range p.Targets {
			ms := metricName.FindAllString(q.Expr, -1)
			if len(ms) == 0 || q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: query %q names no metric or has data source %q", p.Title, q.Expr, q.Datasource.UID)
			}
			for _, m := range ms {
				used[m] = true
				if !names[m] {
					t.Errorf("panel %q: query %q names %s, which the package does not export", p.Title, q.Expr, m)
				}
			}
		}
	}
	// The panels the issue asks for.
	for _, m := range []string{"pgceiling_offered_total", "pgceiling_committed_total", "pgceiling_failed_total",
		"pgceiling_rejected_total", "pgceiling_latency_seconds_bucket", "pgceiling_queue_wait_seconds_bucket",
		"pgceiling_probe_target_rate", "pgceiling_probe_info", "pgceiling_search_bracket_low",
		"pgceiling_search_bracket_high", "pgceiling_server_cpu_ratio", "pgceiling_wait_share"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// TestDocsListEveryMetric: docs/metrics.md names every pgceiling_ metric the package
// exports, and no other.
func TestDocsListEveryMetric(t *testing.T) {
	names := exported(t)
	b, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	for _, m := range metricName.FindAllString(string(b), -1) {
		doc[m] = true
	}
	var missing, stale []string
	for n := range names {
		if strings.HasPrefix(n, "pgceiling_") && !doc[n] && !doc[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] {
			missing = append(missing, n)
		}
	}
	for n := range doc {
		if !names[n] && !names[n+"_count"] && strings.HasPrefix(n, "pgceiling_") {
			stale = append(stale, n)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing)+len(stale) > 0 {
		t.Errorf("docs/metrics.md: missing %v; names no exported metric: %v", missing, stale)
	}
}
