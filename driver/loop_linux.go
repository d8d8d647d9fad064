package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// The event-loop engine: one goroutine issues every arrival and drives every connection,
// pgbench's design. It waits for all sockets at once in epoll and speaks the extended
// protocol itself (Bind, Execute, Sync on statements prepared once per connection), so a
// statement costs two system calls and no goroutine switch. The engine with a goroutine
// per connection over pgx spends most of its own CPU in the Go scheduler parking and
// waking goroutines and in pgx's general-purpose layers; see README "Driver engines".
//
// The loop borrows each pooled connection's socket while pgx holds it idle (after
// PgConn.SyncConn, pgx has nothing buffered and no read in flight) and hands it back idle
// at a transaction boundary, or closed when a transaction was cut off mid-statement.
//
// While it waits in epoll the loop keeps the process's only P (a raw system call), so
// timers and other goroutines run when it yields, at least every loopMaxWait; the
// network poller is polled by the runtime's monitor thread meanwhile (about every
// 10 ms), which is fast enough for the observer and reconnections.

// loopMaxWait bounds one wait in epoll so the rest of the process (progress, observer,
// the drain's timer) runs at least this often.
const loopMaxWait = 10 * time.Millisecond

// loopNoPwait2 makes the loop use its epoll_pwait fallback (tests).
var loopNoPwait2 = false

// sysEpollPwait2 is epoll_pwait2(2) (Linux 5.11), epoll_wait with a nanosecond timeout.
const sysEpollPwait2 = 441

// Phases of a slot's transaction.
const (
	phIdle = iota
	phBegin
	phSet
	phStep
	phCommit
	phRollback
	phConnecting
)

// slot is one connection of the loop and the transaction on it.
type slot struct {
	idx  int
	wk   *worker
	fd   int // -1: no connection
	rbuf []byte
	rn   int
	wbuf []byte
	woff int // bytes of wbuf written; < len(wbuf) while waiting for room

	a     arrival
	begin time.Time
	wait  time.Duration
	tries int
	phase int
	step  int
	stmt  int             // statement of the step in flight
	stmts []int8          // per statement: its state on this connection
	known map[string]int8 // the connection's CustomData entry: state by statement name
	out   bool            // waiting for room to write (EPOLLOUT registered)
	tx    workload.Tx
	err   error // the transaction's failure, kept through its rollback

	// The statement in flight.
	res      workload.Result
	gotRow   bool
	stmtErr  *pgconn.PgError
	rolled   bool // COMMIT answered ROLLBACK
	txStatus byte // from the last ReadyForQuery
}

// prepared is one script statement as the loop sends it.
type prepared struct {
	name  string // the server-side statement's name: the SQL's hash, so equal names mean equal SQL
	sql   string
	label string
}

// Statement states on one connection (slot.stmts, and the connection's CustomData).
const (
	stmtUnknown int8 = iota // not prepared on this connection yet: Parse and Describe
	stmtParsed              // prepared, its columns not yet described: Describe
	stmtOther               // prepared; its first column is not an integer
	stmtInt                 // prepared; its first column is an integer, read into Result.First
)

// loopPrepared is the key of a connection's CustomData under which the loop keeps the
// statements it prepared there (name -> state), so a later probe on the same pooled
// connection does not prepare them again.
const loopPrepared = "pgceiling.loop.prepared"

// reconnected is a fresh connection (or the failure to get one) for a slot whose
// connection was lost, with the arrival that waits for it.
type reconnected struct {
	sl    *slot
	conn  *pgxpool.Conn
	fd    int
	known map[string]int8
	err   error
}

type loop struct {
	r       *probeRun
	s       workload.Script
	setSync string
	stmts   []prepared
	epfd    int
	slots   []*slot
	idle    ring[*slot] // connected, no transaction; FIFO so every connection gets work
	dead    []*slot     // no connection, no transaction
	queue   ring[arrival]
	qcap    int
	busy    int // slots in a transaction or connecting
	conning int // reconnections in flight
	recon   chan reconnected
	events  []syscall.EpollEvent
	pwait2  bool           // epoll_pwait2 works here
	broken  error          // epoll failed: the probe stops
	closing sync.WaitGroup // connections being closed off the loop's goroutine
}

