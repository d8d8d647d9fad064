// Package search finds the knee: the highest offered rate a server holds with (almost) no
// errors. It brackets the knee by growing the rate until a probe fails (or starts from a
// calibration estimate), bisects until the bracket is narrow enough, optionally confirms
// the bracket's edges, and keeps every probe. Each probe is judged pass, fail, not_steady,
// driver_limited or fault (see Judge).
//
// The package knows nothing of SQL: it talks to the driver through the one-method Prober
// interface, so the search logic is tested against a simulated queue with no database.
// Early abort is the prober's job; the search only computes each probe's error budget and
// hands it over through the optional BudgetProber ability.
package search
