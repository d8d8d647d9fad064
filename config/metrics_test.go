package config

import (
	"strings"
	"testing"
)

// TestMetricsAddr: --metrics-addr takes HOST:PORT (port 0 for any free port) on run and
// search; anything else is a usage error naming the flag.
func TestMetricsAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:9187", ":0", "[::1]:9187", "localhost:80"} {
		c, err := parseRun(t, "--rate", "5", "--metrics-addr", addr)
		if err != nil || c.MetricsAddr != addr {
			t.Errorf("run --metrics-addr %s: err %v, addr %q", addr, err, c.MetricsAddr)
		}
	}
	for _, addr := range []string{"9187", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", "127.0.0.1:-1"} {
		_, err := parseRun(t, "--rate", "5", "--metrics-addr", addr)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "--metrics-addr must be HOST:PORT") {
			t.Errorf("run --metrics-addr %q: err %v, want a usage error naming --metrics-addr", addr, err)
		}
	}
	c, _, err := parseSearch(t, true, "--metrics-addr", "127.0.0.1:9187")
	if err != nil || c.MetricsAddr != "127.0.0.1:9187" {
		t.Errorf("search --metrics-addr 127.0.0.1:9187: err %v, addr %q", err, c.MetricsAddr)
	}
	if _, _, err := parseSearch(t, true, "--metrics-addr", "nope"); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("search --metrics-addr nope: err %v, want a usage error naming --metrics-addr", err)
	}
}
