package driver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// The copy engine: for a workload whose arrivals are rows (workload.Copier), rows that
// arrived wait in one bounded queue and leave it in batches, each written by one COPY on
// one connection. A batch closes when it has CopyBatch rows or when its oldest row has
// waited CopyWait since its intended time, whichever comes first, and starts as soon as
// it closes if a connection is free, else when one frees up. The pool-wait rule is the
// transactions' one, per row: a row whose batch has not started on a connection within
// PoolWait of the row's intended time is rejected (pool_timeout) at that moment. Each row
// is booked on its own (books.finish): its queue wait runs from its intended time to its
// batch's start, its latency to its batch's commit, its service time is its batch's. A
// failed batch fails every row in it, in the batch error's class: COPY is all or nothing.
// Batches are not retried (a COPY of new rows into events has no serialization failure or
// deadlock to retry).

// Defaults of Config.CopyBatch and Config.CopyWait: see docs/ingest.md for why.
const (
	DefaultCopyBatch = result.DefaultCopyBatch
	DefaultCopyWait  = result.DefaultCopyWait
)

// closedBy is why a batch closed.
type closedBy uint8

const (
	notDue   closedBy = iota
	byRows            // it has CopyBatch rows
	byWait            // its oldest row waited CopyWait
	byFlush           // no more rows will come
	numClose          // the number of reasons, for counters
)

// rowQueue is the copy engine's waiting rows and the rules that decide, at a moment now,
// which rows are rejected and when the next batch closes. It keeps no clock: the engine
// passes the time, a test a fake one. Not safe for concurrent use (the engine's mutex
// guards it).
type rowQueue struct {
	b     *books
	rows  int           // the most rows in a batch
	wait  time.Duration // the most a batch's oldest row waits for more rows
	limit int           // the most rows that may wait
	q     ring[arrival]
}

// push queues a new row; false when the queue is full (the row is rejected).
func (rq *rowQueue) push(a arrival) bool {
	if rq.q.len() >= rq.limit {
		return false
	}
	rq.q.push(a)
	return true
}

// reap books as rejected every row at the front that may no longer start at now (the
// books' pool-wait rule, books.expired), oldest first.
func (rq *rowQueue) reap(now time.Time) {
	for rq.q.len() > 0 && rq.b.expired(rq.q.front(), now) {
		rq.b.reject(rq.q.pop())
	}
}

// due says whether a batch closes at now, and why: full, its oldest row's wait is over,
// or flush (no more rows will come, so waiting for more is pointless).
func (rq *rowQueue) due(now time.Time, flush bool) closedBy {
	switch {
	case rq.q.len() == 0:
		return notDue
	case rq.q.len() >= rq.rows:
		return byRows
	case now.Sub(rq.b.start.Add(rq.q.front().at)) >= rq.wait:
		return byWait
	case flush:
		return byFlush
	}
	return notDue
}

// take pops the next batch, the oldest rows up to rows, appended to dst.
func (rq *rowQueue) take(dst []arrival) []arrival {
	for n := min(rq.q.len(), rq.rows); n > 0; n-- {
		dst = append(dst, rq.q.pop())
	}
	return dst
}

// next is when something is due next if no row comes: the oldest row's batch closes, or,
// once that passed (all connections busy), the oldest row expires. ok is false when no
// row waits.
func (rq *rowQueue) next(now time.Time) (at time.Time, ok bool) {
	if rq.q.len() == 0 {
		return time.Time{}, false
	}
	a := rq.q.front()
	if closes := rq.b.start.Add(a.at + rq.wait); closes.After(now) {
		return closes, true
	}
	return rq.b.start.Add(rq.b.deadline(a) + time.Microsecond), true
}

// copyEngine runs a Copier's batches over the probe's connections, a goroutine per
// connection through pgx, with a pacer goroutine that closes batches by time and rejects
// rows on time (when every connection is busy, a row is rejected when its pool wait runs
// out, not when a connection frees up).
type copyEngine struct {
	env   *probeEnv
	b     *books
	c     workload.Copier
	doCtx context.Context // never ends, like the pgx engine's: cut works through the sockets

	mu     sync.Mutex
	ready  sync.Cond // signalled for a worker when a batch is due
	rq     rowQueue
	idle   int  // workers waiting for a batch and not yet signalled
	closed bool // no more rows will come
	pace   chan struct{}

	over    bool           // run is done with the workers: cut has nothing to cut (e.mu)
	cancels sync.WaitGroup // cancel requests in flight after cut

	// What the result's Copy section reports.
	closes        [numClose]atomic.Int64 // batches started, by why they closed
	failedBatches atomic.Int64
	winBatches    atomic.Int64 // committed batches whose commit ended inside the measured window
	winRows       atomic.Int64 // their rows
}

