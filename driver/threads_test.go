package driver

import (
	"fmt"
	"testing"
	"time"
)

// fakeProcs stands in for runtime.GOMAXPROCS and the process's CPU and wall clocks.
type fakeProcs struct {
	n    int
	cpu  time.Duration
	wall time.Time
}

func (f *fakeProcs) threads() threads {
	return threads{set: f.set, cpu: func() time.Duration { return f.cpu }, now: func() time.Time { return f.wall }}
}

func (f *fakeProcs) set(n int) int {
	prev := f.n
	if n > 0 {
		f.n = n
	}
	return prev
}

func TestThreadsAuto(t *testing.T) {
	f := &fakeProcs{n: 4}
	th := f.threads()
	if prev := th.start(0, 0); prev != 4 || f.n != 1 {
		t.Fatalf("start(auto): restore %d, now %d; want restore 4, start on 1", prev, f.n)
	}
	// use passes one second in which the process used share cores.
	use := func(share float64) {
		f.wall = f.wall.Add(time.Second)
		f.cpu += time.Duration(share * float64(time.Second))
		th.tick()
	}
	use(0.5) // half of one core: stays
	if f.n != 1 {
		t.Fatalf("after using 0.5 of 1 core: %d procs, want 1", f.n)
	}
	use(0.9) // 90 % of one core: doubles
	if f.n != 2 {
		t.Fatalf("after using 0.9 of 1 core: %d procs, want 2", f.n)
	}
	use(1.2) // 60 % of two: stays
	if f.n != 2 {
		t.Fatalf("after using 1.2 of 2 cores: %d procs, want 2", f.n)
	}
	use(1.9)
	use(3.9) // capped at the GOMAXPROCS found at the start
	if f.n != 4 {
		t.Fatalf("after saturating: %d procs, want the cap 4", f.n)
	}
}

func TestThreadsFixed(t *testing.T) {
	f := &fakeProcs{n: 2}
	th := f.threads()
	if prev := th.start(3, 0); prev != 2 || f.n != 3 {
		t.Fatalf("start(3): restore %d, now %d; want restore 2, now 3", prev, f.n)
	}
	f.wall = f.wall.Add(time.Second)
	f.cpu += time.Hour // whatever the use, a fixed setting stays
	th.tick()
	if f.n != 3 {
		t.Fatalf("fixed threads changed to %d", f.n)
	}
}

// fakeGrower is an auto loop engine whose busy shares the test scripts: each tick reads
// the next entry (nil: an interval not to judge).
type fakeGrower struct {
	script      [][]float64
	tick        int
	loops       int
	max         int
	refuse      bool // grow fails (issuing is over)
	procs       *fakeProcs
	procsAtGrow []int // GOMAXPROCS when grow was called
}

func (g *fakeGrower) growing() bool { return true }
func (g *fakeGrower) loopMax() int  { return g.max }
func (g *fakeGrower) loopBusy() ([]float64, bool) {
	b := g.script[g.tick]
	g.tick++
	if b != nil && len(b) != g.loops {
		panic("fakeGrower: the script's busy shares do not match the loops")
	}
	return b, b != nil
}
func (g *fakeGrower) grow() bool {
	g.procsAtGrow = append(g.procsAtGrow, g.procs.n)
	if g.refuse {
		return false
	}
	g.loops++
	return true
}

// The grow rule: a loop is added at a tick whose judged interval has the loops' mean busy
// share above loopsGrowBusy, never at one not to judge, never above the maximum; its core
// comes first, and goes again when the loop cannot be added.
func TestThreadsGrowLoops(t *testing.T) {
	f := &fakeProcs{n: 4}
	g := &fakeGrower{loops: 1, max: 3, procs: f, script: [][]float64{
		nil,          // 1: the first interval
		{0.5},        // 2: half a core
		{0.74},       // 3: just below
		{0.8},        // 4: above: a second loop
		nil,          // 5: the interval the loop was added in
		{0.9, 0.55},  // 6: mean 0.725
		{0.76, 0.76}, // 7: a third loop
		nil,          // 8
		{1, 1, 1},    // 9: saturated at the maximum
		{1, 1, 1},    // 10
	}}
	th := f.threads()
	th.loops = g
	if prev := th.start(0, 1); prev != 4 || f.n != 1 {
		t.Fatalf("start: restore %d, now %d; want restore 4, one core for one loop", prev, f.n)
	}
	wantLoops := []int{1, 1, 1, 2, 2, 2, 3, 3, 3, 3}
	for i, want := range wantLoops {
		th.tick()
		if g.loops != want || f.n != want {
			t.Fatalf("tick %d (busy %v): %d loops on %d cores, want %d on %d", i+1, g.script[i], g.loops, f.n, want, want)
		}
	}
	if fmt.Sprint(g.procsAtGrow) != "[2 3]" {
		t.Errorf("GOMAXPROCS when each loop was added: %v, want [2 3] (the new loop's core first)", g.procsAtGrow)
	}
	// A loop that cannot be added (issuing over) gives its core back.
	f2 := &fakeProcs{n: 4}
	g2 := &fakeGrower{loops: 1, max: 3, procs: f2, refuse: true, script: [][]float64{{0.95}}}
	th2 := f2.threads()
	th2.loops = g2
	th2.start(0, 1)
	th2.tick()
	if len(g2.procsAtGrow) != 1 || g2.loops != 1 || f2.n != 1 {
		t.Errorf("refused grow: asked %d times, %d loops on %d cores; want asked once, 1 loop on 1 core", len(g2.procsAtGrow), g2.loops, f2.n)
	}
}

func TestGrowLoopsRule(t *testing.T) {
	for _, c := range []struct {
		busy []float64
		max  int
		want bool
	}{
		{nil, 4, false},
		{[]float64{0.75}, 4, false},
		{[]float64{0.7501}, 4, true},
		{[]float64{1, 0.5}, 4, false},   // mean 0.75: not past it
		{[]float64{1, 0.6}, 4, true},    // mean 0.8
		{[]float64{1, 0.4}, 4, false},   // mean 0.7
		{[]float64{0.9, 0.9}, 2, false}, // at the maximum
		{[]float64{0.9}, 1, false},      // one loop allowed
	} {
		if got := growLoops(c.busy, c.max, loopsGrowBusy); got != c.want {
			t.Errorf("growLoops(%v, max %d, %v) = %v, want %v", c.busy, c.max, loopsGrowBusy, got, c.want)
		}
	}
}
