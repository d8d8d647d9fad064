package main

import (
	"fmt"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/metrics"
	"github.com/pgceiling/pgceiling/result"
)

// liveMetrics is --metrics-addr of run and search: the metrics and their HTTP server. A
// nil *liveMetrics is off, and every method is then a no-op, so the commands call them
// unconditionally.
type liveMetrics struct {
	m   *metrics.Metrics
	srv *metrics.Server
	env *Env
}

// startMetrics serves the command's metrics at addr ("" = off). It is called before the
// server is opened, so a taken port stops the command before any probe, in one line.
func startMetrics(env *Env, command, addr string) (*liveMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	m := metrics.New(command)
	srv, err := metrics.Serve(addr, m.Handler())
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: cannot serve the metrics: %w", addr, err)
	}
	fmt.Fprintf(env.Stderr, "pgceiling %s: metrics at %s\n", command, srv.URL())
	return &liveMetrics{m: m, srv: srv, env: env}, nil
}

// close stops the server, after the command's last books are in (env.metricsClosing, a
// test's hook, scrapes them first).
func (l *liveMetrics) close() {
	if l == nil {
		return
	}
	if l.env.metricsClosing != nil {
		l.env.metricsClosing(l.srv.URL())
	}
	_ = l.srv.Close()
}

// probe hooks the metrics into one probe of workload name: the driver's summarised
// seconds, and its live figures chained before cfg's own OnSecond (the progress line).
// probeDone must follow.
func (l *liveMetrics) probe(name string, cfg driver.Config) driver.Config {
	if l == nil {
		return cfg
	}
	l.m.ProbeStart(metrics.Probe{Workload: name, SyncCommit: cfg.SyncCommit, Rate: cfg.Rate})
	show := cfg.OnSecond
	cfg.OnSecond = func(s result.Second, v driver.Live) {
		l.m.Live(v)
		if show != nil {
			show(s, v)
		}
	}
	cfg.OnSummary = l.m.Second
	return cfg
}

// probeDone records the probe's result (nil: none): its books become the counters.
func (l *liveMetrics) probeDone(p *result.Probe) {
	if l != nil {
		l.m.ProbeEnd(p)
	}
}

// sweep says the search starts sweep i of n.
func (l *liveMetrics) sweep(i, n int) {
	if l != nil {
		l.m.Sweep(i, n)
	}
}

// searchProbe says the search starts its probe n with bracket b.
func (l *liveMetrics) searchProbe(n int, b result.Bracket) {
	if l != nil {
		l.m.SearchProbe(n, b)
	}
}

// judged records the search's verdict on its last probe and its bracket after it.
func (l *liveMetrics) judged(v result.Verdict, b result.Bracket) {
	if l != nil {
		l.m.Verdict(v)
		l.m.Bracket(b)
	}
}
