#!/usr/bin/env bash
# Closed-loop capacity, pgceiling against pgbench (issue 11): how many transactions a
# second the server commits when each client keeps all of its connections busy, in short
# slots that alternate between the clients on one server. At a knee the pool's connections
# are busy most of the time (the staircases' passing `transfer` probes had p50 latencies of
# 12-76 ms), so the knee sits just under this capacity, and a client that costs the server
# capacity costs it knee. Each slot gives a number rather than a pass or a fail, so a
# 3 % difference shows in half an hour instead of several hours of staircases; it is a
# diagnostic of where a knee gap comes from, not a knee.
#
# Each slot runs one client for --slot seconds and counts the transactions committed from
# --skip seconds after its start to --skip + --count seconds (transactions_id_seq's
# last_value, the same count for both clients). pgbench: `pgbench -n -M prepared -c CONNS
# -j 1 -T SLOT` (no -R: closed loop) on bench/pgbench/WORKLOAD.sql; pgceiling: `pgceiling
# run --rate OVERLOAD --pool-wait 1s --engine loop --threads 1 --warmup 0s` at an offered
# rate above the capacity (--overload, default 2000 tx/s), so its connections are never
# idle (the arrivals beyond them are rejected). The data is restored to the baseline once,
# not between slots; the arms rotate, cycle i starting with arm i (so with the two clients
# alone, pgceiling first in odd cycles and pgbench first in even ones), so the data's slow
# growth and the machine's drift fall on all.
# Each client pinned to core --cpu (default 1), the server to --server-cpu when given.
#
# --arm NAME=COMMAND adds a third (fourth…) arm: COMMAND is run like pgceiling with the
# slot's flags appended, e.g. --arm 'notimeouts=WORK/pgceiling run --statement-timeout 0
# --lock-timeout 0 --idle-in-tx-timeout 0' (WORK is replaced by the directory holding the
# freshly built pgceiling); the arms rotate within each cycle.
#
# Prints one line per slot (cycle, arm, committed/s, steal share) and at the end each
# arm's geometric-mean ratio to pgbench over the cycles that ran both, with a 90 % interval
# from the cycles' spread (t quantile), and the steal. The slots to --out DIR when given.
#
# Usage: bench/capacity_vs_pgbench.sh [--dsn DSN] [--workload transfer] [--cycles 30]
#        [--slot 13] [--skip 2.5] [--count 10] [--overload 2000] [--conns 8]
#        [--rows 1000000] [--cpu 1] [--server-cpu C] [--seed 3000] [--arm NAME=COMMAND]...
#        [--out DIR]
# A smoke run: bench/capacity_vs_pgbench.sh --cycles 2 --slot 4 --skip 1 --count 2
#        --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" wl=transfer cycles=30 slot=13 skip=2.5 count=10 overload=2000 conns=8 rows=1000000 cpu=1 scpu="" seed=3000 out=""
arms=(pgceiling pgbench)
declare -A armcmd=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --workload) wl="$2"; shift 2 ;;
    --cycles) cycles="$2"; shift 2 ;;
    --slot) slot="$2"; shift 2 ;;
    --skip) skip="$2"; shift 2 ;;
    --count) count="$2"; shift 2 ;;
    --overload) overload="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --server-cpu) scpu="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --arm)
      case "$2" in
        pgceiling=*|pgbench=*) echo "capacity_vs_pgbench: --arm names pgceiling and pgbench are taken" >&2; exit 2 ;;
        [A-Za-z]*=?*) arms+=("${2%%=*}"); armcmd["${2%%=*}"]="${2#*=}" ;;
        *) echo "capacity_vs_pgbench: --arm takes NAME=COMMAND, not $2" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "capacity_vs_pgbench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$wl" in oltp|transfer) ;; *) echo "capacity_vs_pgbench: --workload takes oltp or transfer, not $wl" >&2; exit 2 ;; esac
for v in "cycles=$cycles" "conns=$conns" "seed=$seed"; do
  case "${v#*=}" in ''|*[!0-9]*) echo "capacity_vs_pgbench: --${v%%=*} must be a whole number, not ${v#*=}" >&2; exit 2 ;; esac
done
python3 -c 'import sys; s, k, c, o = map(float, sys.argv[1:]); sys.exit(not (k >= 0 and c > 0 and k + c < s and o > 0))' \
  "$slot" "$skip" "$count" "$overload" 2>/dev/null ||
  { echo "capacity_vs_pgbench: need --skip >= 0, --count > 0, --skip + --count < --slot and --overload > 0 (got $skip, $count, $slot, $overload)" >&2; exit 2; }
for tool in pgbench python3 go; do
  command -v "$tool" >/dev/null || { echo "capacity_vs_pgbench: $tool not found" >&2; exit 2; }
