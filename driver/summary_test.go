package driver

import (
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// A summarised second hands over its latency and queue-wait histograms (for Config.
// OnSummary) holding exactly its commits and its started arrivals, and only once.
func TestSecondHandsHistograms(t *testing.T) {
	var s second
	for i := range 10 {
		s.arrive(0, 0)
		switch {
		case i < 7:
			s.settle(true, 0, time.Millisecond, 3*time.Millisecond)
		case i < 9:
			s.settle(false, result.LockTimeout, 2*time.Millisecond, 0)
		default:
			s.settle(false, result.PoolTimeout, -1, 0) // never started
		}
	}
	ok, lat, qw := s.summarise(4, result.PhaseMeasure, false)
	if !ok || lat == nil || qw == nil || lat.TotalCount() != s.out.Committed || s.out.Committed != 7 || qw.TotalCount() != 9 {
		t.Fatalf("summarise: ok %v, latency %v, queue wait %v, second %+v: want 7 commits and 9 started", ok, lat, qw, s.out)
	}
	if ok, lat, qw := s.summarise(4, result.PhaseMeasure, false); !ok || lat != nil || qw != nil {
		t.Errorf("summarise again: ok %v, latency %v, queue wait %v: want done and no histograms", ok, lat, qw)
	}
}