// loopStatementName is the name the loop prepares sql under.
func loopStatementName(sql string) string {
	h := sha256.Sum256([]byte(sql))
	return "pgceiling_" + hex.EncodeToString(h[:12])
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

// newLoop builds the loop over the workers' connections. Statements are prepared on
// first use on each connection, in the same round trip as their first execution (as
// pgx's cache_statement prepares on first use), so a lock held at the probe's start
// stalls transactions, not the set-up.
func newLoop(ctx context.Context, r *probeRun, s workload.Script) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	lp := &loop{r: r, s: s, setSync: s.SetSync(), epfd: epfd, qcap: r.qcap,
		recon: make(chan reconnected, len(r.workers)), events: make([]syscall.EpollEvent, 128), pwait2: !loopNoPwait2}
	if _, e := lp.wait(0); e != 0 {
		lp.pwait2 = false
		if _, e := lp.wait(0); e != 0 {
			syscall.Close(epfd)
			return nil, os.NewSyscallError("epoll_pwait", e)
		}
	}
	for _, st := range s.Statements() {
		lp.stmts = append(lp.stmts, prepared{name: loopStatementName(st.SQL), sql: st.SQL, label: st.Name})
	}
	for i, wk := range r.workers {
		fd, known, err := borrow(ctx, wk.conn)
		if err != nil {
			syscall.Close(epfd)
			return nil, err
		}
		sl := &slot{idx: i, wk: wk, fd: -1, rbuf: make([]byte, 8192), wbuf: make([]byte, 0, 1024),
			stmts: make([]int8, len(lp.stmts))}
		lp.slots = append(lp.slots, sl)
		if err := lp.attach(sl, fd, known); err != nil {
			syscall.Close(epfd)
			return nil, err
		}
		lp.idle.push(sl)
	}
	return lp, nil
}

// attach registers fd as sl's socket; known is what the loop prepared on it before.
func (lp *loop) attach(sl *slot, fd int, known map[string]int8) error {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(sl.idx)}
	if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	sl.fd, sl.rn, sl.woff, sl.out = fd, 0, 0, false
	sl.wbuf = sl.wbuf[:0]
	sl.known = known
	for i, st := range lp.stmts {
		sl.stmts[i] = known[st.name] // stmtUnknown when absent
	}
	return nil
}

// run is the loop: issue due arrivals, start transactions on idle connections, wait
// for sockets, advance the transactions whose replies came. issued is called once
// when no more arrivals will come.
func (lp *loop) run(issued func()) {
	r := lp.r
	defer lp.shutdown()
	issuing := true
	defer func() {
		if issuing { // stopped early (epoll failed): the probe still learns issuing is over
			issued()
		}
	}()
	for {
		next := time.Duration(math.MaxInt64)
		if issuing {
			next, issuing = lp.issue()
			if !issuing {
				issued()
			}
		}
		if r.workCtx.Err() != nil {
			lp.cancel()
			return
		}
		lp.reconnects()
		lp.dispatch()
		r.depth.Store(int64(lp.queue.len()))
		if !issuing && lp.busy == 0 && lp.queue.len() == 0 {
			return
		}
		wait := loopMaxWait
		if issuing {
			wait = min(wait, next-time.Since(r.start))
		}
		if lp.queue.len() > 0 && lp.idle.len() == 0 {
			// The front arrival is rejected when it has waited out the pool wait.
			wait = min(wait, lp.queue.front().at+r.cfg.PoolWait-time.Since(r.start)+time.Microsecond)
		}
		lp.poll(max(wait, 0))
		if lp.broken != nil {
			r.fail("engine loop: " + lp.broken.Error())
			lp.cancel()
			return
		}
		runtime.Gosched() // timers and the rest of the process
	}
}

