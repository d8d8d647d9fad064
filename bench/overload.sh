#!/usr/bin/env bash
# Overload figure of issue 6: the driver's peak memory (peak RSS, VmHWM) when `pgceiling
# run` offers 20x the knee for a full quick-profile probe (3 s warm-up + 10 s measured),
# beside the rejections that make the probe a clean failure. The design's bound: waiting
# arrivals are timestamps in a queue of rate x pool-wait, workers and histograms are a
# fixed set, so memory must not grow with rate x duration.
#   1. the knee: given with --knee, else found by a quick one-sweep search on the server
#   2. pgceiling run at --factor x the knee, under /usr/bin/time -v (peak RSS), and the
#      same for a probe at the knee, for comparison
#
# Without --dsn a throwaway server with the schema (bench/benchpg) is started and removed
# at the end; with --dsn the schema must exist (pgceiling init).
#
# Usage: bench/overload.sh [--dsn DSN] [--knee RATE] [--factor 20] [--workload oltp]
#        [--sync-commit on] [--warmup 3] [--seconds 10] [--conns 50] [--rows 200000]
# A tiny smoke run: bench/overload.sh --knee 500 --warmup 1 --seconds 3 --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" knee="" factor=20 wl=oltp sc=on warm=3 secs=10 conns=50 rows=200000
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --knee) knee="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --workload) wl="$2"; shift 2 ;;
    --sync-commit) sc="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "overload: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_setup overload

if [ -z "$knee" ]; then
  echo "1. the knee: a quick search ($wl, synchronous_commit=$sc)" >&2
  "$work/pgceiling" search --dsn "$dsn" --profile quick --workload "$wl" --sync-commit "$sc" --conns "$conns" \
    --json "$work/knee.json" 2>"$work/knee.log" >/dev/null || { tail -3 "$work/knee.log" >&2; exit 1; }
  knee="$(jq -r '.sweeps[0].knee' "$work/knee.json")"
fi
rate="$(awk -v k="$knee" -v f="$factor" 'BEGIN { printf "%.0f", k * f }')"

# probe LABEL RATE: one run under /usr/bin/time -v; prints peak RSS and the books.
probe() {
  local label="$1" r="$2"
  /usr/bin/time -v -o "$work/$label.time" "$work/pgceiling" run --dsn "$dsn" --workload "$wl" --sync-commit "$sc" \
    --rate "$r" --conns "$conns" --warmup "${warm}s" --duration "${secs}s" --json "$work/$label.json" \
    >/dev/null 2>"$work/$label.log" || { tail -3 "$work/$label.log" >&2; exit 1; }
  local rss
  rss="$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/$label.time")"
  jq -r --arg name "$label" --arg rss "$rss" '.sweeps[0].probes[0] as $p |
    "   \($name | . + "          " | .[0:10]) offered \($p.target_rate) tx/s: peak RSS \(($rss | tonumber) / 1024 | floor) MB; " +
    "scheduled \($p.scheduled) committed \($p.committed) rejected \($p.rejected) failed \([$p.failed[]] | add // 0); " +
    "error rate \(((($p.scheduled - $p.committed) / ([$p.scheduled, 1] | max)) * 1000 | floor) / 10) %"' "$work/$label.json"
}

echo "2. $wl at the knee ($knee tx/s) and at ${factor}x ($rate tx/s); ${warm}s warm-up + ${secs}s probes, $conns connections"
probe knee "$knee"
probe overload "$rate"
echo "   (measured on this machine; the queue bound is rate x pool-wait = $rate timestamps)"
