package driver

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

func TestLobbyHeap(t *testing.T) {
	var l lobby
	rng := rand.New(rand.NewPCG(1, 2))
	want := 0
	for round := range 40 {
		l.mu.Lock()
		for range round % 9 {
			l.push(arrival{time.Duration(rng.IntN(1000))})
			want++
		}
		l.sync()
		l.mu.Unlock()
		if l.len() != want {
			t.Fatalf("len %d, want %d", l.len(), want)
		}
		prev := time.Duration(-1)
		for range round % 4 {
			at, ok := l.front()
			a, got := l.popBefore(math.MaxInt64)
			if !ok || !got || a.at != at || a.at < prev {
				t.Fatalf("popBefore = %v %v (front %v %v), previous %v: want the earliest", a, got, at, ok, prev)
			}
			prev = a.at
			want--
			if want == 0 {
				break
			}
		}
	}
	if at, ok := l.front(); ok {
		if _, got := l.popBefore(at); got {
			t.Errorf("popBefore(front %v) took it: want only arrivals earlier than the limit", at)
		}
	}
}

// fakeLoops is an engine of k loops with one connection each, on socketpairs (nothing
// answers: transactions start and stay in flight), for the lobby's rules.
func fakeLoops(t *testing.T, k int, cfg Config) *loopEngine {
	t.Helper()
	cfg = cfg.withDefaults()
	b := newBooks(cfg, newStopper())
	b.start = time.Now()
	w := then()
	e := &loopEngine{env: &probeEnv{script: w, w: w, cfg: cfg, b: b, qcap: 100}, max: k, per: 1}
	e.lobby.head.Store(math.MaxInt64)
	for i := range k {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		lp := &loop{env: e.env, b: b, eng: e, epfd: epfd, wakeR: -1, wakeW: -1,
			events: make([]syscall.EpollEvent, 8), pwait2: false}
		t.Cleanup(lp.close)
		if err := lp.openWake(); err != nil {
			t.Fatal(err)
		}
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
		sl := &slot{wk: newWorker(cfg.Seed, i), fd: -1, rbuf: make([]byte, 8192), wire: newWireConn(preparedStatements(w))}
		fakePeer[sl] = fds[1]
		lp.slots = append(lp.slots, sl)
		if err := lp.attach(sl, fds[0], map[string]int8{}); err != nil {
			t.Fatal(err)
		}
		lp.idle.push(sl)
		lp.owned = 1
		lp.keep.Store(1)
		lp.nowned.Store(1)
		e.all = append(e.all, lp)
		e.n.Store(int32(len(e.all)))
	}
	return e
}

// fakePeer is the other end of each fake connection's socketpair.
var fakePeer = map[*slot]int{}

// One pool across loops: an arrival of a loop whose connections are busy starts on
// another loop's free connection (woken for it), and is rejected only when no connection
// of the pool took it within the pool wait.
func TestLoopsShareThePool(t *testing.T) {
	e := fakeLoops(t, 2, Config{Rate: 10, Duration: 10 * time.Second, PoolWait: time.Second, Threads: 2, Conns: 2})
	a, bl, b := e.loops()[0], e.loops()[1], e.env.b
	rejected := func() int64 { return b.meas.failed[result.PoolTimeout].Load() }

	a.offer(arrival{0})
	a.dispatch()
	if a.busy != 1 || a.slots[0].wk.job.a.at != 0 {
		t.Fatalf("loop 0 with a free connection: busy %d, job %v; want its arrival started", a.busy, a.slots[0].wk.job.a)
	}
	bl.room.Store(1) // loop 1 published its free connection before it waited
	a.offer(arrival{time.Millisecond})
	a.dispatch()
	if a.queue.len() != 0 || e.lobby.len() != 1 || !bl.woken.Load() {
		t.Fatalf("loop 0 full: queue %d, lobby %d, loop 1 woken %v; want the arrival in the lobby and loop 1 woken",
			a.queue.len(), e.lobby.len(), bl.woken.Load())
	}
	bl.poll(0) // the wake byte
	if bl.woken.Load() {
		t.Error("loop 1 read its wake pipe but still counts as woken")
	}
	bl.offer(arrival{2 * time.Millisecond}) // loop 1's own, later: the lobby's earlier arrival goes first
	bl.dispatch()
	if bl.busy != 1 || bl.slots[0].wk.job.a.at != time.Millisecond {
		t.Fatalf("loop 1: busy %d, job %v; want the lobby's arrival (1ms) started first", bl.busy, bl.slots[0].wk.job.a)
	}
	if front, _ := e.lobby.front(); bl.queue.len() != 0 || e.lobby.len() != 1 || front != 2*time.Millisecond {
		t.Fatalf("loop 1 full: queue %d, lobby %d; want its own arrival moved to the lobby", bl.queue.len(), e.lobby.len())
	}
	if rejected() != 0 {
		t.Fatalf("%d rejected while the pool had room or the pool wait had not passed", rejected())
	}
	// No connection of the pool frees within the pool wait: the lobby's arrival expires,
	// whichever loop looks.
	a.room.Store(0)
	bl.room.Store(0)
	b.start = b.start.Add(-2 * time.Second)
	a.dispatch()
	if rejected() != 1 || e.lobby.len() != 0 {
		t.Errorf("after the pool wait: %d rejected, lobby %d; want the waiting arrival rejected", rejected(), e.lobby.len())
	}
}

