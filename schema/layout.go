package schema

import (
	"fmt"
	"time"

	"github.com/pgceiling/pgceiling/workload"
)

// HistoryGap is how long before init's clock the prefilled history ends: the longest
// fraud window. No window a probe reads ever reaches into init's history, so the recent
// history every check reads is the probe's own back-fill (Backfill), anchored to the
// probe's start, whenever init ran.
const HistoryGap = workload.MaxFraudWindow

// historyEnd is where the prefilled history of an Init at now ends.
func historyEnd(now time.Time) time.Time { return now.UTC().Add(-HistoryGap) }

// partition is one monthly partition of transactions and the rows the prefill puts in it.
type partition struct {
	Name     string    // unqualified, e.g. transactions_y2026m03
	From, To time.Time // the partition's range [From, To)
	// The prefill fills [From, DataTo) with Rows rows whose ids are FirstID..FirstID+Rows-1,
	// created_at increasing with id.
	DataTo  time.Time
	FirstID int64
	Rows    int64
}

// layout returns the monthly partitions for spec at time now: spec.Months months of
// history ending with the month that holds historyEnd(now) (the data runs up to that,
// HistoryGap before now), then MonthsAhead empty months (the first of them holds now
// when the history ends in the previous month). Rows are spread over the history in
// proportion to time, so the insert rate of the prefilled past is constant; ids grow
// with created_at as in production.
func layout(spec Spec, now time.Time) []partition {
	now = historyEnd(now)
	cur := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	start := cur.AddDate(0, -(spec.Months - 1), 0)
	span := now.Sub(start)
	var parts []partition
	var done int64
	for i := 0; i < spec.Months+MonthsAhead; i++ {
		from := start.AddDate(0, i, 0)
		to := from.AddDate(0, 1, 0)
		p := partition{Name: fmt.Sprintf("transactions_y%04dm%02d", from.Year(), int(from.Month())), From: from, To: to}
		if i < spec.Months {
			p.DataTo = earlier(to, now)
			end := spec.Rows
			if i < spec.Months-1 && span > 0 {
				end = int64(float64(spec.Rows) * float64(to.Sub(start)) / float64(span))
			}
			p.FirstID, p.Rows = done+1, end-done
			done = end
		}
		parts = append(parts, p)
	}
	return parts
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
