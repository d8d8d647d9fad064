package main

import (
	"fmt"
	"io"
	"time"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

// statusLine draws a status line on stderr: redrawn in place on a terminal, else printed
// as a plain line.
type statusLine struct {
	w     io.Writer
	tty   bool
	drawn bool // a line is drawn in place and not yet ended
}

func (s *statusLine) draw(line string) {
	if s.tty {
		fmt.Fprintf(s.w, "\r\033[K%s", line)
		s.drawn = true
	} else {
		fmt.Fprintln(s.w, line)
	}
}

// end finishes a line drawn in place before other output follows.
func (s *statusLine) end() {
	if s.drawn {
		fmt.Fprintln(s.w)
		s.drawn = false
	}
}

// liveLine is a probe's live progress (run and search): every second on a terminal, else
// a plain line every `every`.
type liveLine struct {
	statusLine
	prefix string // e.g. the sweep's label
	every  time.Duration
	last   time.Time
}

func newLiveLine(env *Env, prefix string, every time.Duration) *liveLine {
	return &liveLine{statusLine: statusLine{w: env.Stderr, tty: env.TTY}, prefix: prefix, every: every}
}

// show is the driver's OnSecond.
func (l *liveLine) show(_ result.Second, v driver.Live) {
	if !l.tty && !l.last.IsZero() && time.Since(l.last) < l.every {
		return
	}
	l.last = time.Now()
	l.draw(fmt.Sprintf("%s%5.0fs %-7s offered %7.0f/s achieved %7.0f/s p99 %8.1f ms queue %5d errors %d",
		l.prefix, v.Elapsed.Seconds(), v.Phase, v.OfferedRate, v.AchievedRate, v.P99Ms, v.Queue, v.Errors))
}

// end finishes the probe's line; the next probe's first second shows at once.
func (l *liveLine) end() {
	l.statusLine.end()
	l.last = time.Time{}
}

// progressBar draws init's progress: in place on a terminal, else a line every few
// seconds and at each phase.
type progressBar struct {
	statusLine
	phase string
	last  time.Time
}

func newProgressBar(w io.Writer, tty bool) *progressBar {
	return &progressBar{statusLine: statusLine{w: w, tty: tty}}
}

func (b *progressBar) update(p schema.Progress) {
	if p.Phase == schema.PhaseSchema {
		return // too short to show; an error in it is printed on its own
	}
	changed := p.Phase != b.phase
	if changed {
		b.end()
	}
	b.phase = p.Phase
	if !b.tty && !changed && time.Since(b.last) < 5*time.Second {
		return
	}
	b.last = time.Now()
	switch p.Phase {
	case schema.PhaseLoad:
		b.draw(fmt.Sprintf("init: load %s / %s rows (%.0f%%), %s rows/s, ETA %s", count(p.Done), count(p.Total),
			100*float64(p.Done)/float64(max(p.Total, 1)), count(int64(p.Rate)), eta(p)))
	case schema.PhaseIndex:
		b.draw(fmt.Sprintf("init: indexes %d / %d built, ETA %s", p.Done, p.Total, eta(p)))
	case schema.PhaseDone:
		b.draw(fmt.Sprintf("init: done in %s", p.Elapsed.Round(100*time.Millisecond)))
	default:
		b.draw(fmt.Sprintf("init: %s", p.Phase))
	}
}

func eta(p schema.Progress) string {
	if p.ETA <= 0 {
		return "-"
	}
	return p.ETA.Round(time.Second).String()
}
