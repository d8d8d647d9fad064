#!/usr/bin/env bash
# Driver figures of issue 3, measured in one run on one server:
#   1. client CPU seconds per 1,000 committed transactions, pgceiling run vs pgbench on the
#      identical SQL (bench/pgbench/<workload>.sql, -M prepared -c 50 -R RATE), for oltp and
#      transfer at the same rates, for each of --engines (default "loop pgx"); the ratio
#      pgceiling/pgbench (target <= 1.0);
#   2. rate fidelity of pgceiling at a moderate rate (give half the knee): committed/scheduled,
#      achieved/target, scheduler lag p99, after a --fidelity-warmup (default 10s) that
#      lets 50 fresh backends prepare their statements;
#   3. peak RSS of a pgceiling probe at a rate the server holds and at 5x that rate
#      (target: flat, under 64 MB), each --rss-seconds long (default --seconds; the issue's
#      figure is a 7-minute probe: --rss-seconds 420).
# CPU and RSS come from /usr/bin/time (user + system seconds, maximum resident set) of each
# client process as a whole. Without --dsn a throwaway server is started with the schema
# (bench/benchpg) and removed at the end; with --dsn the schema must exist (pgceiling init)
# with 10,000 wallets (the pgbench scripts' \set wallets).
#
# The CPU runs use no warm-up on either side, so both count the same transactions.
#
# Figures 2 and 3 use the first of --engines.
#
# Usage: bench/driver_vs_pgbench.sh [--dsn DSN] [--rates "200 400"] [--seconds 60]
#        [--rows 200000] [--fidelity-rate R] [--fidelity-warmup 10s] [--rss-rate R]
#        [--rss-seconds S] [--conns 50] [--engines "loop pgx"] [--skip-cpu]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rates="200 400" secs=60 rows=200000 fid="" fidwarm=10s rss="" rsssecs="" conns=50 skipcpu= engines="loop pgx"
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rates) rates="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --fidelity-rate) fid="$2"; shift 2 ;;
    --fidelity-warmup) fidwarm="$2"; shift 2 ;;
    --rss-seconds) rsssecs="$2"; shift 2 ;;
    --skip-cpu) skipcpu=1; shift ;;
    --rss-rate) rss="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "driver_vs_pgbench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
first_rate="${rates%% *}"
fid="${fid:-$first_rate}"
rss="${rss:-$first_rate}"
rsssecs="${rsssecs:-$secs}"
for tool in pgbench /usr/bin/time python3 go; do
  command -v "$tool" >/dev/null || { echo "driver_vs_pgbench: $tool is needed" >&2; exit 1; }
done

bench_setup driver_vs_pgbench

# timed CMD...: runs CMD under /usr/bin/time; sets cpu (user+sys seconds), rss_mb and
# steal: the share of the machine's CPU time its hypervisor gave other guests meanwhile
# (/proc/stat). Without steal accounting per process, stolen time can land in a process's
# CPU seconds, so a run with steal over a few percent is not comparable.
timed() {
  local s0 s1
  s0="$(head -1 /proc/stat)"
  /usr/bin/time -f "%U %S %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
    echo "driver_vs_pgbench: failed: $*" >&2; tail -5 "$work/err" >&2; exit 1; }
  s1="$(head -1 /proc/stat)"
  steal="$(python3 -c "
a=list(map(int,'$s0'.split()[1:])); b=list(map(int,'$s1'.split()[1:])); d=[y-x for x,y in zip(a,b)]
print(round(100*d[7]/max(sum(d),1)))")"
  read -r u s m <"$work/time"
  cpu="$(python3 -c "print(round($u + $s, 3))")"
  rss_mb="$(python3 -c "print(round($m / 1024, 1))")"
}

# field EXPR: a value from the pgceiling run's JSON probe p.
field() {
  python3 -c "import json,sys; p=json.load(open('$work/run.json'))['sweeps'][0]['probes'][0]; print($1)"
}

first_engine="${engines%% *}"
pgc() { # workload rate [seconds [warmup [engine]]]
  timed "$work/pgceiling" run --dsn "$dsn" --workload "$1" --rate "$2" --warmup "${4:-0s}" --duration "${3:-$secs}s" \
    --conns "$conns" --exec-mode cache_statement --engine "${5:-$first_engine}" --json "$work/run.json"
}

if [ -z "$skipcpu" ]; then
echo
echo "1. client CPU per 1,000 committed transactions (${secs}s per run, $conns connections)"
printf "%-9s %7s %-6s | %10s %9s | %10s %9s | %7s | %s\n" workload rate engine "pgceiling" "cpu/1k tx" "pgbench" "cpu/1k tx" ratio "steal % (pgceiling, pgbench)"
for w in oltp transfer; do
  for r in $rates; do
    rows_out=()
    for e in $engines; do
      pgc "$w" "$r" "$secs" 0s "$e"
      rows_out+=("$e $(field "p['checks']['committed_total']") $cpu $steal")
    done
    timed pgbench -n -M prepared -c "$conns" -R "$r" -T "$secs" -f "$root/bench/pgbench/$w.sql" "$dsn"
    pb_n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")"
    pb_cpu="$cpu" pb_steal="$steal"
    for row in "${rows_out[@]}"; do
      python3 - "$w" "$r" $row "$pb_n" "$pb_cpu" "$pb_steal" <<'PY'
import sys
w, r, e, pcn, pcc, pcs, pbn, pbc, pbs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6], int(sys.argv[7] or 0), float(sys.argv[8]), sys.argv[9]
a = pcc * 1000 / pcn if pcn else float('nan')
b = pbc * 1000 / pbn if pbn else float('nan')
print(f"{w:<9} {r:>7} {e:<6} | {pcn:>7} tx {a:>8.3f}s | {pbn:>7} tx {b:>8.3f}s | {a / b if b else float('nan'):>7.2f} | {pcs}, {pbs}")
PY
    done
  done
done
fi

echo
echo "2. rate fidelity of pgceiling (oltp at $fid tx/s, $fidwarm warm-up + ${secs}s, engine $first_engine)"
pgc oltp "$fid" "$secs" "$fidwarm"
field "f\"scheduled {p['scheduled']}, committed {p['committed']}, committed/scheduled {100*p['committed']/max(p['scheduled'],1):.2f} %, achieved/target {100*p['achieved_rate']/p['target_rate']:.2f} %, scheduler lag p99 {p['sched_lag_p99_ms']:.3f} ms, driver_limited {p['driver_limited']}\""

echo
echo "3. peak RSS of a pgceiling probe (oltp, ${rsssecs}s, engine $first_engine)"
for r in "$rss" "$(python3 -c "print(5 * float('$rss'))")"; do
  pgc oltp "$r" "$rsssecs"
  echo "   at $r tx/s: peak RSS ${rss_mb} MB, $(field "f\"achieved {p['achieved_rate']:.0f} tx/s, rejected {p['rejected']}, failed {sum(p['failed'].values())}\"")"
done
