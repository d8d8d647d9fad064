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
	// changes are rate changes whose instant the next arrival has not reached (resplit).
	changes []rateChange
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
	s.settle()
	return at
}

// autoStreams is the number of streams for a rate when Config.Streams is 0: one stream
// per 5,000 arrivals a second (a single goroutine issues that comfortably), at most 8.
func autoStreams(rate float64) int {
	return min(8, max(1, int(math.Ceil(rate/5000))))
}

// newStreamAt is newStream for a stream that starts at offset at: its first arrival is
// one exponential gap after at (a loop added mid-probe, loopEngine.grow).
func newStreamAt(rate float64, seed int64, idx int, at time.Duration) *stream {
	s := newStream(rate, seed, idx)
	s.next += at
	return s
}

// rateChange is a change of every stream's rate at a common instant: from offset at on,
// gaps have mean meanNs.
type rateChange struct {
	at     time.Duration
	meanNs float64
}

// resplit changes the stream's rate from c.at on. The stream stays Poisson, at its old rate
// before c.at and its new one after, whatever its pending arrival: an arrival still
// before c.at is issued as drawn, and the first one at or after c.at is moved by settle.
// Several changes apply in order. The stream's owner calls it, before it issues any
// arrival at or after c.at (loopEngine.grow publishes a change under every loop's issue
// lock, at the moment it takes them).
func (s *stream) resplit(c rateChange) {
	s.changes = append(s.changes, c)
	s.settle()
}

// settle applies the pending rate changes whose instant the pending arrival has reached.
// The pending arrival was drawn at the old rate; past the change's instant its remaining
// wait is again exponential at that rate (memorylessness: the exponential forgets how long
// it has run), and an exponential scaled by old rate / new rate is exponential at the new
// rate. So the stream's arrivals before the instant are untouched, none is added or
// dropped there, and from the instant on they are a Poisson stream at the new rate,
// independent of the past: the sum of the probe's streams stays a Poisson stream of the
// probe's rate when every stream's rate changes at the same instant and the changed rates
// still add up to it.
func (s *stream) settle() {
	for len(s.changes) > 0 && s.next >= s.changes[0].at {
		c := s.changes[0]
		s.next = c.at + time.Duration(math.Round(float64(s.next-c.at)*c.meanNs/s.meanNs))
		s.meanNs = c.meanNs
		s.changes = s.changes[1:]
	}
}
