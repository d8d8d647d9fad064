#!/usr/bin/env bash
# One rate, both clients (issue 11's pgbench agreement, taken apart): pgceiling run and
# pgbench -R offer the identical SQL (bench/pgbench/WORKLOAD.sql) at the same rate for the
# same warm-up + seconds, in ABBA order (pgceiling first in odd pairs), each after the
# same preparation (bench/benchpg -rate R -workload W: restore to the baseline, back-fill
# oltp's fraud window at R, CHECKPOINT). Where the knee search compares two bracket
# walks, this compares what each client got from the server at one rate, so a difference
# in the clients shows without the search's noise.
#
# Printed per run, over the measured seconds (after the warm-up): committed tx/s, the
# share of bad transactions by pgbench's rule (skipped or rejected + failed + late, late =
# a latency over 1 s from the scheduled start), p50 and p99 of that latency, the client's
# CPU per committed transaction (/usr/bin/time, warm-up included) and the host's busy
# share (/proc/stat, the whole run). Then the mean per client and the ratio
# pgceiling / pgbench of committed rate and p99.
#
# Pair i's runs use seed i on both sides (pgceiling run --seed, pgbench --random-seed), so
# repeated runs are fresh draws of arrivals and keys, not one draw replayed.
#
# Equal CPU budgets: each client pinned to core --cpu (default 1, "" for no pinning),
# pgbench with -j 1 like pgceiling's loop engine (--threads 1). --server-cpu C pins the
# throwaway server (its postmaster and every process it has; new backends inherit) to
# core C, so client and server do not share a core (no effect with --dsn).
#
# Usage: bench/rate_vs_pgbench.sh [--dsn DSN] [--workload oltp] [--rate 1400] [--seconds 60]
#        [--warmup 10] [--pairs 2] [--conns 50] [--rows 1000000] [--cpu 1] [--server-cpu C]
# A tiny smoke run: bench/rate_vs_pgbench.sh --rate 200 --seconds 3 --warmup 1 --pairs 1 --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" w=oltp rate=1400 secs=60 warm=10 pairs=2 conns=50 rows=1000000 cpu=1 scpu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --workload) w="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --server-cpu) scpu="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "rate_vs_pgbench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$w" in oltp|transfer) ;; *) echo "rate_vs_pgbench: --workload must be oltp or transfer, not $w" >&2; exit 2 ;; esac
for tool in pgbench /usr/bin/time python3 go; do
  command -v "$tool" >/dev/null || { echo "rate_vs_pgbench: $tool not found" >&2; exit 2; }
done

bench_setup rate_vs_pgbench
pin=()
[ -n "$cpu" ] && pin=(taskset -c "$cpu")
bench_pin_server "$scpu"
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -take || exit 1
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$root" rev-parse --short HEAD)"
echo "$w, synchronous_commit=on, $rate tx/s, ${warm}s warm-up + ${secs}s, $conns connections, $rows rows, clients pinned to core ${cpu:-none}, server to ${scpu:-none}"

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
# one CLIENT SEED: a prepared run; appends "client committed/s bad p50 p99 cpu_ms_per_tx busy" to $work/rows.
one() {
  local client="$1" seed="$2" b0 b1 line
  "$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -rate "$rate" -workload "$w" || exit 1
  b0="$(busy)"
  line="$(bench_client_probe "$client" "$rate" "$w" "$seed")" || exit 1
  b1="$(busy)"
  python3 - "$client" "$line" "$(cat "$work/time")" "$b0" "$b1" <<'PY' | tee -a "$work/rows"
import sys
client, line, t, b0, b1 = sys.argv[1:]
rate, bad, p50, p99, alltx = line.split()
u, s = map(float, t.split())
b0, b1 = [list(map(float, x.split())) for x in (b0, b1)]
host = (b1[0] - b0[0]) / (b1[1] - b0[1]) if b1[1] > b0[1] else 0
cpu = 1000 * (u + s) / float(alltx) if float(alltx) else 0
print(f"{client:9s} {float(rate):9.1f} {float(bad):9.5f} {float(p50):8.1f} {float(p99):8.1f} {cpu:8.3f} {100 * host:6.1f}")
PY
}

echo "client    commit/s  bad share  p50 ms   p99 ms  cpu ms/tx host busy %"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then one pgceiling "$i"; one pgbench "$i"; else one pgbench "$i"; one pgceiling "$i"; fi
done
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -restore
python3 - "$work/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
m = {c: [list(map(float, r[1:])) for r in rows if r[0] == c] for c in ("pgceiling", "pgbench")}
mean = {c: [st.mean(col) for col in zip(*v)] for c, v in m.items() if v}
for c, v in mean.items():
    print(f"mean {c:9s} committed {v[0]:.1f}/s, bad share {v[1]:.5f}, p50 {v[2]:.1f} ms, p99 {v[3]:.1f} ms, client CPU {v[4]:.3f} ms/tx, host busy {v[5]:.1f} %")
if len(mean) == 2 and mean["pgbench"][0] and mean["pgbench"][3]:
    a, b = mean["pgceiling"], mean["pgbench"]
    print(f"pgceiling / pgbench: committed {a[0] / b[0]:.3f}, p99 {a[3] / b[3]:.2f}")
PY
