#!/usr/bin/env bash
# Agreement with pgbench (issue 11) by interleaved staircases: do pgceiling and pgbench
# find the same knee on the identical SQL, and how sure is that? bench/knee_vs_pgbench.sh
# runs one bisection search per tool, one after the other; on a shared 2-core machine the
# server's own knee moves by 20-30 % between two searches, so a 5 % difference cannot be
# told from four searches per tool (docs/figures.md, "Agreement with pgbench"). Here each
# client runs an up-down staircase (bench/agree next: up by a step after a pass, down
# after a fail; 4 steps until its first reversal, 2 until its second, --step after), and
# their probes interleave, pgceiling first in odd pairs and pgbench first in even ones
# (ABBA), so whatever the server does during the run it does under both. At the end one
# logistic model is fitted to both staircases (bench/agree fit: pass against ln rate, a
# linear drift over the run shared by both clients, a ratio between them) and the ratio
# pgceiling / pgbench of the rates each passes half the time is printed with its 90 %
# profile-likelihood interval, and whether that interval lies inside 5 % (shown), wholly
# outside it (contradicted), or neither (not decided).
#
# Each probe as bench/rate_vs_pgbench.sh runs it (bench_client_probe in bench/lib.sh):
# the data prepared as pgceiling prepares its own probes (restore to the baseline taken at
# the start, back-fill oltp's fraud window at the rate, CHECKPOINT), then `pgceiling run
# --engine loop --threads 1 --pool-wait 1s` or `pgbench -c CONNS -j 1 -R RATE
# --latency-limit 1000` for --warmup + --seconds. One rule for both: a probe passes when
# at most 0.1 % of the transactions due after the warm-up were skipped or rejected, failed,
# or committed over 1 s after their scheduled start (pgbench's rule; pgceiling's `late`
# commits count). Pair i's probes run with seed --seed + i - 1 on both sides (pgceiling
# run --seed, pgbench --random-seed), so every probe is a fresh draw of arrivals and
# wallets, as the fit assumes; the runs before commit 1fa7967 (2026-12-07) gave pgceiling
# none (its default, 1, in every probe: one draw replayed, scaled to the rate) while
# pgbench drew afresh (docs/figures.md, "Agreement with pgbench"). Equal CPU budgets: each
# client pinned to core --cpu (default 1, "" for none); --server-cpu C pins the throwaway
# server to core C, so the clients do not share a core with its backends (which widened
# pgbench's tail 4-8x when they did).
#
# Steal: the machine's /proc/stat is logged every second, and each row records the highest
# share of its CPU the hypervisor gave other guests over any 5 s of the probe. A second
# fit leaves out the probes with at least 5 % (both clients alike): on 2026-12-07 every
# one of the 12 `oltp` probes with such a burst failed, against 26 of the 68 others
# (docs/figures.md, "Agreement with pgbench").
#
# A/A check: --aa CLIENT runs CLIENT (pgbench or pgceiling) in both staircases, the rows
# keeping the names pgceiling and pgbench for the first and the second staircase, with the
# second staircase's seeds 1,000,000 higher so the two draw independently (as two different
# clients do). The fitted ratio should then be 1 within its interval; a ratio away from 1
# is a bias of the method (order, staircase or fit), not of a client.
#
# Runs pool: `go run ./bench/agree fit RUN1/rows-oltp RUN2/rows-oltp ...` fits one ratio
# to several runs' rows, each run with its own level, drift and slope (this machine's
# speed moves 20-30 % between sessions), so sessions of 40 pairs add up.
#
# A run takes about pairs x 2 x (warm-up + seconds + ~10 s of preparation): 40 pairs of
# 10 + 30 s probes are about an hour per workload. The rows (one per probe: pair, client,
# rate, pass, committed/s, bad share, p50 ms, p99 ms, steal), both fits and the steal log
# go to --out DIR when given.
#
# Usage: bench/staircase_vs_pgbench.sh [--dsn DSN] [--workloads "oltp transfer"]
#        [--start 1600] [--step 0.04] [--pairs 40] [--seconds 30] [--warmup 10] [--conns 8]
#        [--rows 1000000] [--cpu 1] [--server-cpu C] [--seed 1] [--aa CLIENT] [--out DIR]
# A smoke run: bench/staircase_vs_pgbench.sh --workloads oltp --start 300 --pairs 3
#        --seconds 3 --warmup 1 --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" wls="oltp transfer" start=1600 step=0.04 pairs=40 secs=30 warm=10 conns=8 rows=1000000 cpu=1 scpu="" out="" seed=1 aa=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --workloads) wls="$2"; shift 2 ;;
    --start) start="$2"; shift 2 ;;
    --step) step="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --server-cpu) scpu="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --aa) aa="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "staircase_vs_pgbench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for wl in $wls; do
  case "$wl" in oltp|transfer) ;; *) echo "staircase_vs_pgbench: --workloads takes oltp and transfer, not $wl" >&2; exit 2 ;; esac
