package report

import (
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

func TestKneeWithInterval(t *testing.T) {
	s := &result.Sweep{Knee: 3080, Interval: &result.Interval{Lo: 2950, Hi: 3190, Level: 0.9}}
	if got, want := kneeWithInterval(s, " tx/s"), "3,080 tx/s (2,950-3,190, 90 %)"; got != want {
		t.Errorf("kneeWithInterval(%+v) = %q, want %q", s, got, want)
	}
	// A knee below its interval (a rate between passed some probes and failed others)
	// says so, in the summary and in the note on how the interval was made.
	below := &result.Sweep{Workload: "transfer", SyncCommit: "on", Knee: 1563, Repeats: 2,
		Interval: &result.Interval{Lo: 1614.9, Hi: 2131, Level: 0.9, Midpoint: 1794, Method: "fit", Probes: 9}}
	if got, want := kneeWithInterval(below, " tx/s"), "1,563 tx/s (below 1,615-2,131, 90 %)"; got != want {
		t.Errorf("kneeWithInterval(%+v) = %q, want %q", below, got, want)
	}
	if notes := kneeNotes(below); len(notes) == 0 || !strings.Contains(notes[0], "the knee lies below the interval") {
		t.Errorf("kneeNotes(knee below its interval) = %q; want a note that says why the knee lies below", notes)
	}
	if notes := kneeNotes(s); len(notes) == 0 || strings.Contains(notes[0], "below") || strings.Contains(notes[0], "above") {
		t.Errorf("kneeNotes(knee inside its interval) = %q; want no word of lying below or above", notes)
	}
	// A knee above its interval (it held once; the fit says a hold there fails more
	// often than not) says so too, with the fit's reference window.
	above := &result.Sweep{Workload: "oltp", SyncCommit: "on", Knee: 1944,
		Interval: &result.Interval{Lo: 1606, Hi: 1938, Level: 0.9, Midpoint: 1791, Method: "fit", Probes: 13, WindowS: 360}}
	if got, want := kneeWithInterval(above, " tx/s"), "1,944 tx/s (above 1,606-1,938, 90 %)"; got != want {
		t.Errorf("kneeWithInterval(%+v) = %q, want %q", above, got, want)
	}
	if notes := kneeNotes(above); len(notes) == 0 || !strings.Contains(notes[0], "the knee lies above the interval") ||
		!strings.Contains(notes[0], "a 360.0 s probe passes half the time at 1,791 tx/s") {
		t.Errorf("kneeNotes(knee above its interval) = %q; want a note that says why, with the fit's window", notes)
	}
	if notes := kneeNotes(above); len(notes) == 0 || strings.Contains(notes[0], "checkpoint") {
		t.Errorf("kneeNotes(no fitted event weight) = %q; want no word of starts and checkpoints", notes)
	}
	above.Interval.EventS = 85.2 // the fitted weight of a start and a checkpoint is named
	if notes := kneeNotes(above); len(notes) == 0 || !strings.Contains(notes[0], "each probe start and checkpoint a chance to collapse worth 85.2 s of steady running") {
		t.Errorf("kneeNotes(event weight 85.2 s) = %q; want the weight named", notes)
	}
	if notes := kneeNotes(above); len(notes) == 0 || strings.Contains(notes[0], "a repeat") {
		t.Errorf("kneeNotes(no repeat interval recorded) = %q; want no word of a repeat", notes)
	}
	above.Interval.RepeatLo, above.Interval.RepeatHi = 1549.6, 2001 // where a second run's estimate lands
	if notes := kneeNotes(above); len(notes) == 0 ||
		!strings.Contains(notes[0], "a repeat of this search on the unchanged server puts that estimate in 1,550-2,001 tx/s (90 %)") {
		t.Errorf("kneeNotes(repeat interval 1,550-2,001) = %q; want it named", notes)
	}
	s.Interval = nil // no interval: the knee as it was, nothing invented
	if got, want := kneeWithInterval(s, " tx/s"), "3,080 tx/s"; got != want {
		t.Errorf("kneeWithInterval without an interval = %q, want %q", got, want)
	}
}

func TestKneeRatioRange(t *testing.T) {
	iv := func(lo, hi float64) *result.Interval { return &result.Interval{Lo: lo, Hi: hi, Level: 0.9} }
	f := &result.File{Sweeps: []result.Sweep{
		{Workload: "oltp", SyncCommit: "on", Knee: 3020, Interval: iv(2800, 3200)},
		{Workload: "oltp", SyncCommit: "off", Knee: 3080, Interval: iv(2950, 3190)},
		{Workload: "transfer", SyncCommit: "on", Knee: 500},
		{Workload: "transfer", SyncCommit: "off", Knee: 1000, Interval: iv(900, 1100)},
	}}
	got := kneeRatios(f)
	want := []string{
		// [off.Lo / on.Hi, off.Hi / on.Lo] = [2950/3200, 3190/2800]
		"oltp: synchronous_commit off/on knee ratio 1.02x (0.92-1.14), 3,080 vs 3,020 tx/s",
		// One side without an interval: the ratio alone.
		"transfer: synchronous_commit off/on knee ratio 2.00x, 1,000 vs 500 tx/s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kneeRatios =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBottleneckCell(t *testing.T) {
	knee := result.Probe{TargetRate: 3100, Verdict: result.Pass, Observation: &result.Observation{Bottleneck: "CPU"}}
	for _, tc := range []struct {
		name string
		s    result.Sweep
		want string
	}{
		{"line names its rate already", result.Sweep{Knee: 3100, Bottleneck: "above the knee, at 3,318 tx/s: WAL flush", BottleneckRate: 3318},
			"above the knee, at 3,318 tx/s: WAL flush"},
		{"old line with its rate", result.Sweep{Knee: 1000, Bottleneck: "at 1150 tx/s: WAL flush"}, "at 1150 tx/s: WAL flush"},
		{"rate above the knee added", result.Sweep{Knee: 3100, Bottleneck: "WAL flush", BottleneckRate: 3318},
			"above the knee, at 3,318 tx/s: WAL flush"},
		{"rate at the knee added", result.Sweep{Knee: 3100, Bottleneck: "WAL flush", BottleneckRate: 3100},
			"at the knee, 3,100 tx/s: WAL flush"},
		{"no rate: the line as it is", result.Sweep{Knee: 3100, Bottleneck: "WAL flush"}, "WAL flush"},
		{"no sweep line: the knee probe's", result.Sweep{Knee: 3100, Probes: []result.Probe{knee}}, "at the knee, 3,100 tx/s: CPU"},
		{"nothing", result.Sweep{Knee: 3100}, ""},
	} {
		if got := bottleneckCell(&tc.s); got != tc.want {
			t.Errorf("%s: bottleneckCell = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFirstFailingIsAboveTheKnee: the sweeps table's errors name the lowest failing rate
// above the knee, not a failure at the knee that its passes and hold overruled (a real
// transfer sweep printed "errors at 2,275" beside "knee 2,275, held").
func TestFirstFailingIsAboveTheKnee(t *testing.T) {
	fail := func(rate float64, rejected int64) result.Probe {
		return result.Probe{TargetRate: rate, Verdict: result.Fail, Rejected: rejected}
	}
	pass := result.Probe{TargetRate: 2275, Verdict: result.Pass}
	s := result.Sweep{Knee: 2275, Probes: []result.Probe{fail(2895, 900), fail(2275, 519), pass, fail(2482, 199), fail(2482, 300)}}
	if got := sweepCells(&s).errs; got != "at 2,482: pool_timeout 199" {
		t.Errorf("errors cell = %q, want the first failing probe above the knee, at 2,482", got)
	}
	if ff := firstFailing(&s); ff == nil || ff.TargetRate != 2482 {
		t.Errorf("firstFailing = %+v, want the probe at 2,482", ff)
	}
	s.Probes = []result.Probe{fail(2275, 519), pass}
	if got := sweepCells(&s).errs; got != "-" {
		t.Errorf("no failure above the knee: errors cell = %q, want -", got)
	}
	s.Knee = 0
	if got := sweepCells(&s).errs; got != "at 2,275: pool_timeout 519" {
		t.Errorf("no knee: errors cell = %q, want the lowest failing probe", got)
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		st   result.Steady
		want string
	}{
		{result.Steady{SlopeMsPerS: 2.1, SlopeLo: 1.4, SlopeHi: 2.9}, "+2.10 ms/s (1.40-2.90)"},
		{result.Steady{SlopeMsPerS: 0.1, SlopeLo: -0.3, SlopeHi: 0.5}, "+0.10 ms/s (-0.30 to 0.50)"},
		{result.Steady{SlopeMsPerS: -3.2, SlopeLo: -4.3, SlopeHi: -2.2}, "-3.20 ms/s (-4.30 to -2.20)"},
	} {
		if got := slope(&tc.st); got != tc.want {
			t.Errorf("slope(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

func TestNoteLines(t *testing.T) {
	n := "#1 100 tx/s: fraud check rows p50 20 (first / last third 20 / 20), p99 31; back-fill 6,000 rows in 0.1 s; restore 0.5 s"
	got := noteLines(n, 80)
	want := []string{"#1 100 tx/s: fraud check rows p50 20 (first / last third 20 / 20), p99 31;",
		"    back-fill 6,000 rows in 0.1 s; restore 0.5 s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("noteLines(%q, 80) =\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
