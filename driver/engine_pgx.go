package driver

import (
	"context"
	"sync"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// pgxEngine runs a goroutine per connection over pgx: every --exec-mode, TLS, any
// workload (a plain Workload's Do as well as a Script), and as many cores as GOMAXPROCS.
// Waiting arrivals are timestamps in a bounded FIFO; a reaper goroutine rejects the front
// one as soon as it has waited out the pool wait, so a rejection is booked on time, not
// when a connection frees up.
type pgxEngine struct {
	env   *probeEnv
	b     *books
	doCtx context.Context // never ends, so pgx arms no context watcher per statement

	mu     sync.Mutex
	ready  sync.Cond // signalled for a worker when an arrival comes for it
	q      ring[arrival]
	idle   int  // workers waiting for an arrival and not yet signalled
	armed  bool // the reaper waits for the front's deadline
	closed bool // no more arrivals will come
	reap   chan struct{}

	over    bool           // run is done with the workers: cut has nothing to cut (e.mu)
	cancels sync.WaitGroup // cancel requests in flight after cut
}

func newPGXEngine(env *probeEnv) *pgxEngine {
	e := &pgxEngine{env: env, b: env.b, doCtx: context.WithoutCancel(env.ctx), reap: make(chan struct{}, 1)}
	e.ready.L = &e.mu
	return e
}

func (e *pgxEngine) name() result.Engine { return EnginePGX }
func (e *pgxEngine) cores() int          { return 0 }

func (e *pgxEngine) run(s *scheduler, issued func()) {
	runPooled(s, issued, e.env.workers, e.work, e.reaper, func() {
		e.mu.Lock()
		e.closed = true // workers finish the queue, then exit
		e.wake()
		e.mu.Unlock()
	}, func() {
		e.mu.Lock()
		e.over = true // every cancel request cut sent was counted before this
		e.mu.Unlock()
		e.cancels.Wait()
	})
}

// runPooled is the run of an engine whose workers each drive one connection from a
// shared queue (the pgx and copy engines): it starts the workers and side (a reaper or a
// pacer), runs the schedule's streams, and once they have issued everything calls
// issued, closes the queue (closeQueue), waits for the workers and side, then calls over.
func runPooled(s *scheduler, issued func(), workers []*worker, work func(*worker), side, closeQueue, over func()) {
	var running, scheds sync.WaitGroup
	for _, wk := range workers {
		running.Add(1)
		go func() { defer running.Done(); work(wk) }()
	}
	sided := make(chan struct{})
	go func() { defer close(sided); side() }()
	for i := range s.streams {
		scheds.Add(1)
		go func() { defer scheds.Done(); s.run(i) }()
	}
	scheds.Wait()
	issued()
	closeQueue()
	running.Wait()
	<-sided
	over()
}

func (e *pgxEngine) offer(a arrival) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.q.len() >= e.env.qcap {
		return e.depth(), false
	}
	e.q.push(a)
	depth := e.depth()
	if e.idle > 0 {
		e.idle--
		e.ready.Signal()
	} else if !e.armed {
		e.nudge() // it will wait: the reaper must watch its deadline
	}
	return depth, true
}

// depth is how many queued arrivals find no idle worker (e.mu held).
func (e *pgxEngine) depth() int { return max(0, e.q.len()-e.idle) }

func (e *pgxEngine) waiting() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.depth()
}

// cut interrupts every connection's statement in flight through its socket's deadline,
// and sends its backend a cancel request, as the loop does, so the server stops the
// statement instead of running on, holding its locks, for up to the statement timeout;
// such a connection is closed, not given back.
func (e *pgxEngine) cut() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.over {
		return
	}
	e.wake()
	cutOffAll(e.env.workers, &e.cancels)
}

// cutOffAll cuts off every worker (worker.cutOff) and sends a cancel request to the backend
// of each one that was mid-transaction, counted in cancels.
func cutOffAll(workers []*worker, cancels *sync.WaitGroup) {
	for _, wk := range workers {
		if pc := wk.cutOff(); pc != nil {
			cancels.Add(1)
			go func() {
				defer cancels.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = pc.CancelRequest(ctx)
			}()
		}
	}
}

// wake wakes every waiting worker and the reaper (e.mu held).
func (e *pgxEngine) wake() {
	e.idle = 0
	e.ready.Broadcast()
	e.nudge()
}

// nudge makes the reaper look at the queue again.
func (e *pgxEngine) nudge() {
	select {
	case e.reap <- struct{}{}:
	default:
	}
}

// take waits for the next arrival; false when there are none and none will come.
func (e *pgxEngine) take() (arrival, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.q.len() == 0 && !e.closed && !e.b.cut.Load() {
		e.idle++
		e.ready.Wait()
	}
	if e.q.len() == 0 {
		return arrival{}, false
	}
	return e.q.pop(), true
}

// reaper rejects waiting arrivals as they expire, until the queue is closed and empty.
func (e *pgxEngine) reaper() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		e.mu.Lock()
		for e.q.len() > 0 && e.b.expired(e.q.front(), time.Now()) {
			e.b.reject(e.q.pop())
		}
		done := e.q.len() == 0 && (e.closed || e.b.cut.Load())
		wait := time.Duration(-1)
		if e.q.len() > 0 {
			wait = max(0, e.b.deadline(e.q.front())-time.Since(e.b.start)+time.Microsecond)
		}
		e.armed = wait >= 0
		e.mu.Unlock()
		switch {
		case done:
			return
		case wait >= 0:
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-e.reap:
				timer.Stop()
			}
		default:
			<-e.reap
		}
	}
}

// work is one connection's goroutine: it runs arrivals until the queue is closed.
func (e *pgxEngine) work(wk *worker) {
	defer wk.release()
	b, env, j := e.b, e.env, &wk.job
	for {
		a, ok := e.take()
		if !ok {
			return
		}
		now := time.Now()
		wait, ok := b.admit(a, now)
		if !ok {
			continue
		}
		j.start(a, now, wait, env.script, wk)
		if wk.conn == nil {
			actx, cancel := context.WithTimeout(env.ctx, env.cfg.PoolWait)
			c, err := env.pool.Acquire(actx)
			cancel()
			if err != nil {
				b.noConn(j, &wk.sheet, err)
				continue
			}
			wk.hold(c)
		}
		var err error
		wk.setBusy(true)
		for {
			err = e.try(wk)
			if !b.retry(j, &wk.sheet, err, !wk.conn.Conn().IsClosed()) {
				break
			}
		}
		wk.setBusy(false)
		closed := wk.conn.Conn().IsClosed()
		if c := b.finish(j, &wk.sheet, err, closed, time.Now()); err != nil && (c == result.Connection || closed) {
			wk.release() // the pool destroys a closed connection; the next arrival reconnects
		}
	}
}

// try runs the job's transaction once: a script through the shared state machine, a plain
// workload through its Do, replaying its RNG on a retry.
func (e *pgxEngine) try(wk *worker) error {
	j := &wk.job
	if e.env.script != nil {
		return j.txn.Run(e.doCtx, wk.conn.Conn())
	}
	if j.tries > 1 {
		j.replay(wk)
	}
	return e.env.w.Do(e.doCtx, wk.conn.Conn(), wk.rng)
}
