#!/usr/bin/env bash
# The client alone (issue 15): the most transactions per second one client core drives,
# measured against bench/responder (a PostgreSQL wire-protocol responder with canned
# replies, internal/responder), so the server's cost is out of the figure. For each of
# --workloads (insert, oltp, transfer), each run --seconds long:
#   - pgbench -n -M prepared -c CONNS -j 1 at no rate limit, pinned to the client core;
#   - pgbench -j 2, unpinned (only on a machine with at least 2 cores; it then shares
#     the cores with the responder);
#   - pgceiling run --engine loop and --engine pgx --threads 1, pinned to the client
#     core, open loop at --rate; a rate above the engine's capacity is rejected in part
#     (pool_timeout), and what commits is the capacity. --rate auto (default) first
#     runs a calibration probe (min(--seconds, 3) s, not shown) at twice pgbench -j 1's
#     tx/s and then measures at 1.25x what that probe committed: overloaded just enough,
#     since every rejected arrival costs the engine CPU too;
#   - pgceiling run --engine loop --threads 2 (two loops, each on its own thread) and
#     --engine pgx --threads 2, unpinned (2+ cores only).
# The responder runs pinned to --server-core, the pinned clients to --client-core.
# Printed per run: the client's cores (1 pinned, else the machine's) and how many it used
# (client CPU seconds per wall second), committed tx/s (pgceiling: commits in the measured
# window per second), committed transactions per client CPU second (the capacity of one
# client core: a closed-loop pgbench against a responder is latency-bound, below 100 % of
# its core, so its tx/s understates it), client CPU seconds (user + system,
# /usr/bin/time) per 1,000 committed transactions, pgceiling's rejected share and
# achieved/offered rate (at capacity when some are rejected or less than offered is
# achieved), the responder's busy share of its core (near 100 %: the responder, not the
# client, was the limit), the machine's steal during the run (/proc/stat; this VM books stolen time to processes, so a run with steal
# over a few percent is not comparable), and the ratio of transactions per client CPU
# second to pgbench -j 1's.
# pgceiling runs with --no-backfill: the responder does not take COPY.
# insert has no script in bench/pgbench; the one used here sends pgceiling's transaction
# (the INSERT alone, in autocommit) with the uuid and 100-byte payload made server-side
# (pgbench has no string variables), so its messages are shorter.
#
# Usage: bench/client_capacity.sh [--seconds 10] [--workloads "insert oltp transfer"]
#        [--conns 50] [--rate auto|R] [--server-core 0] [--client-core 1]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh" # wait_dsn_file
secs=10 workloads="insert oltp transfer" conns=50 rate=auto score=0 ccore=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --server-core) score="$2"; shift 2 ;;
    --client-core) ccore="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "client_capacity: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for w in $workloads; do
  case "$w" in insert|oltp|transfer) ;; *) echo "client_capacity: unknown workload $w (insert, oltp, transfer)" >&2; exit 2 ;; esac
done
for tool in pgbench taskset /usr/bin/time python3 go; do
  command -v "$tool" >/dev/null || { echo "client_capacity: $tool is needed" >&2; exit 1; }
done
cores="$(nproc)"

work="$(mktemp -d)"
resp_pid=""
cleanup() {
  if [ -n "$resp_pid" ]; then kill -TERM "$resp_pid" 2>/dev/null || true; wait "$resp_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/pgceiling" ./cmd/pgceiling && go build -o "$work/responder" ./bench/responder) || exit 1
taskset -c "$score" "$work/responder" -dsn-file "$work/dsn" >/dev/null 2>"$work/responder.log" &
resp_pid=$!
dsn="$(wait_dsn_file client_capacity "$resp_pid" "$work/dsn" "$work/responder.log" 10)" || exit 1

cat >"$work/insert.sql" <<'SQL'
\set hi random(0, 4611686018427387903)
\set lo random(0, 4611686018427387903)
INSERT INTO pgceiling.events (id, payload, created_at) VALUES ((lpad(to_hex(:hi::bigint), 16, '0') || lpad(to_hex(:lo::bigint), 16, '0'))::uuid, repeat('x', 100), now());
SQL
script() { if [ "$1" = insert ]; then echo "$work/insert.sql"; else echo "$root/bench/pgbench/$1.sql"; fi; }

# ticks PID: the process's user + system CPU in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# timed CMD...: runs CMD under /usr/bin/time; sets cpu (user + system seconds), wall
# (seconds), steal (the machine's stolen share in %, /proc/stat) and resp_busy (the
# responder's share of its core in %).
timed() {
  local s0 s1 r0 r1 t0 t1
  s0="$(head -1 /proc/stat)"; r0="$(ticks "$resp_pid")"; t0="$(date +%s.%N)"
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
    echo "client_capacity: failed: $*" >&2; tail -5 "$work/err" >&2; exit 1; }
  s1="$(head -1 /proc/stat)"; r1="$(ticks "$resp_pid")"; t1="$(date +%s.%N)"
  read -r steal resp_busy wall < <(python3 -c "
import os
a=list(map(int,'$s0'.split()[1:])); b=list(map(int,'$s1'.split()[1:])); d=[y-x for x,y in zip(a,b)]
print(round(100*d[7]/max(sum(d),1), 1), round(100*($r1-$r0)/os.sysconf('SC_CLK_TCK')/($t1-$t0)), round($t1-$t0, 3))")
  read -r u s <"$work/time"
  cpu="$(python3 -c "print(round($u + $s, 3))")"
}

