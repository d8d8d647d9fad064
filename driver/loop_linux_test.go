package driver

import (
	"context"
	"testing"
	"time"
)

func TestRing(t *testing.T) {
	var q ring[int]
	next, want := 0, 0
	// Interleave pushes and pops across several growths and wrap-arounds.
	for round := range 50 {
		for range round % 7 * 3 {
			q.push(next)
			next++
		}
		for range round % 5 * 2 {
			if q.len() == 0 {
				break
			}
			if got := q.pop(); got != want {
				t.Fatalf("pop = %d, want %d (FIFO)", got, want)
			}
			want++
		}
	}
	if q.len() != next-want {
		t.Fatalf("len %d, want %d", q.len(), next-want)
	}
	if q.len() > 0 && q.front() != want {
		t.Fatalf("front %d, want %d", q.front(), want)
	}
	q.remove(want + 1)
	if got := q.pop(); got != want {
		t.Fatalf("after remove: pop = %d, want %d", got, want)
	}
	if q.len() > 0 && q.front() != want+2 {
		t.Fatalf("after remove: front %d, want %d (the removed one skipped, order kept)", q.front(), want+2)
	}
}

// Without epoll_pwait2 (older kernels) the loop waits with epoll_pwait and still works.
func TestLoopWithoutPwait2(t *testing.T) {
	loopNoPwait2 = true
	defer func() { loopNoPwait2 = false }()
	pool, _ := setup(t, DefaultSession(), 2)
	p := run(t, context.Background(), pool, then(), Config{Engine: EngineLoop, Rate: 100, Duration: time.Second, Conns: 2, Seed: 16})
	checkBooks(t, p, true)
	if p.Engine != EngineLoop || p.Committed < p.Scheduled*9/10 {
		t.Errorf("engine %s committed %d of %d: want the loop to commit nearly all", p.Engine, p.Committed, p.Scheduled)
	}
}
