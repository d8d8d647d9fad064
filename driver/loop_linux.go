package driver

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/workload"
)

// The event-loop engine: k loops (Config.loops), each one goroutine locked to its own OS
// thread that issues its own arrivals and drives its own connections, pgbench's design
// (a pgbench thread per core, -j). A loop waits for all its sockets at once in its own
// epoll and speaks the extended protocol itself (wireConn, on pgx's pgproto3), so a
// statement costs two system calls and no goroutine switch. The engine with a goroutine
// per connection over pgx spends most of its own CPU in the Go scheduler parking and
// waking goroutines and in pgx's general-purpose layers; see README "Driver engines".
//
// Loop i owns streams i, i+k, i+2k, ... of the scheduler (Streams is a multiple of k, so
// each loop issues an independent Poisson stream of Rate/k, and their sum is the probe's
// Poisson stream of Rate) and connections i, i+k, ... of the pool. The pool stays one
// pool: a loop whose connections are all busy moves its waiting arrivals to the lobby,
// a queue every loop takes from (earliest first) whenever it has a free connection, and
// wakes a loop that has one; so an arrival is rejected only when no connection of the
// whole pool took it within the pool wait. See docs/engines.md "k loops".
//
// The loop borrows each pooled connection's socket while pgx holds it idle (after
// PgConn.SyncConn, pgx has nothing buffered and no read in flight) and hands it back idle
// at a transaction boundary, or closed when a transaction was cut off mid-statement.
//
// While it waits in epoll a loop keeps its P (a raw system call; the probe has one P per
// loop), so timers and other goroutines run when a loop yields, at least every
// loopMaxWait; the network poller is polled by the runtime's monitor thread meanwhile
// (about every 10 ms), which is fast enough for the observer and reconnections. A loop
// yields no more often than that: a goroutine locked to its thread hands its P to
// another thread and back on every yield.

// loopMaxWait bounds one wait in epoll, and the time between two yields, so the rest of
// the process (progress, observer, the drain's timer) runs at least this often.
const loopMaxWait = 10 * time.Millisecond

// loopNoPwait2 makes the loop use its epoll_pwait fallback (tests).
var loopNoPwait2 = false

// States of a slot.
const (
	slotIdle       = iota // connected, no transaction
	slotBusy              // a transaction on its connection
	slotConnecting        // a transaction waiting for a fresh connection
)

// slot is one connection of the loop and the transaction on it (the worker's job).
type slot struct {
	idx   int
	wk    *worker
	fd    int // -1: no connection
	rbuf  []byte
	rn    int
	woff  int  // bytes of wire.out written; < len(wire.out) while waiting for room
	out   bool // waiting for room to write (EPOLLOUT registered)
	state int
	wire  *wireConn
	sess  *workload.Session // the connection's, kept with it (workload.SessionOf)
}

// reconnected is a fresh connection (or the failure to get one) for a slot whose
// connection was lost, with the arrival that waits for it.
type reconnected struct {
	sl    *slot
	conn  *pgxpool.Conn
	fd    int
	known map[string]int8
	err   error
}

