package driver

import (
	"context"
	"math"
	"math/rand/v2"
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
	e := &loopEngine{env: &probeEnv{script: w, w: w, cfg: cfg, b: b, qcap: 100}}
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
		lp.slots = append(lp.slots, sl)
		if err := lp.attach(sl, fds[0], map[string]int8{}); err != nil {
			t.Fatal(err)
		}
		lp.idle.push(sl)
		e.loops = append(e.loops, lp)
	}
	return e
}

// One pool across loops: an arrival of a loop whose connections are busy starts on
// another loop's free connection (woken for it), and is rejected only when no connection
// of the pool took it within the pool wait.
func TestLoopsShareThePool(t *testing.T) {
	e := fakeLoops(t, 2, Config{Rate: 10, Duration: 10 * time.Second, PoolWait: time.Second, Threads: 2, Conns: 2})
	a, bl, b := e.loops[0], e.loops[1], e.env.b
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