// issue emits every arrival that is due, earliest first across the streams, and returns
// the next one's offset and whether any stream has arrivals left.
func (lp *loop) issue() (time.Duration, bool) {
	r := lp.r
	now := time.Since(r.start)
	stopAt := time.Duration(r.stopAt.Load())
	for {
		best, next := -1, time.Duration(math.MaxInt64)
		for i, s := range r.streams {
			at := s.peek()
			if at >= r.end || (stopAt >= 0 && at >= stopAt) {
				r.prog[i].Store(math.MaxInt64)
				continue
			}
			r.prog[i].Store(int64(at))
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
		r.streams[best].advance()
		r.emit(best, next)
	}
}

// dispatch starts queued arrivals on idle connections, rejects those that waited out
// the pool wait, and reconnects lost connections for arrivals that need one.
func (lp *loop) dispatch() {
	r := lp.r
	for lp.queue.len() > 0 {
		a := lp.queue.front()
		begin := time.Now()
		wait := begin.Sub(r.start.Add(a.at))
		if wait > r.cfg.PoolWait {
			lp.queue.pop()
			r.settle(a, nil, false, result.PoolTimeout, -1, 0, 0)
			continue
		}
		switch {
		case lp.idle.len() > 0:
			lp.queue.pop()
			sl := lp.idle.pop()
			lp.busy++
			sl.a, sl.begin, sl.wait, sl.tries = a, begin, wait, 1
			lp.s.Start(&sl.tx, sl.wk.rng) // once per arrival: a retry sends the same values
			lp.startTx(sl)
		case len(lp.dead) > 0:
			lp.queue.pop()
			sl := lp.dead[len(lp.dead)-1]
			lp.dead = lp.dead[:len(lp.dead)-1]
			lp.busy++
			sl.a, sl.begin, sl.wait, sl.tries, sl.phase = a, begin, wait, 1, phConnecting
			lp.s.Start(&sl.tx, sl.wk.rng)
			lp.conning++
			go lp.reconnect(sl)
		default:
			return
		}
	}
}

// reconnect gets sl a fresh connection from the pool, off the loop's goroutine.
func (lp *loop) reconnect(sl *slot) {
	r := lp.r
	ctx, cancel := context.WithTimeout(r.workCtx, r.cfg.PoolWait)
	defer cancel()
	c, err := r.pool.Acquire(ctx)
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
	r, sl := lp.r, rc.sl
	err := rc.err
	if err == nil {
		sl.wk.hold(rc.conn)
		if err = lp.attach(sl, rc.fd, rc.known); err != nil {
			lp.drop(sl, false)
		}
	}
	if err != nil {
		lp.busy--
		sl.phase = phIdle
		lp.dead = append(lp.dead, sl)
		r.settle(sl.a, sl.wk, false, r.classify(err, false), -1, 0, 0)
		return
	}
	lp.startTx(sl)
}

// poll waits up to d for sockets and handles what they have.
func (lp *loop) poll(d time.Duration) {
	n, e := lp.wait(d)
	switch e {
	case 0:
	case syscall.EINTR:
		return // a signal (the runtime's preemption): the loop goes round
	default:
		lp.broken = os.NewSyscallError("epoll_wait", e)
		return
	}
	for _, ev := range lp.events[:n] {
		sl := lp.slots[ev.Fd]
		if sl.fd < 0 {
			continue
		}
		if ev.Events&syscall.EPOLLOUT != 0 && sl.woff < len(sl.wbuf) {
			lp.flush(sl)
		}
		if sl.fd >= 0 && ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			lp.readable(sl)
		}
	}
}

// kernelTimespec is struct __kernel_timespec: 64-bit fields on every architecture.
type kernelTimespec struct{ sec, nsec int64 }

