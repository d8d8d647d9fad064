package driver

import (
	"testing"
	"time"
)

func TestCountAbove(t *testing.T) {
	h := newHist()
	for range 10 {
		record(h, 500*time.Millisecond)
	}
	record(h, 999*time.Millisecond)
	for range 5 {
		record(h, 2*time.Second)
	}
	record(h, 1002*time.Millisecond) // above 1 s by more than the histogram's 0.1 %
	if n := countAbove(h, time.Second); n != 6 {
		t.Errorf("countAbove(1s) = %d, want 6", n)
	}
	if n := countAbove(newHist(), time.Second); n != 0 {
		t.Errorf("empty histogram: %d above", n)
	}
}
