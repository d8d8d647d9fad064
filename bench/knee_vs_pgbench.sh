#!/usr/bin/env bash
# Agreement figure of issue 4 (and issue 11): the knee pgceiling finds for each workload
# (oltp, transfer) with synchronous_commit=on, against a knee found for the identical SQL
# (bench/pgbench/WORKLOAD.sql) with pgbench's Poisson schedule, by the same bracket rule,
# on the same server in the same run.
#
# pgbench side: `pgbench -n -M prepared -c CONNS -R RATE --latency-limit 1000 -l`, one run
# of warm-up + measured seconds per probe, counted from pgbench's per-transaction log
# after the warm-up (so connecting is not measured). A rate passes when
# (skipped + late + failed) / (processed + skipped + failed) <= 0.1 %: pgbench skips a
# transaction already 1 s late when its turn comes, as pgceiling rejects one not started
# within --pool-wait 1s. Bracket: from --start grow x2 until a rate fails, then bisect
# until (hi - lo) / lo <= --precision. Before every pgbench probe the data is prepared
# exactly as pgceiling prepares its own probes (bench/benchpg -rate R -workload W: restore
# to the baseline taken at the start, back-fill oltp's fraud window at the probe's rate,
# CHECKPOINT).
# pgceiling side: `pgceiling search --workload W --sync-commit on --no-steady-check` (the
# error rule only, as on the pgbench side; pgceiling's default also fails a probe whose
# queue wait keeps growing, which pgbench cannot judge) with the same probe
# length, precision, connections, no calibration (same --start), no repeats, no hold.
# Equal CPU budgets (BENCHMARKING.md): client and server share the machine, so each client
# is pinned to one core with `taskset -c --cpu` (default 1) and pgbench runs one thread
# (-j 1), like pgceiling's loop engine; --cpu "" turns pinning off.
# --server-cpu C pins the throwaway server to core C (no effect with --dsn), so neither
# client shares a core with the server's backends (which widened pgbench's latency tail
# 4-8x when they did: bench/rate_vs_pgbench.sh, docs/figures.md).
# --conns N is both sides' pool (pgceiling --conns N, pgbench -c N), default 8: the size
# pgceiling's own pool scan chooses on a 2-core machine. With 50 a one-core server is
# bistable near its knee and both tools' knees fall 1.9-3.1x (docs/figures.md, 2026-12-06).
# Target: the two knees within 5 %. The rules differ in one point: pgbench also counts a
# transaction that started on time but finished over 1 s late; pgceiling's error rule does
# not (its results count them as `late`). So the summary also gives the highest pgceiling
# probe that passes pgbench's rule with its late commits counted. --count-late runs
# pgceiling's search under pgbench's rule itself (pgceiling search --count-late), so both
# knees come from one rule. --out DIR keeps pgceiling's results files (search-W-PAIR.json)
# and the summary in DIR; they are removed with the work directory otherwise.
# --pairs N repeats each comparison N times on the same server, the tools in ABBA order
# (pair 1 pgceiling first, pair 2 pgbench first, ...), and compares the mean knees: one
# search per side moves by a bracket step or more from run to run.
#
# Without --dsn a throwaway server with the schema (bench/benchpg) is started and removed
# at the end; with --dsn the schema must exist (pgceiling init) with 10,000 wallets.
#
# Usage: bench/knee_vs_pgbench.sh [--dsn DSN] [--workloads "oltp transfer"] [--seconds 60]
#        [--warmup 10] [--precision 0.05] [--start 100] [--conns 8] [--rows 200000] [--cpu 1] [--server-cpu C]
#        [--pairs 1] [--count-late] [--out DIR]
# A tiny smoke run: bench/knee_vs_pgbench.sh --seconds 3 --warmup 1 --precision 0.3 --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" workloads="oltp transfer" secs=60 warm=10 prec=0.05 start=100 conns=8 rows=200000 cpu=1 scpu="" pairs=1 late=() out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --start) start="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --server-cpu) scpu="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --count-late) late=(--count-late); shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "knee_vs_pgbench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in pgbench psql python3 go; do
  command -v "$tool" >/dev/null || { echo "knee_vs_pgbench: $tool is needed" >&2; exit 1; }
done

if [ -n "$out" ] && ! [ -d "$out" ]; then echo "knee_vs_pgbench: --out $out is not a directory" >&2; exit 2; fi
case "$pairs" in '' | *[!0-9]* | 0) echo "knee_vs_pgbench: --pairs takes a whole number of 1 or more, not $pairs" >&2; exit 2 ;; esac
for w in $workloads; do
  case "$w" in oltp | transfer) ;; *) echo "knee_vs_pgbench: --workloads takes oltp and transfer, not $w" >&2; exit 2 ;; esac
done
bench_setup knee_vs_pgbench