// loop is one of the engine's loops: its connections, its streams, its epoll.
type loop struct {
	env      *probeEnv
	b        *books
	eng      *loopEngine
	own      []int // the scheduler's streams this loop issues
	epfd     int
	wakeR    int          // the read end of the loop's wake pipe, in its epoll
	wakeW    int          // its write end: another loop moved arrivals to the lobby
	woken    atomic.Bool  // a wake byte is in the pipe (or on its way)
	room     atomic.Int32 // connections free to start an arrival (idle or dead), as the loop last saw
	slots    []*slot
	idle     ring[*slot] // connected, no transaction; FIFO so every connection gets work
	dead     []*slot     // no connection, no transaction
	queue    ring[arrival]
	busy     int // slots in a transaction or connecting
	conning  int // reconnections in flight
	recon    chan reconnected
	events   []syscall.EpollEvent
	pwait2   bool           // epoll_pwait2 works here
	broken   error          // epoll failed: the probe stops
	closing  sync.WaitGroup // connections being closed off the loop's goroutine
	depth    atomic.Int64   // arrivals in the loop's queue that find no idle connection
	busyFrac float64        // the loop's thread CPU over its run's wall time, set at its end

	// issueMu is held while the loop issues arrivals (and by grow while it changes the
	// rates); applied is how many of the engine's rate changes the loop's streams have.
	issueMu sync.Mutex
	applied int
	// owned is the loop's connections (slots not handed over); keep is its share of the
	// pool, which giveSpare and takeSpare move it to; nowned is owned for other loops.
	owned  int
	keep   atomic.Int32
	nowned atomic.Int32
	// sample is the loop's thread CPU at its latest yield (loopBusy).
	sampleMu sync.Mutex
	sample   busySample
}

// loopAvailable reports why the loop engine cannot run w on pool, or "" when it can.
func loopAvailable(pool *pgxpool.Pool, w workload.Workload) string {
	if _, ok := w.(workload.Script); !ok {
		return "the workload is not a script"
	}
	if m := pool.Config().ConnConfig.DefaultQueryExecMode; m != pgx.QueryExecModeCacheStatement {
		return "--exec-mode is " + strings.ReplaceAll(m.String(), " ", "_") + " (the loop prepares statements, as cache_statement does)"
	}
	return ""
}

// socketFD is the file descriptor of a connection's socket, when it is a plain TCP or
// Unix socket the loop can drive (not TLS).
func socketFD(c *pgxpool.Conn) (int, bool) {
	rc, ok := c.Conn().PgConn().Conn().(*rawConn)
	if !ok {
		return 0, false
	}
	fd := -1
	if err := rc.rc.Control(func(f uintptr) { fd = int(f) }); err != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}

// borrow makes c's socket safe to drive directly and returns it with the statements
// the loop already prepared on c.
func borrow(ctx context.Context, c *pgxpool.Conn) (int, map[string]int8, error) {
	fd, ok := socketFD(c)
	if !ok {
		return 0, nil, errors.New("the connection is not a plain TCP or Unix socket (TLS?)")
	}
	if err := c.Conn().PgConn().SyncConn(ctx); err != nil {
		return 0, nil, err
	}
	data := c.Conn().PgConn().CustomData()
	known, _ := data[loopPrepared].(map[string]int8)
	if known == nil {
		known = map[string]int8{}
		data[loopPrepared] = known
	}
	return fd, known, nil
}

// newLoop builds one loop of e over the connections of wks, issuing the streams own.
func newLoop(ctx context.Context, e *loopEngine, wks []*worker, own []int) (*loop, error) {
	env := e.env
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	lp := &loop{env: env, b: env.b, eng: e, own: own, epfd: epfd, wakeR: -1, wakeW: -1,
		recon: make(chan reconnected, len(wks)), events: make([]syscall.EpollEvent, 128), pwait2: !loopNoPwait2}
	if err := lp.build(ctx, wks); err != nil {
		lp.close()
		return nil, err
	}
	return lp, nil
}

func (lp *loop) build(ctx context.Context, wks []*worker) error {
	if _, e := epollWait(lp.epfd, lp.events, 0, lp.pwait2); e != 0 {
		lp.pwait2 = false
		if _, e := epollWait(lp.epfd, lp.events, 0, false); e != 0 {
			return os.NewSyscallError("epoll_pwait", e)
		}
	}
	if err := lp.openWake(); err != nil {
		return err
	}
	lp.owned = len(wks)
	lp.keep.Store(int32(lp.owned))
	lp.nowned.Store(int32(lp.owned))
	stmts := preparedStatements(lp.env.script)
	for i, wk := range wks {
		fd, known, err := borrow(ctx, wk.conn)
		if err != nil {
			return err
		}
		sl := &slot{idx: i, wk: wk, fd: -1, rbuf: make([]byte, 8192), wire: newWireConn(stmts)}
		lp.slots = append(lp.slots, sl)
		if err := lp.attach(sl, fd, known); err != nil {
			return err
		}
		lp.idle.push(sl)
	}
	return nil
}

