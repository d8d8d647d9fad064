package observe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// ObserverAppName is the application_name of the Sampler's own connection, so it is never
// mistaken for one of the measured backends.
const ObserverAppName = "pgceiling-observer"

// CPUEvent is the wait-share row for active samples with no wait event: the backend was
// running on a CPU (or waiting for one).
const CPUEvent = "CPU"

// SamplerOptions configures a Sampler.
type SamplerOptions struct {
	// DSN of the server; the Sampler opens its own connection to it.
	DSN string
	// AppName is the application_name of the backends to sample. Empty: "pgceiling".
	AppName string
	// Interval between wait-event samples. Zero: 100 ms.
	Interval time.Duration
	// Local: what is known of where the server runs (see LocalInfo).
	Local LocalInfo
	// QueryTimeout bounds each of the Sampler's queries. Zero: 2 s.
	QueryTimeout time.Duration
}

// Sampler implements driver.Observer: between Start and Stop it samples the wait events of
// pgceiling's active backends from pg_stat_activity every Interval, and on Stop it returns
// those shares with the deltas of pg_stat_wal, checkpoints, backend buffer writes,
// autovacuum runs on pgceiling's tables and, when the server is local, its CPU time.
// It uses one connection of its own, which the driver does not measure. A Sampler can
// observe many probes in turn (Start, Stop, Start, Stop...) and must be Closed.
// Its methods must not be called concurrently.
type Sampler struct {
	opt        SamplerOptions
	conn       *pgx.Conn
	cfg        *pgx.ConnConfig
	versionNum int
	postmaster int // 0: not local
	cores      int

	// per probe
	running bool
	stop    chan struct{}
	done    chan struct{}
	start   snapshot
	began   time.Time
	// owned by the sampling goroutine until done is closed
	counts  map[string]int64
	spans   timeBuckets // the same samples by when they were taken, for WaitGrowth
	ticks   int64
	host    []hostTicks // the machine's CPU counters, read about once a second from Start
	hostEnd bool        // a reading failed: the series ends where it was
	loopErr error
}

// hostTicks is one reading of the machine's steal and total CPU ticks.
type hostTicks struct{ steal, total int64 }

// snapshot is the cumulative counters read at Start and Stop.
type snapshot struct {
	wal         result.WAL
	checkpoints int64
	buffersBack int64
	autovacuums int64
	cpuSeconds  float64
	cpuOK       bool
	hostBusy    int64 // this machine's CPU ticks, every process
	hostTotal   int64
	hostSteal   int64
	hostOK      bool
}

// NewSampler connects the observer's connection and learns the server's version and
// whether it runs on this machine.
func NewSampler(ctx context.Context, opt SamplerOptions) (*Sampler, error) {
	if opt.AppName == "" {
		opt.AppName = "pgceiling"
	}
	if opt.Interval <= 0 {
		opt.Interval = 100 * time.Millisecond
	}
	if opt.QueryTimeout <= 0 {
		opt.QueryTimeout = 2 * time.Second
	}
	cfg, err := pgx.ParseConfig(opt.DSN)
	if err != nil {
		return nil, fmt.Errorf("observer: parse DSN: %w", err)
	}
	cfg.RuntimeParams["application_name"] = ObserverAppName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("observer: connect: %w", err)
	}
	s := &Sampler{opt: opt, cfg: cfg, conn: conn}
	s.cores, _ = machine()
	if err := s.learn(ctx); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return s, nil
}