pin=()
[ -n "$cpu" ] && pin=(taskset -c "$cpu")
bench_pin_server "$scpu"
# The baseline the pgbench probes are reset to (pgceiling resets itself).
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -take || exit 1
# prepare W RATE: restore, back-fill at RATE (oltp), checkpoint: what pgceiling does before
# a probe of workload W.
prepare() { "$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -rate "$2" -workload "$1" || exit 1; }

# pgc_knee W I: pgceiling's search for workload W (I names its results file); sets
# pgc_knee, pgc_stop, pgc_probes and pgc_strict (its highest probe passing pgbench's rule).
pgc_knee() {
local w="$1" i="$2" line
echo "$w, pgceiling search ${late[*]}, synchronous_commit=on (${warm}s warm-up + ${secs}s probes, precision $prec, start $start)" >&2
"${pin[@]}" "$work/pgceiling" search --dsn "$dsn" --workload "$w" --sync-commit on --hold off --warmup "${warm}s" --duration "${secs}s" \
  --precision "$prec" --start-rate "$start" --repeats 1 --conns "$conns" --pool-wait 1s --no-steady-check "${late[@]}" --json "$work/search-$w-$i.json" \
  2> >(grep -v '^  ' >&2) >/dev/null
line="$(python3 -c "import json; s=json.load(open('$work/search-$w-$i.json'))['sweeps'][0]; print(s['knee'], s['stop'], len(s['probes']), sep='|')")"
IFS='|' read -r pgc_knee pgc_stop pgc_probes <<<"$line"
# pgbench's rule on pgceiling's own probes: late commits (latency over the 1 s pool wait,
# `late` in the results) count as bad, as pgbench --latency-limit counts them.
pgc_strict="$(python3 - "$work/search-$w-$i.json" <<'PY'
import json, sys
best = 0
for p in json.load(open(sys.argv[1]))['sweeps'][0]['probes']:
    if p.get('cut_short') or not p['scheduled']:
        continue
    bad = sum(p['failed'].values()) + p['rejected'] + p.get('late', 0)
    share = bad / p['scheduled']
    print(f"   pgceiling probe at {p['target_rate']:.0f} tx/s: failed+rejected {sum(p['failed'].values()) + p['rejected']}, late {p.get('late', 0)}, share with late {share:.6f}", file=sys.stderr)
    if share <= 0.001:
        best = max(best, p['target_rate'])
print(best)
PY
)"
}

# pgprobe W RATE: one pgbench probe of warm-up + measured seconds in one run, logging every
# transaction (-l); only transactions ending after the warm-up count. Latency is from the
# scheduled start (-R). Prints the bad share and the counts.
pgprobe() {
  prepare "$1" "$2"
  bench_pgbench "$2" "$1" "" "${pin[@]}"
  python3 "$root/bench/pgblog.py" "$warm" "$work"/pgblog*
}

# pgb_knee W: pgbench's knee for workload W by the same bracket rule; sets pgb_knee and
# pgb_probes.
pgb_knee() {
local w="$1" lo=0 hi=0 rate="$start" n=0 next verdict bad processed skipped late failed
echo "$w, pgbench -R, same bracket rule" >&2
while :; do
  n=$((n + 1))
  read -r bad processed skipped late failed _ < <(pgprobe "$w" "$rate")
  if python3 -c "import sys; sys.exit(0 if $bad <= 0.001 else 1)"; then verdict=pass; lo="$rate"; else verdict=fail; hi="$rate"; fi
  echo "   pgbench probe $n at $rate tx/s: $verdict (processed $processed, skipped $skipped, late $late, failed $failed; bad share $bad)" >&2
  next="$(python3 -c "
lo, hi, r = $lo, $hi, $rate
if hi == 0: print(round(r * 2))
elif lo == 0: print(max(1, round(r / 2)))
elif (hi - lo) / lo <= $prec: print('done')
else:
    m = round((lo + hi) / 2)
    print('done' if m <= lo or m >= hi else m)")"
  [ "$next" = done ] && break
  [ "$n" -ge 30 ] && break
  rate="$next"
done
"$work/benchpg" -dsn "$dsn" -baseline "$work/baseline.json" -restore
pgb_knee="$lo" pgb_probes="$n"
}

# compare W: both knees of workload W, --pairs times, the tools in ABBA order (pair 1
# pgceiling first, pair 2 pgbench first, ...), then the summary lines: each pair's knees and
# the difference of the pairs' mean knees.
compare() {
local w="$1" i
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then
    pgc_knee "$w" "$i"; pgb_knee "$w"; order="pgceiling first"
  else
    pgb_knee "$w"; pgc_knee "$w" "$i"; order="pgbench first"
  fi
  printf '%s\t' "$w" "$i" "$pgc_knee" "$pgb_knee" "$pgc_strict" "$pgc_probes" "$pgb_probes" "$order" >>"$work/pairs"
  printf '%s\n' "$pgc_stop" >>"$work/pairs"
done
python3 - "$w" "$work/pairs" <<'PY' | tee -a "$work/summary"
import statistics, sys
w = sys.argv[1]
rows = []
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if f[0] == w:
        rows.append((int(f[1]), float(f[2]), float(f[3]), float(f[4]), f[5], f[6], f[7], f[8]))
print(f"knee, {w}, synchronous_commit=on (measured on this machine)")
for i, a, b, c, pa, pb, order, stop in rows:
    d = f"{100 * (a - b) / b:+.1f} %" if a and b else "n/a"
    print(f"  pair {i} ({order}): pgceiling {a:6.0f} tx/s ({pa} probes; stop: {stop}), pgbench -R {b:6.0f} tx/s ({pb} probes): {d}; "
          f"pgceiling under pgbench's rule (late commits counted) {c:.0f}" + (f" ({100 * (c - b) / b:+.1f} %)" if b and c else ""))
a = statistics.mean(r[1] for r in rows)
b = statistics.mean(r[2] for r in rows)
c = statistics.mean(r[3] for r in rows)
if a and b:
    d = (a - b) / b
    print(f"  mean of {len(rows)} pair(s): pgceiling {a:.0f}, pgbench {b:.0f}: {100 * d:+.1f} % (target within 5 %): {'ok' if abs(d) <= 0.05 else 'OUTSIDE'}")
    print(f"  pgceiling under pgbench's rule: {c:.0f} ({100 * (c - b) / b:+.1f} %)")
PY
}

for w in $workloads; do compare "$w"; done
echo >&2
cat "$work/summary"
if [ -n "$out" ]; then cp "$work"/search-*.json "$work/summary" "$out"/ && echo "knee_vs_pgbench: results files and summary in $out" >&2; fi