// attach registers fd as sl's socket; known is what the loop prepared on it before.
func (lp *loop) attach(sl *slot, fd int, known map[string]int8) error {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(sl.idx)}
	if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	sl.fd, sl.rn, sl.woff, sl.out = fd, 0, 0, false
	sl.sess = &workload.Session{} // a socket without a pgx connection (the loops' tests)
	if sl.wk.conn != nil {
		sl.sess = workload.SessionOf(sl.wk.conn.Conn().PgConn())
	}
	sl.wire.attach(known)
	return nil
}

// run is one loop, on its own OS thread: issue due arrivals, start transactions on free
// connections (taking from the lobby too), wait for sockets, advance the transactions
// whose replies came. issued is called once the loop issues no more.
func (lp *loop) run(s *scheduler, issued func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, e := lp.b, lp.eng
	cpu0, wall0 := threadCPU(), time.Now()
	lp.sampleBusy(wall0)
	defer func() {
		if wall := time.Since(wall0); wall > 0 {
			lp.busyFrac = (threadCPU() - cpu0).Seconds() / wall.Seconds()
		}
	}()
	defer lp.shutdown()
	issuing := true
	defer func() {
		if issuing { // stopped early (epoll failed): the probe still learns issuing is over
			issued()
		}
	}()
	yielded := time.Now()
	for {
		next := time.Duration(math.MaxInt64)
		if issuing {
			next, issuing = lp.issue(s)
			if !issuing {
				issued()
			}
		}
		if b.cut.Load() {
			lp.cancel()
			return
		}
		lp.reconnects()
		if e.auto {
			lp.takeSpare() // below its share: connections other loops handed over, before dispatch uses them
		}
		lp.dispatch()
		if e.auto {
			lp.giveSpare() // above its share: what dispatch left idle
		}
		lp.depth.Store(int64(lp.waitingNow()))
		if !issuing && lp.busy == 0 && lp.queue.len() == 0 && e.issuing.Load() == 0 && e.lobby.len() == 0 {
			lp.room.Store(0) // nobody wakes a loop that has ended
			return
		}
		wait := loopMaxWait
		if issuing {
			wait = min(wait, next-time.Since(b.start))
		}
		if lp.idle.len() == 0 {
			// The front arrival is rejected when it has waited out the pool wait.
			if lp.queue.len() > 0 {
				wait = min(wait, b.deadline(lp.queue.front())-time.Since(b.start)+time.Microsecond)
			}
			if at, ok := e.lobby.front(); ok {
				wait = min(wait, b.deadline(arrival{at})-time.Since(b.start)+time.Microsecond)
			}
		}
		room := lp.idle.len() + len(lp.dead)
		lp.room.Store(int32(room))
		if room > 0 && e.lobby.len() > 0 {
			wait = 0 // moved there after dispatch looked (the lobby's pusher may have missed room)
		}
		lp.poll(max(wait, 0))
		if lp.broken != nil {
			lp.env.fail("engine loop: " + lp.broken.Error())
			lp.cancel()
			return
		}
		if now := time.Now(); now.Sub(yielded) >= loopMaxWait {
			if e.auto {
				lp.sampleBusy(now)
			}
			runtime.Gosched() // timers and the rest of the process
			yielded = now
		}
	}
}

// offer queues an arrival for the loop (from its own goroutine, in scheduler.due). The
// bound on waiting arrivals is the pool's: this loop's queue and the lobby together.
func (lp *loop) offer(a arrival) (int, bool) {
	if lp.queue.len()+lp.eng.lobby.len() >= lp.env.qcap {
		return lp.waitingNow() + lp.eng.lobby.len(), false
	}
	lp.queue.push(a)
	return lp.waitingNow() + lp.eng.lobby.len(), true
}

