package observe

import (
	"sort"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// MinWaitGrowth is the least a wait event's share of the active samples must grow from
// the first to the last third of a window (in share, 0.05 = 5 percentage points) to be
// named as the wait that grew.
const MinWaitGrowth = 0.05

// maxTimeBuckets bounds the memory a window's timeline takes: when a window outgrows it,
// neighbouring buckets are merged and the bucket width doubles.
const maxTimeBuckets = 256

// timeBuckets counts active samples per wait event in consecutive spans of the window
// (bucket i covers [i*width, (i+1)*width) since Start), so the first and the last third
// of any window can be compared afterwards. Its size stays under maxTimeBuckets buckets,
// each holding the few events seen in it, whatever the window's length.
type timeBuckets struct {
	width   time.Duration
	buckets []map[string]int64
}

func newTimeBuckets(width time.Duration) timeBuckets {
	return timeBuckets{width: max(width, time.Millisecond)}
}

// add counts n samples of event taken at offset at since Start.
func (b *timeBuckets) add(at time.Duration, event string, n int64) {
	if at < 0 {
		at = 0
	}
	i := int(at / b.width)
	for i >= maxTimeBuckets {
		b.merge()
		i = int(at / b.width)
	}
	for len(b.buckets) <= i {
		b.buckets = append(b.buckets, nil)
	}
	if b.buckets[i] == nil {
		b.buckets[i] = map[string]int64{}
	}
	b.buckets[i][event] += n
}

// merge halves the number of buckets by adding each pair into one of twice the width.
func (b *timeBuckets) merge() {
	merged := make([]map[string]int64, (len(b.buckets)+1)/2)
	for i, m := range b.buckets {
		if m == nil {
			continue
		}
		if merged[i/2] == nil {
			merged[i/2] = map[string]int64{}
		}
		for ev, n := range m {
			merged[i/2][ev] += n
		}
	}
	b.buckets, b.width = merged, 2*b.width
}

// thirds sums the buckets of the first and the last third of a window of length elapsed;
// a bucket belongs to the third its middle falls in.
func (b *timeBuckets) thirds(elapsed time.Duration) (first, last map[string]int64) {
	first, last = map[string]int64{}, map[string]int64{}
	for i, m := range b.buckets {
		mid := time.Duration(i)*b.width + b.width/2
		var into map[string]int64
		switch {
		case mid < elapsed/3:
			into = first
		case mid >= elapsed-elapsed/3:
			into = last
		default:
			continue
		}
		for ev, n := range m {
			into[ev] += n
		}
	}
	return first, last
}

// growth is the WaitGrowth of a window of length elapsed (see waitGrowth).
func (b *timeBuckets) growth(elapsed time.Duration) *result.WaitShift {
	first, last := b.thirds(elapsed)
	return waitGrowth(first, last)
}

// waitGrowth names the event whose share of the active samples grew the most from the
// first counts to the last, when it grew by at least MinWaitGrowth. Nil when either third
// has fewer than MinSamples active samples (shares of almost nothing say nothing) or no
// event grew enough. Ties go to the event that comes first by name.
func waitGrowth(first, last map[string]int64) *result.WaitShift {
	var nf, nl int64
	for _, n := range first {
		nf += n
	}
	for _, n := range last {
		nl += n
	}
	if nf < MinSamples || nl < MinSamples {
		return nil
	}
	events := make([]string, 0, len(last))
	for ev := range last {
		events = append(events, ev)
	}
	sort.Strings(events)
	var best *result.WaitShift
	for _, ev := range events {
		f, l := float64(first[ev])/float64(nf), float64(last[ev])/float64(nl)
		if l-f < MinWaitGrowth-1e-9 {
			continue
		}
		if best == nil || l-f > best.LastShare-best.FirstShare+1e-12 {
			best = &result.WaitShift{Event: ev, FirstShare: f, LastShare: l}
		}
	}
	return best
}
