// Package schema owns pgceiling's namespace in the database: the DDL (embedded .sql
// files), the monthly partitions of transactions, the ownership marker in
// pgceiling.meta, the parallel COPY prefill, the index build, the safety rules around
// re-runs and drop, the reset between probes (Baseline/Restore), and the recent history
// written before each probe (Backfill), anchored to the probe's start: init's own history
// ends HistoryGap (24 h, the longest fraud window) before init, so no probe reads it as
// recent.
//
// Every statement it sends names only objects in schema pgceiling (system catalogs are
// read, never written). A schema called pgceiling that lacks the marker is never
// touched, not even with Force.
package schema
