package driver

import (
	"math"
	"math/rand/v2"
	"time"
)

// stream is one Poisson arrival stream: exponential gaps at its rate, accumulated as
// absolute offsets from the probe start, so the n-th intended time is exactly the sum of
// the first n gaps and the schedule cannot drift however late the scheduler runs.
//
// With a ramp R the stream is a Poisson process whose rate rises linearly from 0 at the
// probe's start to its full rate at R, and stays there (the warm-up's ramp, Config.Ramp):
// the gaps are drawn at the full rate in the stream's own time u, and each arrival's real
// offset is warp(u), the inverse of the ramp's cumulative intensity (u = t²/2R before R,
// t - R/2 after it). That is the time-rescaling of a Poisson process, so the arrivals
// after R are exactly a Poisson stream at the full rate, shifted by R/2.
type stream struct {
	rng    *rand.Rand
	meanNs float64
	u      time.Duration // the next arrival's offset in the stream's own time
	next   time.Duration // its intended (real) offset: warp(u)
	ramp   time.Duration
	// changes are rate changes whose instant (in the stream's own time) the next arrival
	// has not reached (resplit).
	changes []rateChange
}

// newStream makes stream idx of a probe at rate arrivals per second, seeded by (seed, idx)
// so every stream of every probe is reproducible and independent.
func newStream(rate float64, seed int64, idx int) *stream {
	s := &stream{rng: rand.New(rand.NewPCG(uint64(seed), uint64(idx)+0x9e3779b97f4a7c15)),
		meanNs: 1e9 / rate}
	s.u = s.gap()
	s.next = s.u
	return s
}

// withRamp gives s a ramp of r (before it issued anything) and returns it.
func (s *stream) withRamp(r time.Duration) *stream {
	s.ramp = max(r, 0)
	s.next = s.warp(s.u)
	return s
}

// warp is the real offset of the stream-time offset u.
func (s *stream) warp(u time.Duration) time.Duration {
	r := s.ramp
	if r <= 0 || u >= r/2 {
		return u + r/2
	}
	return time.Duration(math.Round(math.Sqrt(2 * float64(r) * float64(u))))
}

// unwarp is the stream-time offset of the real offset t (warp's inverse).
func (s *stream) unwarp(t time.Duration) time.Duration {
	r := s.ramp
	if r <= 0 || t >= r {
		return t - r/2
	}
	return time.Duration(math.Round(float64(t) * float64(t) / (2 * float64(r))))
}

// startAt moves a stream that has issued nothing to start at real offset at: its first
// arrival is one exponential gap (in its own time) after at.
func (s *stream) startAt(at time.Duration) {
	s.u += s.unwarp(at)
	s.next = s.warp(s.u)
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
	s.u += s.gap()
	s.settle()
	s.next = s.warp(s.u)
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
	s.startAt(at)
	return s
}

// rateChange is a change of every stream's rate at a common instant: from offset at on,
// gaps have mean meanNs (at is a real offset when published, the stream's own time once
// resplit took it).
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
	c.at = s.unwarp(c.at)
	s.changes = append(s.changes, c)
	s.settle()
	s.next = s.warp(s.u)
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
	for len(s.changes) > 0 && s.u >= s.changes[0].at {
		c := s.changes[0]
		s.u = c.at + time.Duration(math.Round(float64(s.u-c.at)*c.meanNs/s.meanNs))
		s.meanNs = c.meanNs
		s.changes = s.changes[1:]
	}
}
