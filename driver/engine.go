package driver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/workload"

	"github.com/pgceiling/pgceiling/result"
)

// engine drives the probe's connections: it takes the arrivals the scheduler issues and
// runs each one's transaction on a connection, booking every outcome through the books
// (probeEnv.b). The engines differ only in how they wait: the pgx engine with a goroutine
// per connection over pgx, the loop engine with k loops, each one goroutine on its own
// thread over epoll and its own wire layer.
// What an arrival's outcome is (the pool-wait rule, the retry rule, the booking) and how
// its transaction runs (workload.Txn) they share.
type engine interface {
	// name is the engine's Config.Engine value, recorded in the result.
	name() result.Engine
	// cores is how many cores (GOMAXPROCS) the engine runs on, fixed for the probe (the
	// loop engine: one per loop), or 0 when Config.Threads sizes them (the pgx engine).
	cores() int
	// run issues the probe's arrivals with s (which offers each to the engine), calls
	// issued once no more will come, and returns when every arrival it was offered has
	// an outcome and every connection it holds is given back.
	run(s *scheduler, issued func())
	// offer queues a new arrival, from the goroutine that issued it. It returns how many
	// offered arrivals wait for a connection, this one included, and false when the
	// queue is full (the arrival is rejected).
	offer(a arrival) (depth int, queued bool)
	// waiting is how many offered arrivals wait for a connection now; any goroutine.
	waiting() int
	// cut ends the drain, from the probe's goroutine after books.cut is set: nothing
	// more starts, waiting arrivals are rejected, in-flight transactions are cut off and
	// booked as cancelled. run returns soon after.
	cut()
}

var (
	_ engine = (*pgxEngine)(nil)
	_ engine = (*loopEngine)(nil)
	_ engine = (*copyEngine)(nil)
)

// probeEnv is what an engine gets from the probe.
type probeEnv struct {
	pool    *pgxpool.Pool
	w       workload.Workload
	script  workload.Script // w, when it is a script
	cfg     Config
	b       *books
	workers []*worker       // one per connection, each holding its connection; the engine gives them back
	qcap    int             // the bound on waiting arrivals
	ctx     context.Context // ends at the end of the drain (reconnections use it)
	fail    func(reason string)
}

// newEngine builds the engine Config.Engine asks for: the loop when it is allowed and
// can run, else pgx.
func newEngine(ctx context.Context, env *probeEnv) (engine, error) {
	if c, ok := env.w.(workload.Copier); ok { // rows in batches of COPY: the copy engine, over pgx
		return newCopyEngine(ctx, env, c)
	}
	if env.cfg.Engine == EnginePGX {
		return newPGXEngine(env), nil
	}
	why := loopAvailable(env.pool, env.w)
	if why == "" { // newLoop finds sockets it cannot drive (TLS)
		e, err := newLoopEngine(ctx, env)
		if err == nil {
			return e, nil
		}
		why = err.Error()
	}
	if env.cfg.Engine == EngineLoop {
		for _, wk := range env.workers {
			wk.release()
		}
		return nil, fmt.Errorf("engine loop cannot run: %s (use --engine pgx or auto)", why)
	}
	return newPGXEngine(env), nil
}

// arrival is one waiting arrival: its intended offset from the probe start.
type arrival struct{ at time.Duration }

// job is one arrival on a connection, from the moment a connection takes it to its
// outcome.
type job struct {
	a     arrival
	begin time.Time     // when a connection took it
	wait  time.Duration // from its intended time to begin
	tries int
	txn   workload.Txn // a script's transaction
	seed  rand.PCG     // a plain workload's RNG state at its first try
}

// start makes a the job of wk's connection and draws its values, once per arrival: a
// script's transaction by Txn.Start, whose Begin a retry calls again; a plain workload
// draws from wk's RNG in Do, whose state is kept so that a retry (replay) draws the same
// values again. Either way a retry sends the same transaction, as an application
// retries its request.
func (j *job) start(a arrival, now time.Time, wait time.Duration, s workload.Script, wk *worker) {
	j.a, j.begin, j.wait, j.tries = a, now, wait, 1
	if s != nil {
		j.txn.Start(s, wk.rng)
	} else {
		j.seed = *wk.pcg
	}
}

// replay rewinds wk's RNG to where the job's first try began.
func (j *job) replay(wk *worker) { *wk.pcg = j.seed }

// worker is one of the probe's connections with what belongs to it: its RNG, its sheet
// of the books and its job. The engine that drives it owns it for the probe.
type worker struct {
	pcg  *rand.PCG
	rng  *rand.Rand // draws from pcg
	conn *pgxpool.Conn
	sheet
	job job

	mu     sync.Mutex // guards what follows against interrupt and cutOff from the probe's goroutine
	sock   net.Conn   // conn's socket
	cut    bool       // interrupt set sock's deadline
	busy   bool       // a transaction is in flight (the pgx engine)
	doomed bool       // cut off mid-transaction: the connection is closed, never given back
}

func newWorker(seed int64, i int) *worker {
	pcg := rand.NewPCG(uint64(seed), uint64(1_000_000+i))
	return &worker{pcg: pcg, rng: rand.New(pcg), sheet: newSheet()}
}

