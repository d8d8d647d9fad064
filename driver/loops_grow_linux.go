package driver

import (
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Growing the loops (Threads 0, "auto"): threads.tick asks the engine, about once a
// second, for each loop's busy share of its core over the last second (loopBusy) and
// adds a loop (grow) when they pass loopsGrowBusy (growLoops), up to Config.loopsMax.
//
// The schedule stays one Poisson stream at the probe's rate. A probe of k loops has k*per
// streams, each at rate/(k*per). grow takes every running loop's issue lock, reads the
// clock (the instant T), and publishes a rate change at T to rate/((k+1)*per) for every
// stream and per fresh streams for the new loop, each starting at T. Every loop applies
// the change to its own streams (stream.resplit) before it issues again, and it issues
// only under its lock, so no loop has issued an arrival at or after T at the old rate:
// the arrivals before T are those of k*per streams at the old rate, those from T on of
// (k+1)*per streams at the new rate, no intended start is added or lost at T, and by
// memorylessness each stream's arrivals after T are independent of before. So the sum is
// a Poisson stream of the probe's rate on both sides of T, exactly. (T is after every
// second the probe has summarised: a second is final only once it has passed on the
// clock, probeRun.finalize, on the goroutine that calls grow.)
//
// Connections move between loops idle: each loop's share of the pool is Conns/(k+1)
// (the remainder to the oldest loops); a loop above its share detaches an idle or dead
// connection from its epoll and puts it in the engine's spare list, and a loop below its
// share takes it from there into its own epoll, so a connection is driven by exactly one
// loop at a time and never in the middle of a transaction. Until the new loop has
// connections, its arrivals wait in the lobby, where every loop with a free connection
// takes them: the pool stays one pool while connections move.

var _ loopGrower = (*loopEngine)(nil)

func (e *loopEngine) growing() bool { return e.auto }
func (e *loopEngine) loopMax() int  { return e.max }

func (e *loopEngine) loopBusy() ([]float64, bool) {
	lps := e.loops()
	cur := make([]busySample, len(lps))
	for i, lp := range lps {
		cur[i] = lp.busySample()
	}
	prev := e.seen
	e.seen = cur
	if len(prev) != len(cur) {
		return nil, false
	}
	busy := make([]float64, len(cur))
	for i := range cur {
		wall := cur[i].at.Sub(prev[i].at)
		if wall <= 0 {
			return nil, false // the loop has not sampled since (it has not started)
		}
		busy[i] = (cur[i].cpu - prev[i].cpu).Seconds() / wall.Seconds()
	}
	return busy, true
}

// grow adds a loop at the instant it takes every running loop's issue lock (see above).
// It is called from the probe's goroutine (threads.tick), after GOMAXPROCS has room for
// the new loop.
func (e *loopEngine) grow() bool {
	k := len(e.loops())
	if !e.auto || k >= e.max || e.sched == nil {
		return false
	}
	s, b, cfg := e.sched, e.env.b, e.env.cfg
	total := (k + 1) * e.per
	first := k * e.per // the new loop's streams: first, first+1, ... (the loops before own those below)
	own := make([]int, e.per)
	fresh := make([]*stream, e.per)
	lags := make([]*hdrhistogram.Histogram, e.per)
	for j := range own {
		own[j] = first + j
		fresh[j] = newStream(cfg.Rate/float64(total), cfg.Seed, first+j).withRamp(cfg.ramp())
		lags[j] = newHist()
	}
	lp, err := newLoop(e.env.ctx, e, nil, own)
	if err != nil {
		return false
	}
	if !e.claimIssuing() {
		lp.close()
		return false
	}
	running := e.loops()
	for _, o := range running {
		o.issueMu.Lock()
	}
	at := time.Since(b.start)
	if s.over(at) || len(s.streams) != first || len(b.lags) != first {
		for _, o := range running {
			o.issueMu.Unlock()
		}
		lp.close()
		e.issuedOne()
		return false
	}
	for j, st := range fresh {
		st.startAt(at)
		s.streams = append(s.streams, st)
		b.lags = append(b.lags, lags[j])
		s.prog[own[j]].Store(int64(st.peek()))
	}
	e.changes = append(e.changes, rateChange{at: at, meanNs: 1e9 * float64(total) / cfg.Rate})
	lp.applied = len(e.changes)
	e.added = append(e.added, at)
	e.all[k] = lp
	e.n.Store(int32(k + 1))
	for i, o := range e.loops() {
		o.keep.Store(int32(shareOf(cfg.Conns, k+1, i)))
	}
	for _, o := range running {
		o.issueMu.Unlock()
	}
	e.start(lp)
	for _, o := range running {
		o.wake() // to hand over connections now rather than within loopMaxWait
	}
	return true
}

// claimIssuing counts one more loop issuing, unless every loop has stopped issuing
// (issued was called: no loop may start then).
func (e *loopEngine) claimIssuing() bool {
	for {
		n := e.issuing.Load()
		if n == 0 {
			return false
		}
		if e.issuing.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// shareOf is loop i's share of conns connections among k loops: conns/k, one more for
// the first conns%k loops (the oldest, who hold more).
func shareOf(conns, k, i int) int {
	n := conns / k
	if i < conns%k {
		n++
	}
	return n
}

// issue issues the loop's due arrivals (scheduler.due); in an auto engine under the
// loop's issue lock, after the rate changes grow published since it last looked.
func (lp *loop) issue(s *scheduler) (time.Duration, bool) {
	if !lp.eng.auto {
		return s.due(lp.own, lp.offer)
	}
	lp.issueMu.Lock()
	defer lp.issueMu.Unlock()
	lp.applyChanges(s)
	return s.due(lp.own, lp.offer)
}

// applyChanges applies the rate changes published since the loop last looked to its own
// streams; with lp.issueMu held, before it issues.
func (lp *loop) applyChanges(s *scheduler) {
	cs := lp.eng.changes
	for ; lp.applied < len(cs); lp.applied++ {
		for _, i := range lp.own {
			s.streams[i].resplit(cs[lp.applied])
		}
	}
}

// sampleBusy records the loop's thread CPU time now (its own goroutine).
func (lp *loop) sampleBusy(now time.Time) {
	cpu := threadCPU()
	lp.sampleMu.Lock()
	lp.sample = busySample{cpu: cpu, at: now}
	lp.sampleMu.Unlock()
}

func (lp *loop) busySample() busySample {
	lp.sampleMu.Lock()
	defer lp.sampleMu.Unlock()
	return lp.sample
}

// giveSpare hands the loop's idle or dead connections above its share (keep) to the
// engine's spare list and wakes the loops below theirs. The loop's own goroutine, after
// dispatch has started what waits.
func (lp *loop) giveSpare() {
	if lp.owned <= int(lp.keep.Load()) {
		return
	}
	var give []*slot
	for lp.owned > int(lp.keep.Load()) {
		sl, ok := lp.spareSlot()
		if !ok {
			break
		}
		give = append(give, sl)
	}
	if len(give) == 0 {
		return
	}
	e := lp.eng
	e.mu.Lock()
	e.spare = append(e.spare, give...)
	e.nsp.Store(int32(len(e.spare)))
	e.mu.Unlock()
	for _, o := range e.loops() {
		if o != lp && o.nowned.Load() < o.keep.Load() {
			o.wake()
		}
	}
}

// takeSpare takes spare connections while the loop is below its share. The loop's own
// goroutine.
func (lp *loop) takeSpare() {
	e := lp.eng
	want := int(lp.keep.Load()) - lp.owned
	if want <= 0 || e.nsp.Load() == 0 {
		return
	}
	e.mu.Lock()
	n := min(want, len(e.spare))
	take := append([]*slot(nil), e.spare[len(e.spare)-n:]...)
	e.spare = e.spare[:len(e.spare)-n]
	e.nsp.Store(int32(len(e.spare)))
	e.mu.Unlock()
	for _, sl := range take {
		lp.adopt(sl)
	}
}

// spareSlot detaches one connection with no transaction from the loop: an idle one with
// nothing unread, else a dead one.
func (lp *loop) spareSlot() (*slot, bool) {
	var sl *slot
	switch {
	case lp.idle.len() > 0 && lp.idle.front().rn == 0:
		sl = lp.idle.pop()
		_ = syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_DEL, sl.fd, nil)
	case len(lp.dead) > 0:
		sl = lp.dead[len(lp.dead)-1]
		lp.dead = lp.dead[:len(lp.dead)-1]
	default:
		return nil, false
	}
	lp.slots[sl.idx] = nil
	lp.owned--
	lp.nowned.Store(int32(lp.owned))
	return sl, true
}

// adopt makes a connection another loop handed over one of the loop's own.
func (lp *loop) adopt(sl *slot) {
	sl.idx = len(lp.slots)
	lp.slots = append(lp.slots, sl)
	lp.owned++
	lp.nowned.Store(int32(lp.owned))
	if sl.fd < 0 {
		lp.dead = append(lp.dead, sl)
		return
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(sl.idx)}
	if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, sl.fd, &ev); err != nil {
		lp.drop(sl, false) // its arrival will reconnect it
		lp.dead = append(lp.dead, sl)
		return
	}
	lp.idle.push(sl)
}
