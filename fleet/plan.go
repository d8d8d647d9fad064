package fleet

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// seedStride separates the drivers' seeds: driver i's is the plan's base + i·seedStride.
const seedStride = 1_000_003

// Spec is what the followers need to run the leader's workload exactly as it does: the
// workload and the sessions. The leader sets it per sweep (Leader.SetSpec).
type Spec struct {
	Workload string            `json:"workload"`
	Params   workload.Params   `json:"params"`
	Session  driver.Session    `json:"session"`
	ExecMode pgx.QueryExecMode `json:"exec_mode"`
}

// Plan is one probe as every driver runs it.
type Plan struct {
	Probe    int     `json:"probe"`
	Drivers  int     `json:"drivers"`
	Total    float64 `json:"total_rate"` // the fleet's offered rate
	Rate     float64 `json:"rate"`       // each driver's: Total / Drivers
	SeedBase int64   `json:"seed_base"`
	// StartAt is the probe's first instant on the server's clock.
	StartAt     time.Time         `json:"start_at"`
	Warmup      time.Duration     `json:"warmup"`
	Duration    time.Duration     `json:"duration"`
	Conns       int               `json:"conns"`
	PoolWait    time.Duration     `json:"pool_wait"`
	MaxTries    int               `json:"max_tries"`
	Streams     int               `json:"streams"`
	Drain       time.Duration     `json:"drain"`
	GoneAfter   time.Duration     `json:"gone_after"`
	LagBound    time.Duration     `json:"lag_bound"`
	Threads     int               `json:"threads"`
	Engine      result.Engine     `json:"engine"`
	SyncCommit  result.SyncCommit `json:"sync_commit"`
	ErrorBudget int64             `json:"error_budget"` // each driver's share; 0 = no early stop
	Spec        Spec              `json:"spec"`
}

// newPlan is probe n of cfg (the fleet's totals) split over drivers.
func newPlan(n, drivers int, cfg driver.Config, spec Spec, startAt time.Time) Plan {
	budget := int64(0)
	if cfg.ErrorBudget > 0 {
		budget = (cfg.ErrorBudget + int64(drivers) - 1) / int64(drivers)
	}
	streams := 0
	if cfg.Streams > 0 {
		streams = max(1, cfg.Streams/drivers)
	}
	return Plan{Probe: n, Drivers: drivers, Total: cfg.Rate, Rate: cfg.Rate / float64(drivers), SeedBase: cfg.Seed,
		StartAt: startAt, Warmup: cfg.Warmup, Duration: cfg.Duration, Conns: cfg.Conns, PoolWait: cfg.PoolWait,
		MaxTries: cfg.MaxTries, Streams: streams, Drain: cfg.Drain, GoneAfter: cfg.GoneAfter, LagBound: cfg.LagBound,
		Threads: cfg.Threads, Engine: cfg.Engine, SyncCommit: cfg.SyncCommit, ErrorBudget: budget, Spec: spec}
}

// config is driver id's share of the plan, starting at the plan's instant on a clock
// offset from the server's by off (server minus local).
func (p Plan) config(id int, off time.Duration) driver.Config {
	return driver.Config{Rate: p.Rate, Warmup: p.Warmup, Duration: p.Duration, Conns: p.Conns, PoolWait: p.PoolWait,
		Seed: p.SeedBase + int64(id)*seedStride, MaxTries: p.MaxTries, Streams: p.Streams, ErrorBudget: p.ErrorBudget,
		Drain: p.Drain, GoneAfter: p.GoneAfter, LagBound: p.LagBound, Threads: p.Threads, Engine: p.Engine,
		SyncCommit: p.SyncCommit, StartAt: p.StartAt.Add(-off)}
}

// end is when every driver's probe must be over on the server's clock, drain included.
func (p Plan) end() time.Time {
	drain := p.Drain
	if drain == 0 {
		drain = p.PoolWait + 5*time.Second
	}
	return p.StartAt.Add(p.Warmup + p.Duration + drain)
}

// Report is one driver's upload: its probe and its measured window's histograms.
type Report struct {
	Driver int           `json:"driver"`
	Host   string        `json:"host,omitempty"`
	Probe  *result.Probe `json:"probe,omitempty"`
	// Latency, Service and QueueWait are HdrHistogram's compressed V2 encoding (lossless).
	Latency   string  `json:"latency,omitempty"`
	Service   string  `json:"service,omitempty"`
	QueueWait string  `json:"queue_wait,omitempty"`
	OffsetMs  float64 `json:"offset_ms"`
	RTTMs     float64 `json:"rtt_ms"`
	// LateMs is how late the driver's probe started after the plan's instant (its clock).
	LateMs float64 `json:"late_ms"`
	Error  string  `json:"error,omitempty"` // the driver could not run the probe
}

// hists are a probe's three histograms.
type hists struct{ lat, svc, wait *hdrhistogram.Histogram }

func (h *hists) keep(lat, svc, wait *hdrhistogram.Histogram) { h.lat, h.svc, h.wait = lat, svc, wait }

// encode puts h into r.
func (h hists) encode(r *Report) error {
	for _, x := range []struct {
		h   *hdrhistogram.Histogram
		dst *string
	}{{h.lat, &r.Latency}, {h.svc, &r.Service}, {h.wait, &r.QueueWait}} {
		if x.h == nil {
			continue
		}
		b, err := x.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return fmt.Errorf("encode a histogram: %w", err)
		}
		*x.dst = string(b)
	}
	return nil
}

// decode reads r's histograms (nil where r has none).
func (r *Report) decode() (hists, error) {
	var h hists
	for _, x := range []struct {
		b   string
		dst **hdrhistogram.Histogram
	}{{r.Latency, &h.lat}, {r.Service, &h.svc}, {r.QueueWait, &h.wait}} {
		if len(x.b) == 0 {
			continue
		}
		d, err := hdrhistogram.Decode([]byte(x.b))
		if err != nil {
			return h, fmt.Errorf("driver %d's histogram: %w", r.Driver, err)
		}
		*x.dst = d
	}
	return h, nil
}
