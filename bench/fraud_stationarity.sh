#!/usr/bin/env bash
# Is oltp stationary? One `pgceiling run` of oltp at a fixed rate with the seed's fraud
# check (--fraud-limit 0 --fraud-window 24h --no-backfill: an unbounded count over a window
# each probe fills itself) and one with the default check (a velocity rule of at most 20
# payments in the last hour, the window back-filled before the probe), on one prefilled
# server, back to back. For each: the rows one check read (median in the first and the last
# third of the probe), p99 latency and queue-wait p99 per second (median of the first and
# the last minute), and the server's CPU per transaction. A stationary workload reads the
# same in the first and the last third, whatever the probe length. These figures do not
# depend on how much CPU the machine had (steal), unlike a knee.
#
# Usage: bench/fraud_stationarity.sh [--dsn DSN] [--rows 1000000] [--rate 1000]
#        [--seconds 300] [--warmup 10]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rows=1000000 rate=1000 secs=300 warm=10
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "fraud_stationarity: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_setup fraud_stationarity
echo "$(date -u +%FT%TZ) $(nproc) cores; commit $(git -C "$root" rev-parse --short HEAD); oltp at $rate tx/s, ${warm}s + ${secs}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
common=(run --dsn "$dsn" --workload oltp --sync-commit on --rate "$rate" --warmup "${warm}s" --duration "${secs}s")
"$work/pgceiling" "${common[@]}" --fraud-limit 0 --fraud-window 24h --no-backfill --json "$work/seed.json" 2>"$work/seed.log" >/dev/null || { tail -3 "$work/seed.log" >&2; exit 1; }
"$work/pgceiling" "${common[@]}" --json "$work/bounded.json" 2>"$work/bounded.log" >/dev/null || { tail -3 "$work/bounded.log" >&2; exit 1; }
python3 - "$work/seed.json" "$work/bounded.json" <<'PY'
import json, sys, statistics
for name, path in (("seed's check (unbounded, 24 h, no back-fill)", sys.argv[1]), ("bounded check (20 in 1 h, back-filled)", sys.argv[2])):
    p = json.load(open(path))["sweeps"][0]["probes"][0]
    fc, o = p.get("fraud_check") or {}, p.get("observation") or {}
    m = [s for s in p["series"] if s["phase"] == "measure"]
    first, last = m[:60], m[-60:]
    med = lambda xs, k: statistics.median([x[k] for x in xs]) if xs else 0
    print(f"{name}:")
    print(f"  rows per check, median: first third {fc.get('rows_p50_first_third', 0):.0f}, last third {fc.get('rows_p50_last_third', 0):.0f} (p99 {fc.get('rows_p99', 0):.0f}, max {fc.get('rows_max', 0):.0f})")
    print(f"  p99 latency per second, median: first minute {med(first, 'p99_ms'):.1f} ms, last minute {med(last, 'p99_ms'):.1f} ms; "
          f"queue-wait p99 {med(first, 'queue_wait_p99_ms'):.1f} -> {med(last, 'queue_wait_p99_ms'):.1f} ms")
    print(f"  achieved {p['achieved_rate']:.0f} tx/s, errors {sum(p['failed'].values()) + p['rejected']}, server CPU per tx {o.get('server_cpu_per_tx_ms', 0):.3f} ms, "
          f"steal {100 * o.get('host_steal_share', 0):.0f} %")
PY
