package driver

import (
	"context"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/pgceiling/pgceiling/result"
)

// loopEngine is the event-loop engine: k loops (see loop_linux.go), each on its own
// thread with its own epoll, connections and streams, sharing one pool through the lobby.
// With Threads 0 (auto) it starts with one loop and grow adds loops as they get busy.
type loopEngine struct {
	env     *probeEnv
	all     []*loop      // capacity for every loop the probe may run; all[:n] run (loops)
	n       atomic.Int32 // loops added so far; all[i] is written before n passes i
	lobby   lobby
	issuing atomic.Int32 // loops still issuing arrivals

	auto   bool // Threads 0: grow adds loops
	max    int  // the most loops (Config.loopsMax)
	per    int  // streams per loop
	sched  *scheduler
	issued func()
	wg     sync.WaitGroup // the loops' goroutines

	// changes are the rate changes published so far (grow), in order; written only with
	// every running loop's issueMu held, so a loop reads it with its own held.
	changes []rateChange
	// added is each loop's start: the probe offset from which its streams issue (0 for
	// the loops the probe started with); written by grow on the probe's goroutine.
	added []time.Duration
	// seen is each loop's last busy sample as loopBusy last read it (probe's goroutine).
	seen []busySample

	mu    sync.Mutex
	spare []*slot      // connections a loop above its share handed over, for a loop below it; guarded by mu
	nsp   atomic.Int32 // len(spare)
}

// newLoopEngine builds Config.loops() loops: loop i gets connections i, i+k, ... and
// streams i, i+k, ... (Streams is a multiple of k: withDefaults). With Threads 0 that is
// one loop with every connection and stream; grow adds the others.
func newLoopEngine(ctx context.Context, env *probeEnv) (*loopEngine, error) {
	k := env.cfg.loops()
	e := &loopEngine{env: env, auto: env.cfg.Threads == 0, max: env.cfg.loopsMax(), per: env.cfg.Streams / k}
	e.all = make([]*loop, e.max)
	e.lobby.head.Store(math.MaxInt64)
	for i := range k {
		var wks []*worker
		for j := i; j < len(env.workers); j += k {
			wks = append(wks, env.workers[j])
		}
		lp, err := newLoop(ctx, e, wks, loopStreams(i, k, env.cfg.Streams))
		if err != nil {
			for _, lp := range e.loops() {
				lp.close()
			}
			return nil, err
		}
		e.all[i] = lp
		e.n.Store(int32(i + 1))
		e.added = append(e.added, 0)
	}
	return e, nil
}

func (e *loopEngine) name() result.Engine { return EngineLoop }

// loops is the loops added so far; any goroutine.
func (e *loopEngine) loops() []*loop { return e.all[:e.n.Load()] }

// cores is one per loop: each loop's goroutine keeps its P while it waits in epoll. An
// auto engine starts on one; threads gives each loop grow adds its core.
func (e *loopEngine) cores() int { return len(e.loops()) }

// cut does nothing itself: every loop sees books.cut within loopMaxWait and cancels on
// its own goroutine, which owns its connections.
func (e *loopEngine) cut() {}

// run runs every loop on its own goroutine (each locks itself to its thread), calls
// issued once all of them issue no more, and returns when all have ended, those grow
// added included; then it gives back the connections still on their way between loops.
func (e *loopEngine) run(s *scheduler, issued func()) {
	e.sched, e.issued = s, issued
	e.issuing.Store(int32(len(e.loops())))
	for _, lp := range e.loops() {
		e.start(lp)
	}
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sl := range e.spare {
		sl.wk.release()
	}
	e.spare = nil
	e.nsp.Store(0)
}

// start runs lp on a goroutine of its own.
func (e *loopEngine) start(lp *loop) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		lp.run(e.sched, e.issuedOne)
	}()
}

// issuedOne is a loop's word that it issues no more; the last one calls issued.
func (e *loopEngine) issuedOne() {
	if e.issuing.Add(-1) == 0 {
		e.issued()
	}
}

// offer is never called: each loop issues its own streams and offers their arrivals to
// itself (scheduler.due with loop.offer).
func (e *loopEngine) offer(arrival) (int, bool) {
	panic("driver: the loop engine's arrivals are offered by each loop")
}

// waiting is the arrivals that find no idle connection in their loop, plus the lobby's.
func (e *loopEngine) waiting() int {
	n := e.lobby.len()
	for _, lp := range e.loops() {
		n += int(lp.depth.Load())
	}
	return n
}