// newCopyEngine builds the copy engine and sets every connection's synchronous_commit for
// the session (Copier.SessionSync), before the probe's clock starts. On failure it gives
// the connections back.
func newCopyEngine(ctx context.Context, env *probeEnv, c workload.Copier) (*copyEngine, error) {
	cfg := env.cfg
	refuse := func(err error) (*copyEngine, error) {
		for _, wk := range env.workers {
			wk.release()
		}
		return nil, err
	}
	switch {
	case cfg.Engine == EngineLoop:
		return refuse(fmt.Errorf("engine loop cannot run %s: it speaks no COPY (use --engine pgx or auto)", c.Name()))
	case cfg.CopyBatch < 1 || cfg.CopyWait >= cfg.PoolWait:
		return refuse(fmt.Errorf("probe: a copy batch needs at least one row and a wait below the pool wait %v, got %d rows, %v",
			cfg.PoolWait, cfg.CopyBatch, cfg.CopyWait))
	}
	e := &copyEngine{env: env, b: env.b, c: c, doCtx: context.WithoutCancel(env.ctx), pace: make(chan struct{}, 1),
		rq: rowQueue{b: env.b, rows: cfg.CopyBatch, wait: cfg.CopyWait, limit: env.qcap}}
	e.ready.L = &e.mu
	errs := make(chan error, len(env.workers))
	for _, wk := range env.workers {
		go func() { errs <- e.session(ctx, wk) }()
	}
	var first error
	for range env.workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return refuse(fmt.Errorf("set the copy sessions' synchronous_commit: %w", first))
	}
	return e, nil
}

// session sends the workload's session setting on wk's connection and records it with
// the connection (workload.SetSession), so a later insert sweep on it knows the setting.
func (e *copyEngine) session(ctx context.Context, wk *worker) error {
	return workload.SetSession(ctx, wk.conn.Conn(), e.c)
}

func (e *copyEngine) name() result.Engine { return EnginePGX }
func (e *copyEngine) cores() int          { return 0 }

func (e *copyEngine) run(s *scheduler, issued func()) {
	runPooled(s, issued, e.env.workers, e.work, e.pacer, func() {
		e.mu.Lock()
		e.closed = true // what waits goes out in batches at once, then the workers exit
		e.wake()
		e.mu.Unlock()
	}, func() {
		e.mu.Lock()
		e.over = true
		e.mu.Unlock()
		e.cancels.Wait()
	})
}

// offer queues a new row. Its depth is every row waiting, itself included: a row waits
// for its batch to close as well as for a connection.
func (e *copyEngine) offer(a arrival) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.rq.push(a) {
		return e.rq.q.len(), false
	}
	switch {
	case e.rq.q.len() >= e.rq.rows && e.idle > 0:
		e.idle--
		e.ready.Signal()
	case e.rq.q.len() == 1:
		e.nudge() // a new oldest row: the pacer must watch when its batch closes
	}
	return e.rq.q.len(), true
}

func (e *copyEngine) waiting() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rq.q.len()
}

// cut interrupts every batch in flight and sends its backend a cancel request, as the
// pgx engine does; waiting rows are rejected by the workers and the pacer.
func (e *copyEngine) cut() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.over {
		return
	}
	e.wake()
	cutOffAll(e.env.workers, &e.cancels)
}

// wake wakes every waiting worker and the pacer (e.mu held).
func (e *copyEngine) wake() {
	e.idle = 0
	e.ready.Broadcast()
	e.nudge()
}

func (e *copyEngine) nudge() {
	select {
	case e.pace <- struct{}{}:
	default:
	}
}

// pacer closes batches whose wait is over for an idle worker and rejects rows whose pool
// wait ran out, until no row waits and none will come.
func (e *copyEngine) pacer() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		e.mu.Lock()
		now := time.Now()
		e.rq.reap(now)
		if e.idle > 0 && e.rq.due(now, e.closed) != notDue {
			e.idle--
			e.ready.Signal()
		}
		done := e.rq.q.len() == 0 && (e.closed || e.b.cut.Load())
		at, ok := e.rq.next(now)
		e.mu.Unlock()
		switch {
		case done:
			return
		case ok:
			timer.Reset(max(0, time.Until(at)))
			select {
			case <-timer.C:
			case <-e.pace:
				timer.Stop()
			}
		default:
			<-e.pace
		}
	}
}

