package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/result"
)

// num formats v with dec decimals and thousands separators ("12,345.6").
func num(v float64, dec int) string { return thousands.Format(v, dec) }

// count formats an integer with thousands separators.
func count(v int64) string { return num(float64(v), 0) }

// rate formats a rate in transactions per second: no decimals from 100 up.
func rate(v float64) string {
	if v >= 100 || v == 0 {
		return num(v, 0)
	}
	return num(v, 1)
}

// ms formats a latency in milliseconds with about three significant digits.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return num(v, 2)
	case v < 100:
		return num(v, 1)
	default:
		return num(v, 0)
	}
}

// pct formats a fraction as a percentage.
func pct(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.0001:
		return "<0.01%"
	case v < 0.1:
		return num(v*100, 2) + "%"
	default:
		return num(v*100, 1) + "%"
	}
}

// yesNo renders a flag.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// classes lists the non-zero counters as "lock_timeout 3, deadlock 1", or "none".
func classes(c result.Counts) string {
	var parts []string
	for i, v := range c {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s %s", result.Class(i), count(v)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// interval formats a knee's interval as "2,950-3,190, 90 %".
func interval(iv *result.Interval) string {
	return rate(iv.Lo) + "-" + rate(iv.Hi) + ", " + num(iv.Level*100, 0) + " %"
}

// kneeWithInterval formats a sweep's knee, with its interval when it has one:
// "3,080 tx/s (2,950-3,190, 90 %)"; unit (" tx/s" or "") follows the rate. A knee outside
// its interval says so — "1,563 tx/s (below 1,615-2,131, 90 %)", "1,944 tx/s (above
// 1,606-1,938, 90 %)" — rather than reading as a contradiction: the interval is of the
// rate a probe of the reference window passes half the time, fitted to every probe; the
// knee the highest rate that passed (and held), one probe's luck either way.
func kneeWithInterval(s *result.Sweep, unit string) string {
	k := rate(s.Knee) + unit
	if s.Interval != nil {
		where := ""
		switch {
		case kneeBelow(s):
			where = "below "
		case kneeAbove(s):
			where = "above "
		}
		k += " (" + where + interval(s.Interval) + ")"
	}
	return k
}

// kneeBelow reports whether a sweep's knee lies below its interval (see kneeWithInterval).
func kneeBelow(s *result.Sweep) bool {
	return s.Interval != nil && s.Knee > 0 && rate(s.Knee) != rate(s.Interval.Lo) && s.Knee < s.Interval.Lo
}

// kneeAbove reports whether a sweep's knee lies above its interval.
func kneeAbove(s *result.Sweep) bool {
	return s.Interval != nil && s.Knee > 0 && rate(s.Knee) != rate(s.Interval.Hi) && s.Knee > s.Interval.Hi
}

// slope formats a steady-state slope with its confidence interval: "+2.10 ms/s
// (1.40-2.90)", or "(-0.30 to 0.50)" when the interval reaches below zero.
func slope(st *result.Steady) string {
	signed := func(v float64) string {
		if v < 0 {
			return "-" + ms(-v)
		}
		return ms(v)
	}
	sep := "-"
	if st.SlopeLo < 0 || st.SlopeHi < 0 {
		sep = " to "
	}
	s := signed(st.SlopeMsPerS)
	if st.SlopeMsPerS > 0 {
		s = "+" + s
	}
	return fmt.Sprintf("%s ms/s (%s%s%s)", s, signed(st.SlopeLo), sep, signed(st.SlopeHi))
}

// secs formats a duration in seconds with one decimal.
func secs(v float64) string { return num(v, 1) + " s" }

// KneeText is a sweep's knee as the summary prints it: "3,080 tx/s (2,950-3,190, 90 %)",
// the interval only when the sweep has one; rows/s for copy; ", held 360.0 s" after a
// hold step. For the command's progress lines.
func KneeText(s result.Sweep) string {
	k := kneeWithInterval(&s, unit(s.Workload))
	if s.Held && s.HoldS > 0 {
		k += ", held " + secs(s.HoldS)
	}
	return k
}

// RoundsText is "; 2 rounds, the knee after each: 1,930, 1,533 tx/s" for a sweep searched in
// rounds (--rounds), "" otherwise: how far the knee moved when its edges were probed
// again minutes later.
func RoundsText(s result.Sweep) string {
	if s.Rounds < 2 || len(s.RoundKnees) == 0 {
		return ""
	}
	ks := make([]string, len(s.RoundKnees))
	for i, k := range s.RoundKnees {
		ks[i] = rate(k)
	}
	return fmt.Sprintf("; %d rounds, the knee after each: %s%s", s.Rounds, strings.Join(ks, ", "), unit(s.Workload))
}

// unit is a workload's rate unit after a space: " tx/s", or " rows/s" for copy, whose
// arrivals are rows (result.RateUnit).
func unit(workload string) string { return " " + result.RateUnit(workload) }

// unitOfAll is the rate unit of a table of sweeps: "tx/s" when every workload's is, else
// "/s", with a note saying what each workload counts.
func unitOfAll(f *result.File) (string, []string) {
	for i := range f.Sweeps {
		if u := result.RateUnit(f.Sweeps[i].Workload); u != "tx/s" {
			return "/s", []string{"rates are " + u + " for " + f.Sweeps[i].Workload + " (its arrivals are rows, batched into COPY), tx/s for the other workloads"}
		}
	}
	return "tx/s", nil
}
