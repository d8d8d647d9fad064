// Package metrics serves a run's or a search's live figures as OpenMetrics (Prometheus's
// exposition format) over HTTP, for --metrics-addr: the books of every probe as counters
// by phase (offered, committed, failed by class, rejected), latency and queue-wait
// histograms, the current probe's rate, sweep and progress, the search's bracket, and the
// server's CPU and wait events as the sampler measured them.
//
// It is fed by the callbacks the driver and the search already have: the driver's
// summary of each second of the series (counters and histograms), its live totals once
// a second (the current probe's gauges), and the result of each probe, whose books
// replace the seconds' sums so that at the end of every probe the measured window's
// counters equal the results file's books exactly. Nothing is added to the driver's
// per-arrival path. docs/metrics.md lists every metric.
package metrics
