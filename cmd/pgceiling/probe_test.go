package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// TestDriverConfig: one mapping from the probe's config into the driver's, for run and
// search alike; the drain covers a pool wait and a statement timeout (at least 1 s).
func TestDriverConfig(t *testing.T) {
	p := config.Probe{Warmup: 2 * time.Second, Duration: time.Minute, Conns: 7, Threads: 2, Engine: result.EnginePGX,
		PoolWait: 300 * time.Millisecond, MaxTries: 3, Seed: 9, Session: config.Session{StatementTimeout: 4 * time.Second}}
	got := driverConfig(&p, result.SyncOff)
	if got.Warmup != p.Warmup || got.Duration != p.Duration || got.Conns != 7 || got.Threads != 2 || got.Engine != driver.EnginePGX ||
		got.PoolWait != p.PoolWait || got.MaxTries != 3 || got.Seed != 9 || got.SyncCommit != "off" || got.Drain != 4300*time.Millisecond {
		t.Errorf("driverConfig(%+v, off) = %+v", p, got)
	}
	p.Session.StatementTimeout = 0 // the server's default: the drain still waits a second
	if got := driverConfig(&p, result.SyncOn); got.Drain != 1300*time.Millisecond || got.SyncCommit != "on" {
		t.Errorf("driverConfig(statement timeout 0, on): drain %v sync %q, want 1.3s and on", got.Drain, got.SyncCommit)
	}
	for _, m := range config.ExecModes {
		if _, ok := execModes[m]; !ok {
			t.Errorf("--exec-mode %s has no pgx exec mode", m)
		}
	}
}

func TestSweepStart(t *testing.T) {
	oltpOn := result.SweepKey{Workload: "oltp", SyncCommit: result.SyncOn}
	prior := &result.File{Sweeps: []result.Sweep{{Workload: "oltp", SyncCommit: result.SyncOn, CalibratedRate: 900,
		Probes: []result.Probe{{TargetRate: 720}}, Knee: 800}}}
	c := &config.Search{StartFrom: "old.json"}
	st, err := sweepStart(c, oltpOn, prior, prior, 1)
	if err != nil || len(st.prior) != 1 || st.estimate != 900 || st.knee != 800 {
		t.Errorf("sweepStart(oltp on) = %+v, %v; want the prior probe, its calibration and knee", st, err)
	}
	_, err = sweepStart(c, result.SweepKey{Workload: "oltp", SyncCommit: result.SyncOff}, nil, prior, 1)
	if err == nil || !config.IsUsage(err) || !strings.Contains(err.Error(), "no knee for oltp with synchronous_commit=off") {
		t.Errorf("sweepStart(oltp off) from a file without it: %v, want a usage error naming the sweep", err)
	}
	if st, err := sweepStart(&config.Search{}, oltpOn, nil, nil, 1); err != nil || st.prior != nil || st.knee != 0 {
		t.Errorf("sweepStart without files = %+v, %v", st, err)
	}
}

// TestLiveLine: on a terminal every second redraws the line in place; elsewhere a plain
// line every interval, and each probe's first second at once.
func TestLiveLine(t *testing.T) {
	var b bytes.Buffer
	l := newLiveLine(&Env{Stderr: &b}, "  sweep 1/1 ", time.Hour)
	sec := driver.Live{Elapsed: 3 * time.Second, Phase: result.PhaseMeasure, OfferedRate: 100, AchievedRate: 99, P99Ms: 12.5, Queue: 1, Errors: 2}
	l.show(result.Second{}, sec)
	l.show(result.Second{}, sec)
	l.end()
	l.show(result.Second{}, sec)
	// 100 columns: the queue and the total committed do not fit beside the sweep's label.
	want := "  sweep 1/1    3s measure | last 1s: offered 100/s, committed 99/s, p99 12.5 ms | so far: 2 errors\n"
	if b.String() != want+want {
		t.Errorf("plain live lines:\n%q\nwant two (the second second suppressed, the next probe's first shown):\n%q", b.String(), want+want)
	}
	b.Reset()
	l = newLiveLine(&Env{Stderr: &b, TTY: true}, "", time.Hour)
	l.show(result.Second{}, sec)
	l.show(result.Second{}, sec)
	l.end()
	line := "   3s measure | last 1s: offered 100/s, committed 99/s, p99 12.5 ms | queue 1 | so far: 2 errors"
	if want := "\r\033[K" + line + "\r\033[K" + line + "\n"; b.String() != want {
		t.Errorf("terminal live line:\n%q\nwant:\n%q", b.String(), want)
	}
}