// k = 2 loops against the real server: the books balance across the loops, the rate is
// held, and the result reports the loops.
func TestLoopsBooksBalance(t *testing.T) {
	pool, _ := setup(t, DefaultSession(), 4)
	const rate, secs = 300.0, 2
	p := run(t, context.Background(), pool, then(), Config{Engine: EngineLoop, Threads: 2, Rate: rate,
		Duration: secs * time.Second, Conns: 4, Seed: 21})
	checkBooks(t, p, true)
	if p.Engine != EngineLoop || p.Loops != 2 || len(p.LoopBusy) != 2 || p.DriverThreads != 2 {
		t.Fatalf("engine %s, loops %d, busy %v, threads %d: want 2 loops on 2 cores", p.Engine, p.Loops, p.LoopBusy, p.DriverThreads)
	}
	for i, f := range p.LoopBusy {
		if !(f > 0 && f < 1.5) {
			t.Errorf("loop %d busy %v: want a share of one core", i, f)
		}
	}
	mean := rate * secs // Poisson: the count's sd is sqrt(mean)
	if d := math.Abs(float64(p.Scheduled) - mean); d > 5*math.Sqrt(mean) {
		t.Errorf("scheduled %d in %ds at %v/s: want %v within 5 sd", p.Scheduled, secs, rate, mean)
	}
	if p.Committed < p.Scheduled*98/100 || p.Rejected > 0 {
		t.Errorf("committed %d, rejected %d of %d: want the loops to hold the rate (lag p99 %v ms, busy %v, series %+v)",
			p.Committed, p.Rejected, p.Scheduled, p.SchedLagP99Ms, p.LoopBusy, p.Series)
	}
	if !(p.ClientCPUPerTxMs > 0) || math.Abs(p.ClientCPUPerTxMs-p.ClientCPUSeconds*1000/float64(p.Checks.CommittedTotal)) > 1e-9 {
		t.Errorf("client CPU per tx %v ms, want client_cpu_s %v over %d commits", p.ClientCPUPerTxMs, p.ClientCPUSeconds, p.Checks.CommittedTotal)
	}
}

// Connections move between loops idle: a loop above its share hands its idle ones over
// (out of its epoll), a loop below its share takes them (into its epoll), and a
// connection with a transaction in flight stays where it is.
func TestLoopsHandOverIdleConnections(t *testing.T) {
	e := fakeLoops(t, 3, Config{Rate: 10, Duration: 10 * time.Second, PoolWait: time.Second, Threads: 3, Conns: 3})
	e.auto = true
	a, bl, c := e.loops()[0], e.loops()[1], e.loops()[2]
	c.offer(arrival{0}) // c's one connection is busy
	c.dispatch()
	moving := a.slots[0]
	a.keep.Store(0) // a's and c's shares are 0, b's 3
	c.keep.Store(0)
	bl.keep.Store(3)
	a.giveSpare()
	c.giveSpare()
	if a.owned != 0 || a.idle.len() != 0 || a.slots[0] != nil || c.owned != 1 || e.nsp.Load() != 1 {
		t.Fatalf("after giving: a owns %d (idle %d), c owns %d, spare %d; want a's idle connection spare, c's busy one kept",
			a.owned, a.idle.len(), c.owned, e.nsp.Load())
	}
	if !bl.woken.Load() {
		t.Error("b, below its share, was not woken for the spare connection")
	}
	bl.takeSpare()
	if bl.owned != 2 || bl.idle.len() != 2 || e.nsp.Load() != 0 || bl.slots[moving.idx] != moving {
		t.Fatalf("after taking: b owns %d (idle %d), spare %d; want a's connection in b", bl.owned, bl.idle.len(), e.nsp.Load())
	}
	// The moved socket is in b's epoll, no longer in a's.
	if _, err := syscall.Write(fakePeer[moving], []byte{0}); err != nil {
		t.Fatal(err)
	}
	ev := make([]syscall.EpollEvent, 8)
	if n, _ := syscall.EpollWait(a.epfd, ev, 0); n != 0 {
		t.Errorf("a's epoll still reports %d events after handing its connection over", n)
	}
	n, _ := syscall.EpollWait(bl.epfd, ev, 0)
	found := false
	for _, x := range ev[:n] {
		found = found || x.Fd == int32(moving.idx)
	}
	if !found {
		t.Errorf("b's epoll does not report the moved connection (slot %d): events %v", moving.idx, ev[:n])
	}
}