# row LABEL CORES TX_PER_S COMMITTED REJ: one line of the table; sets per_core (committed
# per client CPU second: the capacity of one client core).
row() {
  per_core="$(python3 -c "print(round($4 / max($cpu, 0.001)))")"
  python3 - "$w" "$1" "$2" "$3" "$4" "$cpu" "$wall" "$5" "$resp_busy" "$steal" "$per_core" "${base:-}" <<'PY'
import sys
w, label, cores, tps, n, cpu, wall, rej, busy, steal, per_core, base = sys.argv[1:]
per1k = float(cpu) * 1000 / int(n) if int(n) else float('nan')
used = float(cpu) / float(wall)
ratio = f"{float(per_core) / float(base):.2f}" if base else "1.00"
print(f"{w:<9} {label:<32} {cores:>5} {used:>5.2f} {float(tps):>8.0f} {float(per_core):>9.0f} {per1k:>9.4f} {rej:>9} {busy:>5}% {steal:>5}% {ratio:>6}")
PY
}

pgbench_run() { # label jobs pinned?
  local pin=() clients="$cores"
  if [ "$3" = pinned ]; then pin=(taskset -c "$ccore"); clients=1; fi
  timed "${pin[@]}" pgbench -n -M prepared -c "$conns" -j "$2" -T "$secs" -f "$(script "$w")" "$dsn"
  local n tps
  n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")"
  tps="$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$work/out")"
  pb_tps="$tps"
  row "$1" "$clients" "$tps" "$n" "-"
}

# probe ENGINE THREADS PINNED RATE SECONDS: one pgceiling run.
probe() {
  local pin=()
  if [ "$3" = pinned ]; then pin=(taskset -c "$ccore"); fi
  timed "${pin[@]}" "$work/pgceiling" run --dsn "$dsn" --workload "$w" --rate "$4" --warmup 0s --duration "${5}s" \
    --conns "$conns" --engine "$1" --threads "$2" --exec-mode cache_statement --no-backfill --json "$work/run.json"
}

pgceiling_run() { # label engine threads pinned?
  local clients="$cores" r="$rate"
  if [ "$4" = pinned ]; then clients=1; fi
  if [ "$rate" = auto ]; then
    probe "$2" "$3" "$4" "$(python3 -c "print(round(2 * $pb_tps))")" "$(( secs < 3 ? secs : 3 ))"
    r="$(python3 -c "import json; p=json.load(open('$work/run.json'))['sweeps'][0]['probes'][0]; print(round(1.25 * p['achieved_rate']))")"
  fi
  probe "$2" "$3" "$4" "$r" "$secs"
  local vals
  vals="$(python3 -c "
import json; p=json.load(open('$work/run.json'))['sweeps'][0]['probes'][0]
print(p['achieved_rate'], p['checks']['committed_total'], round(100*p['rejected']/max(p['scheduled'],1)), round(100*p['achieved_rate']/p['target_rate']))")"
  read -r tps n rej got <<<"$vals"
  row "$1 @ $r" "$clients" "$tps" "$n" "$rej%/$got%"
}

echo "client capacity against bench/responder: ${secs}s per run, $conns connections, $cores cores;"
echo "responder on core $score, pinned clients on core $ccore; $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
printf "%-9s %-32s %5s %5s %8s %9s %9s %9s %6s %6s %6s\n" workload client cores used "tx/s" "tx/cpu-s" "cpu/1k tx" "rej/got" resp steal ratio
for w in $workloads; do
  base=""
  pgbench_run "pgbench -j 1 (pinned)" 1 pinned
  base="$per_core" pb1_tps="$pb_tps"
  if [ "$cores" -ge 2 ]; then pgbench_run "pgbench -j 2 (unpinned)" 2 unpinned; fi
  pb_tps="$pb1_tps"
  pgceiling_run "loop (pinned)" loop 1 pinned
  if [ "$cores" -ge 2 ]; then pgceiling_run "loop 2 loops (unpinned)" loop 2 unpinned; fi
  pgceiling_run "pgx 1 thread (pinned)" pgx 1 pinned
  if [ "$cores" -ge 2 ]; then pgceiling_run "pgx 2 threads (unpinned)" pgx 2 unpinned; fi
done
echo "cores: the client's (1 pinned); used: client CPU s per wall s; tx/cpu-s: committed per client CPU second"
echo "(one client core's capacity); ratio: tx/cpu-s against pgbench -j 1's; rej/got: pgceiling's rejected arrivals and achieved/offered"
echo "(the engine was at capacity when rej > 0 or got < 100%);"
echo "resp: the responder's busy share of its core (near 100%: the responder was the limit)"