// waitingNow is how many of the loop's queued arrivals find no idle connection, from the
// loop's goroutine.
func (lp *loop) waitingNow() int { return max(0, lp.queue.len()-lp.idle.len()) }

// next takes the earliest waiting arrival: the front of the loop's queue or of the lobby.
func (lp *loop) next() (arrival, bool) {
	if lp.eng.lobby.len() > 0 {
		limit := time.Duration(math.MaxInt64)
		if lp.queue.len() > 0 {
			limit = lp.queue.front().at
		}
		if a, ok := lp.eng.lobby.popBefore(limit); ok {
			return a, true
		}
	}
	if lp.queue.len() > 0 {
		return lp.queue.pop(), true
	}
	return arrival{}, false
}

// dispatch starts waiting arrivals (the loop's and the lobby's, earliest first) on free
// connections, rejects those that waited out the pool wait, reconnects lost connections
// for arrivals that need one, and moves what still waits to the lobby, for any loop with
// a free connection.
func (lp *loop) dispatch() {
	b := lp.b
	for lp.idle.len() > 0 || len(lp.dead) > 0 {
		a, ok := lp.next()
		if !ok {
			break
		}
		now := time.Now()
		wait, ok := b.admit(a, now)
		if !ok {
			continue
		}
		var sl *slot
		if lp.idle.len() > 0 {
			sl = lp.idle.pop()
		} else {
			sl = lp.dead[len(lp.dead)-1]
			lp.dead = lp.dead[:len(lp.dead)-1]
		}
		lp.busy++
		sl.wk.job.start(a, now, wait, lp.env.script, sl.wk)
		if sl.fd >= 0 {
			sl.state = slotBusy
			lp.begin(sl)
			continue
		}
		sl.state = slotConnecting
		lp.conning++
		go lp.reconnect(sl)
	}
	if lp.idle.len() > 0 || len(lp.dead) > 0 {
		return // nothing waits
	}
	now := time.Now()
	for lp.queue.len() > 0 && b.expired(lp.queue.front(), now) {
		b.reject(lp.queue.pop())
	}
	lp.eng.lobby.expire(b, now)
	if lp.queue.len() > 0 && len(lp.eng.loops()) > 1 {
		lp.eng.handOff(lp)
	}
}

// reconnect gets sl a fresh connection from the pool, off the loop's goroutine.
func (lp *loop) reconnect(sl *slot) {
	ctx, cancel := context.WithTimeout(lp.env.ctx, lp.env.cfg.PoolWait)
	defer cancel()
	c, err := lp.env.pool.Acquire(ctx)
	fd := -1
	var known map[string]int8
	if err == nil {
		if fd, known, err = borrow(ctx, c); err != nil {
			c.Conn().Close(ctx)
			c.Release()
			c = nil
		}
	}
	lp.recon <- reconnected{sl: sl, conn: c, fd: fd, known: known, err: err}
}

// reconnects takes the results of finished reconnections.
func (lp *loop) reconnects() {
	for {
		select {
		case rc := <-lp.recon:
			lp.reconnected(rc)
		default:
			return
		}
	}
}

func (lp *loop) reconnected(rc reconnected) {
	lp.conning--
	sl := rc.sl
	err := rc.err
	if err == nil {
		sl.wk.hold(rc.conn)
		if err = lp.attach(sl, rc.fd, rc.known); err != nil {
			lp.drop(sl, false)
		}
	}
	if err != nil {
		lp.busy--
		sl.state = slotIdle
		lp.dead = append(lp.dead, sl)
		lp.b.noConn(&sl.wk.job, &sl.wk.sheet, err)
		return
	}
	sl.state = slotBusy
	lp.begin(sl)
}

