// Package search finds the knee: the highest offered rate a server holds with (almost) no
// errors and a queue that does not keep growing. It brackets the knee by growing the rate
// until a probe fails (from a short calibration, a previous knee, or a given rate),
// bisects until the bracket is narrow enough, repeats the bracket's edges (Repeats: each
// rate counts by the majority of its verdicts, so repeats move the bracket either way),
// and keeps every probe. Each probe is judged pass, fail, not_steady, driver_limited or
// fault (see Judge).
//
// The knee is reported as a statistic: the bracket, and an interval for the rate a probe
// of the reference window (the hold's, else the probes') passes half the time, from a
// model of when probes collapse fitted to every pass and fail and how long each ran
// (KneeInterval; RatioRange turns two of them into a ratio's range).
//
// Steady state is a trend, not a level: SteadyRule fits the per-second queue wait p99 (and
// latency p99) with a Theil-Sen slope and Sen's confidence interval and fails a probe only
// when the growth it is confident of would carry the series past a share of the pool wait
// within another probe length. Growth of the driver's own scheduler lag is
// driver_limited, never the server's failure.
//
// The package knows nothing of SQL: it talks to the driver through the one-method Prober
// interface and two optional abilities — LimitedProber (stop a probe early: the error
// budget, and SteadyRule.StopIf for a decided trend; either only cuts probes that would
// fail) and ShortProber (short probes prepared like real ones, for Calibrate) — so the
// search logic is tested against a simulated queue with no database.
package search