// busy is each loop's thread CPU over its wall time, once run has returned.
func (e *loopEngine) busy() []float64 {
	out := make([]float64, 0, len(e.loops()))
	for _, lp := range e.loops() {
		out = append(out, lp.busyFrac)
	}
	return out
}

// addedAt is each loop's start, in seconds from the probe's start (0 for the loops the
// probe started with), once run has returned.
func (e *loopEngine) addedAt() []float64 {
	out := make([]float64, len(e.added))
	for i, at := range e.added {
		out[i] = at.Seconds()
	}
	return out
}

// handOff moves every arrival waiting in from's queue (from has no free connection) to the
// lobby and wakes the loops that have one.
func (e *loopEngine) handOff(from *loop) {
	l := &e.lobby
	l.mu.Lock()
	for from.queue.len() > 0 {
		l.push(from.queue.pop())
	}
	l.sync()
	l.mu.Unlock()
	from.depth.Store(0)
	for _, lp := range e.loops() {
		// A loop publishes its room and then looks at the lobby before it waits; the lobby
		// was filled before its room is read here: one of the two sees the other.
		if lp != from && lp.room.Load() > 0 {
			lp.wake()
		}
	}
}

// lobby is the pool's shared queue: arrivals that waited in a loop with no free
// connection, for whichever loop frees one first. A min-heap by intended time, so the
// earliest waiting arrival of the whole pool starts first and expires first.
type lobby struct {
	mu   sync.Mutex
	h    []arrival    // the heap; guarded by mu
	n    atomic.Int64 // len(h), readable without mu
	head atomic.Int64 // h[0].at, math.MaxInt64 when empty
}

func (l *lobby) len() int { return int(l.n.Load()) }

// front is the earliest waiting arrival's intended offset, as last published.
func (l *lobby) front() (time.Duration, bool) {
	at := l.head.Load()
	return time.Duration(at), at != math.MaxInt64
}

// sync publishes len and head; with mu held.
func (l *lobby) sync() {
	l.n.Store(int64(len(l.h)))
	if len(l.h) == 0 {
		l.head.Store(math.MaxInt64)
	} else {
		l.head.Store(int64(l.h[0].at))
	}
}

// popBefore takes the earliest arrival when it is earlier than limit.
func (l *lobby) popBefore(limit time.Duration) (arrival, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.h) == 0 || l.h[0].at >= limit {
		return arrival{}, false
	}
	a := l.pop()
	l.sync()
	return a, true
}

// expire rejects the arrivals that waited out the pool wait (all, once books.cut is set).
func (l *lobby) expire(b *books, now time.Time) {
	if l.len() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.h) > 0 && b.expired(l.h[0], now) {
		b.reject(l.pop())
	}
	l.sync()
}

// push and pop keep the heap; with mu held.
func (l *lobby) push(a arrival) {
	h := append(l.h, a)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	l.h = h
}

func (l *lobby) pop() arrival {
	h := l.h
	a := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].at < h[c].at {
			c++
		}
		if h[i].at <= h[c].at {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	l.h = h
	return a
}

// wakeEvent is the epoll data of a loop's wake pipe (slots are 0, 1, ...).
const wakeEvent = -1

var wakeByte = []byte{1}

// openWake makes the loop's wake pipe and registers its read end.
func (lp *loop) openWake() error {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		return os.NewSyscallError("pipe2", err)
	}
	lp.wakeR, lp.wakeW = p[0], p[1]
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: wakeEvent}
	if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, lp.wakeR, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// wake makes the loop's wait in epoll return (another loop's goroutine).
func (lp *loop) wake() {
	if lp.woken.CompareAndSwap(false, true) {
		_, _ = rawWrite(lp.wakeW, wakeByte)
	}
}

// drainWake empties the wake pipe (the loop's goroutine); the dispatch that follows
// looks at the lobby.
func (lp *loop) drainWake() {
	lp.woken.Store(false)
	var buf [64]byte
	for {
		if n, e := rawRead(lp.wakeR, buf[:]); e != syscall.EINTR && (e != 0 || n < len(buf)) {
			return
		}
	}
}

// close closes the loop's epoll and wake pipe.
func (lp *loop) close() {
	for _, fd := range []*int{&lp.epfd, &lp.wakeR, &lp.wakeW} {
		if *fd >= 0 {
			syscall.Close(*fd)
			*fd = -1
		}
	}
}

// threadCPU is the calling thread's CPU time so far (the loop's, locked to its thread).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
