#!/usr/bin/env bash
# How much this machine itself moves, apart from pgceiling: every --gap seconds, on a
# throwaway server (never --dsn: it creates pgbench's tables), one cycle of
#   1. the storage's flush time for one 8 kB write (pg_test_fsync, 1 s per method, the
#      fdatasync line: PostgreSQL's default wal_sync_method on Linux), idle;
#   2. pgbench's built-in tpcb-like transaction, closed loop, -c 8 -j 1 for --seconds, on a
#      freshly initialized database (scale 10, then CHECKPOINT) so every cycle starts from
#      the same data: once with synchronous_commit on, once off;
#   3. the steal the hypervisor took during the cycle (/proc/stat).
# It prints one line per cycle and then the range of each column: when pgbench's own
# throughput moves 15-20 % over half an hour, no knee on this machine can be shown to
# repeat within 5-10 % (docs/figures.md, "Why two runs differ").
#
# Usage: bench/machine_drift.sh [--cycles 8] [--gap 120] [--seconds 20]
# A smoke run: bench/machine_drift.sh --cycles 1 --gap 0 --seconds 2
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
cycles=8 gap=120 secs=20 dsn="" rows=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) cycles="$2"; shift 2 ;;
    --gap) gap="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "machine_drift: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$cycles" "$gap" "$secs"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "machine_drift: --cycles, --gap and --seconds take whole numbers" >&2; exit 2; }
done
[ "$cycles" -ge 1 ] && [ "$secs" -ge 1 ] || { echo "machine_drift: --cycles and --seconds must be at least 1" >&2; exit 2; }
for tool in pgbench psql python3 go; do
  command -v "$tool" >/dev/null || { echo "machine_drift: $tool is needed" >&2; exit 1; }
done
fsync_tool="$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | sort -V | tail -1)"
[ -n "$fsync_tool" ] || fsync_tool="$(command -v pg_test_fsync || true)"
[ -n "$fsync_tool" ] || { echo "machine_drift: pg_test_fsync is needed (postgresql server package)" >&2; exit 1; }
bench_setup machine_drift
# pgbench's tables go into a database of their own on the throwaway server.
psql -qX "$dsn" -c "CREATE DATABASE drift" >/dev/null
ddsn="$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/drift")))' "$dsn")"

echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$root" rev-parse --short HEAD)" >&2
echo "time      fdatasync_us  tpcb_on_tps  tpcb_off_tps  steal_%"
steal_ticks() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
for i in $(seq 1 "$cycles"); do
  read -r s0 t0 < <(steal_ticks)
  pgbench -q -i -s 10 "$ddsn" >/dev/null 2>&1
  psql -qX "$ddsn" -c checkpoint >/dev/null
  t="$(date -u +%T)"
  us="$(cd "$work" && "$fsync_tool" -s 1 -f "$work/fsync.tmp" 2>/dev/null |
    awk '/using one 8kB write/{f=1} f && $1 == "fdatasync" {print $4; exit}')"
  on="$(pgbench -n -M prepared -c 8 -j 1 -T "$secs" "$ddsn" 2>/dev/null | awk '/^tps/{printf "%.0f", $3; exit}')"
  off="$(PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 8 -j 1 -T "$secs" "$ddsn" 2>/dev/null | awk '/^tps/{printf "%.0f", $3; exit}')"
  read -r s1 t1 < <(steal_ticks)
  st="$(python3 -c "print(f'{100 * ($s1 - $s0) / max($t1 - $t0, 1):.1f}')")"
  printf '%s  %12s  %11s  %12s  %7s\n' "$t" "${us:-?}" "${on:-?}" "${off:-?}" "$st" | tee -a "$work/cycles"
  [ "$i" -lt "$cycles" ] && sleep "$gap"
done
python3 - "$work/cycles" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for k, name in ((1, "fdatasync µs"), (2, "tpcb tps, synchronous_commit on"), (3, "tpcb tps, synchronous_commit off")):
    v = [float(r[k]) for r in rows if r[k] != "?"]
    if v:
        lo, hi = min(v), max(v)
        print(f"{name}: {lo:.0f}-{hi:.0f} over {len(v)} cycles, max/min {hi / lo:.2f}")
EOF