// hold makes c the worker's connection.
func (wk *worker) hold(c *pgxpool.Conn) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	wk.conn, wk.sock = c, c.Conn().PgConn().Conn()
}

// detach takes the worker's connection away from it, for closing.
func (wk *worker) detach() *pgxpool.Conn {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	c := wk.conn
	wk.conn, wk.sock, wk.cut = nil, nil, false
	return c
}

// release gives the worker's connection back to the pool. A connection interrupted while
// the worker was between transactions is still sound: its deadline is cleared so the
// next probe on the pool can use it. One interrupted mid-statement was closed by pgx, and
// the pool discards it.
func (wk *worker) release() {
	wk.mu.Lock()
	c, sock, cut, doomed := wk.conn, wk.sock, wk.cut, wk.doomed
	wk.conn, wk.sock, wk.doomed = nil, nil, false
	wk.mu.Unlock()
	if c == nil {
		return
	}
	if doomed { // a cancel request is on its way to its backend: the pool must discard it
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.Conn().Close(ctx)
		cancel()
	} else if cut {
		_ = sock.SetDeadline(time.Time{})
	}
	c.Release()
}

// setBusy records whether a transaction is in flight on the worker's connection.
func (wk *worker) setBusy(b bool) {
	wk.mu.Lock()
	wk.busy = b
	wk.mu.Unlock()
}

// cutOff interrupts the worker (interrupt) and, when a transaction is in flight, dooms
// its connection and returns it, for a cancel request to its backend; else nil.
func (wk *worker) cutOff() *pgconn.PgConn {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if wk.sock == nil {
		return nil
	}
	wk.cut = true
	_ = wk.sock.SetDeadline(time.Now())
	if !wk.busy {
		return nil
	}
	wk.doomed = true
	return wk.conn.Conn().PgConn()
}

// interrupt makes the worker's in-flight statement, if any, fail at once: its socket's
// deadline passes, so the read or write in progress returns a timeout.
func (wk *worker) interrupt() {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if wk.sock != nil {
		wk.cut = true
		_ = wk.sock.SetDeadline(time.Now())
	}
}

// scheduler issues the probe's arrivals at their intended times, from one goroutine per
// stream (run) or from the loops' goroutines (due, each over the streams it owns), and
// offers each to the engine.
type scheduler struct {
	b       *books
	streams []*stream
	prog    []atomic.Int64 // per stream: every arrival before this offset was issued
	offer   func(arrival) (int, bool)
}

func newScheduler(b *books, cfg Config) *scheduler {
	s := &scheduler{b: b, prog: make([]atomic.Int64, cfg.streamSlots())}
	for i := range cfg.Streams {
		s.streams = append(s.streams, newStream(cfg.Rate/float64(cfg.Streams), cfg.Seed, i).withRamp(cfg.ramp()))
	}
	for i := cfg.Streams; i < len(s.prog); i++ {
		s.prog[i].Store(math.MaxInt64) // a stream an auto loop engine may add (loopEngine.grow)
	}
	return s
}

// progress is the offset before which every arrival was issued.
func (s *scheduler) progress() int64 {
	p := int64(math.MaxInt64)
	for i := range s.prog {
		p = min(p, s.prog[i].Load())
	}
	return p
}

// over reports whether at is past the end of issuing: the window's end or the stop offset.
func (s *scheduler) over(at time.Duration) bool {
	sa := s.b.stop.offset()
	return at >= s.b.end || (sa >= 0 && at >= sa)
}

// emit books one arrival of stream i and offers it with offer.
func (s *scheduler) emit(i int, at time.Duration, offer func(arrival) (int, bool)) {
	lag := time.Since(s.b.start.Add(at))
	s.b.arrive(i, at, lag)
	depth, ok := offer(arrival{at})
	s.b.offered(arrival{at}, lag, depth, ok)
}

// run issues stream i's arrivals at their intended times until the window's end or the
// stop offset (a goroutine per stream).
func (s *scheduler) run(i int) {
	st := s.streams[i]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	stop := s.b.stop.ch
	for {
		at := st.peek()
		s.prog[i].Store(int64(at))
		if s.over(at) {
			break
		}
		if wait := time.Until(s.b.start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-stop:
				timer.Stop()
				stop = nil
				continue // re-check against the stop offset
			}
		}
		st.advance()
		s.emit(i, at, s.offer)
	}
	s.prog[i].Store(math.MaxInt64)
}

// due emits every arrival of the streams own that is due, earliest first across them,
// offering each with offer, and returns the next one's offset and whether any of them has
// arrivals left (a loop's goroutine; no two loops own the same stream).
func (s *scheduler) due(own []int, offer func(arrival) (int, bool)) (time.Duration, bool) {
	now := time.Since(s.b.start)
	for {
		best, next := -1, time.Duration(math.MaxInt64)
		for _, i := range own {
			at := s.streams[i].peek()
			if s.over(at) {
				s.prog[i].Store(math.MaxInt64)
				continue
			}
			s.prog[i].Store(int64(at))
			if at < next {
				best, next = i, at
			}
		}
		if best < 0 {
			return 0, false
		}
		if next > now {
			return next, true
		}
		s.streams[best].advance()
		s.emit(best, next, offer)
	}
}
