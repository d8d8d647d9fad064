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
// a plain line every `every`; fitted to the width.
type liveLine struct {
	statusLine
	prefix string // e.g. the sweep's label
	every  time.Duration
	width  int
	last   time.Time
}

func newLiveLine(env *Env, prefix string, every time.Duration) *liveLine {
	return &liveLine{statusLine: statusLine{w: env.info(), tty: env.TTY}, prefix: prefix, every: every, width: env.width()}
}

// show is the driver's OnSecond.
func (l *liveLine) show(_ result.Second, v driver.Live) {
	if !l.tty && !l.last.IsZero() && time.Since(l.last) < l.every {
		return
	}
	l.last = time.Now()
	l.draw(liveText(l.prefix, v, l.width-1))
}

// liveText is one progress line of at most width characters: the phase, then the last
// second's figures (per second), the queue now, and the totals so far (warm-up included),
// each labelled. Parts that do not fit are left out, the least telling first; a figure
// nothing has measured yet (p99 in the first seconds of the warm-up) shows as "-".
func liveText(prefix string, v driver.Live, width int) string {
	dash := func(ok bool, s string) string {
		if !ok {
			return "-"
		}
		return s
	}
	started := v.Elapsed >= time.Second
	head := fmt.Sprintf("%s%4.0fs %-7s", prefix, v.Elapsed.Seconds(), v.Phase)
	rates := fmt.Sprintf(" | last 1s: offered %s/s, committed %s/s", dash(started, count(int64(v.OfferedRate+0.5))),
		dash(started, count(int64(v.AchievedRate+0.5))))
	p99 := ", p99 " + dash(v.P99Ms > 0, fmt.Sprintf("%.1f ms", v.P99Ms))
	queue := fmt.Sprintf(" | queue %d", v.Queue)
	committed, errs := count(v.Committed)+" committed", count(v.Errors)+" errors"
	// keep: errors so far, queue, committed so far, p99, the last second's rates. From
	// everything to the least: drop the total committed, the queue, the errors, p99.
	for _, keep := range [][5]bool{{true, true, true, true, true}, {true, true, false, true, true}, {true, false, false, true, true},
		{false, false, false, true, true}, {false, false, false, false, true}} {
		line := head
		if keep[4] {
			line += rates
		}
		if keep[3] {
			line += p99
		}
		if keep[1] {
			line += queue
		}
		switch {
		case keep[0] && keep[2]:
			line += " | so far: " + committed + ", " + errs
		case keep[0]:
			line += " | so far: " + errs
		}
		if len(line) <= width {
			return line
		}
	}
	if len(head) > width {
		return head[:max(width, 0)]
	}
	return head
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
