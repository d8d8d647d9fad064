#!/usr/bin/env bash
# Search-cost figure of issue 4: the probe-minutes (warm-up and calibration included) a
# search spends to reach its bracket with calibration and early abort, against the same
# search with both turned off (start at --start, x2 growth, every probe run in full).
#   1. on the simulated server, many seeds: go test ./search -run TestSearchCost -v
#   2. on one real sweep (oltp, synchronous_commit=on): pgceiling search twice on the same
#      server, default vs `--start-rate START --no-early-abort`.
# Target: at most half.
#
# Without --dsn a throwaway server with the schema (bench/benchpg) is started and removed
# at the end; with --dsn the schema must exist (pgceiling init).
#
# Printed per search: every probe-minute (repeats of the final edges included) and those
# spent until the bracket first reached --precision ("to the bracket"). --repeats N is
# passed to both searches (default: the profile's, 3 with --dsn). --conns is both searches'
# pool (default auto: each scans pool sizes first, and the scan's probes count in both
# searches' probe-minutes; a fixed N leaves the scan out of both, so the ratio is the
# calibration's and the early stop's alone, the plain search of the issue having had no
# scan; the scan's minutes are printed when it ran).
#
# Usage: bench/search_cost.sh [--dsn DSN] [--warmup 3] [--seconds 10] [--precision 0.05]
#        [--start 100] [--rows 200000] [--workload oltp] [--sync-commit on] [--repeats N]
#        [--conns auto|N]
# A tiny smoke run: bench/search_cost.sh --warmup 1 --seconds 3 --precision 0.2 --rows 20000
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" warm=3 secs=10 prec=0.05 start=100 rows=200000 wl=oltp sc=on reps="" conns=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --start) start="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --workload) wl="$2"; shift 2 ;;
    --sync-commit) sc="$2"; shift 2 ;;
    --repeats) reps="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "search_cost: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

echo "1. simulated server"
(cd "$root" && go test -count=1 -run 'TestSearchCost$' -v ./search | sed -n 's/^ *cost_test.go:[0-9]*: /   /p')

bench_setup search_cost

common=(search --hold off --dsn "$dsn" --workload "$wl" --sync-commit "$sc" --warmup "${warm}s" --duration "${secs}s" --precision "$prec" --conns "$conns")
[ -n "$reps" ] && common+=(--repeats "$reps")
echo
echo "2. one real sweep ($wl, synchronous_commit=$sc, ${warm}s warm-up + ${secs}s probes, precision $prec, pool $conns)"
"$work/pgceiling" "${common[@]}" --json "$work/fast.json" 2>"$work/fast.log" >/dev/null || { tail -3 "$work/fast.log" >&2; exit 1; }
"$work/pgceiling" "${common[@]}" --start-rate "$start" --no-early-abort --json "$work/plain.json" 2>"$work/plain.log" >/dev/null || { tail -3 "$work/plain.log" >&2; exit 1; }
python3 - "$work/fast.json" "$work/plain.json" "$prec" <<'PY'
import json, sys
prec = float(sys.argv[3])
def sweep(p):
    return json.load(open(p))["sweeps"][0]
def to_bracket(s):
    # Probe-minutes until the bracket (highest pass below the lowest fail) first reached
    # the precision; the calibration's share is the sweep's total less its probes'.
    cal = s["probe_minutes"] - sum(q["warmup_s"] + q["measured_s"] for q in s["probes"]) / 60
    mins, lo, hi = cal, 0.0, float("inf")
    for q in s["probes"]:
        mins += (q["warmup_s"] + q["measured_s"]) / 60
        if q["verdict"] == "pass":
            lo = max(lo, q["target_rate"])
        elif q["verdict"] in ("fail", "not_steady"):
            hi = min(hi, q["target_rate"])
        if lo > 0 and hi < float("inf") and (hi - lo) / lo <= prec + 1e-9:
            return mins
    return mins
f, p = sweep(sys.argv[1]), sweep(sys.argv[2])
for name, s in (("plain (start, x2, full probes)", p), ("calibration + early abort", f)):
    cut = sum(1 for q in s["probes"] if q.get("cut_short"))
    pool = s.get("pool") or {}
    scan = f", pool {pool['conns']} from a scan of {pool.get('seconds', 0) / 60:.2f} min" if pool.get("points") else ""
    print(f"   {name:<31} knee {s['knee']:7.0f} bracket [{s['bracket']['lo']:.0f}, {s['bracket']['hi']:.0f}] "
          f"{len(s['probes']):2d} probes ({cut} cut short) {s['probe_minutes']:6.2f} probe-minutes, {to_bracket(s):6.2f} to the bracket{scan}; stop: {s.get('stop', '')}")
if p["probe_minutes"]:
    print(f"   ratio {f['probe_minutes'] / p['probe_minutes']:.2f} in all, {to_bracket(f) / to_bracket(p):.2f} to the bracket (target <= 0.5; measured on this machine)")
PY
