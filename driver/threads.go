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
	lastCPU  time.Duration
	lastWall time.Time
	// The process's CPU clock, the wall clock and runtime.GOMAXPROCS: fields so tests can
	// drive tick.
	cpu func() time.Duration
	now func() time.Time
	set func(int) int
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

// loops is how many event loops the loop engine runs: Threads when it is set (each loop
// needs a connection of its own, so at most Conns), else one.
func (c Config) loops() int { return max(1, min(c.Threads, c.Conns)) }

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
