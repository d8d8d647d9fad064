package plan

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/pgceiling/pgceiling/internal/thousands"
)

// WriteText writes the plan for people, wrapped to width columns (0: 100).
func WriteText(w io.Writer, p *Plan, width int) error {
	if width <= 0 {
		width = 100
	}
	var b strings.Builder
	line := func(indent int, s string) {
		for _, l := range wrap(s, width, indent) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	head := "pgceiling plan: " + p.Source
	if p.RunID != "" {
		head += " (run " + p.RunID
		if p.Server != "" {
			head += ", " + p.Server
		}
		head += ")"
	}
	line(0, head)
	growth := "no growth"
	if p.GrowthPerYear != 0 {
		growth = "growth " + pct(p.GrowthPerYear) + " a year, compounding"
	}
	u, note := unitOf(p)
	today := fmt.Sprintf("today: %s%s, peak %s%s (× %s)", rate(p.CurrentTxS), u, rate(p.PeakTxS), u, num(p.PeakFactor, -1))
	if p.PeakFactor == 1 {
		today = fmt.Sprintf("today's peak: %s%s", rate(p.PeakTxS), u)
	}
	line(4, fmt.Sprintf("  %s; %s; dates from %s", today, growth, p.From))
	if note != "" {
		line(4, "  "+note)
	}
	for _, wl := range p.Workloads {
		b.WriteByte('\n')
		if wl.Missing != "" {
			line(0, wl.Workload+": "+wl.Missing)
			continue
		}
		kt := rate(wl.Knee.Value) + " " + wl.Unit
		if wl.Level > 0 {
			kt += fmt.Sprintf(" (%s-%s, %s)", rate(wl.Knee.Lo), rate(wl.Knee.Hi), pct(wl.Level))
		}
		line(0, fmt.Sprintf("%s (synchronous_commit=%s): knee %s", wl.Workload, wl.SyncCommit, kt))
		line(4, "  headroom at today's peak: "+headroomText(wl, p.PeakTxS))
		line(4, "  the peak reaches the knee: "+reachText(wl.Reach))
		bn := wl.Bottleneck
		if bn == "" {
			bn = "not recorded"
		}
		line(4, "  what limits it: "+bn)
		for i, l := range wl.Levers {
			lead := "  levers measured: "
			if i > 0 {
				lead = "    "
			}
			line(4, lead+l.Text)
		}
		if sh := wl.Shards; sh != nil {
			line(4, "  what sharding by wallet would buy: "+sh.Text)
			var parts []string
			for _, c := range sh.Ceilings {
				parts = append(parts, fmt.Sprintf("%d → %s", c.Shards, rate(c.TxS)))
			}
			line(6, "    shards → at most "+wl.Unit+": "+strings.Join(parts, ", "))
			line(6, "    assuming:")
			for _, a := range sh.Assumptions {
				line(8, "      - "+a)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func headroomText(wl Workload, peak float64) string {
	h, u := wl.Headroom, wl.Unit
	switch {
	case h.Hi < 0:
		return fmt.Sprintf("none: today's peak %s %s is %s the knee, past its whole interval", rate(peak), u, times(peak/wl.Knee.Value))
	case h.Lo < 0:
		return fmt.Sprintf("within the knee's interval: %s to %s (today's peak %s %s)", signedPct(h.Lo), signedPct(h.Hi), rate(peak), u)
	case h.Lo == h.Hi:
		return fmt.Sprintf("%s (the knee is %s today's peak of %s %s)", signedPct(h.Value), times(1+h.Value), rate(peak), u)
	}
	return fmt.Sprintf("%s (%s to %s; the knee is %s today's peak of %s %s)", signedPct(h.Value), signedPct(h.Lo),
		signedPct(h.Hi), times(1+h.Value), rate(peak), u)
}

// unitOf is the unit of the plan's own rates, today's and the peak, after a space: the
// planned workloads' common unit (" tx/s", " rows/s" for copy alone), else "/s" and a
// note saying what each workload counts.
func unitOf(p *Plan) (string, string) {
	u := ""
	for _, wl := range p.Workloads {
		switch {
		case u == "":
			u = wl.Unit
		case wl.Unit != u:
			return "/s", "rates are rows/s for copy (its arrivals are rows) and tx/s for the other workloads; --current is read in each workload's unit"
		}
	}
	if u == "" {
		u = "tx/s"
	}
	return " " + u, ""
}

func reachText(r Reach) string {
	switch r.Status {
	case ReachPast:
		return "already past"
	case ReachNever:
		return "never, at no growth"
	case ReachPartlyPast:
		return fmt.Sprintf("already past the interval's low end; by %s at the latest (in %s years)", r.Latest, num(r.YearsHi, 1))
	}
	if r.Earliest == r.Latest {
		return fmt.Sprintf("around %s (in %s years)", r.Date, num(r.Years, 1))
	}
	return fmt.Sprintf("between %s and %s (in %s-%s years; %s at the knee itself)", r.Earliest, r.Latest,
		num(r.YearsLo, 1), num(r.YearsHi, 1), r.Date)
}

// rate formats a rate: whole numbers from 100 up, one decimal below.
func rate(v float64) string {
	if math.IsInf(v, 1) {
		return "unbounded"
	}
	if v < 100 && v != math.Trunc(v) {
		return thousands.Format(v, 1)
	}
	return thousands.Format(v, 0)
}

// num formats v with dec decimals; dec < 0: as few as needed (at most 2).
func num(v float64, dec int) string {
	if dec < 0 {
		s := thousands.Format(v, 2)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return thousands.Format(v, dec)
}

// pct formats a fraction as a percentage: "10.2 %" below 10 %, else whole.
func pct(f float64) string {
	if math.Abs(f) < 0.1 {
		return num(100*f, 1) + " %"
	}
	return num(100*f, 0) + " %"
}

func signedPct(f float64) string {
	if f > 0 {
		return "+" + pct(f)
	}
	return pct(f)
}

// times formats a ratio: "2.46×".
func times(r float64) string { return num(r, 2) + "×" }

func times2(r float64) string { return num(r, 2) }

// rangeText is "975 (936-997)" with unit after the value, or the value alone when the
// range is a point.
func rangeText(r Range, unit string) string {
	if r.Lo == r.Hi {
		return rate(r.Value) + unit
	}
	return fmt.Sprintf("%s%s (%s-%s)", rate(r.Value), unit, rate(r.Lo), rate(r.Hi))
}

// wrap breaks s into lines of at most width columns at spaces (a longer word stands
// alone); continuation lines are indented by indent spaces.
func wrap(s string, width, indent int) []string {
	lead := len(s) - len(strings.TrimLeft(s, " "))
	var out []string
	cur, n, empty := strings.Repeat(" ", lead), lead, true
	for _, w := range strings.Fields(s) {
		wl := utf8.RuneCountInString(w)
		if !empty && n+1+wl > width {
			out = append(out, cur)
			cur, n, empty = strings.Repeat(" ", indent), indent, true
		}
		if !empty {
			cur += " "
			n++
		}
		cur += w
		n += wl
		empty = false
	}
	return append(out, cur)
}
