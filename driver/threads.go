package driver

import (
	"runtime"
	"time"
)

// threadsGrowShare is the share of its cores the process may use in one second before an
// auto probe gets another core.
const threadsGrowShare = 0.75

// threads sizes the probe's GOMAXPROCS (Config.Threads). Every reply from the server
// makes a goroutine runnable; with idle Ps the runtime wakes a thread to run it, and on a
// small machine those wake-ups cost more CPU than the work (oltp at 600 tx/s on 2 cores:
// one P used 17 % less CPU than two, see README). So an auto probe starts on one P and
// takes another only when it needs it.
type threads struct {
	auto     bool
	max      int
	loops    loopGrower // the loop engine choosing its loops (Threads 0): tick grows it instead
	lastCPU  time.Duration
	lastWall time.Time
	// The process's CPU clock, the wall clock and runtime.GOMAXPROCS: fields so tests can
	// drive tick.
	cpu func() time.Duration
	now func() time.Time
	set func(int) int
}

// startEngine is start for eng: the loop engine fixes its cores (one per loop) and, when
// it chooses its number of loops, tick adds a loop, and its core, instead of doubling.
func (t *threads) startEngine(n int, eng engine) int {
	if g, ok := eng.(loopGrower); ok && g.growing() {
		t.loops = g
	}
	return t.start(n, eng.cores())
}

// start applies the setting (0 = auto) and returns the GOMAXPROCS to restore afterwards.
// An engine that fixes its cores (fixed > 0: the loop engine, one P per loop, each loop's
// goroutine doing all of its work) gets exactly those, whatever n says.
func (t *threads) start(n, fixed int) int {
	if t.set == nil {
		t.set = runtime.GOMAXPROCS
	}
	if t.cpu == nil {
		t.cpu = cpuTime
	}
	if t.now == nil {
		t.now = time.Now
	}
	prev := t.set(0)
	t.auto, t.max = n == 0 && fixed == 0, max(prev, 1)
	if fixed > 0 {
		n = fixed
	}
	if n == 0 {
		n = 1
	}
	t.set(n)
	t.lastCPU, t.lastWall = t.cpu(), t.now()
	return prev
}

// tick, called about once a second, doubles an auto probe's Ps (up to the maximum) when
// the process used more than threadsGrowShare of the Ps it has since the last tick.
func (t *threads) tick() {
	if t.loops != nil {
		t.tickLoops()
		return
	}
	if !t.auto {
		return
	}
	cpu, now := t.cpu(), t.now()
	used, wall := cpu-t.lastCPU, now.Sub(t.lastWall)
	t.lastCPU, t.lastWall = cpu, now
	if n := t.set(0); n < t.max && wall > 0 && used.Seconds() > threadsGrowShare*float64(n)*wall.Seconds() {
		t.set(min(2*n, t.max))
	}
}

// tickLoops adds a loop when the loops' busy shares over the last second pass the rule
// (growLoops); GOMAXPROCS first, for the new loop's core: a loop keeps its P while it
// waits in epoll, so a loop without a P of its own would wait for another's yield.
func (t *threads) tickLoops() {
	busy, ok := t.loops.loopBusy()
	if !ok || !growLoops(busy, t.loops.loopMax(), loopsGrowAt) {
		return
	}
	k := len(busy)
	t.set(k + 1)
	if !t.loops.grow() {
		t.set(k)
	}
}

// loops is how many event loops the loop engine starts with: Threads when it is set (each
// loop needs a connection of its own, so at most Conns), else one (auto: it adds loops
// as they get busy, up to loopsMax).
func (c Config) loops() int { return max(1, min(c.Threads, c.Conns)) }

// loopsMax is the most loops the loop engine may run: loops() when Threads is set, else
// (auto) one per core the process may use (GOMAXPROCS as the probe is set up), at most
// Conns.
func (c Config) loopsMax() int {
	if c.Threads > 0 {
		return c.loops()
	}
	return max(1, min(runtime.GOMAXPROCS(0), c.Conns))
}

// streamSlots is how many streams the probe may have: Streams, and per loop an auto
// probe may add, as many again as its first loop has.
func (c Config) streamSlots() int { return c.Streams / c.loops() * c.loopsMax() }

// streamsFor rounds a stream count up to a multiple of k, so k loops each own the same
// number of streams and so the same share of the rate.
func streamsFor(streams, k int) int { return (streams + k - 1) / k * k }

// loopStreams is the streams loop i of k issues: i, i+k, i+2k, ... of streams.
func loopStreams(i, k, streams int) []int {
	var own []int
	for j := i; j < streams; j += k {
		own = append(own, j)
	}
	return own
}

// loopsGrowBusy is the mean busy share of their cores past which the loops get another
// loop. A loop at busy share b delays the events it handles by about b/(1-b) of the work of
// one (a single server's queueing): 3x at 0.75, 9x at 0.9, where the probe counts as
// driver_limited. Below it one loop less is cheaper (fewer threads, fewer wake-ups), and
// it is the pgx engine's threshold for another core too (threadsGrowShare).
const loopsGrowBusy = threadsGrowShare

// loopsGrowAt is the threshold tickLoops applies: loopsGrowBusy (tests lower it, so that a
// light probe grows).
var loopsGrowAt = loopsGrowBusy

// growLoops is the rule: another loop when the loops' mean busy share of their cores
// over the last interval passed at (loopsGrowBusy) and there are fewer than max. The
// mean, because the loops share one pool: a loop with free connections takes the
// arrivals another cannot start (the lobby), so their work evens out.
func growLoops(busy []float64, max int, at float64) bool {
	if len(busy) == 0 || len(busy) >= max {
		return false
	}
	var sum float64
	for _, b := range busy {
		sum += b
	}
	return sum/float64(len(busy)) > at
}

// loopGrower is the loop engine when it chooses its number of loops (threads.tick).
type loopGrower interface {
	// growing reports whether the engine adds loops (Threads 0).
	growing() bool
	// loopMax is the most loops the engine may run.
	loopMax() int
	// loopBusy is each loop's busy share of its core since the previous call, and false
	// when that interval is not one to judge: the first call, or a loop was added since
	// the call before (the next interval is the first whole one at the new count).
	loopBusy() ([]float64, bool)
	// grow adds a loop, false when it cannot (the most loops run, or issuing is over).
	grow() bool
}

// busySample is a loop's thread CPU time at a moment (loop.sampleBusy).
type busySample struct {
	cpu time.Duration
	at  time.Time
}
