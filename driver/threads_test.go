package driver

import (
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
