// Package observe says under which conditions a figure was measured and why the server
// stopped there. Disclose reads the server's version and durability settings, the size of
// pgceiling's schema against shared_buffers and the machines' cores and memory; Unsafe
// and RefuseUnsafe are the guard rails that keep a non-durable server from producing a
// headline number. A Sampler watches the server during a probe through one extra,
// unmeasured connection: wait events of pgceiling's own backends, pg_stat_wal deltas,
// checkpoints, autovacuum runs and, when the server runs on this machine, its CPU time.
// Bottleneck turns those figures into one line by documented rules.
//
// The package never prints and never names a schema other than pgceiling; it only reads
// system views.
package observe