// learn reads the server's version and finds its postmaster when it runs on this machine.
func (s *Sampler) learn(ctx context.Context) error {
	var pmStart time.Time
	var backendPID int
	if err := s.conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
		pg_postmaster_start_time(), pg_backend_pid()`).Scan(&s.versionNum, &pmStart, &backendPID); err != nil {
		return fmt.Errorf("observer: server version: %w", err)
	}
	s.postmaster = s.opt.Local.PostmasterPID
	if s.postmaster == 0 || !alive(s.postmaster) {
		s.postmaster = localPostmaster("/proc", backendPID, pmStart)
	}
	return nil
}

// alive reports whether pid is a running process on this machine.
func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil
}

// ensureConn reconnects the observer's connection when the server dropped it (a restart,
// a terminated backend), so one fault does not blind every later probe.
func (s *Sampler) ensureConn(ctx context.Context) error {
	if !s.conn.IsClosed() {
		pctx, cancel := context.WithTimeout(ctx, s.opt.QueryTimeout)
		err := s.conn.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
	}
	_ = s.conn.Close(ctx)
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("observer: reconnect: %w", err)
	}
	s.conn = conn
	return s.learn(ctx)
}

// Local reports whether the server runs on this machine, so its CPU time is measured.
func (s *Sampler) Local() bool { return s.postmaster != 0 }

// Close stops any sampling and closes the observer's connection.
func (s *Sampler) Close(ctx context.Context) error {
	s.halt()
	return s.conn.Close(ctx)
}

// Start takes the cumulative counters and starts sampling wait events in the background.
// Cancelling ctx stops the sampling (Stop still returns what was gathered).
func (s *Sampler) Start(ctx context.Context) error {
	if s.running {
		return errors.New("observer: Start called twice without Stop")
	}
	if err := s.ensureConn(ctx); err != nil {
		return err
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return fmt.Errorf("observer: start: %w", err)
	}
	s.start, s.began = snap, time.Now()
	s.counts, s.ticks, s.loopErr, s.host, s.hostEnd = map[string]int64{}, 0, nil, nil, false
	if snap.hostOK {
		s.host = []hostTicks{{snap.hostSteal, snap.hostTotal}}
	}
	s.spans = newTimeBuckets(s.opt.Interval)
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.running = true
	go s.loop(ctx)
	return nil
}

// loop samples until Stop or ctx is cancelled. Each query runs to its end under its own
// timeout (a cancelled query would break the connection), so stopping waits at most for
// one cheap query.
func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.opt.Interval)
	defer t.Stop()
	for {
		if err := s.sample(ctx); err != nil {
			s.loopErr = err
			return
		}
		s.readHost()
		select {
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample adds one pg_stat_activity sample of the active pgceiling backends.
func (s *Sampler) sample(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.QueryTimeout)
	defer cancel()
	rows, err := s.conn.Query(qctx, `SELECT coalesce(wait_event_type, ''), coalesce(wait_event, ''), count(*)
		FROM pg_catalog.pg_stat_activity
		WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()
		GROUP BY 1, 2`, s.opt.AppName)
	if err != nil {
		return fmt.Errorf("observer: sample pg_stat_activity: %w", err)
	}
	defer rows.Close()
	at := time.Since(s.began)
	for rows.Next() {
		var typ, ev string
		var n int64
		if err := rows.Scan(&typ, &ev, &n); err != nil {
			return fmt.Errorf("observer: sample pg_stat_activity: %w", err)
		}
		name := eventName(typ, ev)
		s.counts[name] += n
		s.spans.add(at, name, n)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("observer: sample pg_stat_activity: %w", err)
	}
	s.ticks++
	return nil
}

// readHost reads the machine's CPU counters once a second of the window has passed since
// the last reading (the first reading is Start's), for Observation.HostStealSeries. A
// reading that fails ends the series: a gap would shift every later second.
func (s *Sampler) readHost() {
	if len(s.host) == 0 || s.hostEnd || time.Since(s.began) < time.Duration(len(s.host))*time.Second {
		return
	}
	_, steal, total, err := hostCPU("/proc")
	if err != nil {
		s.hostEnd = true
		return
	}
	s.host = append(s.host, hostTicks{steal, total})
}

// stealSeries turns readings about a second apart into the share of each second's CPU
// ticks that were steal, rounded to 0.1 % (a tick is 0.5 % of two cores' second).
func stealSeries(h []hostTicks) []float64 {
	if len(h) < 2 {
		return nil
	}
	out := make([]float64, 0, len(h)-1)
	for i := 1; i < len(h); i++ {
		share := 0.0
		if d := h[i].total - h[i-1].total; d > 0 {
			share = math.Round(1000*float64(h[i].steal-h[i-1].steal)/float64(d)) / 1000
		}
		out = append(out, min(max(share, 0), 1))
	}
	return out
}

func eventName(typ, ev string) string {
	if typ == "" && ev == "" {
		return CPUEvent
	}
	return typ + ":" + ev
}

// halt stops the sampling goroutine and waits for it.
func (s *Sampler) halt() {
	if !s.running {
		return
	}
	close(s.stop)
	<-s.done
	s.running = false
}

// Stop ends sampling and returns the observation of the window since Start. committed is
// the number of transactions committed in the window, for the per-transaction figures.
// Its final queries run even when ctx is already cancelled (an interrupted probe keeps
// its observation), bounded by the query timeout. On an error the observation, when not
// nil, still holds what was gathered (the wait events).
func (s *Sampler) Stop(ctx context.Context, committed int64) (*result.Observation, error) {
	if !s.running {
		return nil, errors.New("observer: Stop called without Start")
	}
	s.halt()
	elapsed := time.Since(s.began)
	o := &result.Observation{
		SampleIntervalMs: float64(s.opt.Interval) / float64(time.Millisecond),
		Waits:            shares(s.counts),
		ServerLocal:      s.postmaster != 0,
		Ticks:            s.ticks,
		WaitGrowth:       s.spans.growth(elapsed),
	}
	for _, w := range o.Waits {
		o.Samples += w.Samples
	}
	end, err := s.snapshot(context.WithoutCancel(ctx))
	if err != nil {
		// Keep the wait events gathered so far; the deltas are unknown.
		o.Bottleneck = Bottleneck(o, nil)
		return o, fmt.Errorf("observer: stop: %w", err)
	}
	o.Checkpoints = end.checkpoints - s.start.checkpoints
	o.BuffersBackend = end.buffersBack - s.start.buffersBack
	o.Autovacuums = end.autovacuums - s.start.autovacuums
	o.WAL = walDelta(s.start.wal, end.wal, committed)
	if s.start.cpuOK && end.cpuOK {
		o.ServerCPUSeconds = max(0, end.cpuSeconds-s.start.cpuSeconds)
		if sec := elapsed.Seconds(); sec > 0 && s.cores > 0 {
			o.ServerCPUShare = o.ServerCPUSeconds / (sec * float64(s.cores))
		}
		if committed > 0 {
			o.ServerCPUPerTxMs = o.ServerCPUSeconds * 1000 / float64(committed)
		}
	}
	if s.start.hostOK && end.hostOK && end.hostTotal > s.start.hostTotal {
		d := float64(end.hostTotal - s.start.hostTotal)
		o.HostCPUShare = float64(end.hostBusy-s.start.hostBusy) / d
		o.HostStealShare = float64(end.hostSteal-s.start.hostSteal) / d
	}
	o.HostStealSeries = stealSeries(s.host)
	o.Bottleneck = Bottleneck(o, nil)
	if s.loopErr != nil {
		return o, fmt.Errorf("observer: sampling stopped early: %w", s.loopErr)
	}
	return o, nil
}

// shares turns sample counts into shares, largest first (ties by name).
func shares(counts map[string]int64) []result.WaitShare {
	var total int64
	for _, n := range counts {
		total += n
	}
	out := make([]result.WaitShare, 0, len(counts))
	for ev, n := range counts {
		out = append(out, result.WaitShare{Event: ev, Samples: n, Share: float64(n) / float64(max(total, 1))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Samples != out[j].Samples {
			return out[i].Samples > out[j].Samples
		}
		return out[i].Event < out[j].Event
	})
	return out
}

func walDelta(a, b result.WAL, committed int64) result.WAL {
	d := result.WAL{Records: b.Records - a.Records, FPI: b.FPI - a.FPI, Bytes: b.Bytes - a.Bytes,
		Writes: b.Writes - a.Writes, Syncs: b.Syncs - a.Syncs,
		WriteMs: b.WriteMs - a.WriteMs, SyncMs: b.SyncMs - a.SyncMs}
	if committed > 0 {
		d.BytesPerTx = float64(d.Bytes) / float64(committed)
		d.SyncsPerTx = float64(d.Syncs) / float64(committed)
	}
	return d
}

// snapshot reads the cumulative counters: pg_stat_wal, checkpoints and backend buffer
// writes (pg_stat_bgwriter before PostgreSQL 17, pg_stat_checkpointer and pg_stat_io from
// 17), autovacuum runs on pgceiling's tables, the server's CPU time when local, and this
// machine's busy CPU time.
func (s *Sampler) snapshot(ctx context.Context) (snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opt.QueryTimeout)
	defer cancel()
	var sn snapshot
	if err := s.conn.QueryRow(ctx, walQuery(s.versionNum)).Scan(&sn.wal.Records, &sn.wal.FPI,
		&sn.wal.Bytes, &sn.wal.Writes, &sn.wal.Syncs, &sn.wal.WriteMs, &sn.wal.SyncMs); err != nil {
		return sn, fmt.Errorf("read WAL statistics: %w", err)
	}
	if err := s.conn.QueryRow(ctx, checkpointQuery(s.versionNum)).Scan(&sn.checkpoints, &sn.buffersBack); err != nil {
		return sn, fmt.Errorf("read checkpoint statistics: %w", err)
	}
	if err := s.conn.QueryRow(ctx, `SELECT coalesce(sum(autovacuum_count), 0)::bigint
		FROM pg_catalog.pg_stat_all_tables WHERE schemaname = 'pgceiling'`).Scan(&sn.autovacuums); err != nil {
		return sn, fmt.Errorf("read autovacuum counts: %w", err)
	}
	if s.postmaster != 0 {
		cpu, err := treeCPU("/proc", s.postmaster)
		sn.cpuSeconds, sn.cpuOK = cpu, err == nil
	}
	busy, steal, total, err := hostCPU("/proc")
	sn.hostBusy, sn.hostSteal, sn.hostTotal, sn.hostOK = busy, steal, total, err == nil
	return sn, nil
}

// walQuery reads pg_stat_wal. From PostgreSQL 18 the write and sync counters moved to
// pg_stat_io (object 'wal').
func walQuery(versionNum int) string {
	if versionNum >= 180000 {
		return `SELECT w.wal_records, w.wal_fpi, w.wal_bytes::bigint,
	coalesce(sum(io.writes), 0)::bigint, coalesce(sum(io.fsyncs), 0)::bigint,
	coalesce(sum(io.write_time), 0)::float8, coalesce(sum(io.fsync_time), 0)::float8
FROM pg_catalog.pg_stat_wal w LEFT JOIN pg_catalog.pg_stat_io io ON io.object = 'wal'
GROUP BY w.wal_records, w.wal_fpi, w.wal_bytes`
	}
	return `SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_write, wal_sync,
	wal_write_time::float8, wal_sync_time::float8 FROM pg_catalog.pg_stat_wal`
}

// checkpointQuery reads checkpoints done and buffers written by backends themselves.
func checkpointQuery(versionNum int) string {
	if versionNum >= 170000 {
		return `SELECT (SELECT num_timed + num_requested FROM pg_catalog.pg_stat_checkpointer),
	(SELECT coalesce(sum(writes), 0)::bigint FROM pg_catalog.pg_stat_io WHERE backend_type = 'client backend')`
	}
	return `SELECT checkpoints_timed + checkpoints_req, buffers_backend FROM pg_catalog.pg_stat_bgwriter`
}
