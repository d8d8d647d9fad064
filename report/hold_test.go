package report

import (
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

func TestHoldIsReported(t *testing.T) {
	sw := result.Sweep{Workload: "oltp", SyncCommit: "on", Knee: 2300, HoldS: 360, Held: true,
		Interval: &result.Interval{Lo: 2210, Hi: 2480, Level: 0.9},
		Probes: []result.Probe{
			{TargetRate: 2425, Verdict: result.Pass},
			{TargetRate: 2425, Verdict: result.Fail, Hold: true},
			{TargetRate: 2300, Verdict: result.Pass},
			{TargetRate: 2300, Verdict: result.Pass, Hold: true},
		}}
	if got, want := KneeText(sw), "2,300 tx/s (2,210-2,480, 90 %), held 360.0 s"; got != want {
		t.Errorf("KneeText = %q, want %q", got, want)
	}
	note := holdNote(&sw)
	for _, w := range []string{"held for 360.0 s", "holds failed at 2,425 tx/s"} {
		if !strings.Contains(note, w) {
			t.Errorf("hold note %q lacks %q", note, w)
		}
	}
	sw.Held = false
	if got := KneeText(sw); strings.Contains(got, "held") {
		t.Errorf("KneeText of an unheld knee = %q", got)
	}
	if note := holdNote(&sw); !strings.Contains(note, "not held") {
		t.Errorf("hold note of an unheld knee: %q", note)
	}
	if note := holdNote(&result.Sweep{Knee: 100}); note != "" {
		t.Errorf("hold note without a hold step: %q", note)
	}
}