// poll waits up to d for sockets and handles what they have.
func (lp *loop) poll(d time.Duration) {
	n, e := epollWait(lp.epfd, lp.events, d, lp.pwait2)
	switch e {
	case 0:
	case syscall.EINTR:
		return // a signal (the runtime's preemption): the loop goes round
	default:
		lp.broken = os.NewSyscallError("epoll_wait", e)
		return
	}
	for _, ev := range lp.events[:n] {
		if ev.Fd == wakeEvent {
			lp.drainWake()
			continue
		}
		sl := lp.slots[ev.Fd]
		if sl == nil || sl.fd < 0 { // handed over to another loop, or closed
			continue
		}
		if ev.Events&syscall.EPOLLOUT != 0 && sl.woff < len(sl.wire.out) {
			lp.flush(sl)
		}
		if sl.fd >= 0 && ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			lp.readable(sl)
		}
	}
}

// begin starts sl's transaction (again, with the same values, on a retry): its first
// round trip (BEGIN with SET LOCAL, or an autocommit script's statement).
func (lp *loop) begin(sl *slot) {
	sl.wire.out, sl.woff = sl.wire.out[:0], 0
	op := sl.wk.job.txn.Begin(sl.sess)
	if op.Kind == workload.OpDone { // failed before sending anything
		lp.finish(sl)
		return
	}
	if err := sl.wire.send(op); err != nil {
		lp.lost(sl, err)
		return
	}
	lp.flush(sl)
}

// flush writes what is left of sl's messages; when the socket is full it waits for room.
func (lp *loop) flush(sl *slot) {
	out := sl.wire.out
	for sl.woff < len(out) {
		n, e := rawWrite(sl.fd, out[sl.woff:])
		switch e {
		case 0:
			sl.woff += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			if !sl.out {
				sl.out = true
				lp.interest(sl, syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLOUT)
			}
			return
		default:
			lp.lost(sl, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", e)})
			return
		}
	}
	if sl.out {
		sl.out = false
		lp.interest(sl, syscall.EPOLLIN|syscall.EPOLLRDHUP)
	}
}

func (lp *loop) interest(sl *slot, events uint32) {
	ev := syscall.EpollEvent{Events: events, Fd: int32(sl.idx)}
	_ = syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_MOD, sl.fd, &ev)
}

// readable reads what sl's socket has and handles every complete message.
func (lp *loop) readable(sl *slot) {
	for {
		if sl.rn == len(sl.rbuf) {
			sl.rbuf = append(sl.rbuf, make([]byte, len(sl.rbuf))...)
		}
		n, e := rawRead(sl.fd, sl.rbuf[sl.rn:])
		if e == syscall.EINTR {
			continue
		}
		if e == syscall.EAGAIN {
			break
		}
		if e != 0 || n == 0 {
			var err error = io.ErrUnexpectedEOF
			if e != 0 {
				err = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", e)}
			}
			lp.messages(sl) // a FATAL error may have come before the end
			if sl.fd >= 0 {
				lp.lost(sl, err)
			}
			return
		}
		sl.rn += n
		if sl.rn < len(sl.rbuf) {
			break
		}
	}
	lp.messages(sl)
}

// messages hands the complete messages in sl's read buffer to its transaction, and
// sends what the transaction asks for next.
func (lp *loop) messages(sl *slot) {
	if sl.woff == len(sl.wire.out) { // all written: the next statement starts afresh
		sl.wire.out, sl.woff = sl.wire.out[:0], 0
	}
	n, done, err := sl.wire.receive(sl.rbuf[:sl.rn], &sl.wk.job.txn)
	copy(sl.rbuf, sl.rbuf[n:sl.rn])
	sl.rn -= n
	switch {
	case err != nil:
		lp.lost(sl, err)
	case done:
		lp.finish(sl)
	case len(sl.wire.out) > sl.woff:
		lp.flush(sl)
	}
}

