#!/bin/sh
# Prefill benchmark: pgceiling init (parallel COPY ... FREEZE, parallel per-partition index
# builds) against the best server-side path for the same rows and indexes
# (INSERT ... SELECT generate_series into unindexed tables, then indexes.sql, then the
# same ANALYZE), in the same run on the same server. Prints the time and rows/s of load,
# index build and total, the ratio, and the peak RSS of the pgceiling init process.
#
#   bench/prefill.sh [ROWS] [DSN]            pgceiling vs the server-side path
#   bench/prefill.sh --levers [ROWS] [DSN]   init with one lever changed at a time
#
# ROWS defaults to 5000000. Without DSN (or $PGCEILING_DSN) a throwaway server is started
# and removed. With a DSN, its user must be allowed to CREATE DATABASE: the bench makes
# and drops the databases bench_prefill_server, bench_prefill_pgceiling and
# bench_prefill_lever.
set -eu
cd "$(dirname "$0")/.."
LEVERS=""
if [ "${1:-}" = "--levers" ]; then LEVERS="-levers"; shift; fi
ROWS="${1:-5000000}"
DSN="${2:-${PGCEILING_DSN:-}}"
BIN="$(mktemp -d)"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/pgceiling" ./cmd/pgceiling
go build -o "$BIN/prefill" ./bench/prefill
echo "pgceiling prefill benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), $ROWS rows"
"$BIN/prefill" $LEVERS -rows "$ROWS" -dsn "$DSN" -pgceiling "$BIN/pgceiling" -repo .
