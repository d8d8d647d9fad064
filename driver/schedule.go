package driver

import (
	"math"
	"math/rand/v2"
	"time"
)

// stream is one Poisson arrival stream: exponential gaps at its rate, accumulated as
// absolute offsets from the probe start, so the n-th intended time is exactly the sum of
// the first n gaps and the schedule cannot drift however late the scheduler runs.
type stream struct {
	rng    *rand.Rand
	meanNs float64
	next   time.Duration // intended offset of the next arrival
}

// newStream makes stream idx of a probe at rate arrivals per second, seeded by (seed, idx)
// so every stream of every probe is reproducible and independent.
func newStream(rate float64, seed int64, idx int) *stream {
	s := &stream{rng: rand.New(rand.NewPCG(uint64(seed), uint64(idx)+0x9e3779b97f4a7c15)),
		meanNs: 1e9 / rate}
	s.next = s.gap()
	return s
}

// gap draws one exponential gap, rounded to the nanosecond.
func (s *stream) gap() time.Duration {
	return time.Duration(math.Round(s.rng.ExpFloat64() * s.meanNs))
}

// peek returns the next arrival's intended offset without consuming it.
func (s *stream) peek() time.Duration { return s.next }

// advance consumes the next arrival and returns its intended offset.
func (s *stream) advance() time.Duration {
	at := s.next
	s.next += s.gap()
	return at
}

// autoStreams is the number of streams for a rate when Config.Streams is 0: one stream
// per 5,000 arrivals a second (a single goroutine issues that comfortably), at most 8.
func autoStreams(rate float64) int {
	return min(8, max(1, int(math.Ceil(rate/5000))))
}