// wait blocks in epoll for at most d (a raw system call: see the package comment above).
// Without epoll_pwait2 (Linux < 5.11, or a seccomp filter) it uses epoll_pwait, whose
// timeout is whole milliseconds, rounded up.
func (lp *loop) wait(d time.Duration) (int, syscall.Errno) {
	if lp.pwait2 {
		ts := kernelTimespec{sec: int64(d / time.Second), nsec: int64(d % time.Second)}
		n, _, e := syscall.RawSyscall6(sysEpollPwait2, uintptr(lp.epfd), uintptr(unsafe.Pointer(&lp.events[0])),
			uintptr(len(lp.events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
		return int(n), e
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(lp.epfd), uintptr(unsafe.Pointer(&lp.events[0])),
		uintptr(len(lp.events)), uintptr(ms), 0, 0)
	return int(n), e
}

// startTx begins sl's transaction (again, with the same values, on a retry): BEGIN.
// dispatch drew the values when the arrival took the slot.
func (lp *loop) startTx(sl *slot) {
	sl.err, sl.phase, sl.step = nil, phBegin, 0
	lp.query(sl, "BEGIN")
}

// query sends a statement without parameters over the simple protocol, as pgx does.
func (lp *loop) query(sl *slot, sql string) {
	b := append(sl.wbuf[:0], 'Q', 0, 0, 0, 0)
	b = append(b, sql...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	sl.wbuf = b
	lp.send(sl)
}

// execute sends Bind (text parameters, text results), Execute and Sync for a prepared
// statement: one round trip. On the statement's first use on the connection, Parse and
// a Describe of the portal (for its first column's type) go in the same round trip.
func (lp *loop) execute(sl *slot, st workload.Step) {
	sl.stmt = st.Stmt
	ps := &lp.stmts[st.Stmt]
	b := sl.wbuf[:0]
	state := sl.stmts[st.Stmt]
	if state == stmtUnknown {
		b = append(b, 'P', 0, 0, 0, 0)
		b = append(b, ps.name...)
		b = append(b, 0)
		b = append(b, ps.sql...)
		b = append(b, 0, 0, 0) // no parameter types: the server infers them
		binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	}
	at := len(b)
	b = append(b, 'B', 0, 0, 0, 0, 0) // unnamed portal
	b = append(b, ps.name...)
	b = append(b, 0, 0, 0) // statement name's end; no parameter format codes: all text
	b = binary.BigEndian.AppendUint16(b, uint16(len(st.Args)))
	for _, a := range st.Args {
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		b = a.AppendText(b)
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	b = append(b, 0, 0) // no result format codes: all text
	binary.BigEndian.PutUint32(b[at+1:], uint32(len(b)-at-1))
	if state <= stmtParsed {
		b = append(b, 'D', 0, 0, 0, 6, 'P', 0) // Describe the unnamed portal
	}
	b = append(b, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0) // Execute the unnamed portal, all rows
	b = append(b, 'S', 0, 0, 0, 4)                // Sync
	sl.wbuf = b
	lp.send(sl)
}

// send starts writing sl.wbuf, a new statement.
func (lp *loop) send(sl *slot) {
	sl.woff, sl.res, sl.gotRow, sl.stmtErr, sl.rolled = 0, workload.Result{}, false, nil, false
	lp.flush(sl)
}

// flush writes what is left of sl.wbuf; when the socket is full it waits for room.
func (lp *loop) flush(sl *slot) {
	for sl.woff < len(sl.wbuf) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(sl.fd), uintptr(unsafe.Pointer(&sl.wbuf[sl.woff])), uintptr(len(sl.wbuf)-sl.woff))
		switch e {
		case 0:
			sl.woff += int(n)
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
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(sl.fd), uintptr(unsafe.Pointer(&sl.rbuf[sl.rn])), uintptr(len(sl.rbuf)-sl.rn))
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
		sl.rn += int(n)
		if sl.rn < len(sl.rbuf) {
			break
		}
	}
	lp.messages(sl)
}

// messages handles the complete messages in sl's read buffer.
func (lp *loop) messages(sl *slot) {
	p := 0
	for sl.fd >= 0 && sl.rn-p >= 5 {
		l := int(binary.BigEndian.Uint32(sl.rbuf[p+1:]))
		if l < 4 {
			lp.lost(sl, fmt.Errorf("protocol: bad message length %d", l))
			return
		}
		if sl.rn-p < 1+l {
			break
		}
		typ, body := sl.rbuf[p], sl.rbuf[p+5:p+1+l]
		p += 1 + l
		switch typ {
		case '1': // ParseComplete: the statement exists on this connection now
			lp.described(sl, stmtParsed)
		case 'T': // RowDescription, on first use: is the first column an integer?
			state := stmtOther
			if len(body) >= 2 && binary.BigEndian.Uint16(body) > 0 {
				if end := bytes.IndexByte(body[2:], 0); end >= 0 && 2+end+1+10 <= len(body) {
					if workload.IsIntegerOID(binary.BigEndian.Uint32(body[2+end+1+6:])) {
						state = stmtInt
					}
				}
			}
			lp.described(sl, state)
		case 'n': // NoData: a statement without result columns
			lp.described(sl, stmtOther)
		case 'D': // DataRow: the first row's first column
			if !sl.gotRow && sl.phase == phStep {
				sl.gotRow = true
				if sl.stmts[sl.stmt] == stmtInt && len(body) >= 6 {
					if n := int(int32(binary.BigEndian.Uint32(body[2:]))); n > 0 && 6+n <= len(body) {
						sl.res.First, sl.res.HasFirst = parseInt(body[6 : 6+n])
					}
				}
			}
		case 'C': // CommandComplete
			tag := body
			if len(tag) > 0 && tag[len(tag)-1] == 0 {
				tag = tag[:len(tag)-1]
			}
			sl.res.Rows = tagRows(tag)
			sl.rolled = bytes.Equal(tag, []byte("ROLLBACK"))
		case 'E': // ErrorResponse
			var er pgproto3.ErrorResponse
			if err := er.Decode(body); err != nil {
				lp.lost(sl, fmt.Errorf("protocol: %w", err))
				return
			}
			sl.stmtErr = pgconn.ErrorResponseToPgError(&er)
		case 'Z': // ReadyForQuery: the statement is done
			if len(body) > 0 {
				sl.txStatus = body[0]
			}
			if sl.phase != phIdle {
				lp.ready(sl)
			}
		}
	}
	if sl.fd >= 0 {
		copy(sl.rbuf, sl.rbuf[p:sl.rn])
		sl.rn -= p
	}
}

// ready advances sl's transaction after a statement finished.
func (lp *loop) ready(sl *slot) {
	var err error
	if sl.stmtErr != nil {
		err = sl.stmtErr
	}
	switch sl.phase {
	case phBegin:
		if err != nil {
			lp.fail(sl, fmt.Errorf("begin: %w", err))
			return
		}
		sl.phase = phSet
		lp.query(sl, lp.setSync)
	case phSet:
		if err != nil {
			lp.fail(sl, fmt.Errorf("set synchronous_commit: %w", err))
			return
		}
		sl.phase = phStep
		lp.next(sl, workload.Result{})
	case phStep:
		if err != nil {
			lp.fail(sl, fmt.Errorf("%s: %w", lp.stmts[sl.stmt].label, err))
			return
		}
		lp.next(sl, sl.res)
	case phCommit:
		switch {
		case err != nil:
			lp.fail(sl, fmt.Errorf("commit: %w", err))
		case sl.rolled: // COMMIT of an aborted transaction reports ROLLBACK
			lp.fail(sl, fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback))
		default:
			lp.finish(sl, nil)
		}
	case phRollback:
		if err != nil || sl.txStatus != 'I' {
			// A connection that cannot be rolled back is closed (as the pgx engine does).
			e := sl.err
			lp.drop(sl, false)
			lp.finish(sl, e)
			return
		}
		lp.finish(sl, sl.err)
	}
}

// next sends the body's next step, or COMMIT after the last.
func (lp *loop) next(sl *slot, prev workload.Result) {
	st, err := lp.s.Step(&sl.tx, sl.step, prev)
	if err != nil {
		lp.fail(sl, err)
		return
	}
	sl.step++
	if st.Stmt < 0 {
		sl.phase = phCommit
		lp.query(sl, "COMMIT")
		return
	}
	lp.execute(sl, st)
}

// fail ends sl's transaction with err, rolling back first when the server is inside it.
func (lp *loop) fail(sl *slot, err error) {
	sl.err = fmt.Errorf("%s: %w", lp.s.Name(), err)
	if sl.txStatus == 'I' {
		lp.finish(sl, sl.err)
		return
	}
	sl.phase = phRollback
	lp.query(sl, "ROLLBACK")
}

// finish books sl's transaction, or retries it, and frees the slot.
func (lp *loop) finish(sl *slot, err error) {
	r := lp.r
	if err != nil && sl.fd >= 0 && sl.tries < r.cfg.MaxTries && retryable(Classify(err)) {
		sl.tries++
		if sl.a.at >= r.cfg.Warmup {
			sl.wk.retries++
		}
		lp.startTx(sl)
		return
	}
	end := time.Now()
	if err == nil {
		r.settle(sl.a, sl.wk, true, 0, sl.wait, end.Sub(sl.begin), end.Sub(r.start.Add(sl.a.at)))
	} else {
		r.settle(sl.a, sl.wk, false, r.classify(err, sl.fd < 0), sl.wait, 0, 0)
	}
	lp.free(sl)
}

// free returns a slot to the idle connections, or to the dead ones.
func (lp *loop) free(sl *slot) {
	lp.busy--
	sl.phase = phIdle
	if sl.fd >= 0 {
		lp.idle.push(sl)
	} else {
		lp.dead = append(lp.dead, sl)
	}
}

// lost handles a connection that broke: its transaction fails (with the server's FATAL
// error when one came first) and the connection is closed.
func (lp *loop) lost(sl *slot, err error) {
	if sl.stmtErr != nil {
		err = sl.stmtErr
	}
	phase := sl.phase
	lp.drop(sl, false)
	switch {
	case phase == phIdle:
		lp.idle.remove(sl)
		lp.dead = append(lp.dead, sl)
	case phase == phRollback:
		lp.finish(sl, sl.err)
	default:
		lp.finish(sl, fmt.Errorf("%s: %w", lp.s.Name(), err))
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

// cancel ends the drain: in-flight transactions fail as other (uncertain: they may yet
// commit) and their connections are closed; queued arrivals, and those still waiting for
// a reconnection, never started: they are rejected.
func (lp *loop) cancel() {
	r := lp.r
	for _, sl := range lp.slots {
		switch sl.phase {
		case phIdle:
		case phConnecting:
			lp.busy--
			r.settle(sl.a, sl.wk, false, result.PoolTimeout, -1, 0, 0)
		case phRollback: // it failed already; only its rollback is cut off
			lp.drop(sl, true)
			lp.busy--
			r.settle(sl.a, sl.wk, false, r.classify(sl.err, true), sl.wait, 0, 0)
		default:
			lp.drop(sl, true)
			lp.busy--
			r.uncertain.Add(1)
			r.settle(sl.a, sl.wk, false, result.Other, sl.wait, 0, 0)
		}
		sl.phase = phIdle
	}
	for lp.queue.len() > 0 {
		r.settle(lp.queue.pop(), nil, false, result.PoolTimeout, -1, 0, 0)
	}
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
	syscall.Close(lp.epfd)
}

// push queues an arrival for the loop, or reports the queue full.
func (lp *loop) push(a arrival) bool {
	if lp.queue.len() >= lp.qcap {
		return false
	}
	lp.queue.push(a)
	return true
}

// waiting is how many queued arrivals find no idle connection, from the loop's goroutine.
func (lp *loop) waiting() int { return max(0, lp.queue.len()-lp.idle.len()) }

// ring is a FIFO on a growing circular buffer.
type ring[T comparable] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) front() T { return q.buf[q.head] }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		nb := make([]T, max(16, 2*len(q.buf)))
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *ring[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v
}

// remove takes v out of the queue, keeping the order of the rest.
func (q *ring[T]) remove(v T) {
	n := q.size
	for range n {
		x := q.pop()
		if x != v {
			q.push(x)
		}
	}
}

// described records what a statement's first use taught about it on sl's connection.
func (lp *loop) described(sl *slot, state int8) {
	if sl.phase != phStep || sl.stmts[sl.stmt] >= state {
		return
	}
	sl.stmts[sl.stmt] = state
	sl.known[lp.stmts[sl.stmt].name] = state
}

// parseInt reads a text integer (a result column), without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false // empty, or might overflow: not a key or a count anyway
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// tagRows is a command tag's row count ("INSERT 0 1", "UPDATE 3", "SELECT 1"): its last
// word, when that is a number; 0 otherwise ("BEGIN").
func tagRows(tag []byte) int64 {
	i := bytes.LastIndexByte(tag, ' ')
	if i < 0 {
		return 0
	}
	n, ok := parseInt(tag[i+1:])
	if !ok {
		return 0
	}
	return n
}