done
case "$pairs" in ''|*[!0-9]*|0|1) echo "staircase_vs_pgbench: --pairs must be a whole number of at least 2, not $pairs" >&2; exit 2 ;; esac
case "$aa" in ''|pgbench|pgceiling) ;; *) echo "staircase_vs_pgbench: --aa takes pgbench or pgceiling, not $aa" >&2; exit 2 ;; esac
case "$seed" in ''|*[!0-9]*) echo "staircase_vs_pgbench: --seed must be a whole number, not $seed" >&2; exit 2 ;; esac
for tool in pgbench /usr/bin/time python3 go; do
  command -v "$tool" >/dev/null || { echo "staircase_vs_pgbench: $tool not found" >&2; exit 2; }
done
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (a > 0 and 0 < b < 1))' "$start" "$step" 2>/dev/null ||
  { echo "staircase_vs_pgbench: --start must be a rate above 0 and --step a share between 0 and 1 (got $start, $step)" >&2; exit 2; }
[ -z "$out" ] || mkdir -p "$out"

bench_setup staircase_vs_pgbench
bench_steal_log
(cd "$root" && go build -o "$work/agree" ./bench/agree) || exit 1
pin=()
[ -n "$cpu" ] && pin=(taskset -c "$cpu")
bench_pin_server "$scpu"
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -take || exit 1
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$root" rev-parse --short HEAD)"
[ -z "$aa" ] || echo "A/A check: both staircases run $aa (rows: pgceiling = the first staircase, pgbench = the second, its seeds +1000000)"
echo "synchronous_commit=on, ${warm}s warm-up + ${secs}s, $conns connections, $rows rows, start $start tx/s, step $step, $pairs pairs; clients pinned to core ${cpu:-none}, server to ${scpu:-none}"

for wl in $wls; do
  rowsf="$work/rows-$wl"
  : >"$rowsf"
  echo "$wl: pair client rate pass committed/s bad p50_ms p99_ms steal (time)"
  for i in $(seq 1 "$pairs"); do
    order="pgceiling pgbench"
    [ $((i % 2)) = 0 ] && order="pgbench pgceiling"
    for client in $order; do
      rate="$("$work/agree" next -rows "$rowsf" -client "$client" -start "$start" -step "$step")"
      "$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -rate "$rate" -workload "$wl" || exit 1
      t0="$(date +%s)"
      runs="$client" pseed="$((seed + i - 1))"
      if [ -n "$aa" ]; then
        runs="$aa"
        [ "$client" = pgbench ] && pseed="$((pseed + 1000000))"
      fi
      read -r crate bad p50 p99 _ < <(bench_client_probe "$runs" "$rate" "$wl" "$pseed") || exit 1
      steal="$(bench_steal_max "$t0" "$(date +%s)")"
      pass="$(python3 -c "import sys; print(1 if float(sys.argv[1]) <= 0.001 else 0)" "$bad")"
      echo "$i $client $rate $pass $crate $bad $p50 $p99 $steal" >>"$rowsf"
      echo "$i $client $rate $pass $crate $bad $p50 $p99 $steal ($(date -u +%T))"
    done
  done
  "$work/agree" fit "$rowsf" | tee "$work/fit-$wl" || true
  awk '$9 < 0.05' "$rowsf" >"$work/rows-$wl-quiet"
  echo "without the $(awk '$9 >= 0.05' "$rowsf" | wc -l) probes with at least 5 % steal over some 5 s:" | tee "$work/fit-$wl-quiet"
  "$work/agree" fit "$work/rows-$wl-quiet" | tee -a "$work/fit-$wl-quiet" || true
  [ -z "$out" ] || cp "$rowsf" "$work/fit-$wl" "$work/rows-$wl-quiet" "$work/fit-$wl-quiet" "$out/"
done
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -restore
[ -z "$out" ] || cp "$work/stat.log" "$out/"