// take waits for the next batch and appends its rows to dst; false when no row waits and
// none will come.
func (e *copyEngine) take(dst []arrival) ([]arrival, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		now := time.Now()
		e.rq.reap(now)
		if by := e.rq.due(now, e.closed || e.b.cut.Load()); by != notDue {
			e.closes[by].Add(1)
			dst = e.rq.take(dst)
			if e.idle > 0 && e.rq.due(now, e.closed) != notDue { // another batch is due already
				e.idle--
				e.ready.Signal()
			}
			e.nudge() // a new oldest row, whose batch closes sooner than the pacer may be waiting for
			return dst, true
		}
		if e.rq.q.len() == 0 && (e.closed || e.b.cut.Load()) {
			return dst, false
		}
		e.idle++
		e.nudge() // the pacer must now watch for a batch that closes by time for this worker
		e.ready.Wait()
	}
}

// work is one connection's goroutine: it writes batches until no more rows will come.
func (e *copyEngine) work(wk *worker) {
	defer wk.release()
	b := e.b
	batch := make([]arrival, 0, e.rq.rows)
	waits := make([]time.Duration, 0, e.rq.rows)
	for {
		var ok bool
		if batch, ok = e.take(batch[:0]); !ok {
			return
		}
		begin := time.Now()
		rows := batch[:0]
		waits = waits[:0]
		for _, a := range batch { // the pool-wait rule, per row; after the drain ran out, all are rejected
			if wait, ok := b.admit(a, begin); ok {
				rows, waits = append(rows, a), append(waits, wait)
			}
		}
		if len(rows) == 0 {
			continue
		}
		j := &wk.job
		book := func(err error, closed bool, end time.Time) {
			for i, a := range rows {
				j.a, j.begin, j.wait, j.tries = a, begin, waits[i], 1
				b.finish(j, &wk.sheet, err, closed, end)
			}
		}
		if wk.conn == nil {
			if err := e.reconnect(wk); err != nil {
				for i, a := range rows {
					j.a, j.begin, j.wait = a, begin, waits[i]
					b.noConn(j, &wk.sheet, err)
				}
				continue
			}
		}
		wk.setBusy(true)
		_, err := e.c.Copy(e.doCtx, wk.conn.Conn(), len(rows))
		wk.setBusy(false)
		end := time.Now()
		closed := wk.conn.Conn().IsClosed()
		book(err, closed, end)
		e.count(err, len(rows), end)
		if err != nil && (closed || Classify(err) == result.Connection) {
			wk.release() // the pool destroys a closed connection; the next batch reconnects
		}
	}
}

// reconnect gives wk a new connection with the session setting, within the pool wait.
func (e *copyEngine) reconnect(wk *worker) error {
	ctx, cancel := context.WithTimeout(e.env.ctx, e.env.cfg.PoolWait)
	defer cancel()
	c, err := e.env.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	wk.hold(c)
	if err := e.session(ctx, wk); err != nil {
		wk.release()
		return err
	}
	return nil
}

// count books a batch for the result's Copy section.
func (e *copyEngine) count(err error, rows int, end time.Time) {
	if err != nil {
		e.failedBatches.Add(1)
		return
	}
	if at := end.Sub(e.b.start); at >= e.b.cfg.Warmup && at < e.b.windowEnd() {
		e.winBatches.Add(1)
		e.winRows.Add(int64(rows))
	}
}

// fillResult writes the Copy section of p, once the probe has ended and p.MeasuredS is set.
func (e *copyEngine) fillResult(p *result.Probe) {
	c := &result.CopyBatches{MaxRows: e.rq.rows, MaxWaitMs: float64(e.rq.wait.Microseconds()) / 1000,
		Batches: e.winBatches.Load(), Rows: e.winRows.Load(), Failed: e.failedBatches.Load(),
		ByRows: e.closes[byRows].Load(), ByWait: e.closes[byWait].Load(), ByFlush: e.closes[byFlush].Load()}
	if p.MeasuredS > 0 {
		c.BatchRate = float64(c.Batches) / p.MeasuredS
	}
	if c.Batches > 0 {
		c.MeanRows = float64(c.Rows) / float64(c.Batches)
	}
	p.Copy = c
}
