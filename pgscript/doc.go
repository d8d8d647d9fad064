// Package pgscript reads pgbench-style custom scripts in the subset pgceiling runs
// (docs/scripts.md): `\set` with integer and double arithmetic and pgbench's random
// functions, `:var` references in SQL as bind parameters, `\gset`, one transaction
// (BEGIN .. COMMIT, or one statement) with SET LOCAL. Anything outside the subset is an
// error naming file:line and what is refused, so a team's pgbench script runs unchanged
// where the subset allows and never half-runs where it does not.
//
// Parse checks the text (no database); Compile resolves the variables into slots once
// the columns of the `\gset` queries are known (the caller describes the statements on a
// server) and compiles each `\set` expression into a closure with its constants folded;
// a Program then runs the `\set`s of one transaction at a time, on a State reused from
// run to run and without allocating, for an executor that sends the SQL. The package knows nothing of connections, rates or timing.
package pgscript
