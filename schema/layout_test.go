package schema

import (
	"testing"
	"time"
)

func TestLayout(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		now  time.Time
	}{
		{Spec{Rows: 1000, Months: 12}, time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)},
		{Spec{Rows: 7, Months: 1}, time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC)},
		{Spec{Rows: 50_000_000, Months: 3}, time.Date(2026, 3, 1, 0, 0, 1, 0, time.UTC)},
		// The history ends in February: March is the first month ahead and holds now.
		{Spec{Rows: 10_000, Months: 2}, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		{Spec{Rows: 10, Months: 1}, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)},
	} {
		parts := layout(c.spec, c.now)
		end := c.now.Add(-HistoryGap)
		if len(parts) != c.spec.Months+MonthsAhead {
			t.Errorf("layout(%+v, %v): %d partitions, want %d", c.spec, c.now, len(parts), c.spec.Months+MonthsAhead)
		}
		var rows int64
		next := int64(1)
		for i, p := range parts {
			if i > 0 && !p.From.Equal(parts[i-1].To) {
				t.Errorf("layout(%+v): partition %s does not follow %s", c.spec, p.Name, parts[i-1].Name)
			}
			if p.Rows > 0 {
				if p.FirstID != next || p.DataTo.After(end) || p.DataTo.After(p.To) {
					t.Errorf("layout(%+v): %+v (next id %d)", c.spec, p, next)
				}
				next += p.Rows
			}
			if i >= c.spec.Months && p.Rows != 0 {
				t.Errorf("layout(%+v): future partition %s has %d rows", c.spec, p.Name, p.Rows)
			}
			rows += p.Rows
		}
		if rows != c.spec.Rows {
			t.Errorf("layout(%+v): %d rows, want %d", c.spec, rows, c.spec.Rows)
		}
		if cur := parts[c.spec.Months-1]; !(cur.From.Before(end) || cur.From.Equal(end)) || !cur.To.After(end) {
			t.Errorf("layout(%+v, %v): last history month %s does not hold the history's end %v", c.spec, c.now, cur.Name, end)
		}
		if last := parts[len(parts)-1]; !last.To.After(c.now.AddDate(0, 2, 0)) {
			t.Errorf("layout(%+v, %v): partitions end at %v, want at least 2 months after now", c.spec, c.now, last.To)
		}
	}
}