// loopBusy judges an interval only when the same loops ran through it.
func TestLoopBusyIntervals(t *testing.T) {
	e := fakeLoops(t, 2, Config{Rate: 10, Duration: 10 * time.Second, Threads: 2, Conns: 2})
	lps := e.loops()
	e.n.Store(1) // one loop running
	t0 := time.Now()
	set := func(lp *loop, cpu, at time.Duration) { lp.sample = busySample{cpu: cpu, at: t0.Add(at)} }
	set(lps[0], 0, 0)
	if _, ok := e.loopBusy(); ok {
		t.Fatal("first call judged an interval")
	}
	set(lps[0], 600*time.Millisecond, time.Second)
	if b, ok := e.loopBusy(); !ok || len(b) != 1 || math.Abs(b[0]-0.6) > 1e-9 {
		t.Fatalf("one loop, 0.6 s of CPU in 1 s: busy %v %v, want [0.6] judged", b, ok)
	}
	e.n.Store(2) // a loop added
	set(lps[0], 1500*time.Millisecond, 2*time.Second)
	set(lps[1], 0, 1500*time.Millisecond)
	if b, ok := e.loopBusy(); ok {
		t.Fatalf("the interval a loop was added in was judged: %v", b)
	}
	set(lps[0], 2*time.Second, 3*time.Second)
	set(lps[1], 250*time.Millisecond, 2500*time.Millisecond)
	if b, ok := e.loopBusy(); !ok || len(b) != 2 || math.Abs(b[0]-0.5) > 1e-9 || math.Abs(b[1]-0.25) > 1e-9 {
		t.Fatalf("two loops: busy %v %v, want [0.5 0.25] judged", b, ok)
	}
}

// --threads auto against the real server: a light probe (the threshold lowered so that it
// grows) starts with one loop and adds the second at a judged tick; the arrivals stay a
// Poisson stream of the rate across the split, the pool stays one pool while the new loop
// gets its connections (nothing rejected), and the books balance.
func TestLoopsAutoGrows(t *testing.T) {
	pool, _ := setup(t, DefaultSession(), 4)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // room for 2 loops on any machine
	loopsGrowAt = 0
	defer func() { loopsGrowAt = loopsGrowBusy }()
	const rate = 200.0
	p := run(t, context.Background(), pool, then(), Config{Engine: EngineLoop, Rate: rate, Warmup: time.Second,
		Ramp: -1, Duration: 4 * time.Second, Conns: 4, Seed: 23}) // no ramp: the full rate from the start
	checkBooks(t, p, true)
	if p.Loops != 2 || len(p.LoopBusy) != 2 || p.DriverThreads != 2 || len(p.LoopsAddedS) != 2 {
		t.Fatalf("loops %d, busy %v, added %v, threads %d: want 2 loops on 2 cores", p.Loops, p.LoopBusy, p.LoopsAddedS, p.DriverThreads)
	}
	// The first judged tick is the second one: about 2 s in.
	if added := p.LoopsAddedS; added[0] != 0 || added[1] < 1.5 || added[1] > 3.5 {
		t.Errorf("loops added at %v s: want 0 and about 2 s (the first judged tick)", added)
	}
	for i, f := range p.LoopBusy {
		if !(f > 0 && f < 1.5) {
			t.Errorf("loop %d busy %v: want a share of one core", i, f)
		}
	}
	if p.Rejected > 0 || p.Committed < p.Scheduled*98/100 {
		t.Errorf("committed %d, rejected %d of %d: want the pool to start every arrival while connections moved (series %+v)",
			p.Committed, p.Rejected, p.Scheduled, p.Series)
	}
	// The rate per second, warm-up included, before and after the split (Poisson: sd sqrt(rate)).
	for _, s := range p.Series {
		if d := math.Abs(float64(s.Offered) - rate); d > 5*math.Sqrt(rate) {
			t.Errorf("second %d offered %d, want %v within 5 sd (loops added at %v s)", s.T, s.Offered, rate, p.LoopsAddedS)
		}
	}
	mean := rate * 4
	if d := math.Abs(float64(p.Scheduled) - mean); d > 5*math.Sqrt(mean) {
		t.Errorf("scheduled %d in 4 s at %v/s: want %v within 5 sd", p.Scheduled, rate, mean)
	}
	if !(p.ClientCPUPerTxMs > 0) {
		t.Errorf("client CPU per tx %v ms, want > 0", p.ClientCPUPerTxMs)
	}
}