done
psql="$(command -v psql || echo /usr/lib/postgresql/15/bin/psql)"
[ -x "$psql" ] || { echo "capacity_vs_pgbench: psql not found" >&2; exit 2; }
[ -z "$out" ] || mkdir -p "$out"

bench_setup capacity_vs_pgbench
bench_steal_log
pin=()
[ -n "$cpu" ] && pin=(taskset -c "$cpu")
bench_pin_server "$scpu"
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -take || exit 1
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -rate "$overload" -workload "$wl" || exit 1
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$root" rev-parse --short HEAD)"
echo "$wl, synchronous_commit=on, $conns connections, $rows rows; slots of ${slot}s counted from ${skip}s for ${count}s; pgceiling offered $overload tx/s; $cycles cycles of: ${arms[*]}; clients pinned to core ${cpu:-none}, server to ${scpu:-none}"

# committed: the id sequence each transaction of both workloads draws from once, for the row it
# inserts (a rolled-back one counts too: none roll back in a closed loop without errors).
committed() { "$psql" -X -At "$dsn" -c "SELECT last_value FROM pgceiling.transactions_id_seq"; }
slots="$work/slots"
: >"$slots"
n=${#arms[@]}
echo "cycle arm committed/s steal"
for i in $(seq 1 "$cycles"); do
  s=$((seed + i))
  for j in $(seq 0 $((n - 1))); do
    k=$(( (j + i - 1) % n ))
    arm="${arms[$k]}"
    flags=(--dsn "$dsn" --workload "$wl" --sync-commit on --rate "$overload" --warmup 0s --duration "${slot}s"
      --conns "$conns" --pool-wait 1s --engine loop --threads 1 --seed "$s" --no-backfill --json "$work/run.json")
    case "$arm" in
      pgbench) PGAPPNAME=pgbench "${pin[@]}" pgbench -n -M prepared -c "$conns" -j 1 -T "${slot%.*}" --random-seed "$s" \
                 -f "$root/bench/pgbench/$wl.sql" "$dsn" >"$work/client.out" 2>&1 & ;;
      pgceiling) "${pin[@]}" "$work/pgceiling" run "${flags[@]}" >"$work/client.out" 2>&1 & ;;
      *) read -r -a cmd <<<"${armcmd[$arm]//WORK/$work}"
         "${pin[@]}" "${cmd[@]}" "${flags[@]}" >"$work/client.out" 2>&1 & ;;
    esac
    cl=$!
    sleep "$skip"
    c0="$(committed)" t0="$(date +%s.%N)" u0="$(date +%s)"
    sleep "$count"
    c1="$(committed)" t1="$(date +%s.%N)" u1="$(date +%s)"
    wait "$cl" || true
    rate="$(python3 -c 'import sys; c0, c1, t0, t1 = map(float, sys.argv[1:]); print(f"{(c1 - c0) / (t1 - t0):.1f}")' "$c0" "$c1" "$t0" "$t1")"
    steal="$(bench_steal_max "$u0" "$u1")"
    echo "$i $arm $rate $steal" | tee -a "$slots"
  done
done
python3 - "$slots" <<'PY'
import math, sys
from statistics import mean, stdev
rows = {}
for line in open(sys.argv[1]):
    c, arm, rate, steal = line.split()
    rows[(c, arm)] = float(rate)
cycles = sorted({c for c, _ in rows}, key=int)
arms = []
for _, a in rows:
    if a not in arms:
        arms.append(a)
# two-sided 90 % t quantiles by degrees of freedom (then the normal's)
t90 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833,
       10: 1.812, 12: 1.782, 15: 1.753, 20: 1.725, 25: 1.708, 30: 1.697, 40: 1.684, 60: 1.671}
def tq(df):
    return t90[max(k for k in t90 if k <= df)] if df < 120 else 1.645
for a in arms:
    v = [rows[(c, a)] for c in cycles if (c, a) in rows]
    print(f"{a}: {len(v)} slots, mean {mean(v):.0f} tx/s")
for a in arms:
    if a == "pgbench":
        continue
    d = [math.log(rows[(c, a)] / rows[(c, "pgbench")]) for c in cycles
         if (c, a) in rows and (c, "pgbench") in rows and rows[(c, "pgbench")] > 0 and rows[(c, a)] > 0]
    if len(d) < 2:
        print(f"{a} / pgbench: too few cycles")
        continue
    m, h = mean(d), tq(len(d) - 1) * stdev(d) / math.sqrt(len(d))
    print(f"{a} / pgbench: {math.exp(m):.3f} ({math.exp(m - h):.3f}-{math.exp(m + h):.3f}, 90 %; {len(d)} cycles, spread {stdev(d):.3f} per cycle)")
PY
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -restore
[ -z "$out" ] || cp "$slots" "$work/stat.log" "$out/"