// finish books sl's transaction, or retries it, and frees the slot (its transaction's
// state machine is over: workload.Txn.Err, CloseConn).
func (lp *loop) finish(sl *slot) {
	j, t := &sl.wk.job, &sl.wk.job.txn
	if t.CloseConn() {
		lp.drop(sl, false) // gone, or left inside a transaction
	}
	if lp.b.retry(j, &sl.wk.sheet, t.Err(), sl.fd >= 0) {
		lp.begin(sl)
		return
	}
	lp.b.finish(j, &sl.wk.sheet, t.Err(), sl.fd < 0, time.Now())
	lp.busy--
	sl.state = slotIdle
	sl.wire.out = sl.wire.out[:0]
	if sl.fd >= 0 {
		lp.idle.push(sl)
	} else {
		lp.dead = append(lp.dead, sl)
	}
}

// lost handles a connection that broke: its transaction fails (with the server's FATAL
// error when one came first) and the connection is closed.
func (lp *loop) lost(sl *slot, err error) {
	lp.drop(sl, false)
	switch sl.state {
	case slotIdle:
		lp.idle.remove(sl)
		lp.dead = append(lp.dead, sl)
	case slotBusy:
		sl.wire.lost(&sl.wk.job.txn, err)
		lp.finish(sl)
	}
}

// drop closes sl's connection; the pool discards it at release. With cancelFirst (a
// statement in flight) a cancel request goes first, as pgx does, so the backend stops
// instead of running on for up to the statement timeout holding its locks. The closing
// runs off the loop's goroutine: it waits for the server.
func (lp *loop) drop(sl *slot, cancelFirst bool) {
	if sl.fd >= 0 {
		_ = syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_DEL, sl.fd, nil)
		sl.fd, sl.rn, sl.out = -1, 0, false
	}
	c := sl.wk.detach()
	if c == nil {
		return
	}
	lp.closing.Add(1)
	go func() {
		defer lp.closing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pc := c.Conn().PgConn()
		if cancelFirst {
			_ = pc.CancelRequest(ctx)
		}
		_ = pc.Conn().SetDeadline(time.Now().Add(time.Second))
		_ = c.Conn().Close(ctx)
		c.Release()
	}()
}

// cancel ends the drain: in-flight transactions are cut off (booked as cancelled, or
// with their failure when only their rollback was in flight) and their connections
// closed; queued arrivals, and those still waiting for a reconnection, never started:
// they are rejected.
func (lp *loop) cancel() {
	b := lp.b
	for _, sl := range lp.slots {
		if sl == nil {
			continue
		}
		j := &sl.wk.job
		switch sl.state {
		case slotConnecting:
			lp.busy--
			b.reject(j.a)
		case slotBusy:
			lp.drop(sl, true)
			lp.busy--
			if err := j.txn.Err(); err != nil { // it failed already; only its rollback is cut off
				b.finish(j, &sl.wk.sheet, err, true, time.Now())
			} else {
				b.cancelled(j, &sl.wk.sheet)
			}
		}
		sl.state = slotIdle
	}
	for lp.queue.len() > 0 {
		b.reject(lp.queue.pop())
	}
	lp.eng.lobby.expire(b, time.Now()) // books.cut is set: every arrival there expired
}

// shutdown waits for reconnections in flight and gives every connection back to the pool.
func (lp *loop) shutdown() {
	for ; lp.conning > 0; lp.conning-- {
		rc := <-lp.recon // the reconnection's context ends with the drain
		if rc.conn != nil {
			rc.conn.Release()
		}
	}
	for _, sl := range lp.slots {
		if sl == nil {
			continue
		}
		if sl.rn > 0 || sl.out {
			// Bytes pgx would not know what to do with (part of a notice), or a write
			// left unfinished: the connection cannot go back as it is.
			lp.drop(sl, false)
		}
		if sl.fd >= 0 {
			_ = syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_DEL, sl.fd, nil)
			sl.fd = -1
		}
		sl.wk.release()
	}
	lp.closing.Wait()
	lp.close()
}
