// Package metricstest scrapes a metrics endpoint for tests: the values keyed by name and
// labels, parsed with Prometheus's own text parser, and the OpenMetrics exposition checked
// for its content type and end marker.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are scraped values keyed by Key: counters and gauges by their name, histograms
// as name_count, name_sum and name_bucket with an le label.
type Samples map[string]float64

// Key is a sample's key: the name and its labels sorted by label name, as
// `name{a="x",b="y"}` (just the name without labels). labels are name, value pairs.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	pairs := make([]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Has reports whether a sample of the metric name exists, with any labels.
func (s Samples) Has(name string) bool {
	for k := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

// Scrape fetches url in Prometheus's text format and parses it.
func Scrape(url string) (Samples, error) {
	body, ctype, err := get(url, "text/plain;version=0.0.4")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(ctype, "text/plain") {
		return nil, fmt.Errorf("scrape %s: content type %q, want text/plain", url, ctype)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	s := Samples{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s[Key(name, labels...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s[Key(name, labels...)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				s[Key(name+"_count", labels...)] = float64(h.GetSampleCount())
				s[Key(name+"_sum", labels...)] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					s[Key(name+"_bucket", append(labels, "le", le)...)] = float64(b.GetCumulativeCount())
				}
			default:
				s[Key(name, labels...)] = m.GetUntyped().GetValue()
			}
		}
	}
	return s, nil
}

// OpenMetrics fetches url asking for OpenMetrics, as Prometheus does, and returns the
// exposition after checking its content type and its closing `# EOF`.
func OpenMetrics(url string) (string, error) {
	body, ctype, err := get(url, "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(ctype, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		return "", fmt.Errorf("scrape %s for OpenMetrics: content type %q, ends %q", url, ctype, body[max(0, len(body)-20):])
	}
	return body, nil
}

func get(url, accept string) (body, ctype string, err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return string(b), resp.Header.Get("Content-Type"), nil
}
